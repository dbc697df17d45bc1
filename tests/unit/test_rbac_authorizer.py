"""The RBAC decision (everynode.api.rbac): rule matching, subjects, bindings, reasons, rules walk.

The tables re-state the cases of upstream's ``plugin/pkg/auth/authorizer/rbac/rbac_test.go``
(``TestAuthorizer``, ``TestRuleMatches``) and ``pkg/registry/rbac/validation/rule_test.go``
(``TestAppliesTo``, ``TestDefaultRuleResolver``) in our own terms, plus the reason strings
kube-apiserver returns.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from everynode.api import rbac
from everynode.api.rbac import Attributes, Decision, RBACIndex, Rule, UserInfo
from tests.support.rbac import rule

Obj = dict[str, Any]
G = rbac.GROUP_NAME


def cluster_role(name: str, *rules: Obj) -> Obj:
    return {"kind": "ClusterRole", "metadata": {"name": name}, "rules": list(rules)}


def role(namespace: str, name: str, *rules: Obj) -> Obj:
    return {"kind": "Role", "metadata": {"name": name, "namespace": namespace}, "rules": list(rules)}


def subject(text: str) -> Obj:
    """``User:alice``, ``Group:devs``, ``ServiceAccount:ns:name`` or ``ServiceAccount::name``."""
    kind, _, rest = text.partition(":")
    if kind == "ServiceAccount":
        ns, _, name = rest.partition(":")
        s: Obj = {"kind": kind, "name": name}
        if ns:
            s["namespace"] = ns
        return s
    return {"kind": kind, "apiGroup": G, "name": rest}


def cluster_binding(name: str, role_name: str, *subjects: str) -> Obj:
    return {"kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": role_name},
            "subjects": [subject(s) for s in subjects]}


def binding(namespace: str, name: str, ref_kind: str, role_name: str, *subjects: str) -> Obj:
    return {"kind": "RoleBinding", "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": G, "kind": ref_kind, "name": role_name},
            "subjects": [subject(s) for s in subjects]}


def user(name: str = "", groups: str = "") -> UserInfo:
    return UserInfo(name, tuple(g for g in groups.split(",") if g))


def res(who: UserInfo, verb: str, resource: str, subresource: str = "", namespace: str = "",
        name: str = "", group: str = "") -> Attributes:
    return Attributes.for_resource(who, verb, resource, subresource=subresource, namespace=namespace,
                                   name=name, api_group=group)


def index(*objs: Obj) -> RBACIndex:
    idx = RBACIndex()
    for obj in objs:
        idx.upsert(obj["kind"], obj)
    return idx


# --- single-rule matching (RuleAllows) ----------------------------------------------------------

ALICE = user("alice")

RULE_CASES = [
    # (description, rule, attributes, allowed)
    ("exact verb, group, resource", rule("get", "core", "pods"), res(ALICE, "get", "pods"), True),
    ("verb is case-sensitive", rule("get", "core", "pods"), res(ALICE, "GET", "pods"), False),
    ("resource is case-sensitive", rule("get", "core", "pods"), res(ALICE, "get", "Pods"), False),
    ("star verb", rule("*", "core", "pods"), res(ALICE, "deletecollection", "pods"), True),
    ("star group", rule("get", "*", "pods"), res(ALICE, "get", "pods", group="metrics.k8s.io"), True),
    ("wrong group", rule("get", "apps", "pods"), res(ALICE, "get", "pods"), False),
    ("empty group list matches nothing", rule("get", "", "pods"), res(ALICE, "get", "pods"), False),
    ("star resource", rule("get", "core", "*"), res(ALICE, "get", "anything"), True),
    ("star resource covers subresources", rule("get", "core", "*"), res(ALICE, "get", "pods", "log"), True),
    ("resource does not cover its subresource", rule("get", "core", "pods"),
     res(ALICE, "get", "pods", "status"), False),
    ("resource/subresource", rule("get", "core", "pods/status"), res(ALICE, "get", "pods", "status"), True),
    ("resource/subresource does not cover the resource", rule("get", "core", "pods/status"),
     res(ALICE, "get", "pods"), False),
    ("*/subresource", rule("get", "core", "*/scale"), res(ALICE, "get", "deployments", "scale"), True),
    ("*/subresource, other subresource", rule("get", "core", "*/scale"),
     res(ALICE, "get", "deployments", "status"), False),
    ("*/subresource does not cover resources", rule("get", "core", "*/scale"),
     res(ALICE, "get", "deployments"), False),
    ("*/subresource needs the whole subresource", rule("get", "core", "*/scale"),
     res(ALICE, "get", "pods", "cale"), False),
    ("one of several resources", rule("get,list", "core,apps", "pods,deployments"),
     res(ALICE, "list", "deployments", group="apps"), True),
    ("resourceNames: named", rule("get", "core", "configmaps", names="a,b"),
     res(ALICE, "get", "configmaps", name="b"), True),
    ("resourceNames: other name", rule("get", "core", "configmaps", names="a,b"),
     res(ALICE, "get", "configmaps", name="c"), False),
    ("resourceNames: a list has no name", rule("list", "core", "configmaps", names="a"),
     res(ALICE, "list", "configmaps"), False),
    ("no resourceNames: any name", rule("get", "core", "configmaps"),
     res(ALICE, "get", "configmaps", name="anything"), True),
    ("a resource rule does not allow a path", rule("get", "*", "*"),
     Attributes.for_path(ALICE, "get", "/healthz"), False),
    ("exact URL", rule("get", urls="/healthz"), Attributes.for_path(ALICE, "get", "/healthz"), True),
    ("exact URL, other path", rule("get", urls="/healthz"),
     Attributes.for_path(ALICE, "get", "/healthz/etcd"), False),
    ("star URL", rule("get", urls="*"), Attributes.for_path(ALICE, "get", "/anything"), True),
    ("URL prefix", rule("get", urls="/apis/*"), Attributes.for_path(ALICE, "get", "/apis/apps/v1"), True),
    ("URL prefix includes the bare prefix", rule("get", urls="/apis/*"),
     Attributes.for_path(ALICE, "get", "/apis/"), True),
    ("URL prefix without the slash", rule("get", urls="/apis/*"),
     Attributes.for_path(ALICE, "get", "/apis"), False),
    ("URL prefix without a slash is a string prefix", rule("get", urls="/api*"),
     Attributes.for_path(ALICE, "get", "/apis/x"), True),
    ("several trailing stars are one prefix", rule("get", urls="/logs**"),
     Attributes.for_path(ALICE, "get", "/logs/x"), True),
    ("URL rule, wrong verb", rule("get", urls="/metrics"), Attributes.for_path(ALICE, "post", "/metrics"), False),
    ("a URL rule does not allow resources", rule("*", urls="*"), res(ALICE, "get", "pods"), False),
]


@pytest.mark.parametrize(("rule_obj", "attrs", "allowed"), [c[1:] for c in RULE_CASES],
                         ids=[c[0] for c in RULE_CASES])
def test_rule_allows(rule_obj: Obj, attrs: Attributes, allowed: bool) -> None:
    assert rbac.rule_allows(attrs, rbac.compile_rule(rule_obj)) is allowed


def test_rules_allow_any_of_several() -> None:
    rules = rbac.compile_rules([rule("get", "core", "pods"), rule("list", "core", "nodes"), "junk"])
    assert len(rules) == 2
    assert rbac.rules_allow(res(ALICE, "list", "nodes"), rules)
    assert not rbac.rules_allow(res(ALICE, "list", "pods"), rules)


# --- the authorizer over bindings (TestAuthorizer) ----------------------------------------------

def _check(idx: RBACIndex, should_pass: Iterable[Attributes], should_fail: Iterable[Attributes]) -> None:
    for attrs in should_pass:
        assert rbac.authorize_rbac(attrs, idx).allowed, attrs
    for attrs in should_fail:
        got = rbac.authorize_rbac(attrs, idx)
        assert got.decision is Decision.NO_OPINION, attrs


def test_role_binding_to_cluster_role_grants_only_in_its_namespace() -> None:
    idx = index(cluster_role("admin", rule("*", "*", "*", urls="*")),
                binding("ns1", "admin", "ClusterRole", "admin", "User:admin", "Group:admins"))
    _check(idx,
           should_pass=[res(user("admin"), "get", "Pods", namespace="ns1"),
                        res(user("admin"), "watch", "Pods", namespace="ns1"),
                        res(user("admin", "group1"), "watch", "Foobar", namespace="ns1"),
                        res(user("joe", "admins"), "watch", "Foobar", namespace="ns1"),
                        res(user("joe", "group1,admins"), "watch", "Foobar", namespace="ns1")],
           should_fail=[res(user("admin"), "GET", "Pods", namespace="ns2"),
                        res(user("admin"), "GET", "Nodes"),
                        res(user("admin", "admins"), "GET", "Pods", namespace="ns2"),
                        res(user("admin", "admins"), "GET", "Nodes"),
                        # a RoleBinding's non-resource rules never apply: paths have no namespace
                        Attributes.for_path(user("admin"), "get", "/healthz")])


def test_non_resource_urls() -> None:
    idx = index(cluster_role("non-resource-url-getter", rule("get", urls="/apis")),
                cluster_role("non-resource-url", rule("*", urls="/apis")),
                cluster_role("non-resource-url-prefix", rule("get", urls="/apis/*")),
                cluster_binding("non-resource-url-getter", "non-resource-url-getter", "User:foo", "Group:bar"),
                cluster_binding("non-resource-url", "non-resource-url", "User:admin", "Group:admin"),
                cluster_binding("non-resource-url-prefix", "non-resource-url-prefix", "User:prefixed",
                                "Group:prefixed"))

    def path(who: UserInfo, verb: str, p: str) -> Attributes:
        return Attributes.for_path(who, verb, p)

    _check(idx,
           should_pass=[path(user("foo"), "get", "/apis"), path(user("", "bar"), "get", "/apis"),
                        path(user("admin"), "get", "/apis"), path(user("", "admin"), "get", "/apis"),
                        path(user("admin"), "watch", "/apis"), path(user("", "admin"), "watch", "/apis"),
                        path(user("prefixed"), "get", "/apis/v1"),
                        path(user("", "prefixed"), "get", "/apis/v1"),
                        path(user("prefixed"), "get", "/apis/v1/foobar"),
                        path(user("", "prefixed"), "get", "/apis/v1/foobar")],
           should_fail=[path(user("foo"), "watch", "/apis"), path(user("", "bar"), "watch", "/apis"),
                        path(user("foo"), "get", "/api/v1"), path(user("", "bar"), "get", "/api/v1"),
                        path(user("admin"), "get", "/api/v1"), path(user("", "admin"), "get", "/api/v1"),
                        path(user("prefixed"), "get", "/api/v1"),
                        path(user("", "prefixed"), "get", "/api/v1")])


def test_subresources_through_bindings() -> None:
    idx = index(cluster_role("pods-only", rule("*", "*", "pods")),
                cluster_role("status-and-scale", rule("*", "*", "pods/status"), rule("*", "*", "*/scale")),
                binding("ns1", "a", "ClusterRole", "pods-only", "User:a"),
                binding("ns1", "b", "ClusterRole", "status-and-scale", "User:b"))
    a, b = user("a"), user("b")
    _check(idx,
           should_pass=[res(a, "get", "pods", namespace="ns1"),
                        res(b, "get", "pods", "status", namespace="ns1"),
                        res(b, "get", "pods", "scale", namespace="ns1"),
                        res(b, "get", "deployments", "scale", namespace="ns1"),
                        res(b, "get", "anything", "scale", namespace="ns1")],
           should_fail=[res(a, "get", "pods", "status", namespace="ns1"),
                        res(b, "get", "pods", namespace="ns1"),
                        res(b, "get", "deployments", namespace="ns1"),
                        res(b, "get", "pods", "foo", namespace="ns1")])


def test_cluster_role_binding_grants_in_every_namespace_and_cluster_wide() -> None:
    idx = index(cluster_role("reader", rule("get,list,watch", "core", "pods,nodes")),
                cluster_binding("read", "reader", "Group:readers"))
    r = user("r", "readers")
    _check(idx,
           should_pass=[res(r, "list", "pods"), res(r, "list", "pods", namespace="a"),
                        res(r, "get", "nodes", name="worker-1")],
           should_fail=[res(r, "delete", "pods", namespace="a"), res(user("r"), "list", "pods")])


def test_role_binding_to_a_role_reads_the_role_of_its_own_namespace() -> None:
    idx = index(role("a", "pod-reader", rule("get", "core", "pods")),
                role("b", "pod-reader", rule("get", "core", "secrets")),
                binding("a", "read", "Role", "pod-reader", "User:u"))
    u = user("u")
    assert rbac.authorize_rbac(res(u, "get", "pods", namespace="a"), idx).allowed
    assert not rbac.authorize_rbac(res(u, "get", "secrets", namespace="a"), idx).allowed
    assert not rbac.authorize_rbac(res(u, "get", "pods", namespace="b"), idx).allowed


# --- subjects (TestAppliesTo) --------------------------------------------------------------------

SA_USER = rbac.service_account_user("monitoring", "node-exporter")

APPLIES_CASES = [
    # (description, subjects, user, binding namespace, index of the subject that applies or None)
    ("single subject that matches username", ["User:foobar"], user("foobar"), "", 0),
    ("single subject that matches group", ["Group:foobar"], user("baz", "foobar"), "", 0),
    ("single subject that does not match", ["User:foobar"], user("baz", "foobar"), "", None),
    ("multiple subjects, the group one matches", ["User:foobar", "Group:bar"],
     user("baz", "foobar,bar"), "", 1),
    ("multiple subjects, the first that applies wins", ["User:baz", "Group:bar"],
     user("baz", "bar"), "", 0),
    ("service account with its namespace", ["ServiceAccount:monitoring:node-exporter"], SA_USER, "", 0),
    ("service account without namespace in a RoleBinding of its namespace",
     ["ServiceAccount::node-exporter"], SA_USER, "monitoring", 0),
    ("service account without namespace in a RoleBinding of another namespace",
     ["ServiceAccount::node-exporter"], SA_USER, "default", None),
    ("service account without namespace in a ClusterRoleBinding", ["ServiceAccount::node-exporter"],
     SA_USER, "", None),
    ("service account of another namespace", ["ServiceAccount:kube-system:node-exporter"], SA_USER, "", None),
    ("service account, other name", ["ServiceAccount:monitoring:default"], SA_USER, "", None),
    ("a user named like a service account is that service account",
     ["ServiceAccount:monitoring:node-exporter"], user("system:serviceaccount:monitoring:node-exporter"), "", 0),
    ("service-account groups", ["Group:system:serviceaccounts:monitoring"], SA_USER, "", 0),
    ("all service accounts", ["Group:system:serviceaccounts"], SA_USER, "", 0),
    ("all authenticated", ["Group:system:authenticated"], SA_USER, "", 0),
    ("user name is not a group", ["Group:foobar"], user("foobar"), "", None),
    ("unknown kind applies to nobody", ["Robot:foobar"], user("foobar"), "", None),
]


@pytest.mark.parametrize(("subjects", "who", "namespace", "expected"), [c[1:] for c in APPLIES_CASES],
                         ids=[c[0] for c in APPLIES_CASES])
def test_applies_to(subjects: list[str], who: UserInfo, namespace: str, expected: int | None) -> None:
    b: Obj = {"subjects": [subject(s) for s in subjects]}
    got = rbac.applies_to(who, b, namespace)
    assert got is (None if expected is None else b["subjects"][expected])


def test_service_account_identity() -> None:
    assert SA_USER == UserInfo("system:serviceaccount:monitoring:node-exporter",
                               ("system:serviceaccounts", "system:serviceaccounts:monitoring",
                                "system:authenticated"))
    assert rbac.split_service_account_username(SA_USER.name) == ("monitoring", "node-exporter")
    assert rbac.split_service_account_username("system:serviceaccount:a:b:c") is None
    assert rbac.split_service_account_username("system:serviceaccount::b") is None
    assert rbac.split_service_account_username("alice") is None
    assert rbac.split_service_account_username("system:serviceaccount:Kube_System:x") is None  # not a label
    assert rbac.split_service_account_username("system:serviceaccount:ns:No_Name") is None  # not a subdomain
    assert rbac.split_service_account_username("system:serviceaccount:ns:a.b") == ("ns", "a.b")
    anonymous = UserInfo("system:anonymous", ("system:unauthenticated",))
    assert rbac.with_authenticated_group(anonymous) is anonymous
    assert rbac.with_authenticated_group(user("a", "x")).groups == ("x", "system:authenticated")


# --- reasons -------------------------------------------------------------------------------------

def test_reason_names_the_cluster_role_binding_and_subject() -> None:
    idx = index(cluster_role("view", rule("get,list,watch", "core", "pods")),
                cluster_binding("viewers", "view", "User:alice", "Group:devs"))
    got = rbac.authorize_rbac(res(user("bob", "devs"), "list", "pods", namespace="x"), idx)
    assert got == rbac.Authorization(
        Decision.ALLOW, 'RBAC: allowed by ClusterRoleBinding "viewers" of ClusterRole "view" to Group "devs"')


def test_reason_names_the_role_binding_with_its_namespace() -> None:
    idx = index(role("monitoring", "pods", rule("list", "core", "pods")),
                binding("monitoring", "ne", "Role", "pods", "ServiceAccount::node-exporter"))
    got = rbac.authorize_rbac(res(SA_USER, "list", "pods", namespace="monitoring"), idx)
    assert got.reason == ('RBAC: allowed by RoleBinding "ne/monitoring" of Role "pods" to '
                          'ServiceAccount "node-exporter/monitoring"')


def test_cluster_bindings_are_visited_before_role_bindings_and_in_name_order() -> None:
    idx = index(cluster_role("all", rule("*", "*", "*")),
                binding("ns", "a-local", "ClusterRole", "all", "User:u"),
                cluster_binding("z-global", "all", "User:u"),
                cluster_binding("m-global", "all", "User:u"))
    got = rbac.authorize_rbac(res(user("u"), "get", "pods", namespace="ns"), idx)
    assert got.reason == 'RBAC: allowed by ClusterRoleBinding "m-global" of ClusterRole "all" to User "u"'


def test_missing_roles_are_the_reason_of_a_refusal() -> None:
    idx = index(cluster_binding("ghost", "no-such-role", "User:u"),
                binding("ns", "ghost2", "Role", "no-such-role", "User:u"),
                binding("ns", "odd", "Team", "x", "User:u"))
    got = rbac.authorize_rbac(res(user("u"), "get", "pods", namespace="ns"), idx)
    assert got.decision is Decision.NO_OPINION
    assert got.reason == ('RBAC: [clusterrole.rbac.authorization.k8s.io "no-such-role" not found, '
                          'role.rbac.authorization.k8s.io "no-such-role" not found, '
                          'unsupported role reference kind: "Team"]')
    one = rbac.authorize_rbac(res(user("u"), "get", "pods"), idx)
    assert one.reason == 'RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found'


def test_a_refusal_without_errors_has_no_reason() -> None:
    assert rbac.authorize_rbac(res(user("u"), "get", "pods"), RBACIndex()) == rbac.Authorization(
        Decision.NO_OPINION, "")


def test_allow_wins_over_earlier_resolution_errors() -> None:
    idx = index(cluster_role("reader", rule("get", "core", "pods")),
                cluster_binding("a-ghost", "no-such-role", "User:u"),
                cluster_binding("b-read", "reader", "User:u"))
    got = rbac.authorize_rbac(res(user("u"), "get", "pods"), idx)
    assert got.allowed and got.reason.startswith('RBAC: allowed by ClusterRoleBinding "b-read"')


def test_system_masters_is_allowed_without_any_binding() -> None:
    admin = user("kubernetes-admin", "system:masters,system:authenticated")
    assert rbac.authorize(res(admin, "delete", "nodes", name="x"), RBACIndex()) == rbac.Authorization(
        Decision.ALLOW, "")
    assert not rbac.authorize(res(user("u"), "get", "pods"), RBACIndex()).allowed


def test_forbidden_messages() -> None:
    u = SA_USER
    assert rbac.forbidden_message(res(u, "list", "pods", namespace="default")) == (
        'User "system:serviceaccount:monitoring:node-exporter" cannot list resource "pods" in API group "" '
        'in the namespace "default"')
    assert rbac.forbidden_message(res(u, "get", "deployments", "scale", group="apps")) == (
        'User "system:serviceaccount:monitoring:node-exporter" cannot get resource "deployments/scale" '
        'in API group "apps" at the cluster scope')
    assert rbac.forbidden_message(Attributes.for_path(u, "get", "/metrics")) == (
        'User "system:serviceaccount:monitoring:node-exporter" cannot get path "/metrics"')


def test_forbidden_status_bodies() -> None:
    err = rbac.forbidden_error(res(user("u"), "get", "nodes", name="worker-1"), "")
    assert err.code == 403 and err.reason == "Forbidden"
    assert err.message == ('nodes "worker-1" is forbidden: User "u" cannot get resource "nodes" in API group "" '
                           'at the cluster scope')
    assert err.status["details"] == {"name": "worker-1", "kind": "nodes"}
    err = rbac.forbidden_error(res(user("u"), "list", "daemonsets", group="apps", namespace="a"),
                               'RBAC: clusterrole.rbac.authorization.k8s.io "x" not found')
    assert err.message == ('daemonsets.apps is forbidden: User "u" cannot list resource "daemonsets" in API '
                           'group "apps" in the namespace "a": RBAC: clusterrole.rbac.authorization.k8s.io "x" '
                           'not found')
    err = rbac.forbidden_error(Attributes.for_path(user("u"), "get", "/metrics"), "")
    assert err.message == 'forbidden: User "u" cannot get path "/metrics"'


# --- the rules walk (RulesFor, for SelfSubjectRulesReview) --------------------------------------

def test_rules_for_visits_every_applying_rule_in_order() -> None:
    r1, r2, r3 = rule("get", "core", "pods"), rule("list", "apps", "deployments"), rule("get", urls="/healthz")
    idx = index(cluster_role("one", r1), cluster_role("two", r2, r3), role("ns", "local", r1),
                cluster_binding("b1", "one", "Group:g"), cluster_binding("b2", "two", "User:u"),
                binding("ns", "l", "Role", "local", "User:u"), binding("ns", "ghost", "Role", "gone", "User:u"),
                binding("other", "l", "Role", "local", "User:u"))
    got = rbac.rules_for(idx, user("u", "g"), "ns")
    assert got.rules == (r1, r2, r3, r1)
    assert got.evaluation_error == 'role.rbac.authorization.k8s.io "gone" not found'
    cluster_only = rbac.rules_for(idx, user("u", "g"), "")
    assert cluster_only.rules == (r1, r2, r3) and cluster_only.errors == ()


# --- the index -----------------------------------------------------------------------------------

def test_index_follows_updates_and_deletes() -> None:
    idx = index(cluster_role("reader", rule("get", "core", "pods")), cluster_binding("b", "reader", "User:a"))
    a, b = user("a"), user("b")
    assert rbac.authorize_rbac(res(a, "get", "pods"), idx).allowed
    idx.upsert("ClusterRoleBinding", cluster_binding("b", "reader", "User:b"))  # subjects changed
    assert not rbac.authorize_rbac(res(a, "get", "pods"), idx).allowed
    assert rbac.authorize_rbac(res(b, "get", "pods"), idx).allowed
    idx.upsert("ClusterRole", cluster_role("reader", rule("list", "core", "pods")))  # rules changed
    assert not rbac.authorize_rbac(res(b, "get", "pods"), idx).allowed
    assert rbac.authorize_rbac(res(b, "list", "pods"), idx).allowed
    idx.delete("ClusterRole", cluster_role("reader"))
    assert rbac.authorize_rbac(res(b, "list", "pods"), idx).reason == (
        'RBAC: clusterrole.rbac.authorization.k8s.io "reader" not found')
    idx.delete("ClusterRoleBinding", cluster_binding("b", "reader"))
    assert rbac.authorize_rbac(res(b, "list", "pods"), idx).reason == ""
    idx.upsert("Role", role("ns", "r", rule("get", "core", "pods")))
    idx.upsert("RoleBinding", binding("ns", "rb", "Role", "r", "ServiceAccount::sa"))
    sa = rbac.service_account_user("ns", "sa")
    assert rbac.authorize_rbac(res(sa, "get", "pods", namespace="ns"), idx).allowed
    idx.delete("RoleBinding", binding("ns", "rb", "Role", "r"))
    assert not rbac.authorize_rbac(res(sa, "get", "pods", namespace="ns"), idx).allowed
    with pytest.raises(ValueError):
        idx.upsert("Pod", {"metadata": {"name": "x"}})


def test_index_returns_only_bindings_naming_the_user_or_its_groups() -> None:
    objs = [cluster_role("reader", rule("get", "core", "pods"))]
    objs += [cluster_binding(f"other-{i}", "reader", f"User:user-{i}") for i in range(500)]
    objs += [cluster_binding("mine", "reader", "User:someone", "Group:team"),
             cluster_binding("sa", "reader", "ServiceAccount:monitoring:node-exporter")]
    idx = index(*objs)
    assert [b["metadata"]["name"] for b in idx.cluster_role_bindings_for(user("x", "team"))] == ["mine"]
    assert [b["metadata"]["name"] for b in idx.cluster_role_bindings_for(SA_USER)] == ["sa"]
    assert idx.cluster_role_bindings_for(user("nobody")) == []


class ListSource:
    """A RuleSource over plain lists that counts role look-ups: the protocol is all the walk uses."""

    def __init__(self, bindings: list[Obj], roles: dict[str, Sequence[Rule]]):
        self.bindings = bindings
        self.roles = roles
        self.lookups: list[str] = []

    def cluster_role_bindings_for(self, user: UserInfo) -> Iterable[Obj]:
        return self.bindings  # a superset: the walk checks subjects itself

    def role_bindings_for(self, user: UserInfo, namespace: str) -> Iterable[Obj]:
        return []

    def role_rules(self, namespace: str, name: str) -> Sequence[Rule] | None:
        return None

    def cluster_role_rules(self, name: str) -> Sequence[Rule] | None:
        self.lookups.append(name)
        return self.roles.get(name)


def test_any_rule_source_plugs_in_and_roles_are_resolved_only_for_applying_bindings() -> None:
    source = ListSource([cluster_binding("a", "r1", "User:x"), cluster_binding("b", "r2", "User:u")],
                        {"r1": rbac.compile_rules([rule("*", "*", "*")]),
                         "r2": rbac.compile_rules([rule("get", "core", "pods")])})
    assert rbac.authorize_rbac(res(user("u"), "get", "pods"), source).allowed
    assert source.lookups == ["r2"]


def test_default_binding() -> None:
    b: Obj = {"roleRef": {"kind": "ClusterRole", "name": "view"},
              "subjects": [{"kind": "User", "name": "a"}, {"kind": "Group", "name": "g"},
                           {"kind": "ServiceAccount", "name": "s", "namespace": "n"},
                           {"kind": "User", "name": "b", "apiGroup": "example.com"}]}
    rbac.default_binding(b)
    assert b["roleRef"]["apiGroup"] == G
    assert [s.get("apiGroup") for s in b["subjects"]] == [G, G, None, "example.com"]
