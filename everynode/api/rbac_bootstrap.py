"""The default RBAC policy a fresh cluster has: the ClusterRoles and ClusterRoleBindings users
rely on, as manifests (plain dicts) built by code.

Upstream: ``plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go`` (``ClusterRoles``,
``ClusterRoleBindings``) and the rule builder of ``pkg/apis/rbac/v1/helpers.go`` (``NewRule``
sorts and de-duplicates every list, which is why a real cluster shows them sorted).  Every object
carries the label ``kubernetes.io/bootstrapping: rbac-defaults`` and the annotation
``rbac.authorization.kubernetes.io/autoupdate: "true"``, as upstream's ``addDefaultMetadata``
puts them.

The subset: ``cluster-admin``; the discovery, basic-user and public-info-viewer roles every
authenticated (or, for the last, any) client gets; ``admin`` / ``edit`` / ``view``, which are
*aggregated* (no rules of their own, an ``aggregationRule`` selecting the
``rbac.authorization.k8s.io/aggregate-to-*`` label) from ``system:aggregate-to-admin`` /
``-edit`` / ``-view``, which hold the rules; and the bindings of ``cluster-admin`` to
``system:masters`` and of the three public roles.  Left out: the roles of the system's own
components (``system:node``, ``system:kube-scheduler``, ``system:controller:*`` and the other
controller roles, ``system:monitoring``, the certificate-signing roles, ...) and their bindings —
everynode's components run in-process and are not authorized by RBAC.  The aggregate-to rules
are upstream's for the resources of core, apps, batch, autoscaling, policy, networking.k8s.io and
extensions (the core lines of ``system:aggregate-to-edit`` checked against current upstream:
no ``endpoints`` write since CVE-2021-25740, ``pods/eviction`` and ``serviceaccounts/token``
create); resources of other groups that later releases may have added to these lists are not
reproduced.

:func:`cluster_roles` returns the roles as a new API server stores them (``admin``, ``edit``,
``view`` without rules); ``aggregated=True`` runs the aggregation a running cluster's controller
performs, so their rules are filled in.
"""

from __future__ import annotations

from typing import Any

from everynode.api.rbac import ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, GROUP_NAME, SYSTEM_PRIVILEGED_GROUP
from everynode.api.rbac_aggregation import aggregate_until_stable

Obj = dict[str, Any]

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")
READ_WRITE = READ + WRITE

BOOTSTRAP_LABEL = {"kubernetes.io/bootstrapping": "rbac-defaults"}
AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate"
AGGREGATE_TO_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGGREGATE_TO_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGGREGATE_TO_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"

__all__ = ["READ", "WRITE", "READ_WRITE", "rule", "cluster_roles", "cluster_role_bindings",
           "AGGREGATE_TO_ADMIN", "AGGREGATE_TO_EDIT", "AGGREGATE_TO_VIEW"]

_CORE = ""


def rule(verbs: tuple[str, ...] | str, *, groups: tuple[str, ...] = (), resources: tuple[str, ...] = (),
         urls: tuple[str, ...] = (), names: tuple[str, ...] = ()) -> Obj:
    """``NewRule(verbs...).Groups(...).Resources(...).URLs(...).Names(...).RuleOrDie()``: every
    list sorted and de-duplicated; empty lists left out."""
    if isinstance(verbs, str):
        verbs = (verbs,)
    out: Obj = {"verbs": sorted(set(verbs))}
    for key, values in (("apiGroups", groups), ("resources", resources), ("resourceNames", names),
                        ("nonResourceURLs", urls)):
        if values:
            out[key] = sorted(set(values))
    return out


def _metadata(name: str, labels: dict[str, str] | None = None) -> Obj:
    return {"name": name, "labels": {**(labels or {}), **BOOTSTRAP_LABEL},
            "annotations": {AUTOUPDATE_ANNOTATION: "true"}}


def _cluster_role(name: str, rules: list[Obj], *, labels: dict[str, str] | None = None,
                  aggregate_label: str = "") -> Obj:
    role: Obj = {"apiVersion": f"{GROUP_NAME}/v1", "kind": "ClusterRole", "metadata": _metadata(name, labels)}
    if aggregate_label:
        role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {aggregate_label: "true"}}]}
    role["rules"] = rules
    return role


def _aggregate_to_edit_rules() -> list[Obj]:
    return [
        # read access to the resources that let a user escalate
        rule(READ, groups=(_CORE,), resources=("pods/attach", "pods/proxy", "pods/exec", "pods/portforward",
                                               "secrets", "services/proxy")),
        rule("impersonate", groups=(_CORE,), resources=("serviceaccounts",)),
        rule(WRITE, groups=(_CORE,), resources=("pods", "pods/attach", "pods/proxy", "pods/exec",
                                                "pods/portforward")),
        rule("create", groups=(_CORE,), resources=("pods/eviction",)),
        rule(WRITE, groups=(_CORE,), resources=("replicationcontrollers", "replicationcontrollers/scale",
                                                "serviceaccounts", "services", "services/proxy",
                                                "persistentvolumeclaims", "configmaps", "secrets")),
        rule("create", groups=(_CORE,), resources=("serviceaccounts/token",)),
        rule(WRITE, groups=("apps",), resources=("statefulsets", "statefulsets/scale", "daemonsets",
                                                 "deployments", "deployments/scale", "deployments/rollback",
                                                 "replicasets", "replicasets/scale")),
        rule(WRITE, groups=("autoscaling",), resources=("horizontalpodautoscalers",)),
        rule(WRITE, groups=("batch",), resources=("jobs", "cronjobs")),
        rule(WRITE, groups=("extensions",), resources=("daemonsets", "deployments", "deployments/scale",
                                                       "deployments/rollback", "ingresses", "replicasets",
                                                       "replicasets/scale", "replicationcontrollers/scale",
                                                       "networkpolicies")),
        rule(WRITE, groups=("policy",), resources=("poddisruptionbudgets",)),
        rule(WRITE, groups=("networking.k8s.io",), resources=("networkpolicies", "ingresses")),
    ]


def _aggregate_to_view_rules() -> list[Obj]:
    return [
        rule(READ, groups=(_CORE,), resources=("pods", "replicationcontrollers", "replicationcontrollers/scale",
                                               "serviceaccounts", "services", "services/status", "endpoints",
                                               "persistentvolumeclaims", "persistentvolumeclaims/status",
                                               "configmaps")),
        rule(READ, groups=(_CORE,), resources=("limitranges", "resourcequotas", "bindings", "events",
                                               "pods/status", "resourcequotas/status", "namespaces/status",
                                               "replicationcontrollers/status", "pods/log")),
        # read access to namespaces at the namespace scope means you can read *this* namespace
        rule(READ, groups=(_CORE,), resources=("namespaces",)),
        rule(READ, groups=("apps",), resources=("controllerrevisions", "statefulsets", "statefulsets/status",
                                                "statefulsets/scale", "daemonsets", "daemonsets/status",
                                                "deployments", "deployments/status", "deployments/scale",
                                                "replicasets", "replicasets/status", "replicasets/scale")),
        rule(READ, groups=("autoscaling",), resources=("horizontalpodautoscalers",
                                                       "horizontalpodautoscalers/status")),
        rule(READ, groups=("batch",), resources=("jobs", "cronjobs", "cronjobs/status", "jobs/status")),
        rule(READ, groups=("extensions",), resources=("daemonsets", "daemonsets/status", "deployments",
                                                      "deployments/scale", "deployments/status", "ingresses",
                                                      "ingresses/status", "replicasets", "replicasets/scale",
                                                      "replicasets/status", "replicationcontrollers/scale",
                                                      "networkpolicies")),
        rule(READ, groups=("policy",), resources=("poddisruptionbudgets", "poddisruptionbudgets/status")),
        rule(READ, groups=("networking.k8s.io",), resources=("networkpolicies", "ingresses", "ingresses/status")),
    ]


def cluster_roles(*, aggregated: bool = False) -> list[Obj]:
    """The bootstrap ClusterRoles, in upstream's order (new dicts on every call)."""
    roles = [
        # a "root" role which can do absolutely anything
        _cluster_role("cluster-admin", [rule("*", groups=("*",), resources=("*",)), rule("*", urls=("*",))]),
        # just enough to tell whether the server is ready and to discover API versions
        _cluster_role("system:discovery", [rule("get", urls=(
            "/livez", "/readyz", "/healthz", "/version", "/version/", "/openapi", "/openapi/*",
            "/api", "/api/*", "/apis", "/apis/*"))]),
        # what a "normal" user needs to learn about themselves (kubectl auth can-i / whoami)
        _cluster_role("system:basic-user", [
            rule("create", groups=("authorization.k8s.io",),
                 resources=("selfsubjectaccessreviews", "selfsubjectrulesreviews")),
            rule("create", groups=("authentication.k8s.io",), resources=("selfsubjectreviews",)),
        ]),
        # insensitive cluster information, for anyone
        _cluster_role("system:public-info-viewer", [rule("get", urls=(
            "/livez", "/readyz", "/healthz", "/version", "/version/"))]),
        _cluster_role("admin", [], aggregate_label=AGGREGATE_TO_ADMIN),
        _cluster_role("edit", [], labels={AGGREGATE_TO_ADMIN: "true"}, aggregate_label=AGGREGATE_TO_EDIT),
        _cluster_role("view", [], labels={AGGREGATE_TO_EDIT: "true"}, aggregate_label=AGGREGATE_TO_VIEW),
        _cluster_role("system:aggregate-to-admin", [
            rule("create", groups=("authorization.k8s.io",), resources=("localsubjectaccessreviews",)),
            rule(READ_WRITE, groups=(GROUP_NAME,), resources=("roles", "rolebindings")),
        ], labels={AGGREGATE_TO_ADMIN: "true"}),
        _cluster_role("system:aggregate-to-edit", _aggregate_to_edit_rules(), labels={AGGREGATE_TO_EDIT: "true"}),
        _cluster_role("system:aggregate-to-view", _aggregate_to_view_rules(), labels={AGGREGATE_TO_VIEW: "true"}),
    ]
    return aggregate_until_stable(roles) if aggregated else roles


def _cluster_role_binding(role_name: str, *groups: str) -> Obj:
    """``NewClusterBinding(role).Groups(...)``: the binding is named after the role."""
    return {"apiVersion": f"{GROUP_NAME}/v1", "kind": "ClusterRoleBinding", "metadata": _metadata(role_name),
            "roleRef": {"apiGroup": GROUP_NAME, "kind": "ClusterRole", "name": role_name},
            "subjects": [{"kind": "Group", "apiGroup": GROUP_NAME, "name": g} for g in groups]}


def cluster_role_bindings() -> list[Obj]:
    """The bootstrap ClusterRoleBindings of the roles above, in upstream's order."""
    return [
        _cluster_role_binding("cluster-admin", SYSTEM_PRIVILEGED_GROUP),
        _cluster_role_binding("system:discovery", ALL_AUTHENTICATED),
        _cluster_role_binding("system:basic-user", ALL_AUTHENTICATED),
        _cluster_role_binding("system:public-info-viewer", ALL_AUTHENTICATED, ALL_UNAUTHENTICATED),
    ]
