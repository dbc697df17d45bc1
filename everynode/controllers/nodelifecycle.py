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

**Incremental monitor.**  Upstream's pass walks every node every 5 s: at 65,000 nodes that is
seconds of CPU per pass, and in a long virtual-time run it is the O(nodes x time) term.  A pass
here visits only the nodes for which the walk could do anything, with the same decisions at the
same passes (``full_scan=True`` keeps the walk; tests/integration/test_nodelifecycle_incremental.py
runs both on the same scenarios and compares every write, event and zone decision):

* a node's probe time moves only when a pass *observes* a change; Lease renewals are recorded by
  the lease handler (O(1)) and applied at the next pass (or in the running pass, if it has not
  reached the node yet in the walk's order, which is the node informer's order);
* a heap of deadlines (probe + grace, lazy deletion) yields the nodes that have gone stale;
* the others visited are: new and removed nodes, nodes whose object changed since the last
  pass, nodes not Ready (the NoExecute queue moves them to its back every pass, as upstream's
  ``markNodeForTainting``), nodes with a NoExecute taint or queued for one, nodes with pods to
  retry; they are visited in the walk's order, so writes happen in the same order;
* zone counts (nodes, Ready nodes) are tallies kept by the node handlers, corrected for the
  nodes the pass changed, instead of lists rebuilt from every node.

A healthy node costs O(1) per Lease renewal and nothing per pass.  Event handlers are O(1) and
pods are found through the pods informer's node-name index.

**Seam for modelled heartbeats** (:class:`HeartbeatModel`, simulation only; a real cluster never
sets one).  In virtual time the simulated kubelets do not write a healthy node's renewals (500
writes per simulated second at 5,000 nodes that nobody but this controller reads); the model
says instead which nodes renew and, when one stops, when its last renewal was.  The controller
then does what it would have done with the written Leases: a renewing node is never stale; a
node that stops renewing gets the probe time of the first pass after its last renewal (a pass
observes a renewal written at its own instant only in the next one: the renewal reaches the
informer after the pass has run), found in the list of pass times kept while a model is set, or
of the next pass if none has run since.  Every other observation (status heartbeats, written
Leases, the disruption-mode reset) works as without the model.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import heapq
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from everynode.api.errors import ApiError
from everynode.api.meta import deep_copy
from everynode.client.base import Client
from everynode.client.informer import NODE_NAME_INDEX, SharedInformerFactory, index_pod_by_node_name
from everynode.client.workqueue import WorkQueue, run_worker
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


def zone_state(ready_nodes: int, not_ready: int, *, unhealthy_threshold: float = 0.55) -> tuple[int, str]:
    """``ComputeZoneState``: (not-ready count, state) from the counts of a zone's Ready nodes and
    of the others (Ready False, Unknown, or not posted yet); the monitor keeps these counts
    instead of the statuses' list."""
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


def _renew_time(lease: Obj) -> float | None:
    """A Lease's ``spec.renewTime`` in epoch seconds (None: unset or unreadable)."""
    text = (lease.get("spec") or {}).get("renewTime")
    if not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


class HeartbeatModel(Protocol):
    """Simulated kubelets whose Lease renewals are modelled instead of written (see the module
    docstring); the kubelet simulation implements it."""

    def renewing(self, name: str) -> bool:
        """The node's kubelet renews its Lease (so the node is fresh)."""

    def last_renewal(self, name: str) -> float | None:
        """Loop time of the last renewal of a kubelet that stopped renewing (None: unknown)."""

    def subscribe_stops(self, callback: Callable[[str], None]) -> None:
        """Call ``callback(name)`` whenever a node's kubelet stops renewing."""


@dataclass(slots=True)
class _NodeHealth:
    probe: float  # controller monotonic time of the last observed heartbeat or lease renewal
    heartbeat: str | None = None  # Ready.lastHeartbeatTime last observed
    lease_renew: float | None = None  # Lease spec.renewTime last observed (epoch seconds)
    deadline: float | None = None  # the node's live entry in the deadline heap (probe + grace)
    name: str = ""
    # Before the running pass observed a renewal (undone if the pass is interrupted before the
    # node; kept here rather than in per-renewal tuples, which would feed the cyclic GC).
    saved_probe: float = 0.0
    saved_renew: float | None = None
    saved_pass: int = -1  # the pass that saved them


class _Tracked:
    """What the node event handlers record about a node for the incremental monitor."""

    __slots__ = ("seq", "zone", "counted", "ready")

    def __init__(self, seq: int) -> None:
        self.seq = seq  # position in the node informer's order (the order a full walk visits)
        self.zone: str | None = None
        self.counted = False  # counts towards its zone's state (not excluded from disruption)
        self.ready = False  # Ready=True


_FAILED = object()  # a node whose health update failed this pass (not counted in its zone)


def _log_failure(key: Any, exc: Exception, _retried: bool) -> None:
    log.debug("node lifecycle: %s: %s", key, exc)


class NodeLifecycleController:
    def __init__(self, client: Client, informers: SharedInformerFactory, clock: Clock, *,
                 recorder: Any = None, monitor_period: float = 5.0, grace_period: float = 50.0,
                 startup_grace_period: float = 60.0, eviction_rate: float = 0.1,
                 secondary_eviction_rate: float = 0.01, large_cluster_threshold: int = 50,
                 unhealthy_zone_threshold: float = 0.55, tainting_period: float = 0.1,
                 full_scan: bool = False) -> None:
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
        self.full_scan = full_scan
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
        # Incremental monitor state (see _monitor_incremental).
        self._tracked: dict[str, _Tracked] = {}
        self._next_seq = 0
        self._zone_counts: dict[str, list[int]] = {}  # zone -> [counted nodes, of which Ready]
        self._zone_seqs: dict[str, list[tuple[int, str]]] = {}  # zone -> heap of (seq, node)
        self._not_ready: set[str] = set()  # Ready False or Unknown
        self._noexec: set[str] = set()  # with a not-ready/unreachable NoExecute taint
        self._added: set[str] = set()
        self._removed: set[str] = set()
        self._dirty: set[str] = set()  # node object changed since the last pass
        self._touched: set[str] = set()  # lease renewed since the last pass
        self._renew_seen: dict[str, float] = {}  # node -> its Lease's renewTime (epoch seconds)
        self._deadlines: list[tuple[float, str]] = []  # heap of (probe + grace, node), lazy deletion
        self._scan_limit: int | None = None  # set while an incremental pass runs: seqs below it were listed
        self._scan_pos = -1  # seq of the node the running pass is at
        self._scan_now = 0.0
        self._scan_before: dict[str, tuple[int, Obj] | None] = {}  # nodes changed during the pass
        self._undo: list[_NodeHealth] = []  # lease observations of the running pass
        self._pass = 0
        # Modelled heartbeats (see HeartbeatModel): pass times, and nodes whose last renewal the
        # next pass observes.
        self._heartbeats: HeartbeatModel | None = None
        self._pass_times: list[float] = []
        self._renewal_pending: set[str] = set()
        self._nodes.add_handler(on_add=self._node_changed, on_update=lambda old, new: self._node_changed(new))
        self._nodes.add_handler(on_add=self._on_node_add, on_update=self._on_node_update,
                                on_delete=self._on_node_delete)
        self._leases.add_handler(on_add=self._on_lease, on_update=lambda old, new: self._on_lease(new),
                                 on_delete=self._on_lease_delete)
        self._pods.add_handler(on_add=lambda pod: self._pod_changed(None, pod), on_update=self._pod_changed)

    # -- modelled heartbeats ---------------------------------------------------------------
    def use_heartbeat_model(self, model: HeartbeatModel) -> None:
        """Take healthy nodes' liveness from ``model`` (simulation only; before :meth:`start`)."""
        self._heartbeats = model
        model.subscribe_stops(self._stopped_renewing)

    def _renewing(self, name: str) -> bool:
        return self._heartbeats is not None and self._heartbeats.renewing(name)

    def _stopped_renewing(self, name: str) -> None:
        """A node's kubelet stopped renewing: its probe is that of the pass which would have
        observed the last renewal (the first pass after it), or of the next pass."""
        assert self._heartbeats is not None
        h = self._health.get(name)
        last = self._heartbeats.last_renewal(name)
        if h is None or last is None:
            return
        i = bisect.bisect_right(self._pass_times, last)
        if i == len(self._pass_times):
            self._renewal_pending.add(name)
            return
        h.probe = max(h.probe, self._pass_times[i])
        node = self._nodes.get(name)
        if node is not None:
            self._push_deadline(h, node)

    def _observe_modelled_renewals(self, now: float) -> None:
        self._pass_times.append(now)
        pending, self._renewal_pending = self._renewal_pending, set()
        for name in pending:
            h = self._health.get(name)
            node = self._nodes.get(name)
            if h is not None and node is not None:
                h.probe = now
                self._push_deadline(h, node)

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
            asyncio.create_task(run_worker(self.node_queue, self.reconcile_taints, on_error=_log_failure),
                                name="nodelifecycle-taints"),
            asyncio.create_task(run_worker(self.pod_queue, self._process_pod, on_error=_log_failure),
                                name="nodelifecycle-pods"),
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

    # -- node and lease bookkeeping for the incremental monitor ----------------------------
    def _snapshot_add(self, name: str, before: tuple[int, Obj] | None) -> None:
        """During an incremental pass, remember how a node looked when the pass started."""
        if self._scan_limit is not None and name not in self._scan_before:
            self._scan_before[name] = before

    def _on_node_add(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        self._snapshot_add(name, None)
        rec = _Tracked(self._next_seq)
        self._next_seq += 1
        self._tracked[name] = rec
        self._track(name, rec, node)
        self._added.add(name)
        self._dirty.add(name)

    def _on_node_update(self, old: Obj, new: Obj) -> None:
        name = new["metadata"]["name"]
        rec = self._tracked.get(name)
        if rec is None:  # pragma: no cover - the informer always adds first
            self._on_node_add(new)
            return
        self._snapshot_add(name, (rec.seq, old))
        self._count(rec, -1)
        self._track(name, rec, new)
        self._dirty.add(name)

    def _on_node_delete(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        rec = self._tracked.pop(name, None)
        if rec is None:
            return
        self._snapshot_add(name, (rec.seq, node))
        self._count(rec, -1)
        self._not_ready.discard(name)
        self._noexec.discard(name)
        self._removed.add(name)
        self._dirty.discard(name)

    def _track(self, name: str, rec: _Tracked, node: Obj) -> None:
        """Record what the monitor needs to know about ``node`` without looking at it: its zone,
        whether it counts towards the zone state and as Ready, and the per-pass sets."""
        zone = zone_key(node)
        if zone != rec.zone:
            rec.zone = zone
            heapq.heappush(self._zone_seqs.setdefault(zone, []), (rec.seq, name))
        rec.counted = EXCLUDE_DISRUPTION_LABEL not in (node["metadata"].get("labels") or {})
        status = ready_status(node)
        rec.ready = status == "True"
        self._count(rec, 1)
        if status in ("False", "Unknown"):
            self._not_ready.add(name)
        else:
            self._not_ready.discard(name)
        if any(has_taint(node, k, "NoExecute") for k in NOEXECUTE_KEYS):
            self._noexec.add(name)
        else:
            self._noexec.discard(name)

    def _count(self, rec: _Tracked, sign: int) -> None:
        if not rec.counted or rec.zone is None:
            return
        counts = self._zone_counts.get(rec.zone)
        if counts is None:
            counts = self._zone_counts[rec.zone] = [0, 0]
        counts[0] += sign
        if rec.ready:
            counts[1] += sign
        if counts[0] == 0:
            del self._zone_counts[rec.zone]

    def _zone_first_seq(self, zone: str) -> int | None:
        """Position (in the node informer's order) of the first node of ``zone``; lazy deletion."""
        heap = self._zone_seqs.get(zone)
        while heap:
            seq, name = heap[0]
            rec = self._tracked.get(name)
            if rec is not None and rec.seq == seq and rec.zone == zone:
                return seq
            heapq.heappop(heap)
        self._zone_seqs.pop(zone, None)
        return None

    def _on_lease(self, lease: Obj) -> None:
        name = lease["metadata"]["name"]
        renew = _renew_time(lease)
        if renew is None:
            self._renew_seen.pop(name, None)
        else:
            self._renew_seen[name] = renew
        if self._scan_limit is not None:
            # A pass is running: a full pass reads the lease when it reaches the node, so a node
            # it has not reached yet sees this renewal in this pass.
            rec = self._tracked.get(name)
            if rec is not None and self._scan_pos < rec.seq < self._scan_limit:
                h = self._health.get(name)
                if h is not None:
                    self._observe_lease(name, h, self._scan_now)
                return
        self._touched.add(name)

    def _on_lease_delete(self, lease: Obj) -> None:
        self._renew_seen.pop(lease["metadata"]["name"], None)

    def _observe_lease(self, name: str, h: _NodeHealth, now: float) -> None:
        renew = self._renew_seen.get(name)
        if renew is not None and (h.lease_renew is None or renew > h.lease_renew):
            if self._scan_limit is not None and h.saved_pass != self._pass:
                h.saved_probe = h.probe
                h.saved_renew = h.lease_renew
                h.saved_pass = self._pass
                self._undo.append(h)
            h.lease_renew = renew
            h.probe = now

    # -- the health monitor --------------------------------------------------------------
    def _grace(self, node: Obj) -> float:
        return self.grace_period if ready_condition(node) is not None else self.startup_grace_period

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
            h = self._health[name] = _NodeHealth(probe=probe, heartbeat=ready.get("lastHeartbeatTime") if ready else None,
                                                 name=name)
        elif ready is not None and ready.get("lastHeartbeatTime") != h.heartbeat:
            h.heartbeat = ready.get("lastHeartbeatTime")
            h.probe = now
        renew = self._renew_seen.get(name)  # the lease informer's current renewTime, parsed
        if renew is not None and (h.lease_renew is None or renew > h.lease_renew):
            h.lease_renew = renew
            h.probe = now
        return h

    async def _try_update_health(self, node: Obj, now: float) -> Obj:
        """Returns the node as it is after this pass (with the Unknown conditions if written)."""
        for _ in range(UPDATE_RETRIES):
            h = self._observe_health(node, now)
            grace = self._grace(node)
            if now <= h.probe + grace or self._renewing(h.name):
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

    async def monitor_once(self, *, full_scan: bool | None = None) -> None:
        """One health-monitor pass (``monitorNodeHealth`` + ``handleDisruption``).

        ``full_scan`` (default: the controller's ``full_scan`` option) walks every node, as
        upstream does; otherwise only the nodes for which the walk could do anything are
        visited (see the module docstring), with the same outcome."""
        now = self.clock.monotonic()
        if self._heartbeats is not None:
            self._observe_modelled_renewals(now)
        if self.full_scan if full_scan is None else full_scan:
            await self._monitor_full(now)
        else:
            await self._monitor_incremental(now)

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

    async def _monitor_full(self, now: float) -> None:
        """The walk over every node, kept as the reference the incremental pass must equal."""
        nodes = self._nodes.list()
        names = {n["metadata"]["name"] for n in nodes}
        for node in nodes:
            name = node["metadata"]["name"]
            if name not in self._known:
                self._register(node)
                self._add_zone(zone_key(node), now)
                await self._mark_reachable(node)
            else:
                self._add_zone(zone_key(node), now)
        for name in sorted(self._known - names):
            self._forget(name)
        counts: dict[str, list[int]] = {}
        for node in nodes:
            current = await self._update_node(node, now)
            if current is _FAILED:
                continue
            if EXCLUDE_DISRUPTION_LABEL not in (node["metadata"].get("labels") or {}):
                c = counts.setdefault(zone_key(node), [0, 0])
                c[0] += 1
                if current == "True":
                    c[1] += 1
        await self._handle_disruption(counts, lambda: nodes, now)

    async def _monitor_incremental(self, now: float) -> None:
        """The same pass, visiting only: new and removed nodes, nodes whose object changed since
        the last pass, nodes not Ready (their NoExecute queue position moves every pass), nodes
        with a NoExecute taint, queued for one or with pods to retry, and nodes whose deadline
        (probe + grace) has passed.  Lease renewals only move probe times (O(1) each).  Zone
        counts come from tallies kept by the node event handlers."""
        nodes = self._nodes
        tracked = self._tracked
        # -- what the full walk would see: everything below up to the first await is synchronous
        added, self._added = self._added, set()
        removed, self._removed = self._removed, set()
        dirty, self._dirty = self._dirty, set()
        touched, self._touched = self._touched, set()
        self._pass += 1
        self._scan_limit = self._next_seq
        self._scan_now = now
        self._scan_pos = -1
        self._undo = []
        counts = {zone: c[:] for zone, c in self._zone_counts.items()}
        visit: set[str] = set()
        try:
            for name in touched:  # lease renewals since the last pass (a full walk reads them all)
                rec = tracked.get(name)
                h = self._health.get(name)
                if rec is not None and h is not None:
                    self._observe_lease(name, h, now)
            visit = dirty | self._not_ready | self._noexec | self._retry_pods
            for queue in self._to_taint.values():
                visit.update(queue)
            heap = self._deadlines
            while heap and heap[0][0] < now:
                deadline, name = heapq.heappop(heap)
                h = self._health.get(name)
                if h is None or h.deadline != deadline:
                    continue  # superseded entry
                h.deadline = None
                node = nodes.get(name)
                if node is None:
                    continue
                if self._renewing(name):
                    continue  # fresh by the model; a deadline is set again when it stops
                if now > h.probe + self._grace(node):
                    visit.add(name)
                else:
                    self._push_deadline(h, node)
            new = sorted((tracked[n].seq, n, nodes.get(n)) for n in added if n in tracked and n not in self._known)
            visit.update(n for _, n, _ in new)
            order = sorted((tracked[n].seq, n, nodes.get(n)) for n in visit if n in tracked)
            zones = sorted((seq, zone) for zone in list(self._zone_seqs)
                           if (seq := self._zone_first_seq(zone)) is not None)
            gone = sorted(n for n in removed if n not in tracked and n in self._known)
            # -- registrations, in the informer's order (zones added where a walk meets them)
            zi = 0
            for seq, _, node in new:
                while zi < len(zones) and zones[zi][0] <= seq:
                    self._add_zone(zones[zi][1], now)
                    zi += 1
                self._register(node)
                await self._mark_reachable(node)
            for _, zone in zones[zi:]:
                self._add_zone(zone, now)
            for name in gone:
                self._forget(name)
            # -- the nodes a walk could change anything for, in the walk's order
            for i, (seq, _name, node) in enumerate(order):
                self._scan_pos = seq
                if node is None:
                    continue
                base_counted = EXCLUDE_DISRUPTION_LABEL not in (node["metadata"].get("labels") or {})
                base_ready = ready_status(node) == "True"
                try:
                    current = await self._update_node(node, now)
                except BaseException:
                    dirty.update(n for _, n, _ in order[i:])
                    raise
                if base_counted:
                    c = counts.setdefault(zone_key(node), [0, 0])
                    if current is _FAILED:
                        c[0] -= 1
                        if base_ready:
                            c[1] -= 1
                    elif (current == "True") != base_ready:
                        c[1] += 1 if current == "True" else -1
            self._scan_pos = self._scan_limit
            await self._handle_disruption({z: c for z, c in counts.items() if c[0] > 0}, self._snapshot, now)
        except BaseException:
            # Leave the state a full walk interrupted at the same node would leave.
            for h in self._undo:
                rec = tracked.get(h.name)
                if rec is None or rec.seq > self._scan_pos:
                    h.probe, h.lease_renew = h.saved_probe, h.saved_renew
                    self._touched.add(h.name)
            self._added |= added
            self._removed |= removed
            self._dirty |= dirty if self._scan_pos >= 0 else dirty | visit
            self._touched |= touched
            raise
        finally:
            self._scan_limit = None
            self._scan_before = {}
            self._undo = []

    def _snapshot(self) -> list[Obj]:
        """The node list as it was when the running incremental pass started (rarely needed)."""
        assert self._scan_limit is not None
        items: list[tuple[int, Obj]] = []
        for name, rec in self._tracked.items():
            if name not in self._scan_before and rec.seq < self._scan_limit:
                node = self._nodes.get(name)
                if node is not None:
                    items.append((rec.seq, node))
        items.extend(before for before in self._scan_before.values() if before is not None)
        items.sort(key=lambda item: item[0])
        return [node for _, node in items]

    def _push_deadline(self, h: _NodeHealth, node: Obj) -> None:
        if self._renewing(h.name):
            return
        deadline = h.probe + self._grace(node)
        if h.deadline is None or deadline < h.deadline:
            h.deadline = deadline
            heapq.heappush(self._deadlines, (deadline, node["metadata"]["name"]))

    async def _update_node(self, node: Obj, now: float) -> str | None | object:
        """One node of a pass: health, NoExecute tainting, NodeNotReady; returns its Ready status
        after the pass (None: never posted) or ``_FAILED`` when its health update failed."""
        name = node["metadata"]["name"]
        observed = ready_status(node)
        try:
            try:
                current_node = await self._try_update_health(node, now)
            except ApiError as e:
                if e.code != 404:
                    log.warning("node %s: health update failed: %s", name, e)
                return _FAILED
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
