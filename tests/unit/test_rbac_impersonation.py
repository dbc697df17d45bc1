"""Impersonation (everynode.api.impersonation): ``kubectl --as`` headers, the ``impersonate`` checks
and the user a request then acts as, as ``filters/impersonation.go`` and its tests have them."""

from __future__ import annotations

import pytest

from everynode.api import authorization_reviews as reviews
from everynode.api import impersonation, rbac, rbac_bootstrap
from everynode.api.errors import ApiError
from everynode.api.impersonation import ImpersonationRequest
from everynode.api.rbac import RBACIndex, UserInfo

G = rbac.GROUP_NAME
ADMIN = UserInfo("kubernetes-admin", ("system:masters", "system:authenticated"))
DEV = UserInfo("dev", ("system:authenticated",))


def cluster() -> RBACIndex:
    idx = RBACIndex.from_objects(cluster_roles=rbac_bootstrap.cluster_roles(aggregated=True),
                                 cluster_role_bindings=rbac_bootstrap.cluster_role_bindings())
    idx.upsert("RoleBinding", {"kind": "RoleBinding", "metadata": {"name": "dev-edit", "namespace": "dev"},
                               "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "edit"},
                               "subjects": [{"kind": "User", "apiGroup": G, "name": "dev"}]})
    return idx


def act(requestor: UserInfo, *headers: tuple[str, str]) -> UserInfo | None:
    idx = cluster()
    return impersonation.impersonate(requestor, headers, lambda attrs: rbac.authorize(attrs, idx))


AS_CASES = [
    # (description, headers, expected user)
    ("a service account gets its groups", [("Impersonate-User", "system:serviceaccount:monitoring:node-exporter")],
     UserInfo("system:serviceaccount:monitoring:node-exporter",
              ("system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"))),
    ("a user gets system:authenticated", [("Impersonate-User", "jane")], UserInfo("jane", ("system:authenticated",))),
    ("given groups replace a service account's", [("impersonate-user", "system:serviceaccount:a:b"),
                                                   ("impersonate-group", "x")],
     UserInfo("system:serviceaccount:a:b", ("x", "system:authenticated"))),
    ("system:unauthenticated given: no system:authenticated", [("Impersonate-User", "jane"),
                                                               ("Impersonate-Group", "system:unauthenticated")],
     UserInfo("jane", ("system:unauthenticated",))),
    ("the anonymous user is unauthenticated", [("Impersonate-User", "system:anonymous")],
     UserInfo("system:anonymous", ("system:unauthenticated",))),
    ("extras and uid", [("Impersonate-User", "jane"), ("Impersonate-Extra-Scopes", "view"),
                        ("Impersonate-Extra-Scopes", "edit"), ("Impersonate-Extra-Example.com%2fteam", "a"),
                        ("Impersonate-Uid", "1234")],
     UserInfo("jane", ("system:authenticated",), "1234", {"scopes": ("view", "edit"), "example.com/team": ("a",)})),
    ("an invalid service account name is a user name", [("Impersonate-User", "system:serviceaccount:Bad_NS:x")],
     UserInfo("system:serviceaccount:Bad_NS:x", ("system:authenticated",))),
]


@pytest.mark.parametrize(("headers", "expected"), [c[1:] for c in AS_CASES], ids=[c[0] for c in AS_CASES])
def test_admin_may_act_as_anyone(headers: list[tuple[str, str]], expected: UserInfo) -> None:
    assert act(ADMIN, *headers) == expected


def test_no_headers_no_impersonation() -> None:
    assert act(DEV, ("Accept", "application/json")) is None


def test_groups_without_a_user_are_a_bad_request() -> None:
    with pytest.raises(ApiError) as err:
        act(ADMIN, ("Impersonate-Group", "devs"))
    assert err.value.code == 400
    assert err.value.message == "requested [{Group  devs    }] without impersonating a user"


def test_checks_are_made_per_thing_impersonated() -> None:
    reqs = impersonation.impersonation_requests([("Impersonate-User", "system:serviceaccount:dev:builder"),
                                                 ("Impersonate-Extra-Scopes", "x"), ("Impersonate-Uid", "u")])
    assert reqs == [ImpersonationRequest("ServiceAccount", "builder", "dev"),
                    ImpersonationRequest("UserExtra", "x", api_version="authentication.k8s.io/v1", field_path="scopes"),
                    ImpersonationRequest("UID", "u", api_version="authentication.k8s.io/v1")]
    attrs = [impersonation.acting_as_attributes(DEV, r) for r in reqs]
    assert [(a.verb, a.api_group, a.resource, a.subresource, a.name, a.namespace) for a in attrs] == [
        ("impersonate", "", "serviceaccounts", "", "builder", "dev"),
        ("impersonate", "authentication.k8s.io", "userextras", "scopes", "x", ""),
        ("impersonate", "authentication.k8s.io", "uids", "", "u", "")]


def test_edit_may_impersonate_service_accounts_of_its_namespace_only() -> None:
    got = act(DEV, ("Impersonate-User", "system:serviceaccount:dev:builder"))
    assert got is not None and got.name == "system:serviceaccount:dev:builder"
    with pytest.raises(ApiError) as err:
        act(DEV, ("Impersonate-User", "system:serviceaccount:monitoring:node-exporter"))
    assert err.value.code == 403
    assert err.value.message == (
        'serviceaccounts "node-exporter" is forbidden: User "dev" cannot impersonate resource "serviceaccounts" '
        'in API group "" in the namespace "monitoring"')
    with pytest.raises(ApiError) as err:
        act(DEV, ("Impersonate-User", "jane"))
    assert err.value.message == ('users "jane" is forbidden: User "dev" cannot impersonate resource "users" in API '
                                 'group "" at the cluster scope')


def test_can_i_as_a_service_account() -> None:
    """``kubectl auth can-i list pods -n dev --as system:serviceaccount:dev:builder``."""
    idx = cluster()
    idx.upsert("RoleBinding", {"kind": "RoleBinding", "metadata": {"name": "builder", "namespace": "dev"},
                               "roleRef": {"apiGroup": G, "kind": "ClusterRole", "name": "view"},
                               "subjects": [{"kind": "ServiceAccount", "name": "builder", "namespace": "dev"}]})
    who = impersonation.impersonate(ADMIN, [("Impersonate-User", "system:serviceaccount:dev:builder")],
                                    lambda a: rbac.authorize(a, idx))
    assert who is not None
    review = {"spec": {"resourceAttributes": {"namespace": "dev", "verb": "list", "resource": "pods"}}}
    assert reviews.answer_self_subject_access_review(review, who, idx)["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "builder/dev" of ClusterRole "view" to ServiceAccount "builder/dev"'}
    review["spec"]["resourceAttributes"]["verb"] = "delete"
    assert reviews.answer_self_subject_access_review(review, who, idx)["status"] == {"allowed": False}
