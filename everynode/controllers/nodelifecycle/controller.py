"""Node lifecycle: condition taints, the health monitor and NotReady handling.

Upstream: ``pkg/controller/nodelifecycle/node_lifecycle_controller.go`` (semantics reference
§11.1).  Four duties:

* **NoSchedule condition taints**, recomputed on every node add/update (a work queue keyed by
  node name): ``not-ready`` (Ready=False), ``unreachable`` (Ready=Unknown), memory/disk/pid
  pressure, ``network-unavailable`` and ``unschedulable`` (cordon).  Only NoSchedule taints with
  these keys are managed; the desired and current sets are diffed and swapped in one write
  (added taints get ``timeAdded``, kept ones are left as they are, other taints untouched).
* **Health monitor** every ``monitor_period`` (5 s), as upstream's ``tryUpdateNodeHealth``: the
  probe time of a node moves when the controller *observes* a new Ready ``lastHeartbeatTime`` or
  a newer Lease ``renewTime`` (``kube-node-lease``), timed with this controller's clock, so skew
  between kubelet and controller clocks does not matter.  Past the grace period (50 s since
  v1.32; ``startup_grace_period`` 60 s counted from creation for a node that never posted a Ready
  condition) Ready/MemoryPressure/DiskPressure/PIDPressure become ``Unknown``
  (``NodeStatusUnknown`` "Kubelet stopped posting node status.", or ``NodeStatusNeverUpdated``
  "Kubelet never posted node status." for conditions never posted).
* **NoExecute taints** from the Ready condition seen at the start of a pass (so, as upstream,
  one pass after the controller itself flipped it): False → ``not-ready``, Unknown →
  ``unreachable`` (mutually exclusive: the opposite one is swapped at once), True → both
  removed.  Additions go through a per-zone queue drained every ``tainting_period`` (100 ms)
  through a token bucket of burst 1: ``eviction_rate`` (0.1 nodes/s) in a normal or fully
  disrupted zone; in a partially disrupted zone (> 2 and ≥ 55 % not Ready)
  ``secondary_eviction_rate`` (0.01/s) above ``large_cluster_threshold`` nodes, else none.  When
  every zone is fully disrupted the controller removes all these taints and stops
  ("master disruption mode"); leaving it resets every node's probe time.  Nodes labelled
  ``node.kubernetes.io/exclude-disruption`` do not count towards zone states.
* **Pods of a failing node**: when the controller turns a node's Ready from True to not-True it
  records ``NodeNotReady`` on the node and sets the Ready condition of each pod on it to False
  (``MarkPodsNotReady``, event ``NodeNotReady`` "Node is not ready" on each pod); a pod newly
  bound to a not-Ready node is marked the same way.  ``RegisteredNode`` / ``RemovingNode``
  events are recorded when nodes appear and disappear.

The monitor's pass visits only the nodes for which upstream's walk could do anything
(:mod:`.monitor`); the taint rules are pure functions (:mod:`.taints`), zone states and the
token bucket are :mod:`.zones`, what is recorded per node is :mod:`.health`.  This module wires
them on the controller kit and holds what a pass does to a node and to the zones, the taint
writes, the NoExecute queue and the pods.

**Seam for modelled heartbeats** (:class:`~.health.HeartbeatModel`, simulation only; a real
cluster never sets one).  In virtual time the simulated kubelets do not write a healthy node's
renewals (500 writes per simulated second at 5,000 nodes that nobody but this controller reads);
the model says instead which nodes renew and, when one stops, when its last renewal was.  The
controller then does what it would have done with the written Leases: a renewing node is never
stale; a node that stops renewing gets the probe time of the first pass after its last renewal
(a pass observes a renewal written at its own instant only in the next one: the renewal reaches
the informer after the pass has run), found in the list of pass times kept while a model is set,
or of the next pass if none has run since.  Every other observation (status heartbeats, written
Leases, the disruption-mode reset) works as without the model.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from collections.abc import Callable
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.meta import deep_copy
from everynode.api.node import has_taint, ready_status
from everynode.api.pod import pod_ready_condition
from everynode.client.base import Client
from everynode.client.informer import NODE_NAME_INDEX, SharedInformerFactory, index_pod_by_node_name
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.client.workqueue import WorkQueue
from everynode.clock import Clock
from everynode.controllers.nodelifecycle.health import LEASE_NAMESPACE
from everynode.controllers.nodelifecycle.monitor import FAILED, UPDATE_RETRIES, IncrementalHealthMonitor
from everynode.controllers.nodelifecycle.taints import (
    NOEXECUTE_KEYS,
    NOT_READY,
    UNREACHABLE,
    reconcile_noschedule_taints,
    swap_noexecute_taint,
)
from everynode.controllers.nodelifecycle.zones import (
    FULL_DISRUPTION,
    INITIAL,
    TokenBucket,
    zone_key,
    zone_rate,
    zone_state,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]


def _log_failure(key: Any, exc: Exception, _retried: bool) -> None:
    log.debug("node lifecycle: %s: %s", key, exc)


# Ready condition status -> (the NoExecute taint it wants, the one it replaces)
_NOEXECUTE_FOR_READY = {"False": (NOT_READY, UNREACHABLE), "Unknown": (UNREACHABLE, NOT_READY)}


class NodeLifecycleController(IncrementalHealthMonitor, ControllerLifecycle):
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock,
                 recorder: Any = None, monitor_period: float = 5.0, grace_period: float = 50.0,
                 startup_grace_period: float = 60.0, eviction_rate: float = 0.1,
                 secondary_eviction_rate: float = 0.01, large_cluster_threshold: int = 50,
                 unhealthy_zone_threshold: float = 0.55, tainting_period: float = 0.1) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.monitor_period = monitor_period
        self.grace_period = grace_period
        self.startup_grace_period = startup_grace_period
        self.eviction_rate = eviction_rate
        self.secondary_eviction_rate = secondary_eviction_rate
        self.large_cluster_threshold = large_cluster_threshold
        self.unhealthy_zone_threshold = unhealthy_zone_threshold
        self.tainting_period = tainting_period
        self.kit = ControllerKit("nodelifecycle", informers=informers)
        self._nodes = self.kit.informer("nodes")
        self._leases = self.kit.informer("leases.coordination.k8s.io", namespace=LEASE_NAMESPACE)
        self._pods = self.kit.informer("pods", indexers={NODE_NAME_INDEX: index_pod_by_node_name})
        self._known: set[str] = set()
        self._zone_states: dict[str, str] = {}
        self._buckets: dict[str, TokenBucket] = {}
        self._to_taint: dict[str, collections.OrderedDict[str, None]] = {}  # zone -> node names
        self._retry_pods: set[str] = set()
        self._taint_wakeup: asyncio.Event | None = None
        self.node_queue: WorkQueue = self.kit.queue("nodelifecycle-nodes")
        self.pod_queue: WorkQueue = self.kit.queue("nodelifecycle-pods")
        self.kit.watch(self._nodes, on_add=self._node_changed, on_update=lambda old, new: self._node_changed(new))
        self._init_monitor()
        self.kit.watch(self._pods, on_add=lambda pod: self._pod_changed(None, pod), on_update=self._pod_changed)
        self.kit.workers(self.node_queue, self.reconcile_taints, on_error=_log_failure)
        self.kit.workers(self.pod_queue, self._process_pod, on_error=_log_failure)
        self.kit.loop(self._monitor_loop, name="monitor")
        self.kit.loop(self._tainting_loop, name="noexecute")

    # -- events --------------------------------------------------------------------------
    def _node_changed(self, node: Obj) -> None:
        self.node_queue.add(node["metadata"]["name"])

    def _pod_changed(self, old: Obj | None, new: Obj) -> None:
        node = (new.get("spec") or {}).get("nodeName")
        if node and (old is None or (old.get("spec") or {}).get("nodeName") != node):
            md = new["metadata"]
            self.pod_queue.add(f"{md.get('namespace', '')}/{md['name']}")

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        self._taint_wakeup = asyncio.Event()
        await super().start()

    async def _monitor_loop(self) -> None:
        while True:
            try:
                await self.monitor_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # pragma: no cover - defensive
                log.warning("node health monitor: %s", exc)
            await asyncio.sleep(self.monitor_period)

    async def _tainting_loop(self) -> None:
        assert self._taint_wakeup is not None
        while True:
            if not any(self._to_taint.values()):
                self._taint_wakeup.clear()
                await self._taint_wakeup.wait()
            try:
                await self.tainting_pass()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # pragma: no cover - defensive
                log.warning("node NoExecute tainting: %s", exc)
            await asyncio.sleep(self.tainting_period)

    # -- taint writes --------------------------------------------------------------------
    async def _update_taints(self, name: str, compute: Any) -> bool:
        """Write ``compute(node)`` (a taint list, or None for "nothing to do") with the node's
        resourceVersion as precondition; on a conflict, read the node again and retry."""
        node = self._nodes.get(name)
        for _ in range(UPDATE_RETRIES):
            if node is None:
                return False
            taints = compute(node)
            if taints is None:
                return True
            patch = {"metadata": {"resourceVersion": node["metadata"].get("resourceVersion")},
                     "spec": {"taints": taints or None}}
            try:
                await self.client.patch("nodes", name, patch, patch_type="merge")
                return True
            except ApiError as e:
                if e.code == 404:
                    return False
                if e.code != 409:
                    raise
            try:
                node = await self.client.get("nodes", name)
            except ApiError as e:
                if e.code == 404:
                    return False
                raise
        return False

    async def reconcile_taints(self, name: str) -> None:
        """``doNoScheduleTaintingPass`` for one node."""
        if self._nodes.get(name) is None:
            return
        if not await self._update_taints(name, lambda n: reconcile_noschedule_taints(n, now=self.clock.rfc3339())):
            if self._nodes.get(name) is not None:
                raise RuntimeError(f"failed to swap NoSchedule taints of node {name}")

    async def _set_noexecute(self, name: str, key: str | None) -> bool:
        return await self._update_taints(
            name, lambda n: swap_noexecute_taint((n.get("spec") or {}).get("taints") or [], key,
                                                 now=self.clock.rfc3339()))

    # -- the NoExecute tainting queue ------------------------------------------------------
    def _mark_for_tainting(self, zone: str, name: str) -> None:
        queue = self._to_taint.setdefault(zone, collections.OrderedDict())
        if name not in queue:
            queue[name] = None
            if self._taint_wakeup is not None:
                self._taint_wakeup.set()

    async def _mark_reachable(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        self._to_taint.get(zone_key(node), {}).pop(name, None)
        if any(has_taint(node, k, "NoExecute") for k in NOEXECUTE_KEYS):
            await self._set_noexecute(name, None)

    async def tainting_pass(self) -> None:
        """``doNoExecuteTaintingPass``: taint the queued nodes each zone's bucket allows."""
        now = self.clock.monotonic()
        for zone, queue in list(self._to_taint.items()):
            bucket = self._buckets.get(zone)
            while queue:
                if bucket is None or not bucket.try_accept(now):
                    break
                name = next(iter(queue))
                node = self._nodes.get(name)
                status = ready_status(node) if node is not None else "True"
                if status is None:
                    queue.move_to_end(name)  # no Ready condition yet: try again later
                    continue
                key = {"False": NOT_READY, "Unknown": UNREACHABLE}.get(status)
                if key is None or await self._set_noexecute(name, key):
                    queue.pop(name, None)

    def _register(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        self._known.add(name)
        self._node_event(node, "RegisteredNode", f"Node {name} event: Registered Node {name} in Controller")

    def _forget(self, name: str) -> None:
        self._known.discard(name)
        self._health.pop(name, None)
        self._retry_pods.discard(name)
        for queue in self._to_taint.values():
            queue.pop(name, None)
        self._node_event({"metadata": {"name": name, "uid": ""}}, "RemovingNode",
                         f"Node {name} event: Removing Node {name} from Controller")

    async def _update_node(self, node: Obj, now: float) -> str | None | object:
        """One node of a pass: health, NoExecute tainting, NodeNotReady; returns its Ready status
        after the pass (None: never posted) or ``FAILED`` when its health update failed."""
        name = node["metadata"]["name"]
        observed = ready_status(node)
        try:
            try:
                current_node = await self._try_update_health(node, now)
            except ApiError as e:
                if e.code != 404:
                    log.warning("node %s: health update failed: %s", name, e)
                return FAILED
        finally:
            h = self._health.get(name)
            if h is not None:
                self._push_deadline(h, node)
        current = ready_status(current_node)
        if current is None:
            return None
        await self._process_taint_based_eviction(node, observed)
        became_not_ready = observed == "True" and current != "True"
        if became_not_ready:
            self._node_event(node, "NodeNotReady", f"Node {name} status is now: NodeNotReady")
        if became_not_ready or (name in self._retry_pods and observed != "True"):
            if await self._mark_pods_not_ready(name, self._pods.by_index(NODE_NAME_INDEX, name)):
                self._retry_pods.discard(name)
            else:
                self._retry_pods.add(name)
        else:
            self._retry_pods.discard(name)
        return current

    async def _process_taint_based_eviction(self, node: Obj, observed: str | None) -> None:
        name = node["metadata"]["name"]
        if observed == "True":
            await self._mark_reachable(node)
            return
        taints = _NOEXECUTE_FOR_READY.get(observed or "")
        if taints is None:
            return
        wanted, other = taints
        if has_taint(node, other, "NoExecute"):
            await self._set_noexecute(name, wanted)  # swap the other one for it at once
            return
        zone = zone_key(node)
        if not has_taint(node, wanted, "NoExecute"):
            self._to_taint.get(zone, {}).pop(name, None)
        self._mark_for_tainting(zone, name)

    def _add_zone(self, zone: str, now: float) -> None:
        if zone not in self._zone_states:
            self._zone_states[zone] = INITIAL
            self._buckets[zone] = TokenBucket(self.eviction_rate, now=now)

    def _rate(self, state: str, size: int) -> float:
        return zone_rate(state, size, eviction_rate=self.eviction_rate,
                         secondary_eviction_rate=self.secondary_eviction_rate,
                         large_cluster_threshold=self.large_cluster_threshold)

    async def _handle_disruption(self, zone_counts: dict[str, list[int]], nodes: Callable[[], list[Obj]],
                                 now: float) -> None:
        """``handleDisruption``; ``zone_counts``: zone -> [nodes counted, of which Ready] (zones
        with at least one counted node); ``nodes``: the pass's node list, only needed when all
        zones become fully disrupted."""
        new_states: dict[str, str] = {}
        all_fully_disrupted = True
        for zone, (total, ready) in zone_counts.items():
            _, state = zone_state(ready, total - ready, unhealthy_threshold=self.unhealthy_zone_threshold)
            new_states[zone] = state
            if state != FULL_DISRUPTION:
                all_fully_disrupted = False
            self._zone_states.setdefault(zone, INITIAL)
        all_was_fully_disrupted = True
        for zone in list(self._zone_states):
            if zone not in zone_counts:
                del self._zone_states[zone]
                continue
            if self._zone_states[zone] != FULL_DISRUPTION:
                all_was_fully_disrupted = False
                break
        if all_fully_disrupted and all_was_fully_disrupted:
            return
        if all_fully_disrupted:
            log.info("all nodes are not Ready: entering master disruption mode")
            for node in nodes():
                await self._mark_reachable(node)
            for zone in self._zone_states:
                self._bucket(zone, now).swap(0.0, now)
                self._zone_states[zone] = FULL_DISRUPTION
            return
        if all_was_fully_disrupted:
            log.info("some nodes are Ready again: leaving master disruption mode")
            for h in self._health.values():
                h.probe = now
            for zone in self._zone_states:
                self._bucket(zone, now).swap(self._rate(new_states[zone], zone_counts[zone][0]), now)
                self._zone_states[zone] = new_states[zone]
            return
        for zone, state in list(self._zone_states.items()):
            new = new_states.get(zone)
            if new is not None and state != new:
                self._bucket(zone, now).swap(self._rate(new, zone_counts[zone][0]), now)
                self._zone_states[zone] = new

    def _bucket(self, zone: str, now: float) -> TokenBucket:
        bucket = self._buckets.get(zone)
        if bucket is None:
            bucket = self._buckets[zone] = TokenBucket(self.eviction_rate, now=now)
        return bucket

    # -- pods ----------------------------------------------------------------------------
    async def _process_pod(self, key: str) -> None:
        """``processPod``: a pod newly bound to a node that is not Ready is marked not ready."""
        pod = self._pods.get(key)
        if pod is None:
            return
        name = (pod.get("spec") or {}).get("nodeName")
        node = self._nodes.get(name) if name else None
        if node is None or name not in self._health:
            return
        status = ready_status(node)
        if status is not None and status != "True" and not await self._mark_pods_not_ready(name, [pod]):
            raise RuntimeError(f"failed to mark pod {key} not ready")

    async def _mark_pods_not_ready(self, node_name: str, pods: list[Obj]) -> bool:
        """``MarkPodsNotReady``: True when every pod was handled."""
        ok = True
        stamp = self.clock.rfc3339()
        for pod in pods:
            if (pod.get("spec") or {}).get("nodeName") != node_name:
                continue
            ready = pod_ready_condition(pod)
            if ready is None or ready.get("status") == "False":
                continue
            updated = deep_copy(pod)
            updated.setdefault("apiVersion", "v1")
            updated.setdefault("kind", "Pod")
            for c in updated["status"]["conditions"]:
                if c.get("type") == "Ready":
                    c.update(status="False", lastTransitionTime=stamp)
            try:
                await self.client.update_status("pods", updated)
            except ApiError as e:
                if e.code != 404:
                    ok = False
                continue
            if self.recorder is not None:
                self.recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")
        return ok

    def _node_event(self, node: Obj, reason: str, message: str) -> None:
        if self.recorder is None:
            return
        md = node["metadata"]
        ref = {"apiVersion": "v1", "kind": "Node", "name": md["name"], "uid": md.get("uid") or ""}
        self.recorder.event(ref, "Normal", reason, message)
