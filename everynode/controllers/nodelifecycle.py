"""Node lifecycle: condition taints, the health monitor and NotReady handling.

Upstream: ``pkg/controller/nodelifecycle/node_lifecycle_controller.go`` (semantics reference
§11.1).  Three duties:

* **NoSchedule condition taints**, recomputed on every node add/update and swapped in one
  write: ``not-ready`` (Ready=False), ``unreachable`` (Ready=Unknown), memory/disk/pid pressure,
  ``network-unavailable`` and ``unschedulable`` (cordon).  Other taints are left alone.
* **Health monitor** every ``monitor_period`` (5 s): a node whose kubelet has neither renewed its
  Lease (``kube-node-lease``) nor changed its Ready heartbeat for the grace period (50 s since
  v1.32; 60 s for a node that never became Ready) gets Ready/MemoryPressure/DiskPressure/
  PIDPressure set to ``Unknown`` (``NodeStatusUnknown``, "Kubelet stopped posting node status.").
  Heartbeats are timed with this controller's own clock when they are *observed*, as upstream
  does, so skew between kubelet and controller clocks does not matter.
* **NoExecute taints**: Ready=False → ``not-ready:NoExecute``, Unknown → ``unreachable:NoExecute``
  (mutually exclusive), Ready=True → neither.  Additions pass a per-zone token bucket
  (``--node-eviction-rate`` 0.1 nodes/s; 0.01/s for a partially disrupted zone of more than 50
  nodes, none for a smaller one), like upstream's rate-limited tainting queue.  On a transition
  to not-Ready every pod on the node gets its Ready condition set to False (``MarkPodsNotReady``)
  and ``NodeNotReady`` events are recorded.

The monitor pass is O(nodes) every 5 s, never per event; event handlers are O(1).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.meta import deep_copy
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
CONDITION_TAINTS: dict[tuple[str, str], str] = {
    ("Ready", "False"): NOT_READY,
    ("Ready", "Unknown"): UNREACHABLE,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
}
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
MANAGED_NOSCHEDULE_KEYS = frozenset(CONDITION_TAINTS.values()) | {UNSCHEDULABLE}
UNKNOWN_CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
ZONE_LABEL = "topology.kubernetes.io/zone"
EXCLUDE_DISRUPTION_LABEL = "node.kubernetes.io/exclude-disruption"


def conditions_by_type(node: Obj) -> dict[str, Obj]:
    return {c.get("type", ""): c for c in (node.get("status") or {}).get("conditions") or ()}


def ready_status(node: Obj) -> str:
    """"True", "False" or "Unknown" (a node that never reported counts as Unknown)."""
    cond = conditions_by_type(node).get("Ready")
    return cond.get("status", "Unknown") if cond else "Unknown"


def desired_noschedule_keys(node: Obj) -> set[str]:
    keys = set()
    for ctype, cond in conditions_by_type(node).items():
        key = CONDITION_TAINTS.get((ctype, cond.get("status", "")))
        if key:
            keys.add(key)
    if (node.get("spec") or {}).get("unschedulable"):
        keys.add(UNSCHEDULABLE)
    return keys


def desired_noexecute_key(node: Obj) -> str | None:
    status = ready_status(node)
    if status == "False":
        return NOT_READY
    if status == "Unknown" and conditions_by_type(node).get("Ready"):
        return UNREACHABLE
    return None


@dataclass(slots=True)
class _TokenBucket:
    rate: float
    burst: float = 1.0
    tokens: float = 1.0
    last: float = 0.0

    def take(self, now: float) -> bool:
        if self.rate <= 0:
            return False
        self.tokens = min(self.burst, self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass(slots=True)
class _NodeHealth:
    last_seen: float
    lease_renew: str | None = None
    heartbeat: str | None = None
    ever_ready: bool = False
    ready: str = "Unknown"


@dataclass
class NodeLifecycleController:
    client: Client
    informers: SharedInformerFactory
    clock: Clock
    recorder: Any = None
    monitor_period: float = 5.0
    grace_period: float = 50.0
    startup_grace_period: float = 60.0
    eviction_rate: float = 0.1
    secondary_eviction_rate: float = 0.01
    large_cluster_threshold: int = 50
    unhealthy_zone_threshold: float = 0.55
    _health: dict[str, _NodeHealth] = field(default_factory=dict, init=False)
    _buckets: dict[str, _TokenBucket] = field(default_factory=dict, init=False)
    _pending_noexecute: dict[str, str] = field(default_factory=dict, init=False)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list, init=False)
    _dirty: asyncio.Event | None = field(default=None, init=False)
    _dirty_nodes: set[str] = field(default_factory=set, init=False)

    def __post_init__(self) -> None:
        self._nodes = self.informers.informer("nodes")
        self._leases = self.informers.informer("leases.coordination.k8s.io", namespace="kube-node-lease")
        self._nodes.add_handler(on_add=self._node_changed, on_update=lambda o, n: self._node_changed(n),
                                on_delete=self._node_deleted)
        self._leases.add_handler(on_add=self._lease_changed, on_update=lambda o, n: self._lease_changed(n))

    # -- observation ---------------------------------------------------------------------
    def _health_of(self, name: str) -> _NodeHealth:
        h = self._health.get(name)
        if h is None:
            h = self._health[name] = _NodeHealth(last_seen=self.clock.monotonic())
        return h

    def _node_changed(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        h = self._health_of(name)
        ready = conditions_by_type(node).get("Ready")
        if ready is not None:
            beat = ready.get("lastHeartbeatTime")
            if beat != h.heartbeat and ready.get("reason") != "NodeStatusUnknown":
                h.heartbeat = beat
                h.last_seen = self.clock.monotonic()
            if ready.get("status") == "True":
                h.ever_ready = True
        self._mark_dirty(name)

    def _node_deleted(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        self._health.pop(name, None)
        self._pending_noexecute.pop(name, None)

    def _lease_changed(self, lease: Obj) -> None:
        name = lease["metadata"]["name"]
        renew = (lease.get("spec") or {}).get("renewTime")
        h = self._health_of(name)
        if renew != h.lease_renew:
            h.lease_renew = renew
            h.last_seen = self.clock.monotonic()

    def _mark_dirty(self, name: str) -> None:
        self._dirty_nodes.add(name)
        if self._dirty is not None:
            self._dirty.set()

    # -- lifecycle -----------------------------------------------------------------------
    async def start(self) -> None:
        self._dirty = asyncio.Event()
        for inf in (self._nodes, self._leases):
            inf.start()
        for inf in (self._nodes, self._leases):
            await inf.wait_synced()
        self._tasks = [
            asyncio.create_task(self._taint_loop(), name="nodelifecycle-taints"),
            asyncio.create_task(self._monitor_loop(), name="nodelifecycle-monitor"),
        ]

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

    async def _taint_loop(self) -> None:
        assert self._dirty is not None
        while True:
            await self._dirty.wait()
            self._dirty.clear()
            names, self._dirty_nodes = self._dirty_nodes, set()
            for name in sorted(names):
                try:
                    await self.reconcile_taints(name)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # pragma: no cover - defensive
                    log.warning("node %s: taint update failed: %s", name, exc)
            await asyncio.sleep(0)

    async def _monitor_loop(self) -> None:
        while True:
            try:
                await self.monitor_once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # pragma: no cover - defensive
                log.warning("node health monitor: %s", exc)
            await asyncio.sleep(self.monitor_period)

    # -- the passes ----------------------------------------------------------------------
    async def monitor_once(self) -> None:
        """One health-monitor pass (upstream's monitorNodeHealth)."""
        now = self.clock.monotonic()
        zones: dict[str, list[Obj]] = {}
        for node in self._nodes.list():
            name = node["metadata"]["name"]
            h = self._health_of(name)
            grace = self.grace_period if h.ever_ready else self.startup_grace_period
            ready = conditions_by_type(node).get("Ready")
            if now - h.last_seen > grace and (ready is None or ready.get("status") != "Unknown"):
                await self._mark_unknown(node, never=ready is None)
            previous, h.ready = h.ready, ready_status(node)
            if previous == "True" and h.ready != "True":
                await self._mark_pods_not_ready(node)
            labels = node["metadata"].get("labels") or {}
            if EXCLUDE_DISRUPTION_LABEL not in labels:
                zones.setdefault(labels.get(ZONE_LABEL, ""), []).append(node)
        rates = self._zone_rates(zones)
        for zone, nodes in zones.items():
            bucket = self._buckets.get(zone)
            if bucket is None:
                bucket = self._buckets[zone] = _TokenBucket(rate=rates[zone], last=now)
            bucket.rate = rates[zone]
            for node in nodes:
                want = desired_noexecute_key(node)
                have = {t.get("key") for t in (node.get("spec") or {}).get("taints") or ()
                        if t.get("effect") == "NoExecute" and t.get("key") in (NOT_READY, UNREACHABLE)}
                if want is None and have:
                    await self._set_noexecute(node, None)
                elif want is not None and want not in have:
                    if have:  # swapping not-ready <-> unreachable is immediate
                        await self._set_noexecute(node, want)
                    elif bucket.take(now):
                        await self._set_noexecute(node, want)

    def _zone_rates(self, zones: dict[str, list[Obj]]) -> dict[str, float]:
        rates: dict[str, float] = {}
        for zone, nodes in zones.items():
            not_ready = sum(1 for n in nodes if ready_status(n) != "True")
            if nodes and not_ready == len(nodes):
                rates[zone] = self.eviction_rate  # fully disrupted
            elif not_ready > 2 and not_ready / max(1, len(nodes)) >= self.unhealthy_zone_threshold:
                rates[zone] = self.secondary_eviction_rate if len(nodes) > self.large_cluster_threshold else 0.0
            else:
                rates[zone] = self.eviction_rate
        return rates

    async def _mark_unknown(self, node: Obj, *, never: bool) -> None:
        stamp = self.clock.rfc3339()
        updated = deep_copy(node)
        conds = updated.setdefault("status", {}).setdefault("conditions", [])
        by_type = {c.get("type"): c for c in conds}
        for ctype in UNKNOWN_CONDITIONS:
            cond = by_type.get(ctype)
            if cond is None:
                conds.append({"type": ctype, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                              "message": "Kubelet never posted node status.",
                              "lastHeartbeatTime": stamp, "lastTransitionTime": stamp})
            elif cond.get("status") != "Unknown":
                cond.update(status="Unknown", reason="NodeStatusUnknown",
                            message="Kubelet stopped posting node status.", lastTransitionTime=stamp)
        try:
            await self.client.update_status("nodes", updated)
        except ApiError as e:
            if e.code not in (404, 409):
                raise
        if self.recorder is not None:
            name = node["metadata"]["name"]
            self.recorder.event(node, "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady")

    async def _mark_pods_not_ready(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        try:
            pods = await self.client.list("pods", field_selector=f"spec.nodeName={name}")
        except ApiError:
            return
        stamp = self.clock.rfc3339()
        for pod in pods.get("items") or ():
            status = pod.get("status") or {}
            if status.get("phase") in ("Succeeded", "Failed"):
                continue
            conds = status.get("conditions") or []
            if not any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds):
                continue
            updated = deep_copy(pod)
            updated.setdefault("apiVersion", "v1")
            updated.setdefault("kind", "Pod")
            for c in updated["status"]["conditions"]:
                if c.get("type") == "Ready":
                    c.update(status="False", lastTransitionTime=stamp)
            try:
                await self.client.update_status("pods", updated)
            except ApiError:
                continue
            if self.recorder is not None:
                self.recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")

    async def reconcile_taints(self, name: str) -> None:
        """Swap the managed NoSchedule taints of one node to match its conditions."""
        node = self._nodes.get(name)
        if node is None:
            return
        taints = (node.get("spec") or {}).get("taints") or []
        want = desired_noschedule_keys(node)
        have = {t.get("key") for t in taints if t.get("effect") == "NoSchedule" and t.get("key") in MANAGED_NOSCHEDULE_KEYS}
        if want == have:
            return
        kept = [t for t in taints if not (t.get("effect") == "NoSchedule" and t.get("key") in MANAGED_NOSCHEDULE_KEYS)]
        new = kept + [{"key": k, "effect": "NoSchedule"} for k in sorted(want)]
        await self._write_taints(node, new)

    async def _set_noexecute(self, node: Obj, key: str | None) -> None:
        taints = (node.get("spec") or {}).get("taints") or []
        kept = [t for t in taints if not (t.get("effect") == "NoExecute" and t.get("key") in (NOT_READY, UNREACHABLE))]
        if key is not None:
            kept.append({"key": key, "effect": "NoExecute", "timeAdded": self.clock.rfc3339()})
        await self._write_taints(node, kept)

    async def _write_taints(self, node: Obj, taints: list[Obj]) -> None:
        md = node["metadata"]
        patch = {"metadata": {"resourceVersion": md.get("resourceVersion")}, "spec": {"taints": taints or None}}
        try:
            await self.client.patch("nodes", md["name"], patch, patch_type="merge")
        except ApiError as e:
            if e.code == 409:  # a concurrent write: retry from the fresh cache
                self._mark_dirty(md["name"])
                return
            if e.code == 404:
                return
            raise
