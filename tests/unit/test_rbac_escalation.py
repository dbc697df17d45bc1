"""RBAC's escalation prevention (everynode.api.rbac_escalation): ``Covers`` with cases restated
from upstream's ``policy_comparator_test.go``, ``CompactRules``, and the policy-based storages'
decisions for Roles, ClusterRoles and bindings, with kube-apiserver's refusal texts."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api import rbac, rbac_bootstrap
from everynode.api import rbac_escalation as esc
from everynode.api.rbac import RBACIndex, UserInfo
from tests.support.rbac import rule as r

Obj = dict[str, Any]
G = rbac.GROUP_NAME


COVERS = [
    # (description, owner rules, servant rules, covered, missing)
    ("exact match", [r("get", "core", "pods")], [r("get", "core", "pods")], True, []),
    ("star verb", [r("*", "core", "pods")], [r("get,delete", "core", "pods")], True, []),
    ("star group", [r("get", "*", "pods")], [r("get", "apps,batch", "pods")], True, []),
    ("star resource", [r("get", "core", "*")], [r("get", "core", "pods,pods/log")], True, []),
    ("split across owner rules", [r("get", "core", "pods"), r("list", "core", "pods")],
     [r("get,list", "core", "pods")], True, []),
    ("missing verb", [r("get", "core", "pods")], [r("get,delete", "core", "pods")], False,
     [{"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]}]),
    ("*/subresource covers any resource's", [r("get", "core", "*/scale")], [r("get", "core", "deployments/scale")],
     True, []),
    ("a resource does not cover its subresource", [r("get", "core", "pods")], [r("get", "core", "pods/status")],
     False, [{"apiGroups": [""], "resources": ["pods/status"], "verbs": ["get"]}]),
    ("named owner does not cover unnamed", [r("get", "core", "configmaps", names="a")],
     [r("get", "core", "configmaps")], False, [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]),
    ("named owner covers that name", [r("get", "core", "configmaps", names="a,b")],
     [r("get", "core", "configmaps", names="b")], True, []),
    ("unnamed owner covers every name", [r("get", "core", "configmaps")],
     [r("get", "core", "configmaps", names="x,y")], True, []),
    ("URL prefix", [r("get", urls="/api/*")], [r("get", urls="/api/v1,/api/")], True, []),
    ("URL prefix is not the bare path", [r("get", urls="/api/*")], [r("get", urls="/api")], False,
     [{"nonResourceURLs": ["/api"], "verbs": ["get"]}]),
    ("resource rules do not cover URLs", [r("*", "*", "*")], [r("get", urls="/healthz")], False,
     [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
    ("full authority covers everything", list(esc.FULL_AUTHORITY), [r("escalate,bind", "*", "*"), r("get", urls="/x")],
     True, []),
    ("nothing covers nothing", [], [], True, []),
]


@pytest.mark.parametrize(("owner", "servant", "ok", "missing"), [c[1:] for c in COVERS], ids=[c[0] for c in COVERS])
def test_covers(owner: list[Obj], servant: list[Obj], ok: bool, missing: list[Obj]) -> None:
    assert esc.covers(owner, servant) == (ok, missing)


def test_breakdown_and_compaction() -> None:
    parts = esc.breakdown_rule(r("get,list", "core,apps", "pods", names="a"))
    assert len(parts) == 4 and parts[0] == {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"],
                                            "resourceNames": ["a"]}
    compacted = esc.compact_rules(esc.breakdown_rule(r("get,list", "core", "pods,secrets")) + [r("get", urls="/x")])
    assert compacted == [{"verbs": ["get"], "nonResourceURLs": ["/x"]},
                         {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]},
                         {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]}]
    assert esc.compact_string(compacted[1]) == '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}'
    assert esc.compact_string(r("get", "core", "cm", names="a")) == (
        '{APIGroups:[""], Resources:["cm"], ResourceNames:["a"], Verbs:["get"]}')
    assert esc.compact_string(compacted[0]) == '{NonResourceURLs:["/x"], Verbs:["get"]}'


OPERATOR = rbac.service_account_user("op", "op")
OP_GROUPS = '["system:serviceaccounts" "system:serviceaccounts:op" "system:authenticated"]'


def cluster() -> RBACIndex:
    idx = RBACIndex.from_objects(cluster_roles=rbac_bootstrap.cluster_roles(aggregated=True),
                                 cluster_role_bindings=rbac_bootstrap.cluster_role_bindings())
    idx.upsert("Role", {"metadata": {"name": "op", "namespace": "apps"},
                        "rules": [r("create,update", G, "roles,rolebindings"), r("get,list", "core", "pods")]})
    idx.upsert("RoleBinding", {"metadata": {"name": "op", "namespace": "apps"},
                               "roleRef": {"apiGroup": G, "kind": "Role", "name": "op"},
                               "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "op"}]})
    return idx


def role(*rules: Obj, name: str = "r") -> Obj:
    return {"kind": "Role", "metadata": {"name": name, "namespace": "apps"}, "rules": list(rules)}


def _write_role(who: UserInfo, obj: Obj, idx: RBACIndex, namespace: str = "apps", old: Obj | None = None) -> Any:
    return esc.role_write_forbidden(who, obj, namespace=namespace, source=idx,
                                    authorizer=lambda a: rbac.authorize(a, idx), old=old)


def test_a_role_within_ones_own_rights_may_be_written() -> None:
    assert _write_role(OPERATOR, role(r("get", "core", "pods")), cluster()) is None


def test_a_broader_role_is_refused_with_the_missing_rules() -> None:
    err = _write_role(OPERATOR, role(r("get,delete,patch", "core", "pods"), r("get", "core", "secrets")), cluster())
    assert err is not None and err.code == 403 and err.reason == "Forbidden"
    assert err.message == (
        'roles.rbac.authorization.k8s.io "r" is forbidden: user "system:serviceaccount:op:op" (groups='
        f'{OP_GROUPS}) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["pods"], Verbs:["delete" "patch"]}\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')
    assert err.status["details"] == {"name": "r", "group": G, "kind": "roles"}


def test_escalate_or_system_masters_lift_the_check() -> None:
    idx = cluster()
    broad = role(r("*", "*", "*"))
    idx.upsert("Role", {"metadata": {"name": "op", "namespace": "apps"},
                        "rules": [r("create,escalate", G, "roles")]})
    assert _write_role(OPERATOR, broad, idx) is None
    admin = UserInfo("kubernetes-admin", ("system:masters", "system:authenticated"))
    assert _write_role(admin, broad, cluster()) is None


def test_an_update_of_gc_fields_only_is_not_checked() -> None:
    old = role(r("*", "*", "*"))
    new = role(r("*", "*", "*"))
    new["metadata"]["finalizers"] = ["example.com/x"]
    assert _write_role(OPERATOR, new, cluster(), old=old) is None
    new["rules"].append(r("get", "core", "pods"))
    assert _write_role(OPERATOR, new, cluster(), old=old) is not None


def test_aggregation_needs_full_authority() -> None:
    idx = cluster()
    ops = UserInfo("ops", ("system:authenticated",))
    idx.upsert("ClusterRole", {"metadata": {"name": "role-writer"}, "rules": [r("create", G, "clusterroles")]})
    idx.upsert("ClusterRoleBinding", {"metadata": {"name": "ops"},
                                      "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "role-writer"},
                                      "subjects": [{"kind": "User", "apiGroup": G, "name": "ops"}]})
    aggregating = {"kind": "ClusterRole", "metadata": {"name": "monitoring"},
                   "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]}, "rules": []}
    err = _write_role(ops, aggregating, idx, namespace="")
    assert err is not None and err.message == (
        'clusterroles.rbac.authorization.k8s.io "monitoring" is forbidden: must have cluster-admin privileges to '
        'use the aggregationRule')
    plain = {"kind": "ClusterRole", "metadata": {"name": "monitoring"}, "rules": [r("create", G, "clusterroles")]}
    assert _write_role(ops, plain, idx, namespace="") is None


def binding(ref_kind: str, ref_name: str, name: str = "b") -> Obj:
    return {"kind": "RoleBinding", "metadata": {"name": name, "namespace": "apps"},
            "roleRef": {"apiGroup": G, "kind": ref_kind, "name": ref_name},
            "subjects": [{"kind": "User", "apiGroup": G, "name": "someone"}]}


def _write_binding(who: UserInfo, obj: Obj, idx: RBACIndex, namespace: str = "apps") -> Any:
    return esc.binding_write_forbidden(who, obj, namespace=namespace, source=idx,
                                       authorizer=lambda a: rbac.authorize(a, idx))


def test_bindings() -> None:
    idx = cluster()
    idx.upsert("Role", {"metadata": {"name": "pods-reader", "namespace": "apps"}, "rules": [r("get", "core", "pods")]})
    # the operator holds every rule of pods-reader: it may bind it
    assert _write_binding(OPERATOR, binding("Role", "pods-reader"), idx) is None
    # but not "edit", which grants far more
    err = _write_binding(OPERATOR, binding("ClusterRole", "edit"), idx)
    assert err is not None and err.message.startswith(
        'rolebindings.rbac.authorization.k8s.io "b" is forbidden: user "system:serviceaccount:op:op" (groups='
        f'{OP_GROUPS}) is attempting to grant RBAC permissions not currently held:\n')
    # unless it may bind that ClusterRole
    idx.upsert("Role", {"metadata": {"name": "op", "namespace": "apps"},
                        "rules": [r("create", G, "rolebindings"), r("bind", G, "clusterroles", names="edit")]})
    assert _write_binding(OPERATOR, binding("ClusterRole", "edit"), idx) is None
    err = _write_binding(OPERATOR, binding("ClusterRole", "nope"), idx)
    assert err is not None and err.message == (
        'rolebindings.rbac.authorization.k8s.io "b" is forbidden: clusterrole.rbac.authorization.k8s.io "nope" '
        'not found')


def test_resolution_errors_are_appended() -> None:
    idx = cluster()
    idx.upsert("RoleBinding", {"metadata": {"name": "ghost", "namespace": "apps"},
                               "roleRef": {"apiGroup": G, "kind": "Role", "name": "gone"},
                               "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "op"}]})
    text = esc.confirm_no_escalation(OPERATOR, "apps", [r("delete", "core", "pods")], idx)
    assert text.endswith('{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}; resolution errors: '
                         '[role.rbac.authorization.k8s.io "gone" not found]')
