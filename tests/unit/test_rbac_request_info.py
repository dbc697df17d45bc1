"""Request attributes from HTTP requests (everynode.api.request_info), the table of upstream's
``requestinfo_test.go`` (``TestGetAPIRequestInfo``, ``TestGetNonAPIRequestInfo``,
``TestFieldSelectorParsing``) restated, and the decision they lead to."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from everynode.api import rbac
from everynode.api.rbac import Attributes, RBACIndex, UserInfo
from everynode.api.request_info import RequestInfoError, request_attributes

U = UserInfo("u")


def attrs(method: str, url: str) -> Attributes:
    parts = urlsplit(url)
    return request_attributes(U, method, parts.path, parse_qs(parts.query, keep_blank_values=True))


RESOURCE_CASES = [
    # method, url, verb, group, version, namespace, resource, subresource, name
    ("GET", "/api/v1/namespaces", "list", "", "v1", "", "namespaces", "", ""),
    ("GET", "/api/v1/namespaces/other", "get", "", "v1", "other", "namespaces", "", "other"),
    ("GET", "/api/v1/namespaces/other/pods", "list", "", "v1", "other", "pods", "", ""),
    ("GET", "/api/v1/namespaces/other/pods/foo", "get", "", "v1", "other", "pods", "", "foo"),
    ("HEAD", "/api/v1/namespaces/other/pods/foo", "get", "", "v1", "other", "pods", "", "foo"),
    ("GET", "/api/v1/pods", "list", "", "v1", "", "pods", "", ""),
    ("HEAD", "/api/v1/pods", "list", "", "v1", "", "pods", "", ""),
    ("GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "", "v1", "other", "pods", "", "foo"),
    ("GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "", "v1", "other",
     "pods", "", "foo"),
    ("GET", "/api/v1/watch/pods", "watch", "", "v1", "", "pods", "", ""),
    ("GET", "/api/v1/pods?watch=true", "watch", "", "v1", "", "pods", "", ""),
    ("GET", "/api/v1/pods?watch=false", "list", "", "v1", "", "pods", "", ""),
    ("GET", "/api/v1/pods?watch=FALSE", "list", "", "v1", "", "pods", "", ""),
    ("GET", "/api/v1/pods?watch=", "watch", "", "v1", "", "pods", "", ""),
    ("GET", "/api/v1/watch/namespaces/other/pods", "watch", "", "v1", "other", "pods", "", ""),
    ("GET", "/api/v1/namespaces/other/pods?watch=1", "watch", "", "v1", "other", "pods", "", ""),
    ("GET", "/api/v1/namespaces/other/pods?watch=0", "list", "", "v1", "other", "pods", "", ""),
    ("GET", "/api/v1/namespaces/other/pods/foo/status", "get", "", "v1", "other", "pods", "status", "foo"),
    ("GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "", "v1", "other", "pods", "proxy", "foo"),
    ("PUT", "/api/v1/namespaces/other/finalize", "update", "", "v1", "other", "namespaces", "finalize", "other"),
    ("PUT", "/api/v1/namespaces/other/status", "update", "", "v1", "other", "namespaces", "status", "other"),
    ("PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "", "v1", "other", "pods", "", "foo"),
    ("DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "", "v1", "other", "pods", "", "foo"),
    ("POST", "/api/v1/namespaces/other/pods", "create", "", "v1", "other", "pods", "", ""),
    ("POST", "/api/v1/namespaces/other/pods/foo/eviction", "create", "", "v1", "other", "pods", "eviction", "foo"),
    ("DELETE", "/api/v1/nodes", "deletecollection", "", "v1", "", "nodes", "", ""),
    ("DELETE", "/api/v1/namespaces", "deletecollection", "", "v1", "", "namespaces", "", ""),
    ("DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "", "v1", "other", "pods", "", ""),
    ("DELETE", "/apis/extensions/v1/namespaces/other/pods", "deletecollection", "extensions", "v1", "other",
     "pods", "", ""),
    ("POST", "/apis/extensions/v1/namespaces/other/pods", "create", "extensions", "v1", "other", "pods", "", ""),
    ("POST", "/apis/extensions/v1beta3/namespaces/other/pods", "create", "extensions", "v1beta3", "other",
     "pods", "", ""),
    ("GET", "/apis/apps/v1/namespaces/monitoring/daemonsets/node-exporter", "get", "apps", "v1", "monitoring",
     "daemonsets", "", "node-exporter"),
    ("PUT", "/apis/apps/v1/namespaces/m/deployments/d/scale", "update", "apps", "v1", "m", "deployments", "scale",
     "d"),
    ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "create", "authorization.k8s.io", "v1", "",
     "selfsubjectaccessreviews", "", ""),
    ("OPTIONS", "/api/v1/pods/x", "", "", "v1", "", "pods", "", "x"),
    # a list or watch for one name (kubectl get pod foo -w) is a request for that name
    ("GET", "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo", "list", "", "v1", "other", "pods",
     "", "foo"),
    ("GET", "/api/v1/namespaces/other/pods?watch=true&fieldSelector=metadata.name%3Dfoo", "watch", "", "v1",
     "other", "pods", "", "foo"),
    ("GET", "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Dfoo,status.phase%3DRunning", "list", "",
     "v1", "other", "pods", "", "foo"),
    ("GET", "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%21%3Dfoo", "list", "", "v1", "other", "pods",
     "", ""),
    ("GET", "/api/v1/namespaces/other/pods?fieldSelector=metadata.name%3Da%2Fb", "list", "", "v1", "other", "pods",
     "", ""),
    ("GET", "/api/v1/namespaces/other/pods?fieldSelector=%3D%3D%3D", "list", "", "v1", "other", "pods", "", ""),
]


@pytest.mark.parametrize(("method", "url", "verb", "group", "version", "namespace", "resource", "sub", "name"),
                         RESOURCE_CASES, ids=[f"{c[0]} {c[1]}" for c in RESOURCE_CASES])
def test_resource_requests(method: str, url: str, verb: str, group: str, version: str, namespace: str,
                           resource: str, sub: str, name: str) -> None:
    assert attrs(method, url) == Attributes.for_resource(U, verb, resource, api_group=group, api_version=version,
                                                         subresource=sub, name=name, namespace=namespace)


@pytest.mark.parametrize(("method", "path"), [
    ("GET", "/"), ("GET", "/healthz"), ("GET", "/version"), ("GET", "/api"), ("GET", "/api/v1"),
    ("GET", "/api/v1/"), ("GET", "/apis"), ("GET", "/apis/apps"), ("GET", "/apis/apps/v1"),
    ("GET", "/openapi/v3/apis/apps/v1"), ("POST", "/other/path"), ("GET", "/metrics"),
])
def test_non_resource_requests(method: str, path: str) -> None:
    assert attrs(method, path) == Attributes.for_path(U, method.lower(), path)


def test_a_special_verb_without_a_resource_cannot_be_read() -> None:
    with pytest.raises(RequestInfoError, match="unable to determine kind and namespace from url, /api/v1/watch"):
        attrs("GET", "/api/v1/watch")


def test_a_named_watch_is_allowed_by_resource_names() -> None:
    """``kubectl get configmap app-config -w`` with access to that one ConfigMap only."""
    idx = RBACIndex.from_objects(
        roles=[{"metadata": {"name": "one-cm", "namespace": "a"},
                "rules": [{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["configmaps"],
                           "resourceNames": ["app-config"]}]}],
        role_bindings=[{"metadata": {"name": "b", "namespace": "a"}, "roleRef": {"kind": "Role", "name": "one-cm"},
                        "subjects": [{"kind": "User", "name": "u"}]}])
    named = attrs("GET", "/api/v1/namespaces/a/configmaps?watch=1&fieldSelector=metadata.name%3Dapp-config")
    assert rbac.authorize(named, idx).allowed
    assert not rbac.authorize(attrs("GET", "/api/v1/namespaces/a/configmaps?watch=1"), idx).allowed
    assert rbac.authorize(attrs("GET", "/api/v1/namespaces/a/configmaps/app-config"), idx).allowed
