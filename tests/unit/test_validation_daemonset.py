"""DaemonSet validation: every row of daemonset-semantics.md §2.1, §2.2, §2.4 and §2.5.

Each case mutates a valid, defaulted DaemonSet and expects exactly the listed errors
(field path, error type, detail text) — the values are not compared (their rendering of Go
structs changed between releases, §2 intro).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from everynode.api.defaults import apply_defaults
from everynode.api.field_errors import aggregate
from everynode.api.validation import validate_create, validate_status_update, validate_update

Obj = dict[str, Any]
KEY = "daemonsets.apps"
SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
               "regex used for validation is '[0-9]+%')")
NEG = "must be greater than or equal to 0"


def base_ds() -> Obj:
    ds: Obj = {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "node-exporter", "namespace": "monitoring"},
        "spec": {
            "selector": {"matchLabels": {"app": "ne"}},
            "template": {
                "metadata": {"labels": {"app": "ne"}},
                "spec": {"containers": [{"name": "ne", "image": "prom/node-exporter:v1.8.0"}]},
            },
        },
    }
    apply_defaults(KEY, ds)
    return ds


def _set(path: str, value: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        parts = path.split(".")
        target = obj
        for part in parts[:-1]:
            target = target.setdefault(part, {})
        if value is _DELETE:
            target.pop(parts[-1], None)
        else:
            target[parts[-1]] = value
    return mutate


_DELETE = object()


def _ru(max_unavailable: Any, max_surge: Any) -> Callable[[Obj], None]:
    return _set("spec.updateStrategy", {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": max_surge}})


def _errors(errs: list[Any]) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.detail) for e in errs]


CREATE_CASES: list[tuple[str, Callable[[Obj], None], list[tuple[str, str, str]]]] = [
    # rule 1
    ("1 name not a subdomain", _set("metadata.name", "Node_Exporter"),
     [("metadata.name", "Invalid", SUBDOMAIN_MSG)]),
    ("1 name too long", _set("metadata.name", "a" * 254),
     [("metadata.name", "Invalid", "must be no more than 253 characters")]),
    ("1 name missing", _set("metadata.name", _DELETE),
     [("metadata.name", "Required", "name or generateName is required")]),
    # rule 2
    ("2 In without values", _set("spec.selector", {"matchLabels": {"app": "ne"}, "matchExpressions": [
        {"key": "tier", "operator": "In"}]}),
     [("spec.selector.matchExpressions[0].values", "Required",
       "must be specified when `operator` is 'In' or 'NotIn'")]),
    ("2 NotIn without values", _set("spec.selector", {"matchLabels": {"app": "ne"}, "matchExpressions": [
        {"key": "tier", "operator": "NotIn", "values": []}]}),
     [("spec.selector.matchExpressions[0].values", "Required",
       "must be specified when `operator` is 'In' or 'NotIn'")]),
    # rule 3
    ("3 Exists with values", _set("spec.selector", {"matchLabels": {"app": "ne"}, "matchExpressions": [
        {"key": "app", "operator": "Exists", "values": ["x"]}]}),
     [("spec.selector.matchExpressions[0].values", "Forbidden",
       "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")]),
    # rule 4
    ("4 unknown operator", _set("spec.selector", {"matchLabels": {"app": "ne"}, "matchExpressions": [
        {"key": "app", "operator": "Like", "values": ["x"]}]}),
     [("spec.selector.matchExpressions[0].operator", "Invalid", "not a valid selector operator")]),
    # rule 5
    ("5 selector does not match", _set("spec.template.metadata.labels", {"app": "other"}),
     [("spec.template.metadata.labels", "Invalid", "`selector` does not match template `labels`")]),
    ("5 nil selector matches nothing", _set("spec.selector", _DELETE),
     [("spec.template.metadata.labels", "Invalid", "`selector` does not match template `labels`")]),
    ("5 expression selector mismatch", _set("spec.selector", {"matchExpressions": [
        {"key": "app", "operator": "NotIn", "values": ["ne"]}]}),
     [("spec.template.metadata.labels", "Invalid", "`selector` does not match template `labels`")]),
    # rule 6 (an empty selector matches everything, so rule 5 stays silent)
    ("6 empty selector", _set("spec.selector", {}),
     [("spec.selector", "Invalid", "empty selector is invalid for daemonset")]),
    ("6 selector with empty parts", _set("spec.selector", {"matchLabels": {}, "matchExpressions": []}),
     [("spec.selector", "Invalid", "empty selector is invalid for daemonset")]),
    # rule 7
    ("7 container image missing", _set("spec.template.spec.containers", [{"name": "ne",
                                                                          "imagePullPolicy": "Always",
                                                                          "terminationMessagePolicy": "File"}]),
     [("spec.template.spec.containers[0].image", "Required", "")]),
    ("7 no containers", _set("spec.template.spec.containers", []),
     [("spec.template.spec.containers", "Required", "")]),
    ("7 template label value", _set("spec.template.metadata.labels", {"app": "ne", "bad": "-x"}),
     [("spec.template.metadata.labels", "Invalid",
       "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
       "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
       "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')")]),
    # rule 8
    ("8 restartPolicy Never", _set("spec.template.spec.restartPolicy", "Never"),
     [("spec.template.spec.restartPolicy", "NotSupported", 'supported values: "Always"')]),
    ("8 restartPolicy OnFailure", _set("spec.template.spec.restartPolicy", "OnFailure"),
     [("spec.template.spec.restartPolicy", "NotSupported", 'supported values: "Always"')]),
    # rule 9
    ("9 activeDeadlineSeconds", _set("spec.template.spec.activeDeadlineSeconds", 30),
     [("spec.template.spec.activeDeadlineSeconds", "Forbidden", "activeDeadlineSeconds in DaemonSet is not Supported")]),
    # rule 10
    ("10 minReadySeconds", _set("spec.minReadySeconds", -1), [("spec.minReadySeconds", "Invalid", NEG)]),
    # rule 12
    ("12 unknown strategy", _set("spec.updateStrategy", {"type": "Recreate"}),
     [("spec.updateStrategy", "NotSupported", 'supported values: "RollingUpdate", "OnDelete"')]),
    # rule 13
    ("13 RollingUpdate without rollingUpdate", _set("spec.updateStrategy", {"type": "RollingUpdate"}),
     [("spec.updateStrategy.rollingUpdate", "Required", "")]),
    # rule 14
    # "5x" is not a percent and not an integer, so it also reads as 0 for the zero check
    ("14 maxUnavailable not a percent", _ru("5x", 0),
     [("spec.updateStrategy.rollingUpdate.maxUnavailable", "Invalid", PERCENT_MSG),
      ("spec.updateStrategy.rollingUpdate.maxUnavailable", "Required", "cannot be 0 when maxSurge is 0")]),
    ("14 maxSurge not a percent", _ru(0, "1.5%"),
     [("spec.updateStrategy.rollingUpdate.maxSurge", "Invalid", PERCENT_MSG),
      ("spec.updateStrategy.rollingUpdate.maxUnavailable", "Required", "cannot be 0 when maxSurge is 0")]),
    ("14 numeric string is parsed for the zero check", _ru("5", 0),
     [("spec.updateStrategy.rollingUpdate.maxUnavailable", "Invalid", PERCENT_MSG)]),
    # rule 15
    ("15 negative maxUnavailable", _ru(-1, 0),
     [("spec.updateStrategy.rollingUpdate.maxUnavailable", "Invalid", NEG)]),
    ("15 negative maxSurge", _ru(0, -2),
     [("spec.updateStrategy.rollingUpdate.maxSurge", "Invalid", NEG)]),
    # rule 16
    ("16 maxUnavailable over 100%", _ru("101%", 0),
     [("spec.updateStrategy.rollingUpdate.maxUnavailable", "Invalid", "must not be greater than 100%")]),
    ("16 maxSurge over 100%", _ru(0, "150%"),
     [("spec.updateStrategy.rollingUpdate.maxSurge", "Invalid", "must not be greater than 100%")]),
    # rule 17
    ("17 both non-zero", _ru(1, 1),
     [("spec.updateStrategy.rollingUpdate.maxSurge", "Invalid", "may not be set when maxUnavailable is non-zero")]),
    ("17 both non-zero percents", _ru("10%", "20%"),
     [("spec.updateStrategy.rollingUpdate.maxSurge", "Invalid", "may not be set when maxUnavailable is non-zero")]),
    # rule 18
    ("18 both zero", _ru(0, 0),
     [("spec.updateStrategy.rollingUpdate.maxUnavailable", "Required", "cannot be 0 when maxSurge is 0")]),
    ("18 0% counts as zero", _ru("0%", 0),
     [("spec.updateStrategy.rollingUpdate.maxUnavailable", "Required", "cannot be 0 when maxSurge is 0")]),
    # rule 19
    ("19 revisionHistoryLimit", _set("spec.revisionHistoryLimit", -1), [("spec.revisionHistoryLimit", "Invalid", NEG)]),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CREATE_CASES], ids=[c[0] for c in CREATE_CASES])
def test_create_rules(mutate: Callable[[Obj], None], expected: list[tuple[str, str, str]]) -> None:
    ds = base_ds()
    mutate(ds)
    assert _errors(validate_create(KEY, ds)) == expected


@pytest.mark.parametrize("strategy", [
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "100%", "maxSurge": 0}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}},
    {"type": "OnDelete"},
    {"type": "OnDelete", "rollingUpdate": {"maxUnavailable": 5, "maxSurge": 5}},  # not validated with OnDelete
])
def test_valid_strategies(strategy: Obj) -> None:
    ds = base_ds()
    ds["spec"]["updateStrategy"] = strategy
    assert validate_create(KEY, ds) == []


@pytest.mark.parametrize("limit", [0, 10])
def test_revision_history_limit_zero_is_valid(limit: int) -> None:
    ds = base_ds()
    ds["spec"]["revisionHistoryLimit"] = limit
    assert validate_create(KEY, ds) == []


def test_kubectl_contract_message() -> None:
    ds = base_ds()
    ds["metadata"]["name"] = "bad-ds"
    del ds["spec"]["template"]["spec"]["containers"][0]["image"]
    ds["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "IfNotPresent"
    errs = validate_create(KEY, ds)
    assert aggregate(errs) == "spec.template.spec.containers[0].image: Required value"
    assert errs[0].cause() == {"reason": "FieldValueRequired", "message": "Required value",
                               "field": "spec.template.spec.containers[0].image"}


def test_percent_message_renders_with_value() -> None:
    ds = base_ds()
    _ru("5x", 0)(ds)
    assert str(validate_create(KEY, ds)[0]) == (
        'spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: "5x": ' + PERCENT_MSG)


# --- §2.2 update --------------------------------------------------------------------------------

def _stored(ds: Obj) -> Obj:
    ds = copy.deepcopy(ds)
    ds["metadata"].update(uid="u-1", resourceVersion="5", generation=1, creationTimestamp="2024-01-01T00:00:00Z")
    return ds


def test_update_selector_is_immutable() -> None:
    old = _stored(base_ds())
    new = copy.deepcopy(old)
    new["spec"]["selector"] = {"matchLabels": {"app": "ne", "tier": "x"}}
    new["spec"]["template"]["metadata"]["labels"]["tier"] = "x"
    assert _errors(validate_update(KEY, new, old)) == [("spec.selector", "Invalid", "field is immutable")]


def test_update_revalidates_spec() -> None:
    old = _stored(base_ds())
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["restartPolicy"] = "Never"
    assert _errors(validate_update(KEY, new, old)) == [
        ("spec.template.spec.restartPolicy", "NotSupported", 'supported values: "Always"')]


@pytest.mark.parametrize("mutate", [
    _set("spec.template.spec.containers", [{"name": "ne", "image": "v2", "imagePullPolicy": "Always",
                                            "terminationMessagePolicy": "File"}]),
    _set("spec.updateStrategy", {"type": "OnDelete"}),
    _set("spec.minReadySeconds", 10),
    _set("spec.revisionHistoryLimit", 3),
    _set("metadata.labels", {"team": "obs"}),
])
def test_update_mutable_fields(mutate: Callable[[Obj], None]) -> None:
    old = _stored(base_ds())
    new = copy.deepcopy(old)
    mutate(new)
    assert validate_update(KEY, new, old) == []


@pytest.mark.parametrize(("field_name", "value"), [("name", "other"), ("namespace", "default"), ("uid", "u-2"),
                                                   ("creationTimestamp", "2025-01-01T00:00:00Z")])
def test_update_metadata_identity_is_immutable(field_name: str, value: str) -> None:
    old = _stored(base_ds())
    new = copy.deepcopy(old)
    new["metadata"][field_name] = value
    assert (f"metadata.{field_name}", "Invalid", "field is immutable") in _errors(validate_update(KEY, new, old))


# --- §2.4 ControllerRevision --------------------------------------------------------------------

def _revision(**extra: Any) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": "node-exporter-5d8f7c9b6", "namespace": "monitoring"}, **extra}


@pytest.mark.parametrize(("rev", "expected"), [
    (_revision(data={"spec": {}}, revision=1), []),
    (_revision(revision=1), [("data", "Required", "data is mandatory")]),
    (_revision(data={}, revision=-1), [("revision", "Invalid", NEG)]),
])
def test_controller_revision_create(rev: Obj, expected: list[tuple[str, str, str]]) -> None:
    assert _errors(validate_create("controllerrevisions.apps", rev)) == expected


def test_controller_revision_name_too_long() -> None:
    rev = _revision(data={}, revision=1)
    rev["metadata"]["name"] = "a" * 250 + "-5d8f7c9b6"
    assert _errors(validate_create("controllerrevisions.apps", rev)) == [
        ("metadata.name", "Invalid", "must be no more than 253 characters")]


def test_controller_revision_data_immutable() -> None:
    old = _revision(data={"spec": {"template": {"$patch": "replace"}}}, revision=1)
    old["metadata"]["uid"] = "u"
    new = copy.deepcopy(old)
    new["revision"] = 2  # revision may change (rollback re-numbers it)
    assert validate_update("controllerrevisions.apps", new, old) == []
    new["data"] = {"spec": {}}
    assert _errors(validate_update("controllerrevisions.apps", new, old)) == [("data", "Invalid", "field is immutable")]


# --- §2.5 status update -------------------------------------------------------------------------

STATUS_FIELDS = ["currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                 "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
                 "collisionCount"]


@pytest.mark.parametrize("name", STATUS_FIELDS)
def test_status_counters_must_be_nonnegative(name: str) -> None:
    old = _stored(base_ds())
    new = copy.deepcopy(old)
    new["status"] = {"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0,
                     "numberReady": 0, name: -1}
    errs = validate_status_update(KEY, new, old)
    assert _errors(errs) == [(f"status.{name}", "Invalid", NEG)]
    assert str(errs[0]) == f"status.{name}: Invalid value: -1: must be greater than or equal to 0"


@pytest.mark.parametrize(("old_count", "new_count", "expected"), [
    (None, None, []),
    (None, 1, []),
    (1, 2, []),
    (2, 2, []),
    (2, 1, [("status.collisionCount", "Invalid", "cannot be decremented")]),
    (2, None, [("status.collisionCount", "Invalid", "cannot be decremented")]),
])
def test_status_collision_count_cannot_decrease(old_count: int | None, new_count: int | None,
                                                expected: list[tuple[str, str, str]]) -> None:
    old = _stored(base_ds())
    new = copy.deepcopy(old)
    if old_count is not None:
        old["status"] = {"collisionCount": old_count}
    if new_count is not None:
        new["status"] = {"collisionCount": new_count}
    errs = validate_status_update(KEY, new, old)
    assert _errors(errs) == expected
    if expected:
        assert str(errs[0]) == f"status.collisionCount: Invalid value: {new_count or 0}: cannot be decremented"
