"""Validation of Role, ClusterRole, RoleBinding and ClusterRoleBinding (everynode.api.validation.rbac),
with the field paths, error types and texts of ``pkg/apis/rbac/validation/validation.go``; cases
restate upstream's ``validation_test.go`` in our own terms.  Values are not compared (their Go
rendering of structs is not ours)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from everynode.api import rbac
from everynode.api.field_errors import FieldError, aggregate
from everynode.api.validation import rbac as v

Obj = dict[str, Any]
G = rbac.GROUP_NAME
SUPPORTED_KINDS = 'supported values: "ServiceAccount", "User", "Group"'


def _errors(errs: list[FieldError]) -> list[tuple[str, str, str]]:
    return [(e.field, e.type, e.detail) for e in errs]


def role() -> Obj:
    return {"apiVersion": f"{G}/v1", "kind": "Role", "metadata": {"name": "pod-reader", "namespace": "dev"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}


def cluster_role() -> Obj:
    return {"apiVersion": f"{G}/v1", "kind": "ClusterRole", "metadata": {"name": "system:node-exporter"},
            "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["nodes/metrics"]},
                      {"verbs": ["get"], "nonResourceURLs": ["/metrics", "/metrics/*"]}]}


def role_binding() -> Obj:
    return {"apiVersion": f"{G}/v1", "kind": "RoleBinding", "metadata": {"name": "read", "namespace": "dev"},
            "roleRef": {"apiGroup": G, "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "User", "apiGroup": G, "name": "alice"},
                         {"kind": "ServiceAccount", "name": "default"}]}


def cluster_role_binding() -> Obj:
    return {"apiVersion": f"{G}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "node-exporter"},
            "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "system:node-exporter"},
            "subjects": [{"kind": "ServiceAccount", "name": "node-exporter", "namespace": "monitoring"},
                         {"kind": "Group", "apiGroup": G, "name": "system:authenticated"}]}


def _with(make: Callable[[], Obj], mutate: Callable[[Obj], None]) -> Obj:
    obj = make()
    mutate(obj)
    return obj


def _rules(*rules: Obj) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        obj["rules"] = list(rules)
    return mutate


def test_valid_objects_pass() -> None:
    assert v.validate_role_create(role()) == []
    assert v.validate_cluster_role_create(cluster_role()) == []
    assert v.validate_role_binding_create(role_binding()) == []
    assert v.validate_cluster_role_binding_create(cluster_role_binding()) == []
    assert v.validate_role_create(_with(role, _rules())) == []  # no rules at all is fine


ROLE_CASES = [
    ("no verbs", _rules({"verbs": [], "apiGroups": [""], "resources": ["pods"]}),
     [("rules[0].verbs", "Required", "verbs must contain at least one value")]),
    ("no api groups", _rules({"verbs": ["get"], "resources": ["pods"]}),
     [("rules[0].apiGroups", "Required", "resource rules must supply at least one api group")]),
    ("no resources", _rules({"verbs": ["get"], "apiGroups": [""]}),
     [("rules[0].resources", "Required", "resource rules must supply at least one resource")]),
    ("nothing but verbs", _rules({"verbs": ["get"]}),
     [("rules[0].apiGroups", "Required", "resource rules must supply at least one api group"),
      ("rules[0].resources", "Required", "resource rules must supply at least one resource")]),
    ("non-resource URLs in a Role", _rules({"verbs": ["get"], "nonResourceURLs": ["/healthz"]}),
     [("rules[0].nonResourceURLs", "Invalid", "namespaced rules cannot apply to non-resource URLs")]),
    ("non-resource URLs with resources in a Role",
     _rules({"verbs": [], "nonResourceURLs": ["/x"], "resources": ["pods"]}),
     [("rules[0].verbs", "Required", "verbs must contain at least one value"),
      ("rules[0].nonResourceURLs", "Invalid", "namespaced rules cannot apply to non-resource URLs"),
      ("rules[0].nonResourceURLs", "Invalid", "rules cannot apply to both regular resources and non-resource URLs")]),
    ("second rule reported at its index", _rules({"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
                                                 {"verbs": ["get"], "apiGroups": [""]}),
     [("rules[1].resources", "Required", "resource rules must supply at least one resource")]),
    ("resource names with several resources are allowed",
     _rules({"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"], "resourceNames": ["a"]}), []),
    ("name with a slash", lambda o: o["metadata"].update(name="a/b"),
     [("metadata.name", "Invalid", "may not contain '/'")]),
    ("name with a percent", lambda o: o["metadata"].update(name="a%b"),
     [("metadata.name", "Invalid", "may not contain '%'")]),
    ("name ..", lambda o: o["metadata"].update(name=".."), [("metadata.name", "Invalid", "may not be '..'")]),
    ("colons and capitals are fine", lambda o: o["metadata"].update(name="System:Thing"), []),
    ("no namespace", lambda o: o["metadata"].pop("namespace"), [("metadata.namespace", "Required", "")]),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in ROLE_CASES], ids=[c[0] for c in ROLE_CASES])
def test_role(mutate: Callable[[Obj], None], expected: list[tuple[str, str, str]]) -> None:
    assert _errors(v.validate_role_create(_with(role, mutate))) == expected


def _aggregation(*selectors: Any) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        obj["aggregationRule"] = {"clusterRoleSelectors": list(selectors)}
    return mutate


CLUSTER_ROLE_CASES = [
    ("non-resource URLs are fine in a ClusterRole", _rules({"verbs": ["get"], "nonResourceURLs": ["*"]}), []),
    ("but not with resources", _rules({"verbs": ["get"], "nonResourceURLs": ["*"], "apiGroups": [""]}),
     [("rules[0].nonResourceURLs", "Invalid", "rules cannot apply to both regular resources and non-resource URLs")]),
    ("a namespace is forbidden", lambda o: o["metadata"].update(namespace="x"),
     [("metadata.namespace", "Forbidden", "not allowed on this type")]),
    ("aggregation with a selector", _aggregation({"matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"}}),
     []),
    ("aggregation without selectors", _aggregation(),
     [("aggregationRule.clusterRoleSelectors", "Required",
       "at least one clusterRoleSelector required if aggregationRule is non-nil")]),
    ("aggregation with a bad operator", _aggregation({"matchExpressions": [{"key": "a", "operator": "Near"}]}),
     [("aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator", "Invalid",
       "not a valid selector operator"),
      ("aggregationRule.clusterRoleSelectors[0]", "Invalid", "invalid label selector.")]),
    ("aggregation with a bad label key", _aggregation({"matchLabels": {"-a": "b"}}),
     [("aggregationRule.clusterRoleSelectors[0].matchLabels", "Invalid",
       "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
       "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
       "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"),
      ("aggregationRule.clusterRoleSelectors[0]", "Invalid", "invalid label selector.")]),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CLUSTER_ROLE_CASES],
                         ids=[c[0] for c in CLUSTER_ROLE_CASES])
def test_cluster_role(mutate: Callable[[Obj], None], expected: list[tuple[str, str, str]]) -> None:
    assert _errors(v.validate_cluster_role_create(_with(cluster_role, mutate))) == expected


BAD_VALUE = {"matchExpressions": [{"key": "a", "operator": "In", "values": ["-bad-"]}]}


def test_invalid_selector_values_are_refused_on_create_and_kept_on_update_if_already_there() -> None:
    new = _with(cluster_role, _aggregation(BAD_VALUE))
    created = _errors(v.validate_cluster_role_create(new))
    assert [e[:2] for e in created] == [
        ("aggregationRule.clusterRoleSelectors[0].matchExpressions[0].values[0]", "Invalid"),
        ("aggregationRule.clusterRoleSelectors[0]", "Invalid")]
    old_clean = _with(cluster_role, _aggregation({"matchLabels": {"a": "b"}}))
    assert [e[:2] for e in _errors(v.validate_cluster_role_update(new, old_clean))] == [e[:2] for e in created]
    # the old role had it already: only the conversion check remains, as upstream
    kept = _errors(v.validate_cluster_role_update(new, copy.deepcopy(new)))
    assert kept == [("aggregationRule.clusterRoleSelectors[0]", "Invalid", "invalid label selector.")]


def _subjects(*subjects: Obj) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        obj["subjects"] = list(subjects)
    return mutate


def _ref(**changes: str) -> Callable[[Obj], None]:
    def mutate(obj: Obj) -> None:
        obj["roleRef"].update(changes)
    return mutate


SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)

BINDING_CASES = [
    ("role ref to a ClusterRole", _ref(kind="ClusterRole"), []),
    ("role ref api group", _ref(apiGroup="rbac"),
     [("roleRef.apiGroup", "NotSupported", 'supported values: "rbac.authorization.k8s.io"')]),
    ("role ref kind", _ref(kind="Team"), [("roleRef.kind", "NotSupported", 'supported values: "Role", "ClusterRole"')]),
    ("role ref name missing", _ref(name=""), [("roleRef.name", "Required", "")]),
    ("role ref name with a slash", _ref(name="a/b"), [("roleRef.name", "Invalid", "may not contain '/'")]),
    ("subject without name", _subjects({"kind": "User", "apiGroup": G}), [("subjects[0].name", "Required", "")]),
    ("user subject without apiGroup", _subjects({"kind": "User", "name": "a"}),
     [("subjects[0].apiGroup", "NotSupported", 'supported values: "rbac.authorization.k8s.io"')]),
    ("group subject with another apiGroup", _subjects({"kind": "Group", "apiGroup": "example.com", "name": "g"}),
     [("subjects[0].apiGroup", "NotSupported", 'supported values: "rbac.authorization.k8s.io"')]),
    ("service account with apiGroup", _subjects({"kind": "ServiceAccount", "apiGroup": G, "name": "sa"}),
     [("subjects[0].apiGroup", "NotSupported", 'supported values: ""')]),
    ("service account with a bad name", _subjects({"kind": "ServiceAccount", "name": "Node_Exporter"}),
     [("subjects[0].name", "Invalid", SUBDOMAIN_MSG)]),
    ("service account without namespace is fine in a RoleBinding", _subjects({"kind": "ServiceAccount",
                                                                             "name": "sa"}), []),
    ("unknown subject kind", _subjects({}, {"kind": "Robot", "name": "r2"}),
     [("subjects[0].name", "Required", ""), ("subjects[0].kind", "NotSupported", SUPPORTED_KINDS),
      ("subjects[1].kind", "NotSupported", SUPPORTED_KINDS)]),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BINDING_CASES], ids=[c[0] for c in BINDING_CASES])
def test_role_binding(mutate: Callable[[Obj], None], expected: list[tuple[str, str, str]]) -> None:
    assert _errors(v.validate_role_binding_create(_with(role_binding, mutate))) == expected


def test_cluster_role_binding_rules() -> None:
    got = v.validate_cluster_role_binding_create(_with(cluster_role_binding, _ref(kind="Role")))
    assert _errors(got) == [("roleRef.kind", "NotSupported", 'supported values: "ClusterRole"')]
    got = v.validate_cluster_role_binding_create(
        _with(cluster_role_binding, _subjects({"kind": "ServiceAccount", "name": "node-exporter"})))
    assert _errors(got) == [("subjects[0].namespace", "Required", "")]


def test_role_ref_is_immutable() -> None:
    old = role_binding()
    new = _with(role_binding, _ref(name="other"))
    errs = v.validate_role_binding_update(new, old)
    assert _errors(errs) == [("roleRef", "Invalid", "cannot change roleRef")]
    assert aggregate(errs).endswith("cannot change roleRef")
    # subjects may change freely
    assert v.validate_role_binding_update(_with(role_binding, _subjects()), old) == []
    old_c = cluster_role_binding()
    assert _errors(v.validate_cluster_role_binding_update(_with(cluster_role_binding, _ref(name="view")), old_c)) == [
        ("roleRef", "Invalid", "cannot change roleRef")]
    assert v.validate_cluster_role_binding_update(cluster_role_binding(), old_c) == []


def test_updates_check_metadata_too() -> None:
    old = role()
    new = _with(role, lambda o: o["metadata"].update(name="renamed"))
    assert ("metadata.name", "Invalid", "field is immutable") in _errors(v.validate_role_update(new, old))
    new_cr = _with(cluster_role, lambda o: o["metadata"].update(uid="x"))
    assert _errors(v.validate_cluster_role_update(new_cr, cluster_role())) == [
        ("metadata.uid", "Invalid", "field is immutable")]


def test_defaulted_bindings_validate() -> None:
    b = role_binding()
    del b["roleRef"]["apiGroup"]
    del b["subjects"][0]["apiGroup"]
    assert len(v.validate_role_binding_create(b)) == 2
    rbac.default_binding(b)
    assert v.validate_role_binding_create(b) == []
