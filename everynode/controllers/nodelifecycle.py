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

The monitor pass is O(nodes) every 5 s, never per event; event handlers are O(1) and pods are
found through the pods informer's node-name index.
"""

from __future__ import annotations

import asyncio
import collections
import logging
from dataclasses import dataclass
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.meta import deep_copy
from everynode.client.base import Client
from everynode.client.informer import NODE_NAME_INDEX, SharedInformerFactory, index_pod_by_node_name
from everynode.client.workqueue import QueueShutDown, WorkQueue
from everynode.clock import Clock, parse_rfc3339

log = logging.getLogger(__name__)

Obj = dict[str, Any]

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
CONDITION_TAINTS: dict[tuple[str, str], str] = {
    ("Ready", "False"): NOT_READY,
    ("Ready", "Unknown"): UNREACHABLE,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
}
MANAGED_NOSCHEDULE_KEYS = frozenset(CONDITION_TAINTS.values()) | {UNSCHEDULABLE}
NOEXECUTE_KEYS = (NOT_READY, UNREACHABLE)
UNKNOWN_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
EXCLUDE_DISRUPTION_LABEL = "node.kubernetes.io/exclude-disruption"
LEASE_NAMESPACE = "kube-node-lease"
UPDATE_RETRIES = 5

# Zone states (``ZoneState``).
INITIAL = "Initial"
NORMAL = "Normal"
FULL_DISRUPTION = "FullDisruption"
PARTIAL_DISRUPTION = "PartialDisruption"


# -- pure functions -------------------------------------------------------------------------

def conditions_by_type(node: Obj) -> dict[str, Obj]:
    return {c.get("type", ""): c for c in (node.get("status") or {}).get("conditions") or ()}


def ready_condition(node: Obj) -> Obj | None:
    return conditions_by_type(node).get("Ready")


def ready_status(node: Obj) -> str | None:
    """"True", "False", "Unknown", or None when the node never posted a Ready condition."""
    cond = ready_condition(node)
    return cond.get("status", "Unknown") if cond is not None else None


def zone_key(node: Obj) -> str:
    """``nodetopology.GetZoneKey``: region and zone (beta labels first), "" when neither is set."""
    labels = node["metadata"].get("labels") or {}
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def desired_noschedule_keys(node: Obj) -> set[str]:
    keys = set()
    for ctype, cond in conditions_by_type(node).items():
        key = CONDITION_TAINTS.get((ctype, cond.get("status", "")))
        if key:
            keys.add(key)
    if (node.get("spec") or {}).get("unschedulable"):
        keys.add(UNSCHEDULABLE)
    return keys


def reconcile_noschedule_taints(node: Obj, *, now: str) -> list[Obj] | None:
    """The node's taints with the managed NoSchedule ones matching its state, or None when they
    already match.  Kept taints stay as they are; added ones carry ``timeAdded``."""
    taints = (node.get("spec") or {}).get("taints") or []
    want = desired_noschedule_keys(node)

    def managed(t: Obj) -> bool:
        return t.get("effect") == "NoSchedule" and t.get("key") in MANAGED_NOSCHEDULE_KEYS

    have = {t.get("key") for t in taints if managed(t)}
    if want == have:
        return None
    kept = [t for t in taints if not managed(t) or t.get("key") in want]
    return kept + [{"key": k, "effect": "NoSchedule", "timeAdded": now} for k in sorted(want - have)]


def swap_noexecute_taint(taints: list[Obj], key: str | None, *, now: str) -> list[Obj] | None:
    """Taints with exactly ``key`` (or neither, for None) among not-ready/unreachable NoExecute;
    None when nothing changes."""
    def managed(t: Obj) -> bool:
        return t.get("effect") == "NoExecute" and t.get("key") in NOEXECUTE_KEYS

    have = {t.get("key") for t in taints if managed(t)}
    if have == ({key} if key else set()):
        return None
    kept = [t for t in taints if not managed(t) or t.get("key") == key]
    if key is not None and key not in have:
        kept.append({"key": key, "effect": "NoExecute", "timeAdded": now})
    return kept


def has_taint(node: Obj, key: str, effect: str) -> bool:
    return any(t.get("key") == key and t.get("effect") == effect
               for t in (node.get("spec") or {}).get("taints") or ())


def compute_zone_state(ready: list[str | None], *, unhealthy_threshold: float = 0.55) -> tuple[int, str]:
    """``ComputeZoneState``: (not-ready count, state) from the nodes' Ready statuses."""
    ready_nodes = sum(1 for s in ready if s == "True")
    not_ready = len(ready) - ready_nodes
    if ready_nodes == 0 and not_ready > 0:
        return not_ready, FULL_DISRUPTION
    if not_ready > 2 and not_ready / (not_ready + ready_nodes) >= unhealthy_threshold:
        return not_ready, PARTIAL_DISRUPTION
    return not_ready, NORMAL


def zone_rate(state: str, zone_size: int, *, eviction_rate: float = 0.1, secondary_eviction_rate: float = 0.01,
              large_cluster_threshold: int = 50) -> float:
    """``setLimiterInZone``: the tainting rate (nodes per second) for a zone in ``state``."""
    if state == PARTIAL_DISRUPTION:
        return secondary_eviction_rate if zone_size > large_cluster_threshold else 0.0
    return eviction_rate  # normal, and fully disrupted (HealthyQPSFunc)


def mark_unknown(node: Obj, *, now: str) -> Obj:
    """A copy of ``node`` with the kubelet-owned conditions set to Unknown (``tryUpdateNodeHealth``)."""
    updated = deep_copy(node)
    status = updated.get("status")
    if not isinstance(status, dict):
        status = updated["status"] = {}
    conds = status.get("conditions")
    if not isinstance(conds, list):
        conds = status["conditions"] = []
    by_type = {c.get("type"): c for c in conds}
    for ctype in UNKNOWN_CONDITIONS:
        cond = by_type.get(ctype)
        if cond is None:
            conds.append({"type": ctype, "status": "Unknown", "lastHeartbeatTime":
                          node["metadata"].get("creationTimestamp"), "lastTransitionTime": now,
                          "reason": "NodeStatusNeverUpdated", "message": "Kubelet never posted node status."})
        elif cond.get("status") != "Unknown":
            cond.update(status="Unknown", reason="NodeStatusUnknown",
                        message="Kubelet stopped posting node status.", lastTransitionTime=now)
    return updated


class TokenBucket:
    """``flowcontrol.NewTokenBucketRateLimiter(qps, burst)`` with non-blocking ``TryAccept``;
    a rate of 0 never accepts (``NewFakeNeverRateLimiter``).  Starts full."""

    def __init__(self, rate: float, *, burst: int = 1, now: float = 0.0) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.last = now

    def try_accept(self, now: float) -> bool:
        if self.rate <= 0:
            return False
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def swap(self, rate: float, now: float) -> None:
        """``SwapLimiter``: a different rate gets a fresh, full bucket."""
        if rate == self.rate:
            return
        self.rate = rate
        self.tokens = float(self.burst)
        self.last = now


@dataclass(slots=True)
class _NodeHealth:
    probe: float  # controller monotonic time of the last observed heartbeat or lease renewal
    heartbeat: str | None = None  # Ready.lastHeartbeatTime last observed
    lease_renew: float | None = None  # Lease spec.renewTime last observed (epoch seconds)


class NodeLifecycleController:
    def __init__(self, client: Client, informers: SharedInformerFactory, clock: Clock, *,
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
        self._nodes = informers.informer("nodes")
        self._leases = informers.informer("leases.coordination.k8s.io", namespace=LEASE_NAMESPACE)
        self._pods = informers.informer("pods", indexers={NODE_NAME_INDEX: index_pod_by_node_name})
        self._health: dict[str, _NodeHealth] = {}
        self._known: set[str] = set()
        self._zone_states: dict[str, str] = {}
        self._buckets: dict[str, TokenBucket] = {}
        self._to_taint: dict[str, collections.OrderedDict[str, None]] = {}  # zone -> node names
        self._retry_pods: set[str] = set()
        self._taint_wakeup: asyncio.Event | None = None
        self.node_queue: WorkQueue = WorkQueue(name="nodelifecycle-nodes")
        self.pod_queue: WorkQueue = WorkQueue(name="nodelifecycle-pods")
        self._tasks: list[asyncio.Task[None]] = []
        self._nodes.add_handler(on_add=self._node_changed, on_update=lambda old, new: self._node_changed(new))
        self._pods.add_handler(on_add=lambda pod: self._pod_changed(None, pod), on_update=self._pod_changed)

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
        for inf in (self._nodes, self._leases, self._pods):
            inf.start()
        for inf in (self._nodes, self._leases, self._pods):
            await inf.wait_synced()
        self._tasks = [
            asyncio.create_task(self._queue_worker(self.node_queue, self.reconcile_taints), name="nodelifecycle-taints"),
            asyncio.create_task(self._queue_worker(self.pod_queue, self._process_pod), name="nodelifecycle-pods"),
            asyncio.create_task(self._monitor_loop(), name="nodelifecycle-monitor"),
            asyncio.create_task(self._tainting_loop(), name="nodelifecycle-noexecute"),
        ]

    async def stop(self) -> None:
        self.node_queue.shutdown()
        self.pod_queue.shutdown()
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _queue_worker(self, queue: WorkQueue, handle: Any) -> None:
        while True:
            try:
                key = await queue.get()
            except QueueShutDown:
                return
            try:
                await handle(key)
                queue.forget(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("node lifecycle: %s: %s", key, exc)
                queue.add_rate_limited(key)
            finally:
                queue.done(key)

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

    # -- the health monitor --------------------------------------------------------------
    def _observe_health(self, node: Obj, now: float) -> _NodeHealth:
        name = node["metadata"]["name"]
        h = self._health.get(name)
        ready = ready_condition(node)
        if h is None:
            probe = now
            if ready is None:  # never posted: the startup grace counts from creation
                created = node["metadata"].get("creationTimestamp")
                if created:
                    probe = now - max(0.0, self.clock.now() - parse_rfc3339(created))
            h = self._health[name] = _NodeHealth(probe=probe, heartbeat=ready.get("lastHeartbeatTime") if ready else None)
        elif ready is not None and ready.get("lastHeartbeatTime") != h.heartbeat:
            h.heartbeat = ready.get("lastHeartbeatTime")
            h.probe = now
        lease = self._leases.get(f"{LEASE_NAMESPACE}/{name}")
        renew_text = ((lease or {}).get("spec") or {}).get("renewTime")
        if renew_text:
            try:
                renew = parse_rfc3339(renew_text)
            except ValueError:
                renew = None
            if renew is not None and (h.lease_renew is None or renew > h.lease_renew):
                h.lease_renew = renew
                h.probe = now
        return h

    async def _try_update_health(self, node: Obj, now: float) -> Obj:
        """Returns the node as it is after this pass (with the Unknown conditions if written)."""
        for _ in range(UPDATE_RETRIES):
            h = self._observe_health(node, now)
            grace = self.grace_period if ready_condition(node) is not None else self.startup_grace_period
            if now <= h.probe + grace:
                return node
            updated = mark_unknown(node, now=self.clock.rfc3339())
            if ready_condition(updated) == ready_condition(node):
                return node
            updated.setdefault("apiVersion", "v1")
            updated.setdefault("kind", "Node")
            try:
                written = await self.client.update_status("nodes", updated)
            except ApiError as e:
                if e.code != 409:
                    raise
                node = await self.client.get("nodes", node["metadata"]["name"])
                continue
            h.heartbeat = (ready_condition(written) or {}).get("lastHeartbeatTime")
            return written
        return node

    async def monitor_once(self) -> None:
        """One health-monitor pass (``monitorNodeHealth`` + ``handleDisruption``)."""
        now = self.clock.monotonic()
        nodes = self._nodes.list()
        names = {n["metadata"]["name"] for n in nodes}
        for node in nodes:
            name = node["metadata"]["name"]
            if name not in self._known:
                self._known.add(name)
                self._node_event(node, "RegisteredNode", f"Node {name} event: Registered Node {name} in Controller")
                self._add_zone(zone_key(node), now)
                await self._mark_reachable(node)
            else:
                self._add_zone(zone_key(node), now)
        for name in self._known - names:
            self._known.discard(name)
            self._health.pop(name, None)
            self._retry_pods.discard(name)
            for queue in self._to_taint.values():
                queue.pop(name, None)
            self._node_event({"metadata": {"name": name, "uid": ""}}, "RemovingNode",
                             f"Node {name} event: Removing Node {name} from Controller")

        zone_ready: dict[str, list[str | None]] = {}
        for node in nodes:
            name = node["metadata"]["name"]
            observed = ready_status(node)
            try:
                current_node = await self._try_update_health(node, now)
            except ApiError as e:
                if e.code != 404:
                    log.warning("node %s: health update failed: %s", name, e)
                continue
            current = ready_status(current_node)
            labels = node["metadata"].get("labels") or {}
            if EXCLUDE_DISRUPTION_LABEL not in labels:
                zone_ready.setdefault(zone_key(node), []).append(current)
            if current is None:
                continue
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
        await self._handle_disruption(zone_ready, nodes, now)

    async def _process_taint_based_eviction(self, node: Obj, observed: str | None) -> None:
        name = node["metadata"]["name"]
        zone = zone_key(node)
        if observed == "False":
            if has_taint(node, UNREACHABLE, "NoExecute"):
                await self._set_noexecute(name, NOT_READY)
            else:
                if not has_taint(node, NOT_READY, "NoExecute"):
                    self._to_taint.get(zone, {}).pop(name, None)
                self._mark_for_tainting(zone, name)
        elif observed == "Unknown":
            if has_taint(node, NOT_READY, "NoExecute"):
                await self._set_noexecute(name, UNREACHABLE)
            else:
                if not has_taint(node, UNREACHABLE, "NoExecute"):
                    self._to_taint.get(zone, {}).pop(name, None)
                self._mark_for_tainting(zone, name)
        elif observed == "True":
            await self._mark_reachable(node)

    def _add_zone(self, zone: str, now: float) -> None:
        if zone not in self._zone_states:
            self._zone_states[zone] = INITIAL
            self._buckets[zone] = TokenBucket(self.eviction_rate, now=now)

    def _rate(self, state: str, size: int) -> float:
        return zone_rate(state, size, eviction_rate=self.eviction_rate,
                         secondary_eviction_rate=self.secondary_eviction_rate,
                         large_cluster_threshold=self.large_cluster_threshold)

    async def _handle_disruption(self, zone_ready: dict[str, list[str | None]], nodes: list[Obj], now: float) -> None:
        new_states: dict[str, str] = {}
        all_fully_disrupted = True
        for zone, statuses in zone_ready.items():
            _, state = compute_zone_state(statuses, unhealthy_threshold=self.unhealthy_zone_threshold)
            new_states[zone] = state
            if state != FULL_DISRUPTION:
                all_fully_disrupted = False
            self._zone_states.setdefault(zone, INITIAL)
        all_was_fully_disrupted = True
        for zone in list(self._zone_states):
            if zone not in zone_ready:
                del self._zone_states[zone]
                continue
            if self._zone_states[zone] != FULL_DISRUPTION:
                all_was_fully_disrupted = False
                break
        if all_fully_disrupted and all_was_fully_disrupted:
            return
        if all_fully_disrupted:
            log.info("all nodes are not Ready: entering master disruption mode")
            for node in nodes:
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
                self._bucket(zone, now).swap(self._rate(new_states[zone], len(zone_ready[zone])), now)
                self._zone_states[zone] = new_states[zone]
            return
        for zone, state in list(self._zone_states.items()):
            new = new_states.get(zone)
            if new is not None and state != new:
                self._bucket(zone, now).swap(self._rate(new, len(zone_ready[zone])), now)
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
            conds = (pod.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Ready" and c.get("status") != "False" for c in conds):
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
