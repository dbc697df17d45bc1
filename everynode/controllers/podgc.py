"""Pod garbage collection: pods bound to deleted nodes, unscheduled terminating pods, and
terminated pods beyond a threshold.

Upstream: ``pkg/controller/podgc/gc_controller.go`` (semantics reference §11.5).  Every
``period`` (20 s): a pod whose ``spec.nodeName`` names a node that no longer exists is
quarantined for 40 s, the node is then checked with a live GET, and if it is still gone the pod
is marked Failed (condition ``DisruptionTarget``, reason ``DeletionByPodGC``) and force-deleted.
Unscheduled pods with a deletionTimestamp are force-deleted.  Terminated pods above
``terminated_threshold`` (12,500) are deleted oldest first.

The pass walks the node names pods are bound to (an index kept from pod events), not every pod,
so its cost is O(nodes with pods) plus the orphans found.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from everynode.api.errors import ApiError
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class PodGC:
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock,
                 period: float = 20.0, quarantine: float = 40.0, terminated_threshold: int = 12500):
        self.client = client
        self.clock = clock
        self.period = period
        self.quarantine = quarantine
        self.terminated_threshold = terminated_threshold
        self._nodes = informers.informer("nodes")
        self._pods = informers.informer("pods")
        self._by_node: dict[str, set[str]] = {}
        self._node_of: dict[str, str] = {}
        self._terminated: set[str] = set()
        self._unbound_terminating: set[str] = set()
        self._orphan_since: dict[str, float] = {}
        self._task: asyncio.Task[None] | None = None
        self._pods.add_handler(on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new),
                               on_delete=self._pod_deleted)

    @staticmethod
    def _key(pod: Obj) -> str:
        md = pod["metadata"]
        return f"{md.get('namespace', '')}/{md['name']}"

    def _pod_changed(self, pod: Obj) -> None:
        key = self._key(pod)
        node = (pod.get("spec") or {}).get("nodeName") or ""
        old = self._node_of.get(key)
        if old != node:
            if old:
                s = self._by_node.get(old)
                if s is not None:
                    s.discard(key)
                    if not s:
                        del self._by_node[old]
            if node:
                self._by_node.setdefault(node, set()).add(key)
                self._node_of[key] = node
            else:
                self._node_of.pop(key, None)
        phase = (pod.get("status") or {}).get("phase")
        if phase in ("Succeeded", "Failed"):
            self._terminated.add(key)
        else:
            self._terminated.discard(key)
        if not node and pod["metadata"].get("deletionTimestamp"):
            self._unbound_terminating.add(key)
        else:
            self._unbound_terminating.discard(key)

    def _pod_deleted(self, pod: Obj) -> None:
        key = self._key(pod)
        node = self._node_of.pop(key, None)
        if node:
            s = self._by_node.get(node)
            if s is not None:
                s.discard(key)
                if not s:
                    del self._by_node[node]
        self._terminated.discard(key)
        self._unbound_terminating.discard(key)

    async def start(self) -> None:
        for inf in (self._nodes, self._pods):
            inf.start()
        for inf in (self._nodes, self._pods):
            await inf.wait_synced()
        self._task = asyncio.create_task(self._loop(), name="podgc")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            try:
                await self.gc_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # pragma: no cover - defensive
                log.warning("pod GC pass failed: %s", exc)

    async def gc_once(self) -> None:
        await self._gc_terminated()
        await self._gc_orphaned()
        await self._gc_unscheduled_terminating()

    async def _gc_orphaned(self) -> None:
        now = self.clock.monotonic()
        missing = [n for n in self._by_node if self._nodes.get(n) is None]
        for name in list(self._orphan_since):
            if name not in missing:
                del self._orphan_since[name]
        for name in missing:
            since = self._orphan_since.setdefault(name, now)
            if now - since < self.quarantine:
                continue
            try:
                await self.client.get("nodes", name)
                continue  # the node exists after all (the cache lagged)
            except ApiError as e:
                if e.code != 404:
                    continue
            for key in list(self._by_node.get(name, ())):
                await self._fail_and_delete(key, "PodGC: node no longer exists")
            self._orphan_since.pop(name, None)

    async def _gc_unscheduled_terminating(self) -> None:
        for key in list(self._unbound_terminating):
            await self._force_delete(key)

    async def _gc_terminated(self) -> None:
        excess = len(self._terminated) - self.terminated_threshold
        if excess <= 0:
            return
        pods = [p for p in (self._pods.get(k) for k in self._terminated) if p is not None]
        pods.sort(key=lambda p: p["metadata"].get("creationTimestamp", ""))
        for pod in pods[:excess]:
            await self._force_delete(self._key(pod), grace=None)

    async def _fail_and_delete(self, key: str, message: str) -> None:
        pod = self._pods.get(key)
        if pod is None:
            return
        namespace, _, name = key.partition("/")
        if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            stamp = self.clock.rfc3339()
            patch = {"status": {"phase": "Failed", "conditions": [
                {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                 "message": message, "lastTransitionTime": stamp}]}}
            try:
                await self.client.patch("pods", name, patch, namespace=namespace, patch_type="strategic",
                                        subresource="status")
            except ApiError:
                pass
        await self._force_delete(key)

    async def _force_delete(self, key: str, *, grace: int | None = 0) -> None:
        namespace, _, name = key.partition("/")
        try:
            await self.client.delete("pods", name, namespace=namespace, grace_period_seconds=grace)
        except ApiError as e:
            if e.code != 404:
                log.info("pod GC could not delete %s: %s", key, e)
