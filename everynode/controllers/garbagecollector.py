"""The garbage collector: deletes dependents whose owners are gone, and carries out the
``foregroundDeletion`` and ``orphan`` finalizers.

Upstream: ``pkg/controller/garbagecollector`` (graph builder + attemptToDelete / attemptToOrphan
queues).  What is kept from it:

* An owner graph built from informer events: owner uid → dependents.  Events cost O(owner
  references of the object), never a scan.
* **Background** (the default for apps/v1 deletes): when an owner disappears, each dependent is
  checked; if none of its owners exists any more (verified with a live GET, because the cache
  can lag), the dependent is deleted; if some owners remain, only the dangling references are
  removed.
* **Foreground**: an owner that carries ``foregroundDeletion`` and a deletionTimestamp gets its
  dependents deleted; once no dependent with ``blockOwnerDeletion: true`` is left, the finalizer
  is removed and the API server completes the deletion.
* **Orphan**: an owner carrying the ``orphan`` finalizer has its references removed from every
  dependent, then the finalizer is removed.

Left out on purpose: upstream's discovery-driven monitoring of every resource (we watch the
resources everynode serves that take part in ownership) and the "virtual node" bookkeeping for
owners that were never observed (replaced by the live GET in :meth:`_owner_state`).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from everynode.api import registry
from everynode.api.errors import ApiError
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.client.workqueue import WorkQueue
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

# Resources whose objects can own or be owned in everynode's world.
MONITORED: tuple[str, ...] = (
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
)

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"


@dataclass(frozen=True, slots=True)
class Ident:
    resource: str
    namespace: str
    name: str
    uid: str


def _ident(resource: str, obj: Obj) -> Ident:
    md = obj["metadata"]
    return Ident(resource, md.get("namespace") or "", md["name"], md.get("uid", ""))


class GarbageCollector:
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock,
                 workers: int = 2, resources: tuple[str, ...] = MONITORED) -> None:
        self.client = client
        self.clock = clock
        self.workers = workers
        self._informers = {r: informers.informer(r) for r in resources}
        self._by_uid: dict[str, Ident] = {}
        self._owners_of: dict[str, tuple[str, ...]] = {}  # dependent uid -> owner uids
        self._dependents: dict[str, set[Ident]] = {}  # owner uid -> dependents
        self.queue: WorkQueue = WorkQueue(name="garbagecollector")
        self._tasks: list[asyncio.Task[None]] = []
        for resource, inf in self._informers.items():
            inf.add_handler(
                on_add=lambda o, r=resource: self._observe(r, o),
                on_update=lambda old, new, r=resource: self._observe(r, new),
                on_delete=lambda o, r=resource: self._forget(r, o),
            )

    # -- graph ---------------------------------------------------------------------------
    def _observe(self, resource: str, obj: Obj) -> None:
        ident = _ident(resource, obj)
        md = obj["metadata"]
        self._by_uid[ident.uid] = ident
        owners = tuple(ref.get("uid", "") for ref in md.get("ownerReferences") or ())
        previous = self._owners_of.get(ident.uid, ())
        if owners != previous:
            for uid in previous:
                deps = self._dependents.get(uid)
                if deps is not None:
                    deps.discard(ident)
                    if not deps:
                        del self._dependents[uid]
            for uid in owners:
                self._dependents.setdefault(uid, set()).add(ident)
            if owners:
                self._owners_of[ident.uid] = owners
            else:
                self._owners_of.pop(ident.uid, None)
        if owners and any(uid not in self._by_uid for uid in owners):
            self.queue.add(("delete", ident))
        finalizers = md.get("finalizers") or ()
        if md.get("deletionTimestamp") and (FOREGROUND in finalizers or ORPHAN in finalizers):
            self.queue.add(("finalize", ident))
        # An owner waiting for its dependents may be unblocked by this dependent's change.
        for uid in owners:
            owner = self._by_uid.get(uid)
            if owner is not None:
                self.queue.add(("finalize", owner))

    def _forget(self, resource: str, obj: Obj) -> None:
        ident = _ident(resource, obj)
        self._by_uid.pop(ident.uid, None)
        for uid in self._owners_of.pop(ident.uid, ()):
            deps = self._dependents.get(uid)
            if deps is not None:
                deps.discard(ident)
                if not deps:
                    del self._dependents[uid]
            owner = self._by_uid.get(uid)
            if owner is not None:
                self.queue.add(("finalize", owner))
        for dep in list(self._dependents.get(ident.uid, ())):
            self.queue.add(("delete", dep))

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        for inf in self._informers.values():
            inf.start()
        for inf in self._informers.values():
            await inf.wait_synced()
        self._tasks = [asyncio.create_task(self._worker(), name=f"gc-worker-{i}") for i in range(self.workers)]

    async def stop(self) -> None:
        self.queue.shutdown()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _worker(self) -> None:
        while True:
            item = await self.queue.get()
            if item is None:
                return
            try:
                action, ident = item
                if action == "delete":
                    await self._attempt_to_delete(ident)
                else:
                    await self._process_finalizers(ident)
                self.queue.forget(item)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # retried with backoff, never fatal
                log.debug("garbage collector: %s %s: %s", item[0], item[1], exc)
                self.queue.add_rate_limited(item)
            finally:
                self.queue.done(item)

    # -- actions -------------------------------------------------------------------------
    def _cached(self, ident: Ident) -> Obj | None:
        inf = self._informers.get(ident.resource)
        if inf is None:
            return None
        key = f"{ident.namespace}/{ident.name}" if ident.namespace else ident.name
        obj = inf.get(key)
        if obj is None or obj["metadata"].get("uid") != ident.uid:
            return None
        return obj

    async def _owner_state(self, dependent: Obj, ref: Obj) -> str:
        """"solid", "waiting" (owner in foreground deletion), "absent", or "unknown"."""
        rt = registry.by_kind(ref.get("apiVersion", ""), ref.get("kind", ""))
        if rt is None:
            return "unknown"
        namespace = (dependent["metadata"].get("namespace") or "") if rt.namespaced else ""
        try:
            owner = await self.client.get(rt.key, ref.get("name", ""), namespace=namespace)
        except ApiError as e:
            if e.code == 404:
                return "absent"
            raise
        md = owner["metadata"]
        if md.get("uid") != ref.get("uid"):
            return "absent"
        if md.get("deletionTimestamp") and FOREGROUND in (md.get("finalizers") or ()):
            return "waiting"
        return "solid"

    async def _attempt_to_delete(self, ident: Ident) -> None:
        obj = self._cached(ident)
        if obj is None:
            return
        md = obj["metadata"]
        refs = md.get("ownerReferences") or []
        if not refs:
            return
        states = [await self._owner_state(obj, ref) for ref in refs]
        if "solid" in states or "unknown" in states:
            dangling = [ref for ref, st in zip(refs, states, strict=True) if st == "absent"]
            if dangling:
                keep = [ref for ref, st in zip(refs, states, strict=True) if st != "absent"]
                await self._patch_owner_refs(ident, md, keep)
            return
        if md.get("deletionTimestamp"):
            return
        policy = "Foreground" if "waiting" in states else "Background"
        try:
            await self.client.delete(ident.resource, ident.name, namespace=ident.namespace,
                                     propagation_policy=policy, preconditions={"uid": ident.uid})
        except ApiError as e:
            if e.code not in (404, 409):
                raise

    async def _patch_owner_refs(self, ident: Ident, md: Obj, refs: list[Obj]) -> None:
        patch = {"metadata": {"ownerReferences": refs or None, "uid": ident.uid,
                              "resourceVersion": md.get("resourceVersion")}}
        try:
            await self.client.patch(ident.resource, ident.name, patch, namespace=ident.namespace, patch_type="merge")
        except ApiError as e:
            if e.code == 409:
                self.queue.add_rate_limited(("delete", ident))
            elif e.code != 404:
                raise

    async def _process_finalizers(self, ident: Ident) -> None:
        obj = self._cached(ident)
        if obj is None:
            return
        md = obj["metadata"]
        finalizers = list(md.get("finalizers") or ())
        if not md.get("deletionTimestamp"):
            return
        dependents = list(self._dependents.get(ident.uid, ()))
        if ORPHAN in finalizers:
            for dep in dependents:
                dep_obj = self._cached(dep)
                if dep_obj is None:
                    continue
                keep = [r for r in dep_obj["metadata"].get("ownerReferences") or () if r.get("uid") != ident.uid]
                await self._patch_owner_refs(dep, dep_obj["metadata"], keep)
            await self._remove_finalizer(ident, md, ORPHAN)
            return
        if FOREGROUND in finalizers:
            blocking = 0
            for dep in dependents:
                dep_obj = self._cached(dep)
                if dep_obj is None:
                    continue
                blocks = any(r.get("uid") == ident.uid and r.get("blockOwnerDeletion")
                             for r in dep_obj["metadata"].get("ownerReferences") or ())
                if blocks:
                    blocking += 1
                if not dep_obj["metadata"].get("deletionTimestamp"):
                    self.queue.add(("delete", dep))
            if blocking == 0:
                await self._remove_finalizer(ident, md, FOREGROUND)

    async def _remove_finalizer(self, ident: Ident, md: Obj, finalizer: str) -> None:
        remaining = [f for f in md.get("finalizers") or () if f != finalizer]
        patch = {"metadata": {"finalizers": remaining or None, "resourceVersion": md.get("resourceVersion")}}
        try:
            await self.client.patch(ident.resource, ident.name, patch, namespace=ident.namespace, patch_type="merge")
        except ApiError as e:
            if e.code == 409:
                self.queue.add_rate_limited(("finalize", ident))
            elif e.code != 404:
                raise
