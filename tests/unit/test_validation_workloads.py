"""Deployment, ReplicaSet and Scale validation: upstream's field paths, types and texts
(``pkg/apis/apps/validation/validation.go``, ``ValidateScale``), on defaulted objects."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from everynode.api.defaults import apply_defaults
from everynode.api.validation import validate_create, validate_status_update, validate_update
from everynode.api.validation.workloads import validate_scale

Obj = dict[str, Any]
NEG = "must be greater than or equal to 0"


def base(kind: str = "Deployment") -> Obj:
    obj: Obj = {
        "apiVersion": "apps/v1", "kind": kind,
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}},
    }
    apply_defaults("deployments.apps" if kind == "Deployment" else "replicasets.apps", obj)
    return obj


def errors_of(errs: list[Any]) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.detail) for e in errs]


def spec(**fields: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        for k, v in fields.items():
            if v is None:
                obj["spec"].pop(k, None)
            else:
                obj["spec"][k] = v
    return mutate


def rolling(surge: Any, unavailable: Any) -> Callable[[Obj], None]:
    return spec(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}})


DEPLOYMENT_CASES: list[tuple[str, Callable[[Obj], None], list[tuple[str, str, str]]]] = [
    ("valid", spec(), []),
    ("selector missing", spec(selector=None),
     [("spec.selector", "Required", ""),
      ("spec.template.metadata.labels", "Invalid", "`selector` does not match template `labels`")]),
    ("selector empty", spec(selector={}), [("spec.selector", "Invalid", "empty selector is invalid for deployment")]),
    ("selector does not match", spec(selector={"matchLabels": {"app": "db"}}),
     [("spec.template.metadata.labels", "Invalid", "`selector` does not match template `labels`")]),
    ("maxSurge and maxUnavailable both 0", rolling(0, 0),
     [("spec.strategy.rollingUpdate.maxUnavailable", "Invalid", "may not be 0 when `maxSurge` is 0")]),
    ("both 0%", rolling("0%", "0%"),
     [("spec.strategy.rollingUpdate.maxUnavailable", "Invalid", "may not be 0 when `maxSurge` is 0")]),
    ("maxUnavailable over 100%", rolling(1, "110%"),
     [("spec.strategy.rollingUpdate.maxUnavailable", "Invalid", "must not be greater than 100%")]),
    ("negative maxSurge", rolling(-1, 1), [("spec.strategy.rollingUpdate.maxSurge", "Invalid", NEG)]),
    ("Recreate with rollingUpdate", spec(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}),
     [("spec.strategy.rollingUpdate", "Forbidden", "may not be specified when strategy `type` is 'Recreate'")]),
    ("unknown strategy", spec(strategy={"type": "BlueGreen"}),
     [("spec.strategy.type", "NotSupported", 'supported values: "Recreate", "RollingUpdate"')]),
    ("negative replicas", spec(replicas=-1), [("spec.replicas", "Invalid", NEG)]),
    ("negative revisionHistoryLimit", spec(revisionHistoryLimit=-1), [("spec.revisionHistoryLimit", "Invalid", NEG)]),
    ("progressDeadlineSeconds not above minReadySeconds", spec(minReadySeconds=10, progressDeadlineSeconds=10),
     [("spec.progressDeadlineSeconds", "Invalid", "must be greater than minReadySeconds")]),
    ("restartPolicy Never", lambda d: d["spec"]["template"]["spec"].update(restartPolicy="Never"),
     [("spec.template.spec.restartPolicy", "NotSupported", 'supported values: "Always"')]),
    ("activeDeadlineSeconds", lambda d: d["spec"]["template"]["spec"].update(activeDeadlineSeconds=5),
     [("spec.template.spec.activeDeadlineSeconds", "Invalid", "activeDeadlineSeconds in ReplicaSet is not Supported")]),
]


@pytest.mark.parametrize(("name", "mutate", "expected"), DEPLOYMENT_CASES, ids=[c[0] for c in DEPLOYMENT_CASES])
def test_deployment_create(name: str, mutate: Callable[[Obj], None], expected: list[tuple[str, str, str]]) -> None:
    d = base()
    mutate(d)
    assert errors_of(validate_create("deployments.apps", d)) == expected


def test_defaults_are_upstreams() -> None:
    d = base()
    assert d["spec"]["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%",
                                                                                 "maxSurge": "25%"}}
    assert (d["spec"]["revisionHistoryLimit"], d["spec"]["progressDeadlineSeconds"]) == (10, 600)
    assert d["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    bare = {"metadata": {"name": "x"}, "spec": {"strategy": {"type": "Recreate"}}}
    apply_defaults("deployments.apps", bare)
    assert bare["spec"]["replicas"] == 1 and "rollingUpdate" not in bare["spec"]["strategy"]
    rs = {"metadata": {"name": "x"}, "spec": {}}
    apply_defaults("replicasets.apps", rs)
    assert rs["spec"]["replicas"] == 1
    assert rs["spec"]["template"]["spec"]["restartPolicy"] == "Always"  # a struct in Go: defaulted even when absent


def test_selector_is_immutable_for_both_kinds() -> None:
    for kind, key in (("Deployment", "deployments.apps"), ("ReplicaSet", "replicasets.apps")):
        old = base(kind)
        new = copy.deepcopy(old)
        new["spec"]["selector"] = {"matchLabels": {"app": "web", "tier": "fe"}}
        new["spec"]["template"]["metadata"]["labels"]["tier"] = "fe"
        assert errors_of(validate_update(key, new, old)) == [("spec.selector", "Invalid", "field is immutable")]


def test_replica_set_rules() -> None:
    rs = base("ReplicaSet")
    assert validate_create("replicasets.apps", rs) == []
    rs["spec"]["selector"] = {}
    assert errors_of(validate_create("replicasets.apps", rs)) == \
        [("spec.selector", "Invalid", "empty selector is invalid for deployment")]


def test_status_counters() -> None:
    old = base()
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 2, "availableReplicas": 3, "readyReplicas": 3, "updatedReplicas": -1}
    assert errors_of(validate_status_update("deployments.apps", new, old)) == [
        ("status.updatedReplicas", "Invalid", NEG),
        ("status.readyReplicas", "Invalid", "cannot be greater than status.replicas"),
        ("status.availableReplicas", "Invalid", "cannot be greater than status.replicas"),
    ]
    old["status"] = {"collisionCount": 2}
    new["status"] = {"collisionCount": 1}
    assert errors_of(validate_status_update("deployments.apps", new, old)) == \
        [("status.collisionCount", "Invalid", "cannot be decremented")]
    rs_old = base("ReplicaSet")
    rs_new = copy.deepcopy(rs_old)
    rs_new["status"] = {"replicas": 3, "readyReplicas": 2, "availableReplicas": 3}
    assert errors_of(validate_status_update("replicasets.apps", rs_new, rs_old)) == \
        [("status.availableReplicas", "Invalid", "cannot be greater than readyReplicas")]


def test_scale() -> None:
    scale = {"metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": -1}}
    assert errors_of(validate_scale(scale)) == [("spec.replicas", "Invalid", NEG)]
    assert validate_scale({**scale, "spec": {"replicas": 0}}) == []
