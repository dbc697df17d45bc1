"""The incremental health monitor: which nodes a pass visits, and the bookkeeping behind it.

Upstream's ``monitorNodeHealth`` walks every node every ``monitor_period``: at 65,000 nodes
that is seconds of CPU per pass, and in a long virtual-time run it is the O(nodes x time) term.
A pass here visits only the nodes for which the walk could do anything, with the same decisions
at the same passes, in the walk's order (the node informer's):

* a node's probe time moves only when a pass *observes* a change; Lease renewals are recorded by
  the lease handler (O(1)) and applied at the next pass (or in the running pass, if it has not
  reached the node yet in the walk's order);
* a heap of deadlines (probe + grace, lazy deletion) yields the nodes that have gone stale;
* the others visited are: new and removed nodes, nodes whose object changed since the last
  pass, nodes not Ready (the NoExecute queue moves them to its back every pass, as upstream's
  ``markNodeForTainting``), nodes with a NoExecute taint or queued for one, nodes with pods to
  retry;
* zone counts (nodes, Ready nodes) are tallies kept by the node handlers, corrected for the
  nodes the pass changed, instead of lists rebuilt from every node.

This is the product's only algorithm; the walk over every node lives on as the test oracle
(tests/support/nodelifecycle_oracle.py), and tests/integration/test_nodelifecycle_incremental.py
runs both on the same scenarios and compares every write, event and zone decision.

The class is a mixin of :class:`~everynode.controllers.nodelifecycle.controller.NodeLifecycleController`:
it owns the monitor's state and event handlers, the controller owns what a pass does to one
node (health write, NoExecute tainting, pods) and to the zones (``handleDisruption``).
"""

from __future__ import annotations

import bisect
import collections
import heapq
from collections.abc import Callable
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.node import has_taint, node_condition, ready_status
from everynode.client.informer import Informer
from everynode.client.kit import ControllerKit
from everynode.clock import Clock, parse_rfc3339
from everynode.controllers.nodelifecycle.health import HeartbeatModel, NodeHealth, mark_unknown, renew_time
from everynode.controllers.nodelifecycle.taints import NOEXECUTE_KEYS
from everynode.controllers.nodelifecycle.zones import EXCLUDE_DISRUPTION_LABEL, zone_key

Obj = dict[str, Any]

UPDATE_RETRIES = 5
FAILED = object()  # a node whose health update failed this pass (not counted in its zone)


def ready_condition(node: Obj) -> Obj | None:
    return node_condition(node, "Ready")


class _Tracked:
    """What the node event handlers record about a node for the incremental monitor."""

    __slots__ = ("seq", "zone", "counted", "ready")

    def __init__(self, seq: int) -> None:
        self.seq = seq  # position in the node informer's order (the order a full walk visits)
        self.zone: str | None = None
        self.counted = False  # counts towards its zone's state (not excluded from disruption)
        self.ready = False  # Ready=True


class IncrementalHealthMonitor:
    """The monitor's state, its node and Lease handlers, and the pass (see the module docstring)."""

    # Provided by the controller.
    kit: ControllerKit
    clock: Clock
    client: Any
    grace_period: float
    startup_grace_period: float
    _nodes: Informer
    _leases: Informer
    _known: set[str]
    _retry_pods: set[str]
    _to_taint: dict[str, collections.OrderedDict[str, None]]

    def _init_monitor(self) -> None:
        self._health: dict[str, NodeHealth] = {}
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
        self._scan_limit: int | None = None  # set while a pass runs: seqs below it were listed
        self._scan_pos = -1  # seq of the node the running pass is at
        self._scan_now = 0.0
        self._scan_before: dict[str, tuple[int, Obj] | None] = {}  # nodes changed during the pass
        self._undo: list[NodeHealth] = []  # lease observations of the running pass
        self._pass = 0
        # Modelled heartbeats (see HeartbeatModel): pass times, and nodes whose last renewal the
        # next pass observes.
        self._heartbeats: HeartbeatModel | None = None
        self._pass_times: list[float] = []
        self._renewal_pending: set[str] = set()
        self.kit.watch(self._nodes, on_add=self._on_node_add, on_update=self._on_node_update,
                       on_delete=self._on_node_delete)
        self.kit.watch(self._leases, on_add=self._on_lease, on_update=lambda old, new: self._on_lease(new),
                       on_delete=self._on_lease_delete)

    # -- what a pass does, provided by the controller -------------------------------------
    def _register(self, node: Obj) -> None:
        raise NotImplementedError

    def _forget(self, name: str) -> None:
        raise NotImplementedError

    def _add_zone(self, zone: str, now: float) -> None:
        raise NotImplementedError

    async def _mark_reachable(self, node: Obj) -> None:
        raise NotImplementedError

    async def _update_node(self, node: Obj, now: float) -> str | None | object:
        raise NotImplementedError

    async def _handle_disruption(self, zone_counts: dict[str, list[int]], nodes: Callable[[], list[Obj]],
                                 now: float) -> None:
        raise NotImplementedError

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
        renew = renew_time(lease)
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

    def _observe_lease(self, name: str, h: NodeHealth, now: float) -> None:
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

    def _observe_health(self, node: Obj, now: float) -> NodeHealth:
        name = node["metadata"]["name"]
        h = self._health.get(name)
        ready = ready_condition(node)
        if h is None:
            probe = now
            if ready is None:  # never posted: the startup grace counts from creation
                created = node["metadata"].get("creationTimestamp")
                if created:
                    probe = now - max(0.0, self.clock.now() - parse_rfc3339(created))
            h = self._health[name] = NodeHealth(probe=probe, heartbeat=ready.get("lastHeartbeatTime") if ready else None,
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

    async def monitor_once(self) -> None:
        """One health-monitor pass (``monitorNodeHealth`` + ``handleDisruption``): only the nodes
        for which upstream's walk over every node could do anything are visited (see the module
        docstring), with the same outcome."""
        now = self.clock.monotonic()
        if self._heartbeats is not None:
            self._observe_modelled_renewals(now)
        await self._monitor_pass(now)

    async def _monitor_pass(self, now: float) -> None:
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
                assert node is not None  # tracked names are the node informer's
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
                    if current is FAILED:
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

    def _push_deadline(self, h: NodeHealth, node: Obj) -> None:
        if self._renewing(h.name):
            return
        deadline = h.probe + self._grace(node)
        if h.deadline is None or deadline < h.deadline:
            h.deadline = deadline
            heapq.heappush(self._deadlines, (deadline, node["metadata"]["name"]))


__all__ = ["FAILED", "IncrementalHealthMonitor", "ready_condition"]
