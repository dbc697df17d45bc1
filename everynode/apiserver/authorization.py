"""Who may do what: the server's authorizer (``--authorization always-allow|rbac``) and the RBAC
policy it reads, kept current from the store.

Why two modes behind one small interface: kube-apiserver's ``--authorization-mode`` picks a
chain of authorizers; everynode offers upstream's ``AlwaysAllow`` (the default, so a
single-user cluster pays nothing per request) and ``RBAC`` (``system:masters`` first, then the
RBAC authorizer, as kube-apiserver puts the privileged-group authorizer before every other).
The review resources (``kubectl auth can-i``) ask the same authorizer the HTTP layer asks, so
under ``AlwaysAllow`` a SubjectAccessReview of *any* user answers ``allowed: true`` and a
SelfSubjectRulesReview lists ``*`` — exactly what kube-apiserver started with
``--authorization-mode=AlwaysAllow`` answers (``authorizerfactory.alwaysAllowAuthorizer``:
``Authorize`` allows with no reason, ``RulesFor`` returns the all-verbs rules).

The RBAC policy: an :class:`~everynode.api.rbac.RBACIndex` over the four RBAC kinds, built on
first use from a list of the store and kept current by one store watch per kind.  The watches
are drained synchronously before each decision (``StoreWatcher.drain``: no task, no lag — a
binding written by one request is in force for the next, as with upstream's informers once
synced), so a decision costs the pending events plus the index lookup.  A watch the store
ended (backlog overflow) is reopened and the index rebuilt from a fresh list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import orjson

from everynode.api import rbac
from everynode.api.authorization_reviews import Decide
from everynode.api.rbac import Attributes, Authorization, Decision, RBACIndex, RuleSource, UserInfo
from everynode.storage.base import Store
from everynode.storage.watch import StoreWatcher

Obj = dict[str, Any]

ALWAYS_ALLOW = "always-allow"
RBAC = "rbac"
MODES = (ALWAYS_ALLOW, RBAC)

# The admin kubeconfig's user: a member of system:masters, as kubeadm's admin.conf.
ADMIN = UserInfo("kubernetes-admin", (rbac.SYSTEM_PRIVILEGED_GROUP, rbac.ALL_AUTHENTICATED))

_KINDS: Mapping[str, str] = {
    "roles.rbac.authorization.k8s.io": "Role",
    "clusterroles.rbac.authorization.k8s.io": "ClusterRole",
    "rolebindings.rbac.authorization.k8s.io": "RoleBinding",
    "clusterrolebindings.rbac.authorization.k8s.io": "ClusterRoleBinding",
}

_ALL_RULES: Obj = {
    "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
    "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
    "incomplete": False,
}

__all__ = ["ADMIN", "ALWAYS_ALLOW", "MODES", "RBAC", "Authorizer", "AlwaysAllow", "RBACAuthorizer",
           "new_authorizer"]


class Authorizer(Protocol):
    """``authorizer.Authorizer`` plus ``RuleResolver``, as the reviews need them: the policy
    (``source``) and, for an authorizer that is not RBAC over it, its own decision and rules."""

    mode: str

    def authorize(self, attrs: Attributes) -> Authorization: ...

    def source(self) -> RuleSource: ...

    def review_decide(self) -> Decide | None: ...

    def rules_review_status(self, user: UserInfo, namespace: str) -> Obj | None: ...


class AlwaysAllow:
    """``--authorization always-allow``: every request is allowed, with no reason."""

    mode = ALWAYS_ALLOW
    _EMPTY = RBACIndex()

    def authorize(self, attrs: Attributes) -> Authorization:
        return Authorization(Decision.ALLOW)

    def source(self) -> RuleSource:
        return self._EMPTY

    def review_decide(self) -> Decide | None:
        return self.authorize

    def rules_review_status(self, user: UserInfo, namespace: str) -> Obj | None:
        return orjson.loads(orjson.dumps(_ALL_RULES))  # a private copy


class RBACAuthorizer:
    """``--authorization rbac``: ``system:masters``, then RBAC over the stored policy."""

    mode = RBAC

    def __init__(self, store: Store) -> None:
        self._store = store
        self._index: RBACIndex | None = None
        self._watches: dict[str, StoreWatcher] = {}

    def source(self) -> RBACIndex:
        """The policy as stored now (every committed write of the four kinds applied)."""
        index = self._index
        if index is None or any(w.stopped for w in self._watches.values()):
            return self._rebuild()
        for resource, watch in self._watches.items():
            events = watch.drain()
            if events:
                kind = _KINDS[resource]
                for event in events:
                    if event.type == "DELETED":
                        index.delete(kind, event.object)
                    elif event.type in ("ADDED", "MODIFIED"):
                        index.upsert(kind, event.object)
        return index

    def _rebuild(self) -> RBACIndex:
        for watch in self._watches.values():
            watch.stop()
        index = RBACIndex()
        rv = self._store.current_rv()
        watches: dict[str, StoreWatcher] = {}
        for resource, kind in _KINDS.items():
            opened = self._store.watch(resource, since_rv=rv)
            if not isinstance(opened, StoreWatcher):  # every Store's watch is the hub's
                raise TypeError(f"{type(opened).__name__} cannot be drained")
            watches[resource] = opened
            for obj in self._store.list(resource).items:
                index.upsert(kind, obj)
        self._watches = watches
        self._index = index
        return index

    def authorize(self, attrs: Attributes) -> Authorization:
        return rbac.authorize(attrs, self.source())

    def review_decide(self) -> Decide | None:
        return None  # RBAC over source(): the reviews' own default

    def rules_review_status(self, user: UserInfo, namespace: str) -> Obj | None:
        return None

    def close(self) -> None:
        for watch in self._watches.values():
            watch.stop()
        self._watches = {}
        self._index = None


def new_authorizer(mode: str, store: Store) -> AlwaysAllow | RBACAuthorizer:
    if mode == ALWAYS_ALLOW:
        return AlwaysAllow()
    if mode == RBAC:
        return RBACAuthorizer(store)
    raise ValueError(f"unknown authorization mode {mode!r} (want one of {', '.join(MODES)})")
