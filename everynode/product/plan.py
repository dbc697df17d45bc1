"""`everynode plan`: what a DaemonSet change will do to a cluster, simulated in virtual time first.

The cluster (a dump, or a live read — :mod:`everynode.product.clusterdump`) is loaded into an
in-memory control plane on a virtual clock (:mod:`everynode.product.plan_load`), the change is
applied there, and the *real* DaemonSet controller, scheduler (priority and preemption), node
lifecycle and simulated kubelets run until the rollout completes or stops progressing.  Nothing
is written to the cluster itself.  Why a simulation rather than arithmetic: the questions an
operator asks before a rollout (which nodes block it, who gets preempted, how long it takes with
this budget when two nodes fail half-way) are answered by the interplay of the controller's
budget, the scheduler's filters and the node lifecycle — the same code that will answer them in
the cluster, so it is run rather than re-derived.

What is observed, and how (:class:`~everynode.product.plan_recorder.RolloutRecorder`, fed by
the shared informers):

* a **step** is one instant of simulated time at which something the answer depends on changed:
  a node's readiness or wish for a pod, or a pod of the DaemonSet (revision, phase, Ready,
  terminating).  Invariants are checked at the end of every step (all the writes of one instant
  done): never more pods of the DaemonSet on a node than the strategy allows (one, two with
  maxSurge; terminating pods not counted), and never more nodes made unavailable than
  ``maxUnavailable``.  "Made unavailable" counts the nodes that had an available pod when the
  change was applied and are Ready, still wanted and without one now — a node that was already
  down, or that failed, is not the rollout's doing (upstream's budget counts them, which is why
  they block it; the plan reports them as blocked instead).
* **waves**: the instants at which nodes got an available pod of the update revision;
  ``simulated_seconds`` is the last wave when the rollout completed (kubectl's ``rollout status``
  rule: every desired node updated and available), else the last step before progress stopped.
* **no progress**: nothing the answer depends on changed for ``stall_seconds`` of simulated time
  (default ``max(600, 10 × start-up)``: longer than any node-lifecycle wait); a hard cap of a
  simulated day bounds loops that keep changing (a crash-looping pod replaced again and again).
* **preemption victims**: pods the scheduler marks ``DisruptionTarget`` /
  ``PreemptionByScheduler`` before deleting them.
* **blocked and pending nodes**: at the end, :func:`everynode.product.why.explain` on the copy's
  objects, so the codes and messages are ``why``'s own.

The trace (``--trace OUT.json``): ``{"kind": "EverynodePlanTrace", "version": 1, "daemonset",
"seed", "pod_startup_seconds", "initial": {node: state}, "steps": [{"at", "nodes": {node: state},
"unavailable"}], "answer"}`` — the full per-node state when the change is applied, then per step
the state of the nodes that changed (a 5,000-node rollout would otherwise repeat 5,000 unchanged
nodes 5,000 times); a node's state is ``{"ready", "wanted", "pods": [[revision, phase, Ready,
terminating], …]}``.  ``answer`` is ``-o json`` without ``wall_seconds``.

Determinism: the virtual loop's order depends only on its timers and callbacks, so a plan
repeats when its randomness repeats.  Generated names and uids (pod name suffixes, uids) come
from a generator seeded with ``--seed`` for the plan's duration (:func:`seeded_identities`), the
node failures are drawn from the same seed, and the trace holds no names the API server
generated (pods are shown by revision and state per node).  Start time: the latest timestamp in
the snapshot, so "now" in the copy is the snapshot's now, not the machine's.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import statistics
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from everynode.api import meta as apimeta
from everynode.api.errors import ApiError
from everynode.api.meta import controller_uid, metadata_of
from everynode.apiserver.tables import parse_time
from everynode.controllers.daemonset.budgets import BudgetError, update_budgets
from everynode.kubelet.nodeagent import KUBELET_ANNOTATION, NODE_INDEX_ANNOTATION, STOPPED
from everynode.product.clusterdump import ClusterObjects, read_live
from everynode.product.collector import deferred_passes, frozen_heap
from everynode.product.plan_load import Loaded, LoadError, load_snapshot, node_copy
from everynode.product.plan_recorder import RolloutRecorder
from everynode.product.why import EVENT_REASONS, Explanation, explain

if TYPE_CHECKING:
    from everynode.product.controlplane import ControlPlane

Obj = dict[str, Any]

DEFAULT_POD_STARTUP = 5.0
MIN_STALL_SECONDS = 600.0
MAX_SIMULATED_SECONDS = 86_400.0
# why's verdicts of a node that holds a rollout back (pending pods are reported apart).
BLOCKING_VERDICTS = frozenset({"missing", "unhealthy", "outdated", "misscheduled"})
SETTLE_SECONDS = 1.0
# The rehearsal copy runs no ServiceAccount controller (so no ServiceAccount admission) nor the
# other policy controllers: a snapshot holds the pods but not the ServiceAccounts they name, and
# accounts, the root CA and ClusterRoles change nothing a rollout's timeline depends on.
DISABLED = ("garbage-collector", "endpoints", "serviceaccount", "root-ca-publisher", "clusterrole-aggregation",
            "disruption", "job")
# Nor, unless a test asks for a full copy, the controllers that would have nothing to do: a
# snapshot holds no Deployment or ReplicaSet (their pods are loaded without those owners), so
# these would only look at every pod event.
IDLE = ("deployment", "replicaset")


class PlanError(Exception):
    """The plan could not run; the message is the one line to print."""


# ------------------------------------------------------------------------------------------ inputs

@dataclass
class PlanOptions:
    pod_startup: float | None = None
    node_failures: int | list[str] = 0
    seed: int = 0
    add_nodes: int = 0
    like: str | None = None
    stall_seconds: float | None = None
    max_simulated_seconds: float = MAX_SIMULATED_SECONDS
    trace: bool = False
    # The copy runs and writes everything a cluster would (the IDLE controllers, the Events
    # nobody reads, every heartbeat): only for the test that proves leaving them out changes no
    # answer.
    full_copy: bool = False


def estimate_startup(ds: Obj | None, objects: ClusterObjects) -> tuple[float | None, int]:
    """The median creation → Ready time of the DaemonSet's pods that are Ready, and how many."""
    if ds is None:
        return None, 0
    uid = metadata_of(ds).get("uid")
    samples: list[float] = []
    for pod in objects.pods:
        if controller_uid(pod) != uid:
            continue
        created = parse_time(metadata_of(pod).get("creationTimestamp"))
        for c in (pod.get("status") or {}).get("conditions") or ():
            if c.get("type") == "Ready" and c.get("status") == "True":
                ready = parse_time(c.get("lastTransitionTime"))
                if created is not None and ready is not None and ready >= created:
                    samples.append(ready - created)
    if not samples:
        return None, 0
    return float(statistics.median(samples)), len(samples)


def _timestamps(obj: Any) -> Iterator[float]:
    """Every RFC 3339 timestamp-looking string in ``obj`` (for the snapshot's "now")."""
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _timestamps(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _timestamps(v)
    elif isinstance(obj, str) and len(obj) >= 20 and obj[4:5] == "-" and obj[10:11] == "T":
        t = parse_time(obj)
        if t is not None:
            yield t


def snapshot_time(objects: ClusterObjects) -> float:
    """The snapshot's "now": the latest time its nodes' conditions and pods' conditions name."""
    latest = 0.0
    for obj in (*objects.nodes, *objects.pods):
        for t in _timestamps((obj.get("status") or {}).get("conditions") or []):
            latest = max(latest, t)
        t0 = parse_time(metadata_of(obj).get("creationTimestamp"))
        if t0 is not None:
            latest = max(latest, t0)
    return float(int(latest)) if latest else 0.0


def like_nodes(objects: ClusterObjects, like: str, count: int) -> list[Obj]:
    """``count`` copies of node ``like`` (labels, taints, allocatable), named ``LIKE-like-I``."""
    source = next((n for n in objects.nodes if metadata_of(n).get("name") == like), None)
    if source is None:
        raise PlanError(f'error: --like: node "{like}" not found')
    out = []
    for i in range(1, count + 1):
        name = f"{like}-like-{i}"
        node = node_copy(source)
        md = node["metadata"]
        md["name"] = name
        labels = dict(md.get("labels") or {})
        if "kubernetes.io/hostname" in labels:
            labels["kubernetes.io/hostname"] = name
        md["labels"] = labels
        md["annotations"] = {k: v for k, v in (md.get("annotations") or {}).items() if k != NODE_INDEX_ANNOTATION}
        spec = {k: v for k, v in (node.get("spec") or {}).items() if k not in ("podCIDR", "podCIDRs", "providerID")}
        node["spec"] = spec
        status = dict(node.get("status") or {})
        status.pop("addresses", None)
        node["status"] = status
        out.append(node)
    return out


@contextlib.contextmanager
def seeded_identities(seed: int) -> Iterator[None]:
    """Generated name suffixes and uids from a generator seeded with ``seed`` while the plan runs
    (every caller draws them through ``everynode.api.meta``), so the same plan repeats exactly."""
    rng = random.Random(seed)
    saved = apimeta.suffix_source, apimeta.new_uid

    def uid() -> str:
        return apimeta.version4_uid(rng.getrandbits(128))

    apimeta.suffix_source, apimeta.new_uid = rng, uid
    try:
        yield
    finally:
        apimeta.suffix_source, apimeta.new_uid = saved


# ------------------------------------------------------------------------------------------ result

@dataclass
class PlanResult:
    daemonset: Obj
    desired_before: int
    desired_after: int
    gains: list[str]
    losses: list[str]
    waves: list[Obj]
    simulated_seconds: float
    wall_seconds: float
    peak_unavailable: int
    budget: int
    max_surge: int
    blocked: list[Obj]
    waiting: list[str]
    preempted: list[Obj]
    pending: list[Obj]
    pod_startup_seconds: float
    pod_startup_source: str
    invariants: dict[str, bool]
    node_failures: list[Obj]
    added_nodes: list[str]
    nodes: int
    loaded: dict[str, int]
    seed: int
    stalled_after: float | None
    trace: Obj | None = None
    # Where the wall time went: loading the snapshot, starting the copy's components (informers'
    # first lists, the kubelets' adoption, the controllers' first syncs, the settle), the rollout
    # (the change applied → its end), the answer (the final read and explanation); and the
    # process CPU seconds of each (benchmarks).
    wall_phases: dict[str, float] = field(default_factory=dict)
    cpu_phases: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> Obj:
        return {
            "daemonset": self.daemonset, "desired_before": self.desired_before, "desired_after": self.desired_after,
            "gains": self.gains, "losses": self.losses, "waves": self.waves,
            "simulated_seconds": self.simulated_seconds, "wall_seconds": round(self.wall_seconds, 3),
            "peak_unavailable": self.peak_unavailable, "budget": self.budget, "max_surge": self.max_surge,
            "blocked": self.blocked, "waiting": self.waiting, "preempted": self.preempted, "pending": self.pending,
            "pod_startup_seconds": self.pod_startup_seconds, "pod_startup_source": self.pod_startup_source,
            "invariants": self.invariants, "node_failures": self.node_failures, "added_nodes": self.added_nodes,
            "nodes": self.nodes, "loaded": self.loaded, "seed": self.seed, "stalled_after": self.stalled_after,
            "wall_phases": {k: round(v, 3) for k, v in self.wall_phases.items()},
        }


def _desired(exp: Explanation | None) -> set[str]:
    return {nv.node for nv in exp.nodes if nv.should_run} if exp is not None else set()


def _findings(exp: Explanation) -> tuple[list[Obj], list[str], list[Obj]]:
    """``blocked`` (one entry per reason of each node that holds the rollout), ``waiting`` (nodes
    only waiting for budget others hold) and ``pending`` (pods not scheduled or not started)."""
    blocked: list[Obj] = []
    waiting: list[str] = []
    pending: list[Obj] = []
    for nv in exp.nodes:
        if nv.verdict == "pending":
            for r in nv.reasons or ():
                pending.append({"node": nv.node, "code": r.code, "message": r.message})
            if not nv.reasons:
                pending.append({"node": nv.node, "code": "Unschedulable", "message": nv.line})
            continue
        holds = nv.verdict in BLOCKING_VERDICTS or (nv.pods and any(r.code == "NodeNotReady" for r in nv.reasons))
        if not holds:
            continue
        codes = nv.codes()
        if codes and all(c == "WaitingForBudget" for c in codes):
            waiting.append(nv.node)
            continue
        for r in nv.reasons:
            if r.code != "WaitingForBudget":
                blocked.append({"node": nv.node, "code": r.code, "message": r.message})
    return blocked, waiting, pending


def _failure_plan(options: PlanOptions, candidates: list[str], known: set[str], horizon: float
                  ) -> list[tuple[float, str]]:
    """Which nodes fail when: a list is taken as given (failing in order over the horizon), a
    number is drawn from the seed among the nodes that run the DaemonSet."""
    rng = random.Random(options.seed)
    if isinstance(options.node_failures, list):
        names = list(dict.fromkeys(options.node_failures))
        unknown = [n for n in names if n not in known]
        if unknown:
            raise PlanError(f'error: --node-failures: node "{unknown[0]}" not found')
    else:
        if options.node_failures > len(candidates):
            raise PlanError(f"error: --node-failures {options.node_failures}: only {len(candidates)} "
                            "Ready nodes run the DaemonSet")
        names = rng.sample(sorted(candidates), options.node_failures)
    times = sorted(round(rng.uniform(0, horizon), 3) for _ in names)
    return list(zip(times, names, strict=True))


class _Phases:
    """Wall and CPU seconds per phase (:attr:`PlanResult.wall_phases`): ``end(name)`` closes the
    phase ``name``, which ran since the previous ``end`` (or since this object was made)."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._last = (time.perf_counter(), time.process_time())

    def end(self, name: str) -> None:
        now = (time.perf_counter(), time.process_time())
        self.wall[name] = self.wall.get(name, 0.0) + now[0] - self._last[0]
        self.cpu[name] = self.cpu.get(name, 0.0) + now[1] - self._last[1]
        self._last = now


@dataclass
class Copy:
    """The running copy of a cluster: its control plane (client, informers, clock) and what
    :func:`~everynode.product.plan_load.load_snapshot` loaded into it."""

    plane: ControlPlane
    loaded: Loaded


@contextlib.asynccontextmanager
async def running_copy(objects: ClusterObjects, *, namespace: str, pod_startup: float, full_copy: bool = False,
                       phases: _Phases | None = None) -> AsyncIterator[Copy]:
    """The snapshot ``objects`` loaded into an in-memory control plane on the running virtual-time
    loop, its components started and settled (``SETTLE_SECONDS``): the copy as it stands before
    a change is applied.  Stopped on exit."""
    from everynode.product.controlplane import ControlPlane, ControlPlaneConfig
    from everynode.virtualtime import virtual_clock

    phases = phases if phases is not None else _Phases()
    config = ControlPlaneConfig(nodes=0, control_planes=0, in_memory=True, serve_http=False, pod_startup=pod_startup,
                                disable=frozenset(DISABLED if full_copy else DISABLED + IDLE),
                                heartbeats="writes" if full_copy else "modelled",
                                # Only the Events the answer reads (``why``'s EVENT_REASONS) are
                                # written; each recorder still correlates every event, so the
                                # spam filter and aggregation of those are what they would be.
                                # The kubelets' (Pulling, Pulled, Created, Started, Killing) were
                                # four of the nine writes of every node a rollout replaces.
                                event_reasons=None if full_copy else EVENT_REASONS,
                                # The copy lives for one plan, and its rollout is a chain of
                                # updates (a replaced pod's binding, the kubelet's status
                                # patches and its deletion; the DaemonSet's status) whose new parts are
                                # mostly its own (statuses, timestamps): looking them up in the
                                # sharing tables made every update serialise and hash them, in
                                # tables too big for the CPU's caches.  The loaded objects and
                                # the created pods are shared as always; the rest is kept as
                                # written.  Measured (one sitting, 5,000 nodes): the rollout
                                # 4% faster at maxUnavailable 10%, 8–10% at 1 (2,000 nodes), for
                                # +36 MB (+6%) of peak memory.
                                share_updates=False,
                                # A pod's Pending status, which nothing in a rollout reads and
                                # the next write replaces (kubelet/podlifecycle.py): it was one of
                                # the two kubelet status writes of every pod replaced (measured,
                                # 500 nodes at maxUnavailable 1: -13.8% of the rollout's
                                # instructions; 1,000 nodes at 10%: -20.3%).
                                pending_status=full_copy,
                                # metadata.managedFields, which nothing in the copy reads and no
                                # request in it applies server-side (measured, 500 nodes at
                                # maxUnavailable 1: -8.8% of the rollout's instructions; 1,000
                                # nodes at 10%: -10.3%).
                                managed_fields=full_copy,
                                # The type check of the copy's own components' writes: upstream's
                                # are Go binaries, whose bodies cannot be badly typed (the
                                # snapshot's objects and the change are still checked; measured:
                                # about -4% of the rollout's instructions).
                                typed_components=not full_copy)
    plane = ControlPlane(config, clock=virtual_clock())
    loaded_box: list[Any] = []
    # The copy lives until the plan ends: what is loaded, then what starting it builds (informer
    # caches, indexes), is taken out of the garbage collector's passes, and what its rollout
    # keeps is not walked at every 50,000 new objects (collector.py).
    with frozen_heap() as freeze, deferred_passes():

        async def seed(client: Any) -> None:
            phases.end("prepare")
            loaded_box.append(await load_snapshot(client, objects, namespaces=[namespace]))
            freeze()
            phases.end("load")

        try:
            try:
                await plane.start(seed=seed)
            except LoadError as e:
                raise PlanError(f"error: {e}") from None
            await asyncio.sleep(SETTLE_SECONDS)
            freeze()
            yield Copy(plane, loaded_box[0])
        finally:
            await plane.stop()


async def simulate(objects: ClusterObjects, change: Obj, options: PlanOptions) -> PlanResult:
    """Run the plan on the running virtual-time loop (see :func:`plan`)."""
    from everynode.virtualtime import virtual_clock

    wall0 = time.perf_counter()
    phases = _Phases()
    md = change.get("metadata") or {}
    name = md.get("name") or ""
    namespace = md.get("namespace") or "default"
    existing = objects.daemonset(name, namespace)
    startup, source = _startup(options, existing, objects)
    before = explain(existing, objects, now=virtual_clock().now()) if existing is not None else None
    extra = like_nodes(objects, options.like, options.add_nodes) if options.add_nodes and options.like else []
    async with running_copy(objects, namespace=namespace, pod_startup=startup, full_copy=options.full_copy,
                            phases=phases) as copy:
        return await _run(copy.plane, objects, change, options, existing=existing, before=before, extra=extra,
                          startup=startup, source=source, loaded=copy.loaded, wall0=wall0, phases=phases)


def _startup(options: PlanOptions, existing: Obj | None, objects: ClusterObjects) -> tuple[float, str]:
    if options.pod_startup is not None:
        return float(options.pod_startup), "--pod-startup"
    estimate, count = estimate_startup(existing, objects)
    if estimate is not None:
        return round(estimate, 3), f"median creation → Ready of {count} pod(s) of the DaemonSet in the cluster"
    return DEFAULT_POD_STARTUP, "default (no Ready pod of the DaemonSet to estimate from; set --pod-startup)"


async def _apply_change(client: Any, change: Obj, existing: Obj | None, namespace: str) -> Obj:
    body = {k: v for k, v in change.items() if k != "status"}
    body = {**body, "metadata": {k: v for k, v in (change.get("metadata") or {}).items()
                                 if k not in ("uid", "resourceVersion", "generation", "creationTimestamp",
                                              "managedFields")}}
    body["metadata"]["namespace"] = namespace
    try:
        if existing is None:
            return dict(await client.create("daemonsets.apps", body))
        current = await client.get("daemonsets.apps", body["metadata"]["name"], namespace=namespace)
        cmd = current["metadata"]
        annotations = {**(cmd.get("annotations") or {}), **(body["metadata"].get("annotations") or {})}
        body["metadata"] = {**cmd, **body["metadata"], "annotations": annotations,
                            "resourceVersion": cmd["resourceVersion"], "uid": cmd["uid"]}
        return dict(await client.update("daemonsets.apps", body))
    except ApiError as e:
        raise PlanError(f"error: the change is refused: {e.message}") from None


async def _run(plane: Any, objects: ClusterObjects, change: Obj, options: PlanOptions, *, existing: Obj | None,
               before: Explanation | None, extra: list[Obj], startup: float, source: str, loaded: Any,
               wall0: float, phases: _Phases) -> PlanResult:
    loop = asyncio.get_running_loop()
    client = plane.client
    clock = plane.clock

    spec = change.get("spec") or {}
    strategy = spec.get("updateStrategy") or {}
    surge_allowed = (strategy.get("type") or "RollingUpdate") == "RollingUpdate" and bool(
        (strategy.get("rollingUpdate") or {}).get("maxSurge"))
    rec = RolloutRecorder(loop=loop, now=clock.now, min_ready=int(spec.get("minReadySeconds") or 0),
                          max_per_node=2 if surge_allowed else 1, trace=options.trace)
    informers = plane.informers
    nodes_inf, pods_inf, ds_inf = (informers.informer("nodes"), informers.informer("pods"),
                                   informers.informer("daemonsets.apps"))
    namespace = (change.get("metadata") or {}).get("namespace") or "default"
    name = (change.get("metadata") or {}).get("name") or ""
    if existing is not None:
        current = ds_inf.get(f"{namespace}/{name}")
        if current is not None:
            rec.set_daemonset(current)
    nodes_inf.add_handler(rec.on_node, lambda _o, n: rec.on_node(n), rec.on_node_delete)
    pods_inf.add_handler(rec.on_pod, rec.on_pod_update, rec.on_pod_delete)
    initial = rec.start()

    t0 = loop.time()
    added = []
    for node in extra:
        await client.create("nodes", node)
        added.append(node["metadata"]["name"])
    phases.end("start")
    ds = await _apply_change(client, change, existing, namespace)
    rec.set_daemonset(ds)
    for pod in pods_inf.list():  # pods of a new DaemonSet may already be in the informer
        rec.on_pod(pod)
    ds_inf.add_handler(rec.on_daemonset, lambda _o, n: rec.on_daemonset(n), None)

    desired_guess = sum(1 for n in nodes_inf.list() if rec.placement is not None and rec.placement.fit(n).should_run)
    try:
        max_surge, budget = update_budgets(ds, desired_guess)
    except BudgetError as e:
        raise PlanError(f"error: {e}") from None
    horizon = max(startup, startup * -(-max(desired_guess, 1) // max(budget, max_surge, 1)))
    candidates = [n for n, t in rec.nodes.items() if t.had_available]
    failures = _failure_plan(options, candidates, set(rec.nodes), horizon) if options.node_failures else []
    failed: list[Obj] = []

    async def fail_node(node: str) -> None:
        try:
            await client.patch("nodes", node, {"metadata": {"annotations": {KUBELET_ANNOTATION: STOPPED}}})
            failed.append({"node": node, "at": round(loop.time() - t0, 6)})
        except ApiError as e:
            raise PlanError(f'error: --node-failures: node "{node}": {e.message}') from None

    failure_tasks: list[asyncio.Task[None]] = []

    def start_failure(node_name: str) -> None:
        failure_tasks.append(loop.create_task(fail_node(node_name)))

    for at, failing in failures:
        loop.call_at(t0 + at, start_failure, failing)

    stall = options.stall_seconds if options.stall_seconds is not None else max(MIN_STALL_SECONDS, 10 * startup)
    deadline = t0 + options.max_simulated_seconds
    stalled_after: float | None = None
    while not rec.done.is_set():
        rec.catch_up()
        horizon_end = max(rec.last_change + stall, t0 + (failures[-1][0] if failures else 0) + stall)
        wait = min(horizon_end, deadline) - loop.time()
        if wait <= 0:
            stalled_after = round(loop.time() - t0, 6)
            break
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(rec.done.wait(), wait)
    for task in failure_tasks:
        await task
    rec.finish()
    completed = rec.done.is_set()
    phases.end("rollout")

    snapshot = await read_live(client)
    final_ds = next((d for d in snapshot.daemonsets if metadata_of(d).get("uid") == rec.ds_uid), ds)
    # Explained as of the rollout's end (its last step), not of the no-progress wait after it.
    ended = clock.now() - (0.0 if completed else max(loop.time() - rec.last_change, 0.0))
    after = explain(final_ds, snapshot, now=ended)
    before_set, after_set = _desired(before), _desired(after)
    blocked, waiting, pending = _findings(after)
    try:
        max_surge, budget = update_budgets(final_ds, len(after_set))
    except BudgetError as e:
        raise PlanError(f"error: {e}") from None

    update_hash = after.update_revision
    by_time: dict[float, list[str]] = {}
    for nv in after.nodes:
        t = rec.nodes.get(nv.node)
        if nv.verdict != "ok" or t is None or update_hash not in t.available_since:
            continue
        at = round(max(t.available_since[update_hash] - t0, 0.0), 6)
        by_time.setdefault(at, []).append(nv.node)
    waves: list[Obj] = [{"at": at, "nodes": sorted(nodes)} for at, nodes in sorted(by_time.items())]
    last_change = round(max(rec.last_change - t0, 0.0), 6)
    last_wave = max(by_time) if by_time else 0.0
    simulated = last_wave if completed else last_change
    result = PlanResult(
        daemonset={"namespace": namespace, "name": name, "updateRevision": update_hash,
                   "change": "update" if existing is not None else "create"},
        desired_before=len(before_set), desired_after=len(after_set),
        gains=sorted(after_set - before_set), losses=sorted(before_set - after_set), waves=waves,
        simulated_seconds=simulated, wall_seconds=time.perf_counter() - wall0,
        peak_unavailable=rec.peak_unavailable, budget=budget, max_surge=max_surge,
        blocked=blocked, waiting=waiting, preempted=sorted(rec.victims, key=lambda v: (v["at"], v["pod"])),
        pending=pending, pod_startup_seconds=startup, pod_startup_source=source,
        invariants={"one_pod_per_node": rec.one_pod_per_node, "budget_respected": rec.peak_unavailable <= budget,
                    "completed": completed},
        node_failures=failed, added_nodes=added, nodes=len(snapshot.nodes), loaded=dict(loaded.counts),
        seed=options.seed, stalled_after=stalled_after)
    phases.end("answer")
    result.wall_phases, result.cpu_phases = phases.wall, phases.cpu
    if options.trace:
        answer = {k: v for k, v in result.to_json().items() if k not in ("wall_seconds", "wall_phases")}
        result.trace = {"kind": "EverynodePlanTrace", "version": 1, "daemonset": result.daemonset,
                        "seed": options.seed, "pod_startup_seconds": startup, "initial": initial,
                        "steps": rec.steps, "answer": answer}
    return result


def plan(objects: ClusterObjects, change: Obj, options: PlanOptions) -> PlanResult:
    """Run the plan on a fresh virtual-time loop starting at the snapshot's time."""
    from everynode.virtualtime import run_virtual

    start = snapshot_time(objects) or None
    with seeded_identities(options.seed):
        return run_virtual(simulate(objects, change, options), start=start)


def read_change(path: Path) -> Obj:
    """The DaemonSet in CHANGE.yaml (one object; a List or several documents must hold exactly one)."""
    from everynode.product.clusterdump import DumpError, parse_dump

    try:
        data = path.read_bytes()
    except OSError as e:
        raise PlanError(f"error: {path}: cannot read ({e.strerror or e})") from None
    try:
        objects = parse_dump(data, source=str(path))
    except DumpError as e:
        raise PlanError(f"error: {e}") from None
    if len(objects.daemonsets) != 1:
        raise PlanError(f"error: {path}: expected one DaemonSet, found {len(objects.daemonsets)}")
    ds = objects.daemonsets[0]
    if not (ds.get("metadata") or {}).get("name"):
        raise PlanError(f"error: {path}: the DaemonSet has no metadata.name")
    return ds


__all__ = ["Copy", "PlanError", "PlanOptions", "PlanResult", "RolloutRecorder", "estimate_startup", "plan", "read_change",
           "running_copy", "simulate", "snapshot_time"]
