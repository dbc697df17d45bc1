"""User impersonation (``kubectl --as`` / ``--as-group`` / ``--as-uid``): who a request acts as,
and the ``impersonate`` checks that must pass first.

Upstream: ``staging/src/k8s.io/apiserver/pkg/endpoints/filters/impersonation.go``
(``WithImpersonation``, ``buildImpersonationRequests``).  The ``Impersonate-User`` header names
a user — or a service account, when it is a valid ``system:serviceaccount:NS:NAME`` — each
``Impersonate-Group`` a group, each ``Impersonate-Extra-KEY`` an extra value (the key
lower-cased and %-decoded), ``Impersonate-Uid`` a UID.  The requester must be allowed the verb
``impersonate`` on each: ``users`` / ``groups`` / ``serviceaccounts`` (core group; a service
account in its namespace), ``userextras/KEY`` and ``uids`` (``authentication.k8s.io``), by name.
The first refusal is the 403 of that check.  A service account impersonated without groups gets
its two groups; a user other than ``system:anonymous`` gets ``system:authenticated`` unless
``system:authenticated`` or ``system:unauthenticated`` is among the groups; ``system:anonymous``
gets ``system:unauthenticated``.

Headers are taken as (name, value) pairs in arrival order (names case-insensitive, as HTTP's);
upstream walks the extra headers in Go map order, i.e. arbitrarily.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import unquote

from everynode.api import errors
from everynode.api.rbac import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    ANONYMOUS,
    Attributes,
    Authorization,
    UserInfo,
    forbidden_error,
    service_account_groups,
    service_account_username,
    split_service_account_username,
)

USER_HEADER = "impersonate-user"
GROUP_HEADER = "impersonate-group"
UID_HEADER = "impersonate-uid"
EXTRA_HEADER_PREFIX = "impersonate-extra-"
AUTHENTICATION_GROUP = "authentication.k8s.io"

__all__ = ["ImpersonationRequest", "impersonation_requests", "impersonate"]


@dataclass(frozen=True, slots=True)
class ImpersonationRequest:
    """One thing to impersonate (upstream abuses a ``v1.ObjectReference`` for it)."""

    kind: str  # ServiceAccount, User, Group, UserExtra, UID
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""  # the extra key of a UserExtra

    def go_string(self) -> str:
        """``%v`` of the ObjectReference, as the "without impersonating a user" error prints it."""
        return "{" + " ".join((self.kind, self.namespace, self.name, "", self.api_version, "",
                               self.field_path)) + "}"


def _unescape_extra_key(key: str) -> str:
    """``url.PathUnescape``, keeping the key as it is when it is malformed."""
    try:
        return unquote(key, errors="strict")
    except UnicodeDecodeError:
        return key


def impersonation_requests(headers: Iterable[tuple[str, str]]) -> list[ImpersonationRequest]:
    """``buildImpersonationRequests``; a 400 when groups, extras or a UID come without a user."""
    user_name = ""
    groups: list[str] = []
    extras: list[tuple[str, str]] = []
    uid = ""
    for raw_name, value in headers:
        name = raw_name.lower()
        if name == USER_HEADER:
            user_name = user_name or value  # Header.Get: the first value
        elif name == GROUP_HEADER:
            groups.append(value)
        elif name == UID_HEADER:
            uid = uid or value
        elif name.startswith(EXTRA_HEADER_PREFIX):
            extras.append((_unescape_extra_key(name[len(EXTRA_HEADER_PREFIX):]), value))
    requests: list[ImpersonationRequest] = []
    if user_name:
        sa = split_service_account_username(user_name)
        if sa is not None:
            requests.append(ImpersonationRequest("ServiceAccount", sa[1], sa[0]))
        else:
            requests.append(ImpersonationRequest("User", user_name))
    requests.extend(ImpersonationRequest("Group", g) for g in groups)
    requests.extend(ImpersonationRequest("UserExtra", v, api_version=f"{AUTHENTICATION_GROUP}/v1", field_path=k)
                    for k, v in extras)
    if uid:
        requests.append(ImpersonationRequest("UID", uid, api_version=f"{AUTHENTICATION_GROUP}/v1"))
    if (groups or extras or uid) and not user_name:
        listed = "[" + " ".join(r.go_string() for r in requests) + "]"
        raise errors.bad_request(f"requested {listed} without impersonating a user")
    return requests


_RESOURCES = {"ServiceAccount": ("", "v1", "serviceaccounts"), "User": ("", "v1", "users"),
              "Group": ("", "v1", "groups"), "UserExtra": (AUTHENTICATION_GROUP, "v1", "userextras"),
              "UID": (AUTHENTICATION_GROUP, "v1", "uids")}


def acting_as_attributes(requestor: UserInfo, request: ImpersonationRequest) -> Attributes:
    """The ``impersonate`` check for one request."""
    group, version, resource = _RESOURCES[request.kind]
    return Attributes.for_resource(requestor, "impersonate", resource, api_group=group, api_version=version,
                                   subresource=request.field_path if request.kind == "UserExtra" else "",
                                   name=request.name, namespace=request.namespace)


def impersonate(requestor: UserInfo, headers: Iterable[tuple[str, str]],
                authorizer: Callable[[Attributes], Authorization]) -> UserInfo | None:
    """The user the request acts as, or None when it impersonates nobody.  Raises the
    :class:`~everynode.api.errors.ApiError` the filter answers with (400, or 403 naming the
    first check that failed)."""
    requests = impersonation_requests(headers)
    if not requests:
        return None
    groups_specified = any(r.kind == "Group" for r in requests)
    username, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for request in requests:
        attrs = acting_as_attributes(requestor, request)
        if request.kind == "ServiceAccount":
            username = service_account_username(request.namespace, request.name)
            if not groups_specified:
                groups = list(service_account_groups(request.namespace))
        elif request.kind == "User":
            username = request.name
        elif request.kind == "Group":
            groups.append(request.name)
        elif request.kind == "UserExtra":
            extra.setdefault(request.field_path, []).append(request.name)
        else:
            uid = request.name
        answer = authorizer(attrs)
        if not answer.allowed:
            raise forbidden_error(attrs, answer.reason)
    if username != ANONYMOUS:
        if ALL_AUTHENTICATED not in groups and ALL_UNAUTHENTICATED not in groups:
            groups.append(ALL_AUTHENTICATED)
    elif ALL_UNAUTHENTICATED not in groups:
        groups.append(ALL_UNAUTHENTICATED)
    return UserInfo(username, tuple(groups), uid, {k: tuple(v) for k, v in extra.items()})
