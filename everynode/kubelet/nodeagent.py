"""Layer 7: the node half of the simulated kubelet — adoption, node status, Lease heartbeats.

What a kubelet does for its *Node* that the rest of the system can see is reproduced here: the
Node's status (conditions, addresses, capacity, nodeInfo) and its Lease heartbeat in
``kube-node-lease``.  The pods bound to a node are the other half (``podlifecycle.py``); the two
meet only in :class:`NodeState` (a node's IP, pod CIDR, pod-IP allocator and whether its kubelet
runs) and in two hooks the pod half gives us: "this node's pods may proceed" (adoption, resume)
and "this node is gone".  Keeping them apart is why each can be read alone: nothing here knows a
pod's stages, nothing there knows a Lease.

Scale (65,000 nodes in one process) drives the design:
* **One object, no per-node tasks or watches.**  Nodes come from the shared informer; per-node
  state is a ``__slots__`` record (name, index, IP, CIDR, pod-IP allocator, flags).
* **A timer wheel for heartbeats.**  Nodes are spread over ``WHEEL_SLOTS`` slots by index; one
  timer tick every ``heartbeat_interval / WHEEL_SLOTS`` renews the leases of one slot, so the
  renewals of N nodes are spread evenly over the interval with one timer in the loop.
* **A renewal is one UPDATE of the Lease we hold**, as the kubelet's lease controller does
  (``component-helpers/apimachinery/lease/controller.go``): the object our previous write
  returned, shallow-copied with a new ``renewTime`` (its resourceVersion is the precondition);
  only a conflict costs a GET, and a missing Lease a GET and CREATE.  No GET, no patch to apply
  per renewal: at 65,000 nodes the 6,500 renewals a second are most of the simulation's work.
* **Node status is reported on change, else every ``status_report_interval``** (300 s, as the
  kubelet's ``nodeStatusReportFrequency``): ``lastHeartbeatTime`` of the Ready condition is the
  slower heartbeat, the Lease the fast one (node lifecycle reads both).
* **Modelled heartbeats in virtual time** (``heartbeats="modelled"``; ``everynode.Cluster`` and
  ``plan`` on a virtual-time loop): a healthy node's liveness is a fact of the model, not 500
  writes per simulated second.  The wheel keeps ticking (one timer per tick, O(1)) and records
  when each slot's renewal *would* have happened; no Lease renewal and no status report that would
  change nothing but ``lastHeartbeatTime`` is written.  The agent doubles as the node lifecycle
  controller's :class:`~everynode.controllers.nodelifecycle.HeartbeatModel`: while a node's
  kubelet runs, the controller does not watch its freshness; when it stops (annotation
  ``stopped``, ``external``, node removed), the model hands over the time of the last renewal the
  kubelet would have written, and the controller takes its probe time from the pass that would
  have observed it — so the node goes Unknown at exactly the pass it does with written
  heartbeats.  Everything else is written as before: adoption, resume and re-assertion (status and
  Lease; a status that would change nothing but heartbeat times, a kept one, is left to the
  model too), and a periodic status report that would change more than the heartbeat time (someone
  edited the node's conditions, capacity or addresses), at the very tick the written mode reports
  it (the report chain is followed through the recorded ticks).  One limit, as for any two events
  at one instant: a stop at exactly the simulated instant of its node's renewal tick counts as
  after that renewal.

Decisions a user can rely on (documented in the README's simulation section):
* **Adoption**: every Node is simulated, except Nodes annotated ``everynode.io/kubelet: external``
  (a real kubelet reports for them).  ``everynode.io/kubelet: stopped`` pauses a node's kubelet:
  no lease renewals, no node or pod status updates, no pod removals (the node lifecycle
  controller then marks it Unknown and taints it); removing the annotation resumes it (status
  and lease are written at once, deferred pod work is done).
* **Node identity**: each adopted node gets a stable index (annotation
  ``everynode.io/node-index``) from which its InternalIP (10.0.x.y) and ``spec.podCIDR``
  (10.244.N.0/24, …) derive, see ``addresses.py``.  Capacity/allocatable are kept when set, else
  cpu 4, memory 16Gi, pods 110.
* **Node status**: the kubelet reports a healthy node (Ready, no pressure), unless the node is
  annotated ``everynode.io/node-status: kept`` (``plan`` loads a cluster's nodes so): then it
  keeps the conditions, addresses and nodeInfo it finds and only refreshes heartbeats — a node
  under pressure or posting NotReady stays so (``podstatus.NODE_STATUS_ANNOTATION``).
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import contextlib
import logging
from collections.abc import Callable
from typing import Any, Final

from everynode.api.errors import ApiError
from everynode.api.meta import field_of, resource_version
from everynode.api.node import is_node_ready
from everynode.client.base import Client
from everynode.client.informer import Informer
from everynode.client.kit import ControllerKit
from everynode.clock import Clock
from everynode.kubelet import addresses, podstatus

log = logging.getLogger(__name__)

Obj = dict[str, Any]

KUBELET_ANNOTATION: Final = "everynode.io/kubelet"
STOPPED: Final = "stopped"
EXTERNAL: Final = "external"
NODE_INDEX_ANNOTATION: Final = "everynode.io/node-index"
LEASE_NAMESPACE: Final = "kube-node-lease"
LEASES: Final = "leases.coordination.k8s.io"
LEASE_UPDATE_RETRIES: Final = 5  # maxUpdateRetries of the kubelet's lease controller

WHEEL_SLOTS: Final = 10
STATUS_REPORT_INTERVAL: Final = 300.0  # nodeStatusReportFrequency
# The writers and the heartbeat loop hand the loop over after this many queue items.  In-process
# API calls complete without suspending, so a long queue (65,000 nodes to adopt at start-up) would
# otherwise hold the loop until it is empty while every watch on the written objects buffers, and
# the shared informers fall so far behind that their watch is cut and they relist.
YIELD_EVERY: Final = 256


class NodeState:
    """One simulated node as its kubelet knows it (shared with the pod half: IP, CIDR, pod IPs, pods)."""

    __slots__ = ("name", "uid", "index", "ip", "cidr", "stopped", "adopted", "last_status", "status_rv", "pods",
                 "next_host", "free_hosts", "used_hosts", "lease", "renewed", "last_renewal")

    def __init__(self, name: str) -> None:
        self.name = name
        self.uid = ""
        self.index = -1
        self.ip = ""
        self.cidr = ""
        self.stopped = False
        self.adopted = False
        self.last_status = float("-inf")
        self.status_rv = 0  # the Node's resourceVersion as our last status write returned it
        self.pods: set[str] = set()
        self.next_host = addresses.FIRST_POD_HOST
        self.free_hosts: list[int] = []
        self.used_hosts: set[int] = set()
        self.lease: Obj | None = None  # the Lease as our last write returned it
        self.renewed = float("-inf")  # loop time of our last Lease write
        self.last_renewal: float | None = None  # modelled: loop time of the last renewal before a stop

    def allocate_host(self) -> int:
        while self.free_hosts:
            h = self.free_hosts.pop()
            if h not in self.used_hosts:
                self.used_hosts.add(h)
                return h
        while self.next_host in self.used_hosts:
            self.next_host += 1
        h = self.next_host
        self.next_host += 1
        if h > addresses.LAST_POD_HOST:  # exhausted: reuse from the bottom (more pods than a /24)
            h = addresses.FIRST_POD_HOST + (h - addresses.FIRST_POD_HOST) % (
                addresses.LAST_POD_HOST - addresses.FIRST_POD_HOST + 1)
        self.used_hosts.add(h)
        return h

    def release_host(self, h: int) -> None:
        if h in self.used_hosts:
            self.used_hosts.discard(h)
            self.free_hosts.append(h)



class NodeAgent:
    """Every simulated node's kubelet, as far as its Node and Lease go.

    ``wake`` tells the writers (owned by :class:`~everynode.kubelet.simulator.KubeletSimulator`)
    that :attr:`to_adopt` has work; ``on_node_resumed(ns)`` lets the pod half proceed with the pods
    of a node that was adopted or resumed, ``on_node_dropped(ns)`` forget the pods of a node that
    went away."""

    def __init__(self, client: Client, *, clock: Clock, wake: Callable[[], None], lease_duration: int = 40,
                 heartbeat_interval: float = 10, status_report_interval: float = STATUS_REPORT_INTERVAL,
                 modelled: bool = False) -> None:
        self.client = client
        self.clock = clock
        self._wake = wake
        self.lease_duration = int(lease_duration)
        self.heartbeat_interval = float(heartbeat_interval)
        self.status_report_interval = float(status_report_interval)
        self.modelled = modelled
        self.nodes: dict[str, NodeState] = {}
        self.to_adopt: collections.deque[str] = collections.deque()
        self.on_node_resumed: Callable[[NodeState], None] = lambda ns: None
        self.on_node_dropped: Callable[[NodeState], None] = lambda ns: None
        self.informer: Informer | None = None
        # Slot -> its nodes (a dict: ordered like a list, O(1) removal when a node goes away).
        self._wheel: list[dict[str, None]] = [{} for _ in range(WHEEL_SLOTS)]
        self._slot = 0
        self._used_indices: set[int] = set()
        self._next_index = 0
        self._wheel_timer: asyncio.TimerHandle | None = None
        self._hb_queue: collections.deque[str] = collections.deque()
        self._hb_pending: set[str] = set()
        self._hb_task: asyncio.Task[None] | None = None
        self._running = False
        # Modelled heartbeats: each slot's tick times (the report chain of a node is followed
        # through them), the nodes whose next periodic report would change more than heartbeat
        # times, and who wants to hear of a kubelet that stops renewing.
        self._slot_ticks: list[list[float]] = [[] for _ in range(WHEEL_SLOTS)]
        self._deviant: dict[str, None] = {}
        self._stop_listeners: list[Callable[[str], None]] = []
        # Counters (diagnostics, benchmarks).
        self.lease_renewals = 0
        self.modelled_renewals = 0  # renewals the model stands for (slot ticks x nodes, counted per tick)
        self.node_status_updates = 0
        self.errors = 0

    def start(self, kit: ControllerKit, informer: Informer) -> None:
        """Watch ``informer`` (nodes) through ``kit`` and start the heartbeat wheel."""
        self.informer = informer
        self._running = True
        kit.watch(informer, on_add=self._on_node_add, on_update=self._on_node_update, on_delete=self._on_node_delete)
        self._wheel_timer = asyncio.get_running_loop().call_later(self.heartbeat_interval / WHEEL_SLOTS, self._tick)

    async def stop(self) -> None:
        self._running = False
        if self._wheel_timer is not None:
            self._wheel_timer.cancel()
        if self._hb_task is not None:
            self._hb_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._hb_task

    def node_ip(self, name: str) -> str | None:
        ns = self.nodes.get(name)
        return ns.ip if ns is not None and ns.ip else None

    def node_obj(self, name: str) -> Obj | None:
        inf = self.informer
        return inf.get(name) if inf is not None else None

    async def adopt_next(self) -> None:
        """Adopt the next node of :attr:`to_adopt` (a failure is counted, logged and retried in 1 s)."""
        name = self.to_adopt.popleft()
        try:
            await self._adopt(name)
        except ApiError as e:
            self.errors += 1
            log.info("adopting node %s failed: %s", name, e)
            self._retry_adopt(name)
        except Exception:
            self.errors += 1
            log.exception("adopting node %s failed", name)
            self._retry_adopt(name)

    # -- the heartbeat model (node lifecycle's HeartbeatModel) -------------------------------------

    def renewing(self, name: str) -> bool:
        """Modelled heartbeats: whether ``name``'s kubelet is renewing its Lease now (adopted, not
        stopped).  Always False when heartbeats are written: then the Lease says it."""
        ns = self.nodes.get(name)
        return self.modelled and ns is not None and ns.adopted and not ns.stopped

    def last_renewal(self, name: str) -> float | None:
        """Loop time of the last renewal the kubelet of ``name`` made (or, modelled, would have
        written) before it stopped; None while it renews or when unknown."""
        ns = self.nodes.get(name)
        return ns.last_renewal if ns is not None else None

    def subscribe_stops(self, callback: Callable[[str], None]) -> None:
        """``callback(name)`` is called when a node's modelled renewals end (``last_renewal`` then
        tells when the last one was)."""
        self._stop_listeners.append(callback)

    def _stopped_renewing(self, ns: NodeState) -> None:
        """The kubelet of ``ns`` renewed until now and stops: the last renewal is its own last Lease
        write or its slot's last tick, whichever is later."""
        ticks = self._slot_ticks[ns.index % WHEEL_SLOTS] if ns.index >= 0 else []
        ns.last_renewal = max(ns.renewed, ticks[-1]) if ticks else ns.renewed
        self._deviant.pop(ns.name, None)
        for callback in self._stop_listeners:
            callback(ns.name)


    # -- node events ----------------------------------------------------------------------------

    def _on_node_add(self, node: Obj) -> None:
        self._node_seen(node)

    def _on_node_update(self, old: Obj, new: Obj) -> None:
        self._node_seen(new)

    def _node_seen(self, node: Obj) -> None:
        md: dict[str, Any] = node.get("metadata") or {}
        name = md.get("name") or ""
        mode = field_of(md.get("annotations"), KUBELET_ANNOTATION)
        ns = self.nodes.get(name)
        if mode == EXTERNAL:
            if ns is not None:
                self._drop_node(name)
            return
        renewing = self.renewing(name)
        if ns is None:
            ns = self.nodes[name] = NodeState(name)
            ns.uid = md.get("uid") or ""
            idx = _int(field_of(md.get("annotations"), NODE_INDEX_ANNOTATION))
            if idx is not None and idx not in self._used_indices:
                self._take_index(ns, idx)
            ns.stopped = mode == STOPPED
            self.to_adopt.append(name)
            self._wake()
            return
        if md.get("uid") and ns.uid and md.get("uid") != ns.uid:  # deleted and re-created
            self._drop_node(name)
            self._node_seen(node)
            return
        was_stopped = ns.stopped
        ns.stopped = mode == STOPPED
        if renewing and ns.stopped:
            self._stopped_renewing(ns)
        if was_stopped and not ns.stopped:
            ns.last_status = float("-inf")  # report at once
            self.to_adopt.append(name)
            self._wake()
            self.on_node_resumed(ns)
        elif ns.adopted and not ns.stopped and not is_node_ready(node) and not _older(node, ns.status_rv) \
                and podstatus.report_would_change(node, ip=ns.ip, hostname=ns.name):
            # Someone (node lifecycle) marked it not Ready while we run: re-assert now.  (Not for a
            # state older than our last report: the watch delivers our own earlier writes late,
            # e.g. the adoption's metadata patch, and re-adopting on them doubled start-up.  Nor
            # when our report says not Ready too: a kept status.)
            ns.last_status = float("-inf")
            self.to_adopt.append(name)
            self._wake()
        elif renewing and not ns.stopped:
            self._check_report(ns, node)

    def _on_node_delete(self, node: Obj) -> None:
        name = field_of(node.get("metadata"), "name") or ""
        self._drop_node(name)

    def _drop_node(self, name: str) -> None:
        ns = self.nodes.get(name)
        if ns is None:
            return
        if self.renewing(name):
            self._stopped_renewing(ns)
        del self.nodes[name]
        self._deviant.pop(name, None)
        if ns.index >= 0:
            self._used_indices.discard(ns.index)
            self._wheel[ns.index % WHEEL_SLOTS].pop(name, None)
        self.on_node_dropped(ns)

    def _take_index(self, ns: NodeState, idx: int) -> None:
        ns.index = idx
        self._used_indices.add(idx)
        ns.ip = addresses.node_ip(idx)
        ns.cidr = addresses.pod_cidr(idx)
        self._wheel[idx % WHEEL_SLOTS][ns.name] = None

    def _assign_index(self, ns: NodeState) -> None:
        while self._next_index in self._used_indices:
            self._next_index += 1
        self._take_index(ns, self._next_index)
        self._next_index += 1

    # -- adoption and node status ---------------------------------------------------------------

    async def _adopt(self, name: str) -> None:
        ns = self.nodes.get(name)
        node = self.node_obj(name)
        if ns is None or node is None or ns.stopped:
            return
        if ns.index < 0:
            self._assign_index(ns)
        ns.ip = podstatus.node_internal_ip(node, ns.ip)
        md: dict[str, Any] = node.get("metadata") or {}
        spec: dict[str, Any] = node.get("spec") or {}
        meta_patch: Obj = {}
        if field_of(md.get("annotations"), NODE_INDEX_ANNOTATION) != str(ns.index):
            meta_patch["metadata"] = {"annotations": {NODE_INDEX_ANNOTATION: str(ns.index)}}
        if spec.get("podCIDR"):
            ns.cidr = spec["podCIDR"]
        else:
            meta_patch["spec"] = {"podCIDR": ns.cidr, "podCIDRs": [ns.cidr]}
        if meta_patch:
            try:
                node = await self.client.patch("nodes", name, meta_patch, patch_type="merge")
            except ApiError as e:
                if e.code == 404:
                    return
                raise
        await self._report_status(ns, node)
        ns.adopted = True
        await self._renew_lease(ns)
        # Pods bound before we adopted the node (or while it was stopped).
        self.on_node_resumed(ns)

    async def _report_status(self, ns: NodeState, node: Obj | None = None) -> None:
        node = node or self.node_obj(ns.name)
        if node is None:
            return
        if self.modelled and not podstatus.report_would_change(node, ip=ns.ip, hostname=ns.name):
            # Modelled: a report that would change nothing but heartbeat times is the model's.
            ns.last_status = asyncio.get_running_loop().time()
            ns.status_rv = resource_version(node)
            return
        status = podstatus.node_status_report(node, ip=ns.ip, hostname=ns.name, now=self.clock.rfc3339())
        try:
            written = await self.client.patch("nodes", ns.name, {"status": status}, patch_type="strategic",
                                              subresource="status")
        except ApiError as e:
            if e.code == 404:
                return
            raise
        ns.last_status = asyncio.get_running_loop().time()
        ns.status_rv = resource_version(written)
        self.node_status_updates += 1

    def _renewed(self, lease: Obj, ns: NodeState, now: str) -> Obj:
        """``lease`` with ``renewTime`` moved to ``now`` (and the fields the kubelet owns set):
        a new dict sharing everything it does not change, since stored objects are immutable."""
        spec = dict(lease.get("spec") or {})
        spec["holderIdentity"] = ns.name  # (the Lease's field order, for a new spec)
        spec["leaseDurationSeconds"] = self.lease_duration
        spec["renewTime"] = now
        out = dict(lease)
        out["spec"] = spec
        md: dict[str, Any] = lease.get("metadata") or {}
        if ns.uid and not md.get("ownerReferences"):
            out["metadata"] = dict(md, ownerReferences=[{"apiVersion": "v1", "kind": "Node", "name": ns.name,
                                                          "uid": ns.uid}])
        return out

    async def _renew_lease(self, ns: NodeState) -> None:
        """Renew the node's Lease as the kubelet's lease controller does: UPDATE the copy our
        last write returned (no GET), re-reading it only on a conflict; GET or CREATE it when we
        hold none or it is gone."""
        now = self.clock.rfc3339_micro()
        lease = ns.lease
        for _ in range(LEASE_UPDATE_RETRIES):
            if lease is None:
                break
            try:
                ns.lease = await self.client.update(LEASES, self._renewed(lease, ns, now))
                self.lease_renewals += 1
                ns.renewed = asyncio.get_running_loop().time()
                return
            except ApiError as e:
                if e.code == 404:
                    break
                if e.code != 409:
                    ns.lease = None
                    raise
            lease = await self._get_lease(ns)
        ns.lease = None
        await self._ensure_lease(ns, now)

    async def _get_lease(self, ns: NodeState) -> Obj | None:
        try:
            return await self.client.get(LEASES, ns.name, namespace=LEASE_NAMESPACE)
        except ApiError as e:
            if e.code == 404:
                return None
            raise

    async def _ensure_lease(self, ns: NodeState, now: str) -> None:
        """``backoffEnsureLease``: create the Lease, or renew the one someone else created."""
        lease = self._renewed({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                               "metadata": {"name": ns.name, "namespace": LEASE_NAMESPACE}}, ns, now)
        created: Obj | None = None
        try:
            created = await self.client.create(LEASES, lease, namespace=LEASE_NAMESPACE)
        except ApiError as e:
            if e.code != 409:
                raise
        # (Renewing someone else's Lease is awaited after the handler, not in it: compiled.py.)
        if created is not None:
            ns.lease = created
        else:
            existing = await self._get_lease(ns)
            if existing is None:  # deleted again in between: next heartbeat creates it
                return
            ns.lease = await self.client.update(LEASES, self._renewed(existing, ns, now))
        self.lease_renewals += 1
        ns.renewed = asyncio.get_running_loop().time()

    def _tick(self) -> None:
        """One wheel step: queue the next slot's nodes for a heartbeat.  A slot that is still
        queued from an earlier tick (the API is slower than the interval) is not queued twice,
        so a backlog degrades into longer renew intervals, never into an ever-growing queue."""
        if not self._running:
            return
        loop = asyncio.get_running_loop()
        slot = self._slot
        self._slot = (slot + 1) % WHEEL_SLOTS
        pending = self._hb_pending
        if self.modelled:
            # The slot's renewals happen in the model: record when, and visit only the nodes whose
            # periodic status report would change something (usually none).
            self._slot_ticks[slot].append(loop.time())
            self.modelled_renewals += len(self._wheel[slot])
            names: Any = [n for n in self._deviant if (ns := self.nodes.get(n)) is not None
                          and ns.index % WHEEL_SLOTS == slot] if self._deviant else ()
        else:
            names = self._wheel[slot]
        for name in names:
            if name not in pending:
                pending.add(name)
                self._hb_queue.append(name)
        if self._hb_queue and self._hb_task is None:
            self._hb_task = loop.create_task(self._heartbeat())
        self._wheel_timer = loop.call_later(self.heartbeat_interval / WHEEL_SLOTS, self._tick)

    async def _heartbeat(self) -> None:
        loop = asyncio.get_running_loop()
        queue = self._hb_queue
        try:
            n = 0
            while queue and self._running:
                name = queue.popleft()
                self._hb_pending.discard(name)
                ns = self.nodes.get(name)
                if ns is None or ns.stopped or not ns.adopted:
                    continue
                try:
                    if self.modelled:
                        ns.last_status = self._modelled_last_status(ns, before=loop.time())
                    else:
                        await self._renew_lease(ns)
                    if loop.time() - ns.last_status >= self.status_report_interval:
                        await self._report_status(ns)
                except ApiError as e:
                    self.errors += 1
                    log.info("heartbeat of node %s failed: %s", name, e)
                n += 1
                if n % YIELD_EVERY == 0:
                    await asyncio.sleep(0)
        finally:
            self._hb_task = None

    # -- modelled status reports ----------------------------------------------------------------

    def _modelled_last_status(self, ns: NodeState, *, before: float) -> float:
        """When the written mode would last have reported ``ns``'s status before loop time
        ``before``: its last real report, followed by a report at each slot tick at least
        ``status_report_interval`` after the previous one (the heartbeat's own rule)."""
        last = ns.last_status
        if last == float("-inf") or ns.index < 0:
            return last
        ticks = self._slot_ticks[ns.index % WHEEL_SLOTS]
        interval = self.status_report_interval
        i = bisect.bisect_right(ticks, last)
        while i < len(ticks) and ticks[i] < before:
            t = ticks[i]
            if t - last >= interval:
                last = t
                i += 1
                # skip ahead to about the next due tick, then walk (float rounding decides)
                i = max(i, bisect.bisect_left(ticks, last + interval, lo=i) - 1)
            else:
                i += 1
        return last

    def _check_report(self, ns: NodeState, node: Obj) -> None:
        """Modelled: watch ``ns`` at its slot's ticks if its next periodic report would change
        more than heartbeat times (the written mode would write it; someone edited the node)."""
        if ns.index >= 0 and podstatus.report_would_change(node, ip=ns.ip, hostname=ns.name):
            if ns.name not in self._deviant:
                ns.last_status = self._modelled_last_status(ns, before=asyncio.get_running_loop().time() + 1e-9)
                self._deviant[ns.name] = None
        else:
            self._deviant.pop(ns.name, None)

    def _retry_adopt(self, name: str) -> None:
        loop = asyncio.get_running_loop()

        def again() -> None:
            if name in self.nodes:
                self.to_adopt.append(name)
                self._wake()

        loop.call_later(1.0, again)


def _older(node: Obj, rv: int) -> bool:
    """Whether ``node`` is a state from before resourceVersion ``rv``.  (resourceVersions are
    opaque to clients in general; the simulated kubelets only serve everynode's own store, whose
    resourceVersions are increasing integers.  One that is not an integer counts as new.)"""
    own = resource_version(node)  # 0 when missing or not an integer
    return 0 < own < rv


def _int(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        v = int(text)
    except ValueError:
        return None
    return v if v >= 0 else None
