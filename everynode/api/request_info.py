"""What a request asks for, as the authorizer needs it: verb, API group, resource, subresource,
name, namespace — or a non-resource path.

Upstream: ``staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go``
(``RequestInfoFactory.NewRequestInfo``, with kube-apiserver's prefixes ``api`` (groupless) and
``apis``).  The verb comes from the HTTP method (``POST`` create, ``GET``/``HEAD`` get, ``PUT``
update, ``PATCH`` patch, ``DELETE`` delete) or from a leading ``watch`` / ``proxy`` path segment;
a get without a name is a ``list`` — a ``watch`` when ``?watch`` is anything but ``false``/``0`` —
and a delete without a name a ``deletecollection``.  A list or watch with the field selector
``metadata.name=X`` is a request for the name X (so RBAC ``resourceNames`` can allow it, as
``kubectl get pod X -w`` needs).  ``namespaces/NAME/status`` and ``/finalize`` are subresources of
the namespace, not resources inside it.  Everything else — ``/healthz``, ``/version``,
``/api``, ``/apis/apps`` (discovery) — is a non-resource request whose verb is the lower-cased
HTTP method.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from everynode.api.names import name_is_path_segment
from everynode.api.rbac import Attributes, UserInfo
from everynode.api.selectors import SelectorError, parse_field_selector

API_PREFIXES = frozenset({"api", "apis"})
GROUPLESS_API_PREFIXES = frozenset({"api"})
_SPECIAL_VERBS = frozenset({"proxy", "watch"})
_SPECIAL_VERBS_NO_SUBRESOURCES = frozenset({"proxy"})
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})
_METHOD_VERBS = {"POST": "create", "GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
                 "DELETE": "delete"}

__all__ = ["request_attributes", "RequestInfoError"]


class RequestInfoError(ValueError):
    """A resource path the request-info filter cannot read (``/api/v1/watch``): kube-apiserver
    answers it with a plain-text 500, ``Internal Server Error: "URI": failed to create
    RequestInfo: <this text>`` (``responsewriters.InternalError``), not with a Status."""


def _is_true(values: Sequence[str]) -> bool:
    """metav1's string-to-bool conversion of a query parameter: the first value, unless it is
    ``0`` or ``false`` (any case)."""
    return bool(values) and values[0] != "0" and values[0].lower() != "false"


def request_attributes(user: UserInfo, method: str, path: str,
                       query: Mapping[str, Sequence[str]] | None = None) -> Attributes:
    """The authorization attributes of one HTTP request (``path`` without the query string;
    ``query`` maps each parameter to its values).  Refuses ``/api/v1/watch`` and the
    like, where no resource follows the special verb — :class:`RequestInfoError`."""
    query = query or {}
    non_resource = Attributes.for_path(user, method.lower(), path)
    trimmed = path.strip("/")
    parts = trimmed.split("/") if trimmed else []
    if len(parts) < 3 or parts[0] not in API_PREFIXES:
        return non_resource
    prefix, parts = parts[0], parts[1:]
    group = ""
    if prefix not in GROUPLESS_API_PREFIXES:
        if len(parts) < 3:
            return non_resource
        group, parts = parts[0], parts[1:]
    version, parts = parts[0], parts[1:]
    if parts[0] in _SPECIAL_VERBS:
        if len(parts) < 2:
            raise RequestInfoError(f"unable to determine kind and namespace from url, {path}")
        verb, parts = parts[0], parts[1:]
    else:
        verb = _METHOD_VERBS.get(method.upper(), "")
    namespace = ""
    if parts[0] == "namespaces":
        if len(parts) > 1:
            namespace = parts[1]
            if len(parts) > 2 and parts[2] not in _NAMESPACE_SUBRESOURCES:
                parts = parts[2:]
    resource = parts[0]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 and verb not in _SPECIAL_VERBS_NO_SUBRESOURCES else ""
    if not name and verb == "get":
        verb = "watch" if _is_true(query.get("watch", ())) else "list"
        name = _name_from_field_selector(query.get("fieldSelector", ()))
    if not name and verb == "delete":
        verb = "deletecollection"
    return Attributes.for_resource(user, verb, resource, api_group=group, api_version=version,
                                   subresource=subresource, name=name, namespace=namespace)


def _name_from_field_selector(values: Sequence[str]) -> str:
    if not values:
        return ""
    try:
        selector = parse_field_selector(values[0])
    except SelectorError:
        return ""  # upstream logs it and authorizes the list without a name
    name = selector.exact_value("metadata.name")
    return name if name is not None and not name_is_path_segment(name) else ""

