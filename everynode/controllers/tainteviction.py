"""Taint-based eviction: deletes pods from nodes with NoExecute taints they do not tolerate.

Upstream: ``pkg/controller/tainteviction/taint_eviction.go`` (semantics reference §11.3).  For
each pod bound to a node with NoExecute taints: an untolerated taint deletes the pod at once;
otherwise the pod is deleted after the smallest ``tolerationSeconds`` among the tolerations that
match (none → tolerated forever).  Removing the taints, or the pod leaving, cancels a pending
deletion.  DaemonSet pods tolerate ``not-ready``/``unreachable`` forever, so node failure never
evicts them, while ordinary pods (300 s from DefaultTolerationSeconds) go after five minutes.

Timers live on the event loop (``call_later``), so virtual time applies.  Work per node event is
O(pods on that node) through the informer's node-name index.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.scheduling import toleration_tolerates_taint
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DELETE_NOW = 0.0


def eviction_delay(taints: list[Obj], tolerations: list[Obj]) -> float | None:
    """Seconds until eviction: 0 for an untolerated NoExecute taint, None for "never"."""
    noexecute = [t for t in taints if t.get("effect") == "NoExecute"]
    if not noexecute:
        return None
    smallest: float | None = None
    for taint in noexecute:
        used = next((tol for tol in tolerations if toleration_tolerates_taint(tol, taint)), None)
        if used is None:
            return DELETE_NOW
        seconds = used.get("tolerationSeconds")
        if seconds is None:
            continue
        seconds = max(0.0, float(seconds))
        smallest = seconds if smallest is None else min(smallest, seconds)
    return smallest


def _pod_key(pod: Obj) -> str:
    md = pod["metadata"]
    return f"{md.get('namespace', '')}/{md['name']}"


class TaintEvictionController:
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock, recorder: Any = None):
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self._nodes = informers.informer("nodes")
        self._pods = informers.informer("pods")
        self._by_node: dict[str, set[str]] = {}
        self._node_of: dict[str, str] = {}
        self._timers: dict[str, tuple[asyncio.TimerHandle, float]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._nodes.add_handler(on_add=self._node_changed,
                                on_update=lambda old, new: self._node_taints_changed(old, new))
        self._pods.add_handler(on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new),
                               on_delete=self._pod_deleted)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        for inf in (self._nodes, self._pods):
            inf.start()
        for inf in (self._nodes, self._pods):
            await inf.wait_synced()
        for node in self._nodes.list():
            self._node_changed(node)

    async def stop(self) -> None:
        for handle, _ in self._timers.values():
            handle.cancel()
        self._timers.clear()

    # -- bookkeeping ---------------------------------------------------------------------
    def _pod_changed(self, pod: Obj) -> None:
        key = _pod_key(pod)
        node = (pod.get("spec") or {}).get("nodeName") or ""
        old = self._node_of.get(key)
        if old != node:
            if old:
                self._by_node.get(old, set()).discard(key)
            if node:
                self._by_node.setdefault(node, set()).add(key)
                self._node_of[key] = node
            else:
                self._node_of.pop(key, None)
        if node and self._loop is not None:
            self._evaluate(pod)

    def _pod_deleted(self, pod: Obj) -> None:
        key = _pod_key(pod)
        node = self._node_of.pop(key, None)
        if node:
            self._by_node.get(node, set()).discard(key)
        self._cancel(key)

    def _node_changed(self, node: Obj) -> None:
        if self._loop is None:
            return
        for key in list(self._by_node.get(node["metadata"]["name"], ())):
            pod = self._pods.get(key)
            if pod is not None:
                self._evaluate(pod, node=node)

    def _node_taints_changed(self, old: Obj, new: Obj) -> None:
        if (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get("taints"):
            self._node_changed(new)

    # -- decisions -----------------------------------------------------------------------
    def _cancel(self, key: str) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer[0].cancel()

    def _evaluate(self, pod: Obj, *, node: Obj | None = None) -> None:
        key = _pod_key(pod)
        if pod["metadata"].get("deletionTimestamp"):
            self._cancel(key)
            return
        if node is None:
            node = self._nodes.get(pod["spec"]["nodeName"])
        if node is None:
            self._cancel(key)
            return
        delay = eviction_delay((node.get("spec") or {}).get("taints") or [],
                               (pod.get("spec") or {}).get("tolerations") or [])
        if delay is None:
            if key in self._timers and self.recorder is not None:
                self.recorder.event(pod, "Normal", "TaintManagerEviction",
                                    f"Cancelling deletion of Pod {key}")
            self._cancel(key)
            return
        assert self._loop is not None
        deadline = self._loop.time() + delay
        existing = self._timers.get(key)
        if existing is not None and existing[1] <= deadline:
            return
        self._cancel(key)
        uid = pod["metadata"].get("uid", "")
        handle = self._loop.call_later(delay, lambda: asyncio.ensure_future(self._evict(key, uid)))
        self._timers[key] = (handle, deadline)

    async def _evict(self, key: str, uid: str) -> None:
        self._timers.pop(key, None)
        namespace, _, name = key.partition("/")
        pod = self._pods.get(key)
        if self.recorder is not None and pod is not None:
            self.recorder.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key}")
        try:
            await self.client.delete("pods", name, namespace=namespace, preconditions={"uid": uid})
        except ApiError as e:
            if e.code not in (404, 409):
                log.warning("taint eviction of %s failed: %s", key, e)
