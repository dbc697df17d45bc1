"""Pod garbage collection: terminated pods beyond a threshold, terminating pods on out-of-service
nodes, pods bound to deleted nodes, and unscheduled terminating pods.

Upstream: ``pkg/controller/podgc/gc_controller.go`` (semantics reference §11.5).  Every
``period`` (20 s), in upstream's order:

* **Terminated** pods (Succeeded/Failed) above ``terminated_threshold`` (12,500; 0 disables)
  are deleted, evicted ones first, then oldest first (``byEvictionAndCreationTimestamp``).
* **Terminating pods on out-of-service nodes** (node not Ready and tainted
  ``node.kubernetes.io/out-of-service``) are marked Failed and force-deleted.
* **Orphaned** pods, whose ``spec.nodeName`` names a node absent from the informer: the node
  name is quarantined for ``quarantine`` (40 s), then checked with a live GET; if still gone, each
  pod is marked Failed with condition ``DisruptionTarget=True`` (``DeletionByPodGC``, "PodGC:
  node no longer exists") and force-deleted (grace period 0).
* **Unscheduled terminating** pods (deletionTimestamp, no nodeName) are marked Failed and
  force-deleted.

"Marked Failed" is a strategic-merge patch of ``pods/status`` (phase + condition), sent only
when the pod is not terminal yet.

**Incremental passes.**  Upstream lists every node and every pod each pass.  The benchmark runs
the GC every 0.5 s at up to 65,000 nodes, where a walk per pass is the whole cost, so each pass
here reads sets kept up to date by O(1) informer event handlers and costs O(what changed plus
what the pass acts on), with the same actions.  Upstream's walks survive only as the test
oracle: tests/integration/test_podgc_incremental.py overrides the two look-ups below
(:meth:`PodGC._out_of_service_candidates`, :meth:`PodGC._missing_node_names`) with the walks and
compares both on random histories.
Only the order of a pass's writes may differ, as it already does between the walk (cache order)
and upstream (a lister's map order): each write concerns one pod and none depends on another.

* terminated and unscheduled-terminating pods: pod keys, updated on pod events;
* out-of-service: the names of the cached nodes that carry the taint, whatever their Ready
  condition (a node event updates its membership); Ready is checked when the pass runs, as the
  walk does, so a Ready flip needs no bookkeeping;
* orphans: *suspect* node names, added when a node is deleted while pods are indexed on it, and
  when a pod bound to a node absent from the node cache is added or updated.  Those are the only
  two ways a name can come to have pods and no node, so every missing name is a suspect.  The
  pass keeps the suspects that are still missing (no cached node, pods still indexed) and drops
  the others; a name can only become missing again through one of the two events above.  The
  missing set is therefore exactly the walk's, and the quarantine and live-GET logic run on it
  unchanged.  The node and pod informers sync independently: a pod listed before its node makes
  the name a suspect, the node's add removes it (and the pass-time check would drop it anyway).
  Handlers registered on an informer that has already synced receive its cached objects as adds,
  and a relist delivers its differences as events, so both paths keep the sets right.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.node import TAINT_NODE_OUT_OF_SERVICE, has_taint_key, is_node_ready
from everynode.api.pod import is_pod_terminal
from everynode.client.base import Client
from everynode.client.informer import NODE_NAME_INDEX, SharedInformerFactory, index_pod_by_node_name
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

ORPHAN_MESSAGE = "PodGC: node no longer exists"


def _key(pod: Obj) -> str:
    md = pod["metadata"]
    return f"{md.get('namespace', '')}/{md['name']}"


def is_evicted(pod: Obj) -> bool:
    status = pod.get("status") or {}
    return status.get("phase") == "Failed" and status.get("reason") == "Evicted"


def terminated_deletion_order(pods: list[Obj]) -> list[Obj]:
    """``byEvictionAndCreationTimestamp``: evicted first, then by creation time, then name."""
    return sorted(pods, key=lambda p: (not is_evicted(p), p["metadata"].get("creationTimestamp") or "",
                                       p["metadata"]["name"]))


def _has_out_of_service_taint(node: Obj) -> bool:
    return has_taint_key(node, TAINT_NODE_OUT_OF_SERVICE)


class PodGC(ControllerLifecycle):
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock,
                 period: float = 20.0, quarantine: float = 40.0, terminated_threshold: int = 12500):
        self.client = client
        self.clock = clock
        self.period = period
        self.quarantine = quarantine
        self.terminated_threshold = terminated_threshold
        self.kit = ControllerKit("podgc", informers=informers)
        self._nodes = self.kit.informer("nodes")
        self._pods = self.kit.informer("pods", indexers={NODE_NAME_INDEX: index_pod_by_node_name})
        self._terminated: set[str] = set()
        self._unbound_terminating: set[str] = set()
        self._out_of_service: set[str] = set()  # cached nodes tainted out-of-service (any Ready)
        self._suspects: set[str] = set()  # node names that may have pods and no cached node
        self._quarantined: dict[str, float] = {}  # node name -> monotonic time first seen missing
        # Nodes first: when both informers have synced already, the cached pods are then checked
        # against a full node cache and make no suspects.
        self.kit.watch(self._nodes, on_add=self._node_changed, on_update=lambda old, new: self._node_changed(new),
                       on_delete=self._node_deleted)
        self.kit.watch(self._pods, on_add=self._pod_changed, on_update=lambda old, new: self._pod_changed(new),
                       on_delete=self._pod_deleted)
        self.kit.loop(self._loop, name="loop")

    def _node_changed(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        if _has_out_of_service_taint(node):
            self._out_of_service.add(name)
        else:
            self._out_of_service.discard(name)
        self._suspects.discard(name)  # it exists (an early pod made it a suspect, or it came back)

    def _node_deleted(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        self._out_of_service.discard(name)
        if self._pods.index_keys(NODE_NAME_INDEX, name):
            self._suspects.add(name)

    def _pod_changed(self, pod: Obj) -> None:
        key = _key(pod)
        if is_pod_terminal(pod):
            self._terminated.add(key)
        else:
            self._terminated.discard(key)
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name and pod["metadata"].get("deletionTimestamp"):
            self._unbound_terminating.add(key)
        else:
            self._unbound_terminating.discard(key)
        if node_name and self._nodes.get(node_name) is None:
            self._suspects.add(node_name)

    def _pod_deleted(self, pod: Obj) -> None:
        key = _key(pod)
        self._terminated.discard(key)
        self._unbound_terminating.discard(key)

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
        """One pass (``gc``): out-of-service nodes and missing node names come from the sets the
        event handlers keep (see the module docstring)."""
        if self.terminated_threshold > 0:
            await self._gc_terminated()
        await self._gc_terminating_out_of_service()
        await self._gc_orphaned()
        await self._gc_unscheduled_terminating()

    async def _gc_terminated(self) -> None:
        excess = len(self._terminated) - self.terminated_threshold
        if excess <= 0:
            return
        pods = [p for p in (self._pods.get(k) for k in self._terminated) if p is not None]
        for pod in terminated_deletion_order(pods)[:excess]:
            await self._fail_and_delete(pod)

    def _out_of_service_candidates(self) -> list[Obj]:
        """The cached nodes tainted out-of-service (whatever their Ready condition), looked up
        when the pass starts: the only nodes upstream's walk over every node would act on."""
        return [n for n in map(self._nodes.get, list(self._out_of_service)) if n is not None]

    async def _gc_terminating_out_of_service(self) -> None:
        for node in self._out_of_service_candidates():
            if not _has_out_of_service_taint(node) or is_node_ready(node):
                continue  # the taint test first: almost no node has it, and it is the cheaper one
            for pod in self._pods.by_index(NODE_NAME_INDEX, node["metadata"]["name"]):
                if pod["metadata"].get("deletionTimestamp"):
                    await self._fail_and_delete(pod)

    def _missing_node_names(self) -> set[str]:
        """Node names pods are bound to that the node informer does not hold."""
        missing = {n for n in self._suspects
                   if self._nodes.get(n) is None and self._pods.index_keys(NODE_NAME_INDEX, n)}
        self._suspects &= missing  # the rest are not missing; only a node delete or pod event re-adds them
        return missing

    async def _gc_orphaned(self) -> None:
        now = self.clock.monotonic()
        missing = self._missing_node_names()
        for name in list(self._quarantined):
            if name not in missing:
                del self._quarantined[name]
        for name in missing:
            since = self._quarantined.setdefault(name, now)
            if now - since < self.quarantine:
                continue
            try:
                await self.client.get("nodes", name)
                continue  # the node exists after all (the cache lagged)
            except ApiError as e:
                if e.code != 404:
                    continue
            for pod in self._pods.by_index(NODE_NAME_INDEX, name):
                await self._fail_and_delete(pod, condition={
                    "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                    "message": ORPHAN_MESSAGE, "lastTransitionTime": self.clock.rfc3339()})
            self._quarantined.pop(name, None)

    async def _gc_unscheduled_terminating(self) -> None:
        for key in list(self._unbound_terminating):
            pod = self._pods.get(key)
            if pod is not None:
                await self._fail_and_delete(pod)

    async def _fail_and_delete(self, pod: Obj, *, condition: Obj | None = None) -> None:
        """``markFailedAndDeletePodWithCondition``."""
        md = pod["metadata"]
        namespace, name = md.get("namespace") or "", md["name"]
        try:
            if not is_pod_terminal(pod):
                status: Obj = {"phase": "Failed"}
                if condition is not None:
                    status["conditions"] = [condition]
                await self.client.patch("pods", name, {"metadata": {"uid": md.get("uid")}, "status": status},
                                        namespace=namespace, patch_type="strategic", subresource="status")
            await self.client.delete("pods", name, namespace=namespace, grace_period_seconds=0,
                                     preconditions={"uid": md.get("uid", "")} if md.get("uid") else None)
        except ApiError as e:
            if e.code not in (404, 409, 422):
                log.info("pod GC could not delete %s/%s: %s", namespace, name, e)
