"""ClusterRole aggregation (everynode.api.rbac_aggregation) and the bootstrap policy
(everynode.api.rbac_bootstrap), with the cases of upstream's
``clusterroleaggregation_controller_test.go`` (``TestSyncClusterRole``) restated."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api import rbac, rbac_aggregation, rbac_bootstrap
from everynode.api.rbac import Attributes, RBACIndex, UserInfo
from everynode.api.selectors import SelectorError

Obj = dict[str, Any]


def role(name: str, *rules: Obj, labels: dict[str, str] | None = None,
         selectors: list[Obj] | None = None) -> Obj:
    r: Obj = {"kind": "ClusterRole", "metadata": {"name": name, "labels": labels or {}}, "rules": list(rules)}
    if selectors is not None:
        r["aggregationRule"] = {"clusterRoleSelectors": selectors}
    return r


def rule(*verbs: str, resources: tuple[str, ...] = ("pods",)) -> Obj:
    return {"verbs": list(verbs), "apiGroups": [""], "resources": list(resources)}


FOO = {"matchLabels": {"foo": "bar"}}
BAR = {"matchLabels": {"foo": "baz"}}

SYNC_CASES = [
    # (description, role to sync, all roles, expected rules or None)
    ("no aggregation rule", role("a", rule("get")), [role("x", rule("list"), labels={"foo": "bar"})], None),
    ("nothing selected", role("a", selectors=[FOO]), [role("x", rule("list"))], []),
    ("one role selected", role("a", selectors=[FOO]),
     [role("x", rule("list"), labels={"foo": "bar"}), role("y", rule("watch"))], [rule("list")]),
    ("selected roles by name, then their rules in order", role("a", selectors=[FOO]),
     [role("z", rule("delete"), labels={"foo": "bar"}),
      role("m", rule("get"), rule("list"), labels={"foo": "bar"})],
     [rule("get"), rule("list"), rule("delete")]),
    ("selectors in order, each in name order", role("a", selectors=[BAR, FOO]),
     [role("b", rule("get"), labels={"foo": "bar"}), role("c", rule("list"), labels={"foo": "baz"})],
     [rule("list"), rule("get")]),
    ("a rule granted twice is kept once", role("a", selectors=[FOO, BAR]),
     [role("b", rule("get"), labels={"foo": "bar"}), role("c", rule("get"), rule("list"), labels={"foo": "baz"})],
     [rule("get"), rule("list")]),
    ("an absent list equals an empty one", role("a", selectors=[FOO]),
     [role("b", {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": []},
           labels={"foo": "bar"}),
      role("c", rule("get"), labels={"foo": "bar"})],
     [rule("get")]),
    ("the role's own rules are replaced", role("a", rule("escalate"), selectors=[FOO]),
     [role("b", rule("get"), labels={"foo": "bar"})], [rule("get")]),
    ("the role never aggregates itself", role("a", rule("get"), labels={"foo": "bar"}, selectors=[FOO]),
     [role("a", rule("get"), labels={"foo": "bar"})], []),
    ("an empty selector selects every role", role("a", selectors=[{}]),
     [role("b", rule("get")), role("c", rule("list"), labels={"x": "y"})], [rule("get"), rule("list")]),
    ("match expressions", role("a", selectors=[{"matchExpressions": [{"key": "tier", "operator": "In",
                                                                     "values": ["x", "y"]}]}]),
     [role("b", rule("get"), labels={"tier": "y"}), role("c", rule("list"), labels={"tier": "z"})], [rule("get")]),
    ("no selectors at all", role("a", rule("get"), selectors=[]), [role("b", rule("list"))], []),
]


@pytest.mark.parametrize(("target", "roles", "expected"), [c[1:] for c in SYNC_CASES],
                         ids=[c[0] for c in SYNC_CASES])
def test_aggregated_rules(target: Obj, roles: list[Obj], expected: list[Obj] | None) -> None:
    assert rbac_aggregation.aggregated_rules(target, [target, *roles]) == expected


def test_written_rules_carry_only_non_empty_fields() -> None:
    source = role("b", {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": [],
                        "nonResourceURLs": None}, labels={"foo": "bar"})
    got = rbac_aggregation.aggregated_rules(role("a", selectors=[FOO]), [source])
    assert got == [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]


def test_an_invalid_selector_is_an_error() -> None:
    bad = role("a", selectors=[{"matchExpressions": [{"key": "x", "operator": "Near"}]}])
    with pytest.raises(SelectorError):
        rbac_aggregation.aggregated_rules(bad, [role("b", rule("get"))])


def test_rules_equal_is_semantic() -> None:
    assert rbac_aggregation.rules_equal(None, [])
    assert rbac_aggregation.rules_equal([{"verbs": ["get"], "resourceNames": []}], [{"verbs": ["get"]}])
    assert not rbac_aggregation.rules_equal([rule("get"), rule("list")], [rule("list"), rule("get")])


def test_chains_converge() -> None:
    roles = [role("top", selectors=[{"matchLabels": {"to": "top"}}]),
             role("mid", labels={"to": "top"}, selectors=[{"matchLabels": {"to": "mid"}}]),
             role("leaf", rule("get"), labels={"to": "mid"}),
             role("extra", rule("list"), labels={"to": "top"})]
    by_name = {r["metadata"]["name"]: r for r in rbac_aggregation.aggregate_until_stable(roles)}
    assert by_name["mid"]["rules"] == [rule("get")]
    assert by_name["top"]["rules"] == [rule("list"), rule("get")]  # "extra" < "mid" by name
    assert by_name["leaf"] is roles[2]  # unchanged roles are handed back as they were


# --- bootstrap policy ---------------------------------------------------------------------------

def test_bootstrap_objects_are_labelled_and_annotated() -> None:
    objs = rbac_bootstrap.cluster_roles() + rbac_bootstrap.cluster_role_bindings()
    for obj in objs:
        md = obj["metadata"]
        assert md["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults", md["name"]
        assert md["annotations"] == {"rbac.authorization.kubernetes.io/autoupdate": "true"}
        assert obj["apiVersion"] == "rbac.authorization.k8s.io/v1"
    names = [r["metadata"]["name"] for r in rbac_bootstrap.cluster_roles()]
    assert names[:4] == ["cluster-admin", "system:discovery", "system:basic-user", "system:public-info-viewer"]
    assert {"admin", "edit", "view"} <= set(names)


def test_rule_builder_sorts_and_deduplicates_like_new_rule() -> None:
    assert rbac_bootstrap.rule(("watch", "get", "get"), groups=("apps", ""), resources=("b", "a")) == {
        "verbs": ["get", "watch"], "apiGroups": ["", "apps"], "resources": ["a", "b"]}
    assert rbac_bootstrap.rule("get", urls=("/b", "/a")) == {"verbs": ["get"], "nonResourceURLs": ["/a", "/b"]}


def test_admin_edit_view_are_aggregated_by_their_labels() -> None:
    fresh = {r["metadata"]["name"]: r for r in rbac_bootstrap.cluster_roles()}
    assert fresh["admin"]["rules"] == [] and fresh["view"]["rules"] == []
    assert fresh["edit"]["metadata"]["labels"][rbac_bootstrap.AGGREGATE_TO_ADMIN] == "true"
    assert fresh["view"]["metadata"]["labels"][rbac_bootstrap.AGGREGATE_TO_EDIT] == "true"
    assert fresh["admin"]["aggregationRule"] == {
        "clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]}
    roles = {r["metadata"]["name"]: r for r in rbac_bootstrap.cluster_roles(aggregated=True)}
    view, edit, admin = roles["view"]["rules"], roles["edit"]["rules"], roles["admin"]["rules"]
    assert view == fresh["system:aggregate-to-view"]["rules"]
    # selected roles are taken by name: "system:aggregate-to-edit" < "view", "edit" < "system:..."
    assert edit == fresh["system:aggregate-to-edit"]["rules"] + view
    assert admin == edit + fresh["system:aggregate-to-admin"]["rules"]


def _fresh_cluster() -> RBACIndex:
    return RBACIndex.from_objects(cluster_roles=rbac_bootstrap.cluster_roles(aggregated=True),
                                  cluster_role_bindings=rbac_bootstrap.cluster_role_bindings())


CAN_I = [
    # (description, user, attributes builder, allowed)
    ("any authenticated user may ask can-i", rbac.service_account_user("default", "x"),
     lambda u: Attributes.for_resource(u, "create", "selfsubjectaccessreviews", api_group="authorization.k8s.io"),
     True),
    ("... and list its rules", rbac.service_account_user("default", "x"),
     lambda u: Attributes.for_resource(u, "create", "selfsubjectrulesreviews", api_group="authorization.k8s.io"),
     True),
    ("... and run whoami", rbac.service_account_user("default", "x"),
     lambda u: Attributes.for_resource(u, "create", "selfsubjectreviews", api_group="authentication.k8s.io"),
     True),
    ("... and read discovery", rbac.service_account_user("default", "x"),
     lambda u: Attributes.for_path(u, "get", "/apis/apps/v1"), True),
    ("... but not list pods", rbac.service_account_user("default", "x"),
     lambda u: Attributes.for_resource(u, "list", "pods", namespace="default"), False),
    ("the unauthenticated may read /version", UserInfo("system:anonymous", ("system:unauthenticated",)),
     lambda u: Attributes.for_path(u, "get", "/version"), True),
    ("... but not discovery", UserInfo("system:anonymous", ("system:unauthenticated",)),
     lambda u: Attributes.for_path(u, "get", "/api"), False),
]


@pytest.mark.parametrize(("who", "build", "allowed"), [c[1:] for c in CAN_I], ids=[c[0] for c in CAN_I])
def test_fresh_cluster_defaults(who: UserInfo, build: Any, allowed: bool) -> None:
    assert rbac.authorize(build(who), _fresh_cluster()).allowed is allowed


def test_system_masters_is_cluster_admin_by_binding_too() -> None:
    admin = UserInfo("kubernetes-admin", ("system:masters", "system:authenticated"))
    got = rbac.authorize_rbac(Attributes.for_resource(admin, "delete", "nodes", name="worker-1"), _fresh_cluster())
    assert got.reason == ('RBAC: allowed by ClusterRoleBinding "cluster-admin" of ClusterRole "cluster-admin" '
                          'to Group "system:masters"')


def test_edit_and_view_through_a_role_binding() -> None:
    idx = _fresh_cluster()
    for obj in ({"kind": "RoleBinding", "metadata": {"name": "dev-edit", "namespace": "dev"},
                 "roleRef": {"apiGroup": rbac.GROUP_NAME, "kind": "ClusterRole", "name": "edit"},
                 "subjects": [{"kind": "User", "apiGroup": rbac.GROUP_NAME, "name": "dev"}]},
                {"kind": "RoleBinding", "metadata": {"name": "dev-view", "namespace": "dev"},
                 "roleRef": {"apiGroup": rbac.GROUP_NAME, "kind": "ClusterRole", "name": "view"},
                 "subjects": [{"kind": "User", "apiGroup": rbac.GROUP_NAME, "name": "viewer"}]}):
        idx.upsert("RoleBinding", obj)
    dev, viewer = UserInfo("dev", ("system:authenticated",)), UserInfo("viewer", ("system:authenticated",))

    def can(u: UserInfo, verb: str, resource: str, group: str = "", sub: str = "") -> bool:
        attrs = Attributes.for_resource(u, verb, resource, api_group=group, subresource=sub, namespace="dev")
        return rbac.authorize(attrs, idx).allowed

    assert can(dev, "create", "daemonsets", "apps") and can(dev, "patch", "deployments", "apps", "scale")
    assert can(dev, "get", "secrets") and can(dev, "create", "pods", sub="eviction")
    assert not can(dev, "create", "rolebindings", rbac.GROUP_NAME)  # admin only
    assert not can(dev, "update", "daemonsets", "apps", "status")
    assert can(viewer, "watch", "daemonsets", "apps") and can(viewer, "get", "pods", sub="log")
    assert not can(viewer, "get", "secrets") and not can(viewer, "delete", "pods")
