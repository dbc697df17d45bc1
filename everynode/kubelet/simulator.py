"""Layer 7: one object that plays the kubelet of every simulated node.

What a kubelet does that the rest of the system can see — and only that — is reproduced:
the Node's status (conditions, addresses, capacity, nodeInfo), its Lease heartbeat in
``kube-node-lease``, and the status of the pods bound to it (Pending → Running → Ready, restarts,
failures, IPs), plus removing terminated pods that are being deleted.

Scale (65,000 nodes in one process) drives the design:
* **One object, no per-node tasks or watches.**  Nodes and pods come from the shared informers;
  per-node state is a ``__slots__`` record (name, index, IP, CIDR, pod-IP allocator, flags).
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
  change nothing but ``lastHeartbeatTime`` is written.  The object doubles as the node lifecycle
  controller's :class:`~everynode.controllers.nodelifecycle.HeartbeatModel`: while a node's
  kubelet runs, the controller does not watch its freshness; when it stops (annotation
  ``stopped``, ``external``, node removed), the model hands over the time of the last renewal the
  kubelet would have written, and the controller takes its probe time from the pass that would
  have observed it — so the node goes Unknown at exactly the pass it does with written
  heartbeats.  Everything else is written as before: adoption, resume and re-assertion (status and
  Lease), and a periodic status report that would change more than the heartbeat time (someone
  edited the node's conditions, capacity or addresses), at the very tick the written mode reports
  it (the report chain is followed through the recorded ticks).  One limit, as for any two events
  at one instant: a stop at exactly the simulated instant of its node's renewal tick counts as
  after that renewal.
* **Pod timers are ``loop.call_later`` handles** (asyncio keeps them in its heap); when one fires
  the pod key goes onto a ready deque drained by a few writer tasks; nothing is O(nodes) per pod
  event, and pod events for nodes we do not manage cost a dict lookup.

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
* **Pod behaviour** comes from the pod's annotations (DaemonSet pods copy them from the
  template): ``everynode.io/startup-seconds`` (else ``pod_startup``) and ``everynode.io/behavior``:
  ``ready`` (default), ``never-ready`` (Running, never Ready), ``crash-loop`` (restarts with
  back-off 10 s doubling to 5 min, waiting ``CrashLoopBackOff``, lastState terminated ``Error``;
  with ``restartPolicy: Never`` the pod fails instead), ``image-pull-error`` (stays Pending,
  waiting ``ErrImagePull`` then ``ImagePullBackOff``, retried with the same back-off), ``fail``
  (phase Failed, terminated ``Error`` exit code 1).
* **Termination**: a pod with ``deletionTimestamp`` is removed (``delete`` with grace period 0
  and a uid precondition) promptly — after ``everynode.io/termination-seconds`` if the pod has
  that annotation, otherwise at once; ``terminationGracePeriodSeconds`` is not waited for,
  since no process needs the time.
* **Downward API**: the resolved environment of each container is written, when the containers
  start, to the pod annotation ``everynode.io/resolved-env`` (JSON; see ``downward.py``), and
  :meth:`KubeletSimulator.environment` computes it for Python callers.
"""

from __future__ import annotations

import asyncio
import bisect
import collections
import contextlib
import logging
from collections.abc import Callable
from typing import Any

import orjson

from everynode.api.errors import ApiError
from everynode.api.meta import resource_version
from everynode.client.base import Client
from everynode.client.events import NORMAL, WARNING, EventRecorder
from everynode.client.informer import Informer, SharedInformerFactory
from everynode.clock import Clock
from everynode.kubelet import addresses, podstatus
from everynode.kubelet.downward import RESOLVED_ENV_ANNOTATION, has_env, resolve_environment

log = logging.getLogger(__name__)

Obj = dict[str, Any]

KUBELET_ANNOTATION = "everynode.io/kubelet"
STOPPED = "stopped"
EXTERNAL = "external"
NODE_INDEX_ANNOTATION = "everynode.io/node-index"
BEHAVIOR_ANNOTATION = "everynode.io/behavior"
STARTUP_ANNOTATION = "everynode.io/startup-seconds"
TERMINATION_ANNOTATION = "everynode.io/termination-seconds"
BEHAVIORS = ("ready", "never-ready", "crash-loop", "image-pull-error", "fail")
LEASE_NAMESPACE = "kube-node-lease"
LEASES = "leases.coordination.k8s.io"
LEASE_UPDATE_RETRIES = 5  # maxUpdateRetries of the kubelet's lease controller

WHEEL_SLOTS = 10
STATUS_REPORT_INTERVAL = 300.0  # nodeStatusReportFrequency
BACKOFF_INITIAL = 10.0  # container restart / image pull back-off
BACKOFF_MAX = 300.0
CRASH_AFTER = 1.0  # seconds a crash-looping container runs before it exits
PULL_FAIL_SECONDS = 1.0  # ErrImagePull shows this long before ImagePullBackOff
WRITERS = 4
HEARTBEAT_MODES = ("writes", "modelled")
# The writers and the heartbeat loop hand the loop over after this many queue items.  In-process
# API calls complete without suspending, so a long queue (65,000 nodes to adopt at start-up) would
# otherwise hold the loop until it is empty while every watch on the written objects buffers, and
# the shared informers fall so far behind that their watch is cut and they relist.
YIELD_EVERY = 256


def _annotation(obj: Obj, key: str) -> str | None:
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(key)


def _seconds(text: str | None, default: float) -> float:
    if text is None:
        return default
    try:
        v = float(text)
    except ValueError:
        return default
    return v if v >= 0 else default


def backoff_delay(restarts: int) -> float:
    """Kubelet back-off before restart number ``restarts + 1``: 10 s doubling, capped at 5 min."""
    return min(BACKOFF_INITIAL * (2 ** max(restarts - 1, 0)), BACKOFF_MAX) if restarts > 0 else BACKOFF_INITIAL


class NodeState:
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


class PodState:
    __slots__ = ("key", "namespace", "name", "uid", "node", "stage", "timer", "restarts", "host", "ip",
                 "started_at", "deleting", "busy", "dirty", "crash_started")

    def __init__(self, key: str, namespace: str, name: str, uid: str, node: str) -> None:
        self.key = key
        self.namespace = namespace
        self.name = name
        self.uid = uid
        self.node = node
        self.stage = "new"
        self.timer: asyncio.TimerHandle | None = None
        self.restarts = 0
        self.host: int | None = None
        self.ip = ""
        self.started_at = ""
        self.crash_started = ""
        self.deleting = False
        self.busy = False
        self.dirty = False


class KubeletSimulator:
    def __init__(self, client: Client, *, clock: Clock, informers: SharedInformerFactory | None = None,
                 pod_startup: float = 1.0, recorder: EventRecorder | None = None, lease_duration: int = 40,
                 heartbeat_interval: float = 10, status_report_interval: float = STATUS_REPORT_INTERVAL,
                 pod_events: bool = True, heartbeats: str = "writes") -> None:
        if heartbeats not in HEARTBEAT_MODES:
            raise ValueError(f"heartbeats must be one of {', '.join(HEARTBEAT_MODES)}, not {heartbeats!r}")
        self.client = client
        self.clock = clock
        self._own_factory = informers is None
        self.informers = informers if informers is not None else SharedInformerFactory(client)
        self._own_recorder = recorder is None
        self.recorder = recorder if recorder is not None else EventRecorder(client, component="kubelet", clock=clock)
        self.pod_startup = pod_startup
        self.lease_duration = int(lease_duration)
        self.heartbeat_interval = float(heartbeat_interval)
        self.status_report_interval = float(status_report_interval)
        self.pod_events = pod_events
        self.modelled = heartbeats == "modelled"
        self.nodes: dict[str, NodeState] = {}
        self.pods: dict[str, PodState] = {}
        # Slot -> its nodes (a dict: ordered like a list, O(1) removal when a node goes away).
        self._wheel: list[dict[str, None]] = [{} for _ in range(WHEEL_SLOTS)]
        self._slot = 0
        self._used_indices: set[int] = set()
        self._next_index = 0
        self._to_adopt: collections.deque[str] = collections.deque()
        self._ready: collections.deque[str] = collections.deque()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []
        self._regs: list[Any] = []
        self._node_informer: Informer | None = None
        self._pod_informer: Informer | None = None
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
        self.pod_status_updates = 0
        self.pod_removals = 0
        self.errors = 0

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._running = True
        self._node_informer = self.informers.informer("nodes")
        self._pod_informer = self.informers.informer("pods")
        self._regs.append(self._node_informer.add_handler(self._on_node_add, self._on_node_update,
                                                          self._on_node_delete))
        self._regs.append(self._pod_informer.add_handler(self._on_pod_add, self._on_pod_update,
                                                         self._on_pod_delete))
        self.informers.start()
        for i in range(WRITERS):
            self._tasks.append(loop.create_task(self._writer(), name=f"kubelet-writer-{i}"))
        self._wheel_timer = loop.call_later(self.heartbeat_interval / WHEEL_SLOTS, self._tick)

    async def wait_synced(self) -> None:
        for inf in (self._node_informer, self._pod_informer):
            if inf is not None:
                await inf.wait_synced()

    async def stop(self) -> None:
        self._running = False
        if self._wheel_timer is not None:
            self._wheel_timer.cancel()
        if self._hb_task is not None:
            self._hb_task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._hb_task
        for reg in self._regs:
            reg.remove()
        self._regs.clear()
        for ps in self.pods.values():
            if ps.timer is not None:
                ps.timer.cancel()
        self._wake.set()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks.clear()
        if self._own_factory:
            await self.informers.stop()
        if self._own_recorder:
            await self.recorder.close(flush=False)

    # -- public helpers -------------------------------------------------------------------------

    def environment(self, pod: Obj) -> dict[str, dict[str, str]]:
        """The environment each container of ``pod`` sees (Downward API resolved)."""
        node = self._node_obj((pod.get("spec") or {}).get("nodeName") or "")
        allocatable = ((node or {}).get("status") or {}).get("allocatable") or {}
        return resolve_environment(pod, allocatable=allocatable)

    def node_ip(self, name: str) -> str | None:
        ns = self.nodes.get(name)
        return ns.ip if ns is not None and ns.ip else None

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

    @property
    def idle(self) -> bool:
        """No write queued or running, no adoption pending (pod timers may still be set)."""
        return not self._ready and not self._to_adopt and not any(ps.busy for ps in self.pods.values())

    # -- node events ----------------------------------------------------------------------------

    def _node_obj(self, name: str) -> Obj | None:
        inf = self._node_informer
        return inf.get(name) if inf is not None else None

    def _on_node_add(self, node: Obj) -> None:
        self._node_seen(node)

    def _on_node_update(self, old: Obj, new: Obj) -> None:
        self._node_seen(new)

    def _node_seen(self, node: Obj) -> None:
        md = node.get("metadata") or {}
        name = md.get("name") or ""
        mode = (md.get("annotations") or {}).get(KUBELET_ANNOTATION)
        ns = self.nodes.get(name)
        if mode == EXTERNAL:
            if ns is not None:
                self._drop_node(name)
            return
        renewing = self.renewing(name)
        if ns is None:
            ns = self.nodes[name] = NodeState(name)
            ns.uid = md.get("uid") or ""
            idx = _int((md.get("annotations") or {}).get(NODE_INDEX_ANNOTATION))
            if idx is not None and idx not in self._used_indices:
                self._take_index(ns, idx)
            ns.stopped = mode == STOPPED
            self._to_adopt.append(name)
            self._wake.set()
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
            self._to_adopt.append(name)
            self._wake.set()
            self._resume_pods(ns)
        elif ns.adopted and not ns.stopped and not _ready_true(node) and not _older(node, ns.status_rv):
            # Someone (node lifecycle) marked it not Ready while we run: re-assert now.  (Not for a
            # state older than our last report: the watch delivers our own earlier writes late,
            # e.g. the adoption's metadata patch, and re-adopting on them doubled start-up.)
            ns.last_status = float("-inf")
            self._to_adopt.append(name)
            self._wake.set()
        elif renewing and not ns.stopped:
            self._check_report(ns, node)

    def _on_node_delete(self, node: Obj) -> None:
        name = (node.get("metadata") or {}).get("name") or ""
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
        for key in list(ns.pods):
            ps = self.pods.pop(key, None)
            if ps is not None and ps.timer is not None:
                ps.timer.cancel()

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
        node = self._node_obj(name)
        if ns is None or node is None or ns.stopped:
            return
        if ns.index < 0:
            self._assign_index(ns)
        md = node.get("metadata") or {}
        spec = node.get("spec") or {}
        meta_patch: Obj = {}
        if (md.get("annotations") or {}).get(NODE_INDEX_ANNOTATION) != str(ns.index):
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
        self._resume_pods(ns)

    async def _report_status(self, ns: NodeState, node: Obj | None = None) -> None:
        node = node or self._node_obj(ns.name)
        if node is None:
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
        md = lease.get("metadata") or {}
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
        try:
            ns.lease = await self.client.create(LEASES, lease, namespace=LEASE_NAMESPACE)
        except ApiError as e:
            if e.code != 409:
                raise
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

    # -- pod events -----------------------------------------------------------------------------

    def _on_pod_add(self, pod: Obj) -> None:
        self._pod_seen(pod)

    def _on_pod_update(self, old: Obj, new: Obj) -> None:
        self._pod_seen(new)

    def _pod_seen(self, pod: Obj) -> None:
        spec = pod.get("spec") or {}
        node_name = spec.get("nodeName")
        if not node_name:
            return
        ns = self.nodes.get(node_name)
        if ns is None:
            return
        md = pod.get("metadata") or {}
        key = f"{md.get('namespace') or ''}/{md.get('name') or ''}"
        ps = self.pods.get(key)
        if ps is not None and md.get("uid") and ps.uid != md.get("uid"):
            self._forget_pod(key)
            ps = None
        if ps is None:
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Succeeded", "Failed") and not md.get("deletionTimestamp"):
                return
            ps = PodState(key, md.get("namespace") or "", md.get("name") or "", md.get("uid") or "", node_name)
            self.pods[key] = ps
            ns.pods.add(key)
            self._recover(ps, pod, ns)
            if ns.stopped or not ns.adopted:
                return  # handled on adoption / resume
            if md.get("deletionTimestamp"):
                self._start_termination(ps, pod)
            elif ps.stage == "new":
                self._enqueue(ps)
            return
        if md.get("deletionTimestamp") and not ps.deleting and not ns.stopped and ns.adopted:
            self._start_termination(ps, pod)

    def _on_pod_delete(self, pod: Obj) -> None:
        md = pod.get("metadata") or {}
        self._forget_pod(f"{md.get('namespace') or ''}/{md.get('name') or ''}")

    def _forget_pod(self, key: str) -> None:
        ps = self.pods.pop(key, None)
        if ps is None:
            return
        if ps.timer is not None:
            ps.timer.cancel()
        ns = self.nodes.get(ps.node)
        if ns is not None:
            ns.pods.discard(key)
            if ps.host is not None:
                ns.release_host(ps.host)

    def _recover(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        """Take over a pod whose status an earlier run (or kubelet) already wrote."""
        status = pod.get("status") or {}
        ip = status.get("podIP") or ""
        if ip and not (pod.get("spec") or {}).get("hostNetwork") and ns.cidr:
            h = addresses.host_of(ns.cidr, ip)
            if h is not None:
                ns.used_hosts.add(h)
                ps.host = h
        ps.ip = ip
        phase = status.get("phase")
        cs = (status.get("containerStatuses") or [{}])[0]
        ps.restarts = int(cs.get("restartCount") or 0)
        ps.started_at = status.get("startTime") or ""
        if phase in ("Succeeded", "Failed"):
            ps.stage = "done"
        elif phase == "Running" or (phase == "Pending" and ip):
            behavior = self._behavior(pod)
            if behavior in ("crash-loop", "image-pull-error"):
                ps.stage = "cycle"
                self._set_timer(ps, BACKOFF_INITIAL)
            else:
                ps.stage = "running"

    def _resume_pods(self, ns: NodeState) -> None:
        inf = self._pod_informer
        for key in list(ns.pods):
            ps = self.pods.get(key)
            pod = inf.get(key) if inf is not None else None
            if ps is None or pod is None:
                continue
            if (pod.get("metadata") or {}).get("deletionTimestamp"):
                if not ps.deleting:
                    self._start_termination(ps, pod)
            elif ps.stage in ("new", "creating", "cycle") and ps.timer is None:
                self._enqueue(ps)

    # -- pod lifecycle --------------------------------------------------------------------------

    def _behavior(self, pod: Obj) -> str:
        b = _annotation(pod, BEHAVIOR_ANNOTATION) or "ready"
        return b if b in BEHAVIORS else "ready"

    def _set_timer(self, ps: PodState, delay: float) -> None:
        if ps.timer is not None:
            ps.timer.cancel()
        ps.timer = asyncio.get_running_loop().call_later(max(delay, 0.0), self._fire, ps.key, ps)

    def _fire(self, key: str, ps: PodState) -> None:
        ps.timer = None
        if self.pods.get(key) is ps:
            self._enqueue(ps)

    def _enqueue(self, ps: PodState) -> None:
        if ps.busy:
            ps.dirty = True
            return
        ps.busy = True
        self._ready.append(ps.key)
        self._wake.set()

    def _start_termination(self, ps: PodState, pod: Obj) -> None:
        ps.deleting = True
        if ps.timer is not None:
            ps.timer.cancel()
            ps.timer = None
        ps.stage = "terminating"
        delay = _seconds(_annotation(pod, TERMINATION_ANNOTATION), 0.0)
        if delay > 0:
            self._set_timer(ps, delay)
        else:
            self._enqueue(ps)

    async def _writer(self) -> None:
        turns = 0
        while self._running:
            turns += 1
            if turns % YIELD_EVERY == 0:
                await asyncio.sleep(0)
            if self._to_adopt:
                name = self._to_adopt.popleft()
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
                continue
            if not self._ready:
                self._wake.clear()
                await self._wake.wait()
                continue
            key = self._ready.popleft()
            ps = self.pods.get(key)
            if ps is None:
                continue
            try:
                await self._step(ps)
            except ApiError as e:
                if e.code != 404:
                    self.errors += 1
                    log.info("updating pod %s failed: %s", key, e)
                    if self.pods.get(key) is ps and e.code in (409, 429, 500, 503, 504):
                        ps.dirty = False
                        ps.busy = False
                        self._set_timer(ps, 1.0)
                        continue
            except Exception:
                self.errors += 1
                log.exception("updating pod %s failed", key)
            ps.busy = False
            if ps.dirty and self.pods.get(key) is ps:
                ps.dirty = False
                self._enqueue(ps)

    def _retry_adopt(self, name: str) -> None:
        loop = asyncio.get_running_loop()

        def again() -> None:
            if name in self.nodes:
                self._to_adopt.append(name)
                self._wake.set()

        loop.call_later(1.0, again)

    async def _step(self, ps: PodState) -> None:
        """Advance one pod by one step of its lifecycle (one API write, usually)."""
        inf = self._pod_informer
        pod = inf.get(ps.key) if inf is not None else None
        ns = self.nodes.get(ps.node)
        if pod is None or ns is None or ns.stopped or not ns.adopted:
            return
        if (pod.get("metadata") or {}).get("uid") != ps.uid:
            return
        if ps.deleting:
            if ps.timer is not None:  # a termination-seconds wait still running
                return
            await self._remove(ps)
            return
        if ps.stage == "new":
            startup = _seconds(_annotation(pod, STARTUP_ANNOTATION), self.pod_startup)
            if startup > 0:
                await self._write_pending(ps, pod, ns)
                ps.stage = "creating"
                self._set_timer(ps, startup)
                return
            ps.stage = "creating"
        if ps.stage == "creating":
            await self._start_containers(ps, pod, ns)
            return
        if ps.stage == "cycle":
            await self._cycle(ps, pod, ns)

    # -- the writes -----------------------------------------------------------------------------

    async def _patch_status(self, ps: PodState, status: Obj) -> None:
        await self.client.patch("pods", ps.name, {"metadata": {"uid": ps.uid}, "status": status},
                                namespace=ps.namespace, patch_type="strategic", subresource="status")
        self.pod_status_updates += 1

    def _ips(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        if ps.ip:
            return
        if (pod.get("spec") or {}).get("hostNetwork"):
            ps.ip = ns.ip
            return
        if ps.host is None:
            ps.host = ns.allocate_host()
        ps.ip = addresses.pod_ip(ns.cidr, ps.host)

    def _common(self, ps: PodState, ns: NodeState, now: str, *, with_ip: bool) -> Obj:
        if not ps.started_at:
            ps.started_at = now
        return podstatus.placement(ns.ip, ps.started_at, ps.ip if with_ip else None)

    async def _write_pending(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        now = self.clock.rfc3339()
        spec = pod.get("spec") or {}
        status = self._common(ps, ns, now, with_ip=False)
        status["phase"] = "Pending"
        status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=False, ready=False)
        status["containerStatuses"] = podstatus.waiting_statuses(spec, ps.uid, reason="ContainerCreating")
        await self._patch_status(ps, status)

    async def _start_containers(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        behavior = self._behavior(pod)
        spec = pod.get("spec") or {}
        now = self.clock.rfc3339()
        self._ips(ps, pod, ns)
        status = self._common(ps, ns, now, with_ip=True)
        if spec.get("initContainers"):
            status["initContainerStatuses"] = podstatus.init_container_statuses(spec, ps.uid, now)
        restart_never = spec.get("restartPolicy") == "Never"
        if behavior == "image-pull-error":
            status["phase"] = "Pending"
            status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=True, ready=False)
            status["containerStatuses"] = podstatus.waiting_statuses(
                spec, ps.uid, reason="ErrImagePull",
                message='failed to pull and unpack image "{image}": simulated pull failure (everynode.io/behavior)')
            await self._patch_status(ps, status)
            ps.stage = "cycle"
            ps.restarts = 0
            self._event(pod, WARNING, "Failed", "Error: ErrImagePull")
            self._set_timer(ps, PULL_FAIL_SECONDS)
            return
        if behavior == "fail" or (behavior == "crash-loop" and restart_never):
            status["phase"] = "Failed"
            status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=False, ready=False, failed=True)
            status["containerStatuses"] = podstatus.terminated_statuses(spec, ps.uid, started=now, finished=now)
            await self._patch_status(ps, status)
            ps.stage = "done"
            self._release_ip(ps, ns)
            return
        if behavior == "ready" and runs_to_completion(pod):
            await self._complete(ps, pod, ns, status, now)
            return
        status.update(podstatus.running(pod, ps.uid, now, ready=behavior == "ready"))
        await self._patch_status(ps, status)
        if has_env(pod):
            await self._record_env(ps, pod, status)
        if self.pod_events:
            for c in spec.get("containers") or ():
                self._event(pod, NORMAL, "Started", f"Started container {c.get('name', '')}")
        if behavior == "crash-loop":
            ps.stage = "cycle"
            ps.crash_started = now
            self._set_timer(ps, CRASH_AFTER)
        else:
            ps.stage = "running"

    async def _complete(self, ps: PodState, pod: Obj, ns: NodeState, status: Obj, now: str) -> None:
        """A Job's pod: its containers exit 0 once started (phase Succeeded, terminated
        ``Completed``), as a batch workload that did its work."""
        status["phase"] = "Succeeded"
        conditions = podstatus.pod_conditions(pod, now, sandbox=False, ready=False, failed=True)
        status["conditions"] = [dict(c, reason="PodCompleted") if c.get("reason") == "PodFailed" else c
                                for c in conditions]
        status["containerStatuses"] = podstatus.terminated_statuses(pod.get("spec") or {}, ps.uid, started=now,
                                                                    finished=now, exit_code=0, reason="Completed")
        await self._patch_status(ps, status)
        ps.stage = "done"
        self._release_ip(ps, ns)

    async def _cycle(self, ps: PodState, pod: Obj, ns: NodeState) -> None:
        """Next step of a crash loop or an image pull back-off."""
        behavior = self._behavior(pod)
        spec = pod.get("spec") or {}
        now = self.clock.rfc3339()
        status = self._common(ps, ns, now, with_ip=True)
        if behavior == "image-pull-error":
            cs = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]
            waiting = ((cs.get("state") or {}).get("waiting") or {}).get("reason")
            if waiting == "ErrImagePull":
                status["containerStatuses"] = podstatus.waiting_statuses(
                    spec, ps.uid, reason="ImagePullBackOff", message='Back-off pulling image "{image}"')
                ps.restarts += 1
                await self._patch_status(ps, status)
                self._event(pod, NORMAL, "BackOff", "Back-off pulling image")
                self._set_timer(ps, backoff_delay(ps.restarts))
            else:
                status["containerStatuses"] = podstatus.waiting_statuses(
                    spec, ps.uid, reason="ErrImagePull",
                    message='failed to pull and unpack image "{image}": simulated pull failure (everynode.io/behavior)')
                await self._patch_status(ps, status)
                self._set_timer(ps, PULL_FAIL_SECONDS)
            return
        if behavior != "crash-loop":
            # The annotation changed under a running pod: settle into the new behaviour.
            ps.stage = "creating"
            await self._start_containers(ps, pod, ns)
            return
        cs = ((pod.get("status") or {}).get("containerStatuses") or [{}])[0]
        if "running" in (cs.get("state") or {}):
            # The container exits with an error; the kubelet backs off before restarting it.
            started = ps.crash_started or now
            last = {}
            status["phase"] = "Running"
            status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=True, ready=False)
            statuses = podstatus.waiting_statuses(
                spec, ps.uid, reason="CrashLoopBackOff",
                message="back-off {delay} restarting failed container={name} pod={pod}", restart=ps.restarts + 1)
            delay = backoff_delay(ps.restarts + 1)
            for s in statuses:
                last = podstatus.terminated_state(ps.uid, s["name"], ps.restarts, started=started, finished=now)
                s["lastState"] = last
                s["containerID"] = last["terminated"]["containerID"]
                s["imageID"] = podstatus.image_id(next((c.get("image") or "" for c in spec.get("containers") or ()
                                                        if c.get("name") == s["name"]), ""))
                s["state"]["waiting"]["message"] = (
                    f"back-off {_duration(delay)} restarting failed container={s['name']} "
                    f"pod={ps.name}_{ps.namespace}({ps.uid})")
            status["containerStatuses"] = statuses
            ps.restarts += 1
            await self._patch_status(ps, status)
            self._event(pod, WARNING, "BackOff", "Back-off restarting failed container")
            self._set_timer(ps, delay)
        else:
            # Back-off over: the container runs again (and will crash again).
            last_state = cs.get("lastState") or {}
            status["phase"] = "Running"
            status["conditions"] = podstatus.pod_conditions(pod, now, sandbox=True, ready=False)
            status["containerStatuses"] = podstatus.running_statuses(spec, ps.uid, now, ready=False,
                                                                     restart=ps.restarts, last_state=last_state)
            ps.crash_started = now
            await self._patch_status(ps, status)
            self._set_timer(ps, CRASH_AFTER)

    async def _record_env(self, ps: PodState, pod: Obj, status: Obj) -> None:
        view = dict(pod)
        view["status"] = dict(pod.get("status") or {}, **status)
        env = self.environment(view)
        text = orjson.dumps(env, option=orjson.OPT_SORT_KEYS).decode()
        if _annotation(pod, RESOLVED_ENV_ANNOTATION) == text:
            return
        await self.client.patch("pods", ps.name, {"metadata": {"uid": ps.uid,
                                                               "annotations": {RESOLVED_ENV_ANNOTATION: text}}},
                                namespace=ps.namespace, patch_type="merge")

    def _release_ip(self, ps: PodState, ns: NodeState) -> None:
        if ps.host is not None:
            ns.release_host(ps.host)
            ps.host = None

    async def _remove(self, ps: PodState) -> None:
        try:
            await self.client.delete("pods", ps.name, namespace=ps.namespace, grace_period_seconds=0,
                                     preconditions={"uid": ps.uid} if ps.uid else None)
            self.pod_removals += 1
        except ApiError as e:
            if e.code not in (404, 409):
                raise

    def _event(self, pod: Obj, type_: str, reason: str, message: str) -> None:
        if self.pod_events:
            self.recorder.event(pod, type_, reason, message)


def runs_to_completion(pod: Obj) -> bool:
    """A pod a Job controls (its controller reference is a batch Job): its simulated containers
    exit 0 after start-up instead of running for ever."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == "Job" and str(ref.get("apiVersion") or "").startswith("batch/"):
            return True
    return False


def _ready_true(node: Obj) -> bool:
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


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


def _duration(seconds: float) -> str:
    """Go's ``time.Duration`` text for whole seconds/minutes (``10s``, ``1m20s``, ``5m0s``)."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    return f"{s // 60}m{s % 60}s"
