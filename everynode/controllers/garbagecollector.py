"""The garbage collector: deletes dependents whose owners are gone, and carries out the
``foregroundDeletion`` and ``orphan`` finalizers.

Upstream: ``pkg/controller/garbagecollector`` (``graph_builder.go`` + ``garbagecollector.go``:
``attemptToDeleteItem``, ``processDeletingDependentsItem``, ``orphanDependents``).  What is kept:

* An owner graph built from informer events: owner uid → dependent uids, and per dependent the
  ``blockOwnerDeletion`` flag of each reference.  An event costs O(owner references of the
  object), never a scan.
* Decisions are taken on live state, as upstream: the dependent is re-read with a GET and every
  owner reference is classified with a GET of the owner (the informer cache can lag) as *solid*
  (exists, same uid, not being deleted in the foreground), *dangling* (404 or another uid) or
  *waiting* (deletionTimestamp + ``foregroundDeletion``).
* **Background** (the default for apps/v1 deletes): a dependent without any solid owner is
  deleted (uid precondition; propagation Foreground when an owner is waiting and the dependent
  has dependents of its own, else according to the dependent's own GC finalizers).  With a solid
  owner left, only the dangling and waiting references are removed (a strategic-merge patch
  ``$patch: delete`` keyed by uid, which cannot conflict).
* **Foreground**: an owner with a deletionTimestamp and ``foregroundDeletion`` gets all its
  dependents deleted; once no dependent with ``blockOwnerDeletion: true`` is left in the graph,
  the finalizer is removed and the API server completes the deletion.
* **Orphan**: an owner carrying the ``orphan`` finalizer has its reference removed from every
  dependent, then the finalizer is removed.

Left out on purpose: discovery-driven monitoring of every resource (we watch the resources
everynode serves that take part in ownership); the "virtual node" bookkeeping for owners never
observed (replaced by the live GET); the cycle breaker that rewrites ``blockOwnerDeletion`` when
a foreground owner and its dependent are both waiting for their dependents.  An owner of a kind
the server does not know is treated as solid: what cannot be verified is never deleted.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from everynode.api import registry
from everynode.api.errors import ApiError
from everynode.client.base import Client
from everynode.client.informer import Informer, SharedInformerFactory
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.client.workqueue import WorkQueue
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

# Resources whose objects can own or be owned in everynode's world (namespaces for their
# ``orphan`` finalizer).
MONITORED: tuple[str, ...] = (
    "namespaces",
    "daemonsets.apps",
    "controllerrevisions.apps",
    "pods",
    "nodes",
    "leases.coordination.k8s.io",
    "services",
    "endpoints",
    "endpointslices.discovery.k8s.io",
    "configmaps",
    "secrets",
    "serviceaccounts",
    "deployments.apps",
    "replicasets.apps",
)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"

# Owner reference states (``classifyReferences``).
SOLID = "solid"
DANGLING = "dangling"
WAITING = "waiting"

DELETE = "delete"  # queue action: attemptToDelete for a dependent (or a foreground owner)
ORPHAN_ACTION = "orphan"  # queue action: attemptToOrphan for an owner


@dataclass(frozen=True, slots=True)
class Ident:
    resource: str
    namespace: str
    name: str
    uid: str


def _ident(resource: str, obj: Obj) -> Ident:
    md = obj["metadata"]
    return Ident(resource, md.get("namespace") or "", md["name"], md.get("uid", ""))


def _is_deleting(md: Obj, finalizer: str) -> bool:
    return bool(md.get("deletionTimestamp")) and finalizer in (md.get("finalizers") or ())


def deletion_policy(finalizers: list[str] | tuple[str, ...], *, owner_waiting: bool, has_dependents: bool) -> str:
    """The propagation policy the collector deletes a dependent with (``attemptToDeleteItem``)."""
    if owner_waiting and has_dependents:
        return "Foreground"
    if ORPHAN in finalizers:
        return "Orphan"
    if FOREGROUND in finalizers:
        return "Foreground"
    return "Background"


def _log_failure(item: Any, exc: Exception, _retried: bool) -> None:
    log.debug("garbage collector: %s %s: %s", item[0], item[1], exc)


class GarbageCollector(ControllerLifecycle):
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock,
                 workers: int = 2, resources: tuple[str, ...] = MONITORED) -> None:
        self.client = client
        self.clock = clock
        self.workers = workers
        self.kit = ControllerKit("garbagecollector", informers=informers)
        self._informers: dict[str, Informer] = {r: self.kit.informer(r) for r in resources}
        self._by_uid: dict[str, Ident] = {}
        self._owner_refs: dict[str, dict[str, bool]] = {}  # dependent uid -> {owner uid: blockOwnerDeletion}
        self._dependents: dict[str, set[str]] = {}  # owner uid -> dependent uids
        self._foreground: set[str] = set()  # uids of objects deleting in the foreground
        self._synced = False
        self.queue: WorkQueue = self.kit.queue()
        self.kit.workers(self.queue, self._process, count=workers, on_error=_log_failure)
        self.kit.on_synced(self._queue_dangling)
        for resource, inf in self._informers.items():
            self.kit.watch(
                inf,
                on_add=functools.partial(self._observe, resource),
                on_update=functools.partial(self._observe_update, resource),
                on_delete=functools.partial(self._forget, resource),
            )

    # -- graph ---------------------------------------------------------------------------
    def _observe_update(self, resource: str, old: Obj, new: Obj) -> None:
        """An update that leaves the owner references, the finalizers and the deletion state as
        they were changes nothing in the graph (most updates: every Lease renewal, every status
        write); it is not observed again."""
        om, nm = old["metadata"], new["metadata"]
        if (om.get("ownerReferences") == nm.get("ownerReferences") and om.get("finalizers") == nm.get("finalizers")
                and om.get("deletionTimestamp") == nm.get("deletionTimestamp") and om.get("uid") == nm.get("uid")
                and nm.get("uid") in self._by_uid):
            return
        self._observe(resource, new)

    def _observe(self, resource: str, obj: Obj) -> None:
        ident = _ident(resource, obj)
        uid = ident.uid
        md = obj["metadata"]
        self._by_uid[uid] = ident
        refs = {ref.get("uid", ""): bool(ref.get("blockOwnerDeletion"))
                for ref in md.get("ownerReferences") or ()}
        previous = self._owner_refs.get(uid, {})
        if refs != previous:
            for owner in previous.keys() - refs.keys():
                self._unlink(owner, uid)
            for owner in refs.keys() - previous.keys():
                self._dependents.setdefault(owner, set()).add(uid)
            if refs:
                self._owner_refs[uid] = refs
            else:
                self._owner_refs.pop(uid, None)
            # A foreground owner may be unblocked by a dropped reference or a cleared flag.
            for owner in previous.keys() & self._foreground:
                self.queue.add((DELETE, owner))
            if self._synced and any(owner not in self._by_uid for owner in refs):
                self.queue.add((DELETE, uid))
        if _is_deleting(md, FOREGROUND):
            if uid not in self._foreground:
                self._foreground.add(uid)
                for dep in self._dependents.get(uid, ()):
                    self.queue.add((DELETE, dep))
            self.queue.add((DELETE, uid))
        else:
            self._foreground.discard(uid)
        if _is_deleting(md, ORPHAN):
            self.queue.add((ORPHAN_ACTION, uid))

    def _unlink(self, owner: str, dependent: str) -> None:
        deps = self._dependents.get(owner)
        if deps is not None:
            deps.discard(dependent)
            if not deps:
                del self._dependents[owner]

    def _forget(self, resource: str, obj: Obj) -> None:
        uid = obj["metadata"].get("uid", "")
        self._by_uid.pop(uid, None)
        self._foreground.discard(uid)
        for owner in self._owner_refs.pop(uid, {}):
            self._unlink(owner, uid)
            if owner in self._foreground:
                self.queue.add((DELETE, owner))
        for dep in self._dependents.get(uid, ()):
            self.queue.add((DELETE, dep))

    # -- lifecycle -----------------------------------------------------------------------
    def _queue_dangling(self) -> None:
        """Once synced: owners never observed (dangling from the start, or of a kind we do not
        watch) make their dependents candidates for deletion."""
        self._synced = True
        for uid, refs in self._owner_refs.items():
            if any(owner not in self._by_uid for owner in refs):
                self.queue.add((DELETE, uid))

    async def _process(self, item: tuple[str, str]) -> None:
        action, uid = item
        if action == DELETE:
            await self._attempt_to_delete(uid)
        else:
            await self._attempt_to_orphan(uid)

    async def _live(self, ident: Ident) -> Obj | None:
        try:
            obj = await self.client.get(ident.resource, ident.name, namespace=ident.namespace)
        except ApiError as e:
            if e.code == 404:
                return None
            raise
        return obj if obj["metadata"].get("uid") == ident.uid else None

    async def _owner_state(self, dependent_namespace: str, ref: Obj) -> str:
        rt = registry.by_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if rt is None:
            return SOLID  # a kind we cannot look up: never delete on its account
        if rt.namespaced and not dependent_namespace:
            return DANGLING  # a cluster-scoped dependent cannot have a namespaced owner
        namespace = dependent_namespace if rt.namespaced else ""
        try:
            owner = await self.client.get(rt.key, ref.get("name", ""), namespace=namespace)
        except ApiError as e:
            if e.code == 404:
                return DANGLING
            raise
        md = owner["metadata"]
        if md.get("uid") != ref.get("uid"):
            return DANGLING
        if _is_deleting(md, FOREGROUND):
            return WAITING
        return SOLID

    # -- attemptToDelete -----------------------------------------------------------------
    async def _attempt_to_delete(self, uid: str) -> None:
        ident = self._by_uid.get(uid)
        if ident is None:
            return
        obj = await self._live(ident)
        if obj is None:
            return
        md = obj["metadata"]
        if md.get("deletionTimestamp"):
            if FOREGROUND in (md.get("finalizers") or ()):
                await self._process_deleting_dependents(ident, obj)
            return
        refs = md.get("ownerReferences") or []
        if not refs:
            return
        states = [await self._owner_state(ident.namespace, ref) for ref in refs]
        if SOLID in states:
            stale = [ref.get("uid", "") for ref, st in zip(refs, states, strict=True) if st != SOLID]
            if stale:
                await self._remove_owner_refs(ident, stale)
            return
        policy = deletion_policy(md.get("finalizers") or (), owner_waiting=WAITING in states,
                                 has_dependents=bool(self._dependents.get(uid)))
        try:
            await self.client.delete(ident.resource, ident.name, namespace=ident.namespace,
                                     propagation_policy=policy, preconditions={"uid": ident.uid})
        except ApiError as e:
            if e.code not in (404, 409):
                raise

    async def _process_deleting_dependents(self, owner: Ident, obj: Obj) -> None:
        """``processDeletingDependentsItem``: wait for the blocking dependents, then finalize."""
        blocking = [dep for dep in self._dependents.get(owner.uid, ())
                    if self._owner_refs.get(dep, {}).get(owner.uid)]
        if not blocking:
            await self._remove_finalizer(owner, obj, FOREGROUND)
            return
        for dep in blocking:
            if dep not in self._foreground:
                self.queue.add((DELETE, dep))

    # -- attemptToOrphan -----------------------------------------------------------------
    async def _attempt_to_orphan(self, uid: str) -> None:
        ident = self._by_uid.get(uid)
        if ident is None:
            return
        obj = await self._live(ident)
        if obj is None or not _is_deleting(obj["metadata"], ORPHAN):
            return
        for dep in list(self._dependents.get(uid, ())):
            dep_ident = self._by_uid.get(dep)
            if dep_ident is not None:
                await self._remove_owner_refs(dep_ident, [uid])
        await self._remove_finalizer(ident, obj, ORPHAN)

    # -- writes --------------------------------------------------------------------------
    async def _remove_owner_refs(self, ident: Ident, owner_uids: list[str]) -> None:
        """Strategic-merge ``$patch: delete`` by uid, with the dependent's uid as precondition
        (``GenerateDeleteOwnerRefStrategicMergeBytes``)."""
        patch = {"metadata": {"uid": ident.uid,
                              "ownerReferences": [{"$patch": "delete", "uid": u} for u in owner_uids]}}
        try:
            await self.client.patch(ident.resource, ident.name, patch, namespace=ident.namespace,
                                    patch_type="strategic")
        except ApiError as e:
            # 404: gone; 409/422: the uid precondition failed (deleted and recreated).
            if e.code not in (404, 409, 422):
                raise

    async def _remove_finalizer(self, ident: Ident, obj: Obj, finalizer: str) -> None:
        md = obj["metadata"]
        remaining = [f for f in md.get("finalizers") or () if f != finalizer]
        patch = {"metadata": {"finalizers": remaining or None, "resourceVersion": md.get("resourceVersion")}}
        try:
            await self.client.patch(ident.resource, ident.name, patch, namespace=ident.namespace, patch_type="merge")
        except ApiError as e:
            if e.code != 404:
                raise  # a conflict is retried from a fresh read
