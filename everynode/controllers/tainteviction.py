"""Taint-based eviction: deletes pods from nodes with NoExecute taints they do not tolerate.

Upstream: ``pkg/controller/tainteviction/taint_eviction.go`` (semantics reference §11.3).  For
each pod bound to a node with NoExecute taints, re-evaluated on node taint changes and on pod
add/update:

* a NoExecute taint no toleration of the pod tolerates → the pod is deleted at once;
* otherwise the smallest ``tolerationSeconds`` among the tolerations used (≤ 0 means now; none
  set means forever, which cancels a scheduled deletion) gives the deadline, counted from the
  time the pod was first scheduled for deletion: re-evaluations do not push it back, a smaller
  value brings it forward;
* removing the taints, or the pod leaving the node, cancels a pending deletion
  (``Cancelling deletion of Pod ns/name``).

Deletion (``addConditionAndDeletePod``): event ``TaintManagerEviction`` ``Marking for deletion
Pod ns/name``, pod condition ``DisruptionTarget=True`` (``DeletionByTaintManager``, only for the
pod of the uid that was scheduled, as upstream's status patch carries the uid), then a normal
(graceful) delete without preconditions, as upstream's, up to 5 attempts.  DaemonSet pods tolerate ``not-ready`` and
``unreachable`` forever, so node failure never evicts them, while ordinary pods (300 s from
DefaultTolerationSeconds) go after five minutes.

Timers are ``loop.call_at`` on the event loop, so virtual time applies.  Work per node event is
O(pods on that node) through the pods informer's node-name index (:data:`NODE_NAME_INDEX`, shared
with the node lifecycle controller and pod GC).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.scheduling import toleration_tolerates_taint
from everynode.client.base import Client
from everynode.client.informer import NODE_NAME_INDEX, SharedInformerFactory, index_pod_by_node_name
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DELETE_NOW = 0.0
RETRIES = 5
REASON = "TaintManagerEviction"


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


def _pod_reference(key: str) -> Obj:
    """The ObjectReference upstream builds from the pod's namespace/name for its events."""
    namespace, _, name = key.partition("/")
    return {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": name}


@dataclass(slots=True)
class _Scheduled:
    handle: asyncio.TimerHandle
    created_at: float  # loop time of the first scheduling; deadlines count from here
    fire_at: float


class TaintEvictionController(ControllerLifecycle):
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock, recorder: Any = None):
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.kit = ControllerKit("taint-eviction", informers=informers)
        self._nodes = self.kit.informer("nodes")
        self._pods = self.kit.informer("pods", indexers={NODE_NAME_INDEX: index_pod_by_node_name})
        self._scheduled: dict[str, _Scheduled] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self.kit.watch(self._nodes, on_add=self._node_changed, on_update=self._node_updated)
        self.kit.watch(self._pods, on_add=self._pod_changed, on_update=self._pod_updated, on_delete=self._pod_deleted)
        self.kit.on_synced(self._evaluate_all)

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()  # from now on events schedule timers
        await super().start()

    def _evaluate_all(self) -> None:
        for node in self._nodes.list():
            self._node_changed(node)

    async def stop(self) -> None:
        for scheduled in self._scheduled.values():  # first, so that no eviction starts meanwhile
            scheduled.handle.cancel()
        self._scheduled.clear()
        self._loop = None
        await super().stop()

    @property
    def pending(self) -> dict[str, float]:
        """Scheduled deletions: pod key → loop time at which it fires (for tests and status)."""
        return {key: s.fire_at for key, s in self._scheduled.items()}

    # -- events --------------------------------------------------------------------------
    def _pod_changed(self, pod: Obj) -> None:
        if self._loop is None:
            return
        if not (pod.get("spec") or {}).get("nodeName"):
            self._cancel(_pod_key(pod))
            return
        self._evaluate(pod)

    def _pod_updated(self, old: Obj, new: Obj) -> None:
        # Only the node and the tolerations matter (``PodUpdated``); status churn is ignored.
        old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
        if old_spec.get("nodeName") == new_spec.get("nodeName") and \
                old_spec.get("tolerations") == new_spec.get("tolerations"):
            return
        self._pod_changed(new)

    def _pod_deleted(self, pod: Obj) -> None:
        self._cancel(_pod_key(pod))

    def _node_changed(self, node: Obj) -> None:
        if self._loop is None:
            return
        for pod in self._pods.by_index(NODE_NAME_INDEX, node["metadata"]["name"]):
            self._evaluate(pod, node=node)

    def _node_updated(self, old: Obj, new: Obj) -> None:
        if (old.get("spec") or {}).get("taints") != (new.get("spec") or {}).get("taints"):
            self._node_changed(new)

    # -- decisions -----------------------------------------------------------------------
    def _cancel(self, key: str) -> None:
        scheduled = self._scheduled.pop(key, None)
        if scheduled is None:
            return
        scheduled.handle.cancel()
        if self.recorder is not None:
            self.recorder.event(_pod_reference(key), "Normal", REASON, f"Cancelling deletion of Pod {key}")

    def _evaluate(self, pod: Obj, *, node: Obj | None = None) -> None:
        assert self._loop is not None
        key = _pod_key(pod)
        if node is None:
            node = self._nodes.get(pod["spec"]["nodeName"])
        taints = ((node or {}).get("spec") or {}).get("taints") or []
        delay = eviction_delay(taints, (pod.get("spec") or {}).get("tolerations") or [])
        if delay is None:
            self._cancel(key)
            return
        now = self._loop.time()
        existing = self._scheduled.get(key)
        created = now if existing is None or delay == DELETE_NOW else existing.created_at
        fire_at = max(now, created + delay)
        if existing is not None:
            if existing.fire_at == fire_at:
                return
            self._cancel(key)
        uid = pod["metadata"].get("uid", "")
        handle = self._loop.call_at(fire_at, self._fire, key, uid)
        self._scheduled[key] = _Scheduled(handle, created, fire_at)

    def _fire(self, key: str, uid: str) -> None:
        self._scheduled.pop(key, None)
        self.kit.spawn(self._evict(key, uid), name=f"taint-eviction:{key}")

    async def _evict(self, key: str, uid: str) -> None:
        namespace, _, name = key.partition("/")
        if self.recorder is not None:
            self.recorder.event(_pod_reference(key), "Normal", REASON, f"Marking for deletion Pod {key}")
        for attempt in range(RETRIES):
            try:
                await self._condition_and_delete(namespace, name, uid)
                return
            except ApiError as e:
                if e.code == 404:
                    return
                if attempt == RETRIES - 1:
                    log.warning("taint eviction of %s failed: %s", key, e)
                    return
                await asyncio.sleep(0.01)

    async def _condition_and_delete(self, namespace: str, name: str, uid: str) -> None:
        pod = await self.client.get("pods", name, namespace=namespace)
        if uid and pod["metadata"].get("uid") != uid:
            return  # a new pod under the same name: not the one we scheduled
        conditions = (pod.get("status") or {}).get("conditions") or ()
        if not any(c.get("type") == "DisruptionTarget" and c.get("status") == "True" for c in conditions):
            patch = {"status": {"conditions": [{
                "type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                "message": "Taint manager: deleting due to NoExecute taint",
                "lastTransitionTime": self.clock.rfc3339()}]}}
            await self.client.patch("pods", name, patch, namespace=namespace, patch_type="strategic",
                                    subresource="status")
        # Upstream deletes with empty DeleteOptions: no uid or resourceVersion precondition, so a
        # concurrent write (the kubelet, the DaemonSet controller deleting the same pod) is no
        # conflict — the API server re-reads and deletes.
        await self.client.delete("pods", name, namespace=namespace)
