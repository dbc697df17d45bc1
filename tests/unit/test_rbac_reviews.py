"""The authorization.k8s.io reviews (everynode.api.authorization_reviews): the answers
``kubectl auth can-i`` gets, from the request bodies kubectl sends, and their validation
(everynode.api.validation.authorization), cases as upstream's rest_test.go / validation_test.go."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api import authorization_reviews as reviews
from everynode.api import rbac, rbac_bootstrap
from everynode.api.errors import ApiError
from everynode.api.rbac import RBACIndex, UserInfo

Obj = dict[str, Any]
G = rbac.GROUP_NAME
NE = rbac.service_account_user("monitoring", "node-exporter")
ADMIN = UserInfo("kubernetes-admin", ("system:masters", "system:authenticated"))

# node-exporter's RBAC as kube-prometheus ships it (in substance)
NODE_EXPORTER_RBAC: list[Obj] = [
    {"kind": "ClusterRole", "metadata": {"name": "node-exporter"},
     "rules": [{"apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"], "verbs": ["create"]},
               {"apiGroups": ["authorization.k8s.io"], "resources": ["subjectaccessreviews"], "verbs": ["create"]}]},
    {"kind": "ClusterRoleBinding", "metadata": {"name": "node-exporter"},
     "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "node-exporter"},
     "subjects": [{"kind": "ServiceAccount", "name": "node-exporter", "namespace": "monitoring"}]},
    {"kind": "Role", "metadata": {"name": "pod-reader", "namespace": "monitoring"},
     "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]},
    {"kind": "RoleBinding", "metadata": {"name": "ne-pods", "namespace": "monitoring"},
     "roleRef": {"apiGroup": G, "kind": "Role", "name": "pod-reader"},
     "subjects": [{"kind": "ServiceAccount", "name": "node-exporter"}]},
]


def cluster() -> RBACIndex:
    idx = RBACIndex.from_objects(cluster_roles=rbac_bootstrap.cluster_roles(aggregated=True),
                                 cluster_role_bindings=rbac_bootstrap.cluster_role_bindings())
    for obj in NODE_EXPORTER_RBAC:
        idx.upsert(obj["kind"], obj)
    return idx


def ssar(**resource_attributes: str) -> Obj:
    """The body ``kubectl auth can-i VERB RESOURCE`` posts."""
    return {"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1",
            "metadata": {"creationTimestamp": None}, "spec": {"resourceAttributes": resource_attributes},
            "status": {"allowed": False}}


CAN_I = [
    # (description, user, review, expected status)
    ("list pods in its namespace", NE, ssar(namespace="monitoring", verb="list", resource="pods"),
     {"allowed": True, "reason": 'RBAC: allowed by RoleBinding "ne-pods/monitoring" of Role "pod-reader" to '
                                 'ServiceAccount "node-exporter/monitoring"'}),
    ("list pods elsewhere", NE, ssar(namespace="default", verb="list", resource="pods"), {"allowed": False}),
    ("list pods in all namespaces", NE, ssar(verb="list", resource="pods"), {"allowed": False}),
    ("create tokenreviews", NE, ssar(verb="create", resource="tokenreviews", group="authentication.k8s.io"),
     {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "node-exporter" of ClusterRole '
                                 '"node-exporter" to ServiceAccount "node-exporter/monitoring"'}),
    ("a version does not matter", NE,
     ssar(verb="create", resource="tokenreviews", group="authentication.k8s.io", version="v1"),
     {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "node-exporter" of ClusterRole '
                                 '"node-exporter" to ServiceAccount "node-exporter/monitoring"'}),
    ("the admin can do anything, for no RBAC reason", ADMIN, ssar(verb="delete", resource="nodes"),
     {"allowed": True}),
]


@pytest.mark.parametrize(("who", "review", "expected"), [c[1:] for c in CAN_I], ids=[c[0] for c in CAN_I])
def test_self_subject_access_review(who: UserInfo, review: Obj, expected: Obj) -> None:
    got = reviews.answer_self_subject_access_review(review, who, cluster())
    assert got["status"] == expected
    assert got["spec"] == review["spec"] and got["kind"] == "SelfSubjectAccessReview"
    assert got["apiVersion"] == "authorization.k8s.io/v1"


def test_non_resource_self_subject_access_review() -> None:
    review = {"spec": {"nonResourceAttributes": {"verb": "get", "path": "/healthz"}}}
    got = reviews.answer_self_subject_access_review(review, NE, cluster())
    assert got["status"] == {"allowed": True, "reason": 'RBAC: allowed by ClusterRoleBinding "system:discovery" of '
                                                        'ClusterRole "system:discovery" to Group "system:authenticated"'}


def test_evaluation_problems_are_the_reason() -> None:
    idx = cluster()
    idx.upsert("RoleBinding", {"kind": "RoleBinding", "metadata": {"name": "x", "namespace": "monitoring"},
                               "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "gone"},
                               "subjects": [{"kind": "ServiceAccount", "name": "node-exporter"}]})
    got = reviews.answer_self_subject_access_review(ssar(namespace="monitoring", verb="delete", resource="pods"),
                                                    NE, idx)
    assert got["status"] == {"allowed": False,
                             "reason": 'RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found'}


def test_subject_access_review_asks_about_exactly_the_named_user() -> None:
    sar = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
           "spec": {"user": NE.name, "groups": ["system:serviceaccounts"],
                    "resourceAttributes": {"namespace": "monitoring", "verb": "watch", "resource": "pods"}}}
    assert reviews.answer_subject_access_review(sar, cluster())["status"]["allowed"] is True
    # no system:authenticated is added: the discovery binding does not apply
    path = {"spec": {"user": "alice", "nonResourceAttributes": {"verb": "get", "path": "/api"}}}
    assert reviews.answer_subject_access_review(path, cluster())["status"] == {"allowed": False}
    path["spec"]["groups"] = ["system:authenticated"]
    assert reviews.answer_subject_access_review(path, cluster())["status"]["allowed"] is True


def test_local_subject_access_review() -> None:
    lsar = {"spec": {"user": NE.name, "resourceAttributes": {"namespace": "monitoring", "verb": "get",
                                                              "resource": "pods"}}}
    got = reviews.answer_local_subject_access_review(lsar, "monitoring", cluster())
    assert got["status"]["allowed"] is True and got["metadata"]["namespace"] == "monitoring"
    with pytest.raises(ApiError) as err:
        reviews.answer_local_subject_access_review(lsar, "default", cluster())
    assert err.value.code == 422
    assert err.value.message == ('.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: '
                                 'Invalid value: "monitoring": must match metadata.namespace')
    with pytest.raises(ApiError) as err:
        reviews.answer_local_subject_access_review(lsar, "", cluster())
    assert err.value.code == 400 and err.value.message == "namespace is required on this type: "


INVALID = [
    # (description, answer function, review, message)
    ("neither attributes", "self", {"spec": {}},
     '.authorization.k8s.io "" is invalid: spec.resourceAttributes: Invalid value: "null": exactly one of '
     'nonResourceAttributes or resourceAttributes must be specified'),
    ("both attributes", "self", {"spec": {"resourceAttributes": {}, "nonResourceAttributes": {}}},
     '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {VALUE}: cannot be specified '
     'in combination with resourceAttributes'),
    ("metadata on a review", "self", {"metadata": {"name": "x"}, "spec": {"resourceAttributes": {}}},
     '.authorization.k8s.io "" is invalid: metadata: Invalid value: {VALUE}: must be empty'),
    ("no subject", "sar", {"spec": {"resourceAttributes": {}}},
     '.authorization.k8s.io "" is invalid: spec.user: Invalid value: "": at least one of user or group must be '
     'specified'),
    ("two errors", "sar", {"spec": {}},
     '.authorization.k8s.io "" is invalid: [spec.resourceAttributes: Invalid value: "null": exactly one of '
     'nonResourceAttributes or resourceAttributes must be specified, spec.user: Invalid value: "": at least one '
     'of user or group must be specified]'),
    ("a local review of a path", "local", {"spec": {"groups": ["g"], "nonResourceAttributes": {}}},
     '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: {VALUE}: disallowed on this '
     'kind of request'),
    ("a local review with a name", "local",
     {"metadata": {"name": "x"}, "spec": {"groups": ["g"], "resourceAttributes": {"namespace": "ns"}}},
     '.authorization.k8s.io "" is invalid: metadata: Invalid value: {VALUE}: must be empty except for namespace'),
]


@pytest.mark.parametrize(("which", "review", "message"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID])
def test_invalid_reviews(which: str, review: Obj, message: str) -> None:
    idx = cluster()
    with pytest.raises(ApiError) as err:
        if which == "self":
            reviews.answer_self_subject_access_review(review, NE, idx)
        elif which == "sar":
            reviews.answer_subject_access_review(review, idx)
        else:
            reviews.answer_local_subject_access_review(review, "ns", idx)
    assert err.value.code == 422 and err.value.reason == "Invalid"
    if "{VALUE}" in message:  # a struct value: Go prints it with %#v, we as JSON; the rest is exact
        head, tail = message.split("{VALUE}")
        assert err.value.message.startswith(head) and err.value.message.endswith(tail), err.value.message
    else:
        assert err.value.message == message


def test_self_subject_rules_review_lists_what_can_i_list_prints() -> None:
    got = reviews.answer_self_subject_rules_review({"spec": {"namespace": "monitoring"}}, NE, cluster())
    assert got["kind"] == "SelfSubjectRulesReview" and got["spec"] == {}
    status = got["status"]
    assert status["incomplete"] is False and "evaluationError" not in status
    assert {"verbs": ["create"], "apiGroups": ["authentication.k8s.io"], "resources": ["tokenreviews"]} in (
        status["resourceRules"])
    assert status["resourceRules"][-1] == {"verbs": ["get", "list", "watch"], "apiGroups": [""],
                                           "resources": ["pods"]}  # the namespace's RoleBinding comes last
    assert {"verbs": ["get"], "nonResourceURLs": ["/healthz", "/livez", "/readyz", "/version", "/version/"]} in (
        status["nonResourceRules"])
    elsewhere = reviews.answer_self_subject_rules_review({"spec": {"namespace": "default"}}, NE, cluster())
    assert {"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["pods"]} not in (
        elsewhere["status"]["resourceRules"])


def test_rules_review_of_the_admin_and_of_errors() -> None:
    status = reviews.rules_review_status(cluster(), ADMIN, "default")
    assert status["resourceRules"][0] == {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
    assert status["nonResourceRules"][0] == {"verbs": ["*"], "nonResourceURLs": ["*"]}
    idx = RBACIndex.from_objects(role_bindings=[{
        "metadata": {"name": "b", "namespace": "ns"}, "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u"}]}])
    assert reviews.rules_review_status(idx, UserInfo("u"), "ns") == {
        "resourceRules": [], "nonResourceRules": [], "incomplete": False,
        "evaluationError": 'role.rbac.authorization.k8s.io "r" not found'}


def test_rules_review_needs_a_namespace() -> None:
    with pytest.raises(ApiError) as err:
        reviews.answer_self_subject_rules_review({"spec": {}}, NE, cluster())
    assert err.value.code == 400 and err.value.message == "no namespace on request"
