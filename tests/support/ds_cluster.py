"""Test harness for the DaemonSet controller on the real in-process API, shared by the
integration, property and fault-injection tests.

Why a harness and not the real scheduler and kubelet: like upstream's ``test/integration/daemonset``,
the tests decide *when* pods get bound, start, turn unready or finish terminating, so every
intermediate state a rollout can pass through is reachable and checked.  :class:`Env` plays
scheduler (``pods/binding``), kubelet (``pods/status``: Running + Ready or not; graceful deletions
completed with a zero grace period) and pod GC (pods bound to vanished nodes force-deleted).

The second half is an *independent* model of upstream's rules — written from
daemonset-semantics.md §3, §5 and §8 without calling the controller's own helpers — used to
check the controller: :func:`node_fit` (``NodeShouldRunDaemonPod`` for what the tests use:
``nodeSelector`` and taints against the template's plus the default DaemonSet tolerations),
:func:`recount` (the seven status counters), :func:`unavailable_nodes`, :func:`max_unavailable`,
:func:`pods_per_node_violations` and :func:`convergence_problems`.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from everynode.apiserver.service import ApiService
from everynode.client.faults import FaultInjector
from everynode.client.inprocess import InProcessClient
from everynode.client.workqueue import fast_rate_limiter
from everynode.clock import Clock, parse_rfc3339
from everynode.controllers.daemonset.controller import DaemonSetController
from everynode.storage.memory import MemoryStore
from tests.support.ds_oracle import full_recount, incremental_plan, plan_from_scratch

Obj = dict[str, Any]

NS = "default"
KEY = f"{NS}/ds"
DS = "daemonsets.apps"
REV = "controllerrevisions.apps"
HASH_LABEL = "controller-revision-hash"
GENERATION_LABEL = "pod-template-generation"
GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
MAX_NODES = 8
TAINT_KEY = "dedicated"
COUNTERS = ("desiredNumberScheduled", "currentNumberScheduled", "numberReady", "updatedNumberScheduled",
            "numberAvailable", "numberMisscheduled", "numberUnavailable")


class FakeClock(Clock):
    """Wall and monotonic time that only move when the test says so."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.t = start

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


class Env:
    """One API (ApiService + MemoryStore), a DaemonSet controller on it, and the harness.

    ``faults``: a :class:`FaultInjector` for the *controller's* client only; the harness writes
    through a clean client, so every injected failure hits the controller."""

    def __init__(self, *, full_scan: bool = False, faults: FaultInjector | None = None) -> None:
        self.clock = FakeClock()
        self.service = ApiService(MemoryStore(), clock=self.clock)
        self.client = InProcessClient(self.service)
        self.controller_client = InProcessClient(self.service, faults=faults) if faults is not None else self.client
        self.faults = faults
        self.full_scan = full_scan
        self.ctrl = self.new_controller()

    def new_controller(self) -> DaemonSetController:
        # ``full_scan``: a resync period of 0 rebuilds the controller's state on every sync, as
        # upstream recomputes everything on every sync.
        return DaemonSetController(self.controller_client, clock=self.clock, rate_limiter=fast_rate_limiter(),
                                   **({"full_resync_period": 0.0} if self.full_scan else {}))

    async def restart_controller(self) -> None:
        """Stop the controller and start a new instance (fresh caches, expectations, backoff)."""
        await self.ctrl.stop()
        self.ctrl = self.new_controller()
        await self.ctrl.start()

    # -- objects -------------------------------------------------------------------------------
    async def node(self, name: str, *, labels: dict | None = None, taints: list | None = None) -> dict:
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}}
        if taints:
            body["spec"] = {"taints": taints}
        return await self.client.create("nodes", body)

    async def patch_node(self, name: str, patch: dict) -> None:
        await self.client.patch("nodes", name, patch, patch_type="merge")

    async def daemonset(self, *, name: str = "ds", image: str = "nginx:1", strategy: dict | None = None,
                        node_selector: dict | None = None, tolerations: list | None = None,
                        min_ready: int = 0, history_limit: int | None = None) -> dict:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": image}]}
        if node_selector:
            spec["nodeSelector"] = node_selector
        if tolerations:
            spec["tolerations"] = tolerations
        body: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": NS},
                                "spec": {"selector": {"matchLabels": {"app": name}},
                                         "template": {"metadata": {"labels": {"app": name}}, "spec": spec}}}
        if strategy:
            body["spec"]["updateStrategy"] = strategy
        if min_ready:
            body["spec"]["minReadySeconds"] = min_ready
        if history_limit is not None:
            body["spec"]["revisionHistoryLimit"] = history_limit
        return await self.client.create(DS, body)

    async def set_image(self, image: str, name: str = "ds") -> None:
        await self.client.patch(DS, name, {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}},
                                namespace=NS, patch_type="strategic")

    async def get_ds(self, name: str = "ds") -> dict:
        return await self.client.get(DS, name, namespace=NS)

    async def pods(self, *, include_terminating: bool = True) -> list[dict]:
        items = (await self.client.list("pods", namespace=NS))["items"]
        if not include_terminating:
            items = [p for p in items if not p["metadata"].get("deletionTimestamp")]
        return sorted(items, key=lambda p: p["metadata"]["name"])

    async def revisions(self) -> list[dict]:
        return sorted((await self.client.list(REV, namespace=NS))["items"], key=lambda r: r["revision"])

    async def events(self, reason: str) -> list[str]:
        await self.ctrl.recorder.flush()
        return [e["message"] for e in (await self.client.list("events", namespace=NS))["items"] if e["reason"] == reason]

    # -- playing scheduler and kubelet -------------------------------------------------------------
    async def bind(self, pod: dict) -> None:
        name = pod["metadata"]["name"]
        await self.client.create_subresource("pods", name, "binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
            "target": {"apiVersion": "v1", "kind": "Node", "name": pinned_node(pod)}}, namespace=NS)

    async def set_phase(self, pod: dict, phase: str, *, ready: bool) -> None:
        fresh = await self.client.get("pods", pod["metadata"]["name"], namespace=NS)
        fresh = {**fresh, "status": {**(fresh.get("status") or {}), "phase": phase, "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": self.clock.rfc3339()}]}}
        await self.client.update_status("pods", fresh)

    async def run_pods(self) -> None:
        """Bind every unbound pod and make every non-terminating pending pod Running + Ready."""
        for pod in await self.pods(include_terminating=False):
            if not pod["spec"].get("nodeName"):
                await self.bind(pod)
            if (pod.get("status") or {}).get("phase") != "Running":
                await self.set_phase(pod, "Running", ready=True)

    async def finish_deletions(self) -> None:
        for pod in await self.pods():
            if pod["metadata"].get("deletionTimestamp"):
                await self.client.delete("pods", pod["metadata"]["name"], namespace=NS, grace_period_seconds=0)

    async def kubelet(self, *, unready_nodes: Iterable[str] = (), finish_deletions: bool = True) -> None:
        """One round of scheduler + kubelet + pod GC over every pod of the namespace.

        Binds unbound pods pinned to existing nodes; makes every non-terminating, non-terminal
        bound pod Running and Ready — except on ``unready_nodes``, where it is Running and not
        Ready; completes graceful deletions (if ``finish_deletions``); force-deletes pods bound
        to nodes that no longer exist (what pod GC does after its quarantine)."""
        unready = set(unready_nodes)
        await self.collect_pods_on_missing_nodes()
        nodes = {n["metadata"]["name"] for n in (await self.client.list("nodes"))["items"]}
        for pod in await self.pods():
            md, spec = pod["metadata"], pod["spec"]
            name = md["name"]
            bound = spec.get("nodeName")
            if md.get("deletionTimestamp"):
                if finish_deletions:
                    await self.client.delete("pods", name, namespace=NS, grace_period_seconds=0)
                continue
            phase = (pod.get("status") or {}).get("phase")
            if phase in ("Failed", "Succeeded"):
                continue
            target = target_node(pod)
            if not bound:
                if target is None or target not in nodes:
                    continue
                await self.bind(pod)
            want_ready = target not in unready
            if phase != "Running" or is_ready(pod) != want_ready:
                await self.set_phase(pod, "Running", ready=want_ready)

    async def collect_pods_on_missing_nodes(self) -> None:
        """Pod GC: force-delete pods bound to nodes that no longer exist (§11.5)."""
        nodes = {n["metadata"]["name"] for n in (await self.client.list("nodes"))["items"]}
        for pod in await self.pods():
            bound = pod["spec"].get("nodeName")
            if bound and bound not in nodes:
                await self.client.delete("pods", pod["metadata"]["name"], namespace=NS, grace_period_seconds=0)

    async def settle(self, key: str = KEY) -> dict:
        await self.ctrl.wait_idle()
        if self.ctrl.state(key) is not None:
            assert self.ctrl.incremental_counts(key) == full_recount(self.ctrl, key)
            assert incremental_plan(self.ctrl, key) == plan_from_scratch(self.ctrl, key)
        return (await self.get_ds(key.split("/")[1]))["status"]

    async def settle_retries(self, key: str = KEY, *, timeout: float = 20.0) -> None:
        """Like :meth:`ctrl.wait_idle`, but also wait out rate-limited retries of failed syncs
        (which ``wait_idle`` does not count): idle *and* the last sync of ``key`` succeeded."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            await self.ctrl.wait_idle(timeout=max(0.1, deadline - loop.time()))
            if self.ctrl.queue.num_requeues(key) == 0:
                await self.ctrl.wait_idle(timeout=max(0.1, deadline - loop.time()))
                if self.ctrl.queue.num_requeues(key) == 0:
                    return
            if loop.time() > deadline:
                raise TimeoutError(f"{key} still failing: {self.ctrl.queue.num_requeues(key)} retries")
            await asyncio.sleep(0.02)

    async def snapshot(self, name: str = "ds") -> Snapshot:
        """The DaemonSet, the nodes and the DaemonSet's pods, read from the API."""
        ds = await self.get_ds(name)
        nodes = {n["metadata"]["name"]: n for n in (await self.client.list("nodes"))["items"]}
        uid = ds["metadata"]["uid"]
        pods = [p for p in (await self.client.list("pods", namespace=NS))["items"]
                if any(r.get("uid") == uid and r.get("controller") for r in p["metadata"].get("ownerReferences") or ())]
        revisions = [r for r in (await self.client.list(REV, namespace=NS))["items"]
                     if any(o.get("uid") == uid and o.get("controller") for o in r["metadata"].get("ownerReferences") or ())]
        current = max(revisions, key=lambda r: r.get("revision") or 0, default=None)
        hash_ = ((current or {}).get("metadata", {}).get("labels") or {}).get(HASH_LABEL, "")
        return Snapshot(ds=ds, nodes=nodes, pods=pods, hash=hash_, now=self.clock.now())


# ---------------------------------------------------------------------------------------------
# Small accessors
# ---------------------------------------------------------------------------------------------

def counters(status: dict) -> tuple[int, ...]:
    """(desired, current, ready, updated, available, misscheduled, unavailable)."""
    return tuple(int(status.get(f) or 0) for f in COUNTERS)


def pinned_node(pod: dict) -> str:
    return pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchFields"][0]["values"][0]


def target_node(pod: dict) -> str | None:
    """``GetTargetNodeName``: ``spec.nodeName``, else the ``metadata.name`` pin."""
    if pod["spec"].get("nodeName"):
        return pod["spec"]["nodeName"]
    try:
        return pinned_node(pod)
    except (KeyError, IndexError, TypeError):
        return None


def cond(status: dict, type_: str) -> dict:
    return next(c for c in status.get("conditions") or [] if c["type"] == type_)


def is_ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def is_available(pod: Obj, min_ready_seconds: int, now: float) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "True":
            if not min_ready_seconds:
                return True
            since = c.get("lastTransitionTime")
            return bool(since) and parse_rfc3339(since) + min_ready_seconds < now
    return False


def terminating(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def terminal(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


# ---------------------------------------------------------------------------------------------
# The independent model (daemonset-semantics.md §3, §5, §8)
# ---------------------------------------------------------------------------------------------

DEFAULT_TOLERATIONS = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def _tolerates(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("key") and tol["key"] != taint.get("key"):
        return False
    if tol.get("operator") == "Exists":
        return True
    return (tol.get("value") or "") == (taint.get("value") or "")


def node_fit(ds: Obj, node: Obj) -> tuple[bool, bool]:
    """``(shouldRun, shouldContinueRunning)`` for templates with ``nodeSelector`` and tolerations
    only (§3.1): the selector must match the labels; an untolerated NoSchedule taint stops new
    pods, an untolerated NoExecute taint also removes existing ones."""
    tspec = ds["spec"]["template"]["spec"]
    if tspec.get("affinity") or tspec.get("nodeName"):
        raise NotImplementedError("the model covers nodeSelector and taints only")
    labels = node["metadata"].get("labels") or {}
    if any(labels.get(k) != v for k, v in (tspec.get("nodeSelector") or {}).items()):
        return False, False
    tolerations = [*(tspec.get("tolerations") or ()), *DEFAULT_TOLERATIONS]
    untolerated = {t.get("effect") for t in (node.get("spec") or {}).get("taints") or ()
                   if t.get("effect") in ("NoSchedule", "NoExecute")
                   and not any(_tolerates(tol, t) for tol in tolerations)}
    if not untolerated:
        return True, True
    return False, "NoExecute" not in untolerated


@dataclass(slots=True)
class Snapshot:
    ds: Obj
    nodes: dict[str, Obj]
    pods: list[Obj]  # the DaemonSet's pods (controller ref by UID), terminating ones included
    hash: str  # the current revision's hash ("" before the first revision exists)
    now: float

    @property
    def min_ready(self) -> int:
        return int(self.ds["spec"].get("minReadySeconds") or 0)

    @property
    def surge_enabled(self) -> bool:
        return max_surge(self.ds, 1) > 0

    def fit(self) -> dict[str, tuple[bool, bool]]:
        return {name: node_fit(self.ds, node) for name, node in self.nodes.items()}

    def eligible(self) -> list[str]:
        return sorted(name for name, (run, _) in self.fit().items() if run)

    def updated(self, pod: Obj) -> bool:
        labels = pod["metadata"].get("labels") or {}
        if self.hash and labels.get(HASH_LABEL) == self.hash:
            return True
        generation = (self.ds["metadata"].get("annotations") or {}).get(GENERATION_ANNOTATION)
        return generation is not None and labels.get(GENERATION_LABEL) == generation

    def available(self, pod: Obj) -> bool:
        return is_available(pod, self.min_ready, self.now)

    def by_node(self) -> dict[str, list[Obj]]:
        """Pods grouped by target node, terminal pods that are being deleted left out (§3.4)."""
        out: dict[str, list[Obj]] = {}
        for pod in self.pods:
            if terminating(pod) and terminal(pod):
                continue
            node = target_node(pod)
            if node is not None:
                out.setdefault(node, []).append(pod)
        return out


def oldest(pods: list[Obj]) -> Obj:
    """§4.3 order: bound before unbound, then creationTimestamp, then name."""
    return min(pods, key=lambda p: (not p["spec"].get("nodeName"), p["metadata"].get("creationTimestamp") or "",
                                    p["metadata"]["name"]))


def recount(snap: Snapshot) -> dict[str, int]:
    """§8: the seven counters from nodes and pods alone."""
    c = dict.fromkeys(COUNTERS, 0)
    groups = snap.by_node()
    for name, (run, _) in snap.fit().items():
        pods = groups.get(name)
        if run:
            c["desiredNumberScheduled"] += 1
            if pods:
                c["currentNumberScheduled"] += 1
                first = oldest(pods)
                c["numberReady"] += is_ready(first)
                c["numberAvailable"] += snap.available(first)
                c["updatedNumberScheduled"] += snap.updated(first)
        elif pods:
            c["numberMisscheduled"] += 1
    c["numberUnavailable"] = c["desiredNumberScheduled"] - c["numberAvailable"]
    return c


def _scaled(value: Any, total: int) -> int:
    """``GetScaledValueFromIntOrPercent`` rounding up."""
    if value is None:
        return 0
    if isinstance(value, str) and value.endswith("%"):
        return math.ceil(int(value[:-1]) * total / 100)
    return int(value)


def max_surge(ds: Obj, desired: int) -> int:
    strategy = ds["spec"].get("updateStrategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        return 0
    return _scaled((strategy.get("rollingUpdate") or {}).get("maxSurge"), desired)


def max_unavailable(ds: Obj, desired: int) -> int:
    """maxUnavailable resolved against ``desired`` (§5.1 items 3–4, with the safety net)."""
    rolling = (ds["spec"].get("updateStrategy") or {}).get("rollingUpdate") or {}
    unavailable = _scaled(rolling.get("maxUnavailable"), desired)
    if desired > 0 and unavailable == 0 and max_surge(ds, desired) == 0:
        return 1
    return unavailable


def unavailable_nodes(snap: Snapshot) -> set[str]:
    """Eligible nodes without an available, non-terminating pod of the DaemonSet (a node whose
    only pod is terminating is unavailable, as in the rolling-update planner)."""
    groups = snap.by_node()
    return {name for name in snap.eligible()
            if not any(snap.available(p) for p in groups.get(name, ()) if not terminating(p))}


def pods_per_node_violations(snap: Snapshot) -> list[str]:
    """Nodes with more pods than upstream allows.

    Without surge: at most one pod per node, *terminating pods included* (§13 item 2: a
    replacement waits until the old pod object is gone; terminal pods being deleted are ignored,
    §3.4).  With surge: at most one updated and one old live (non-terminating) pod — a
    replacement may start while the old pod terminates.  Failed/Succeeded pods do not count as
    running there either (manage replaces them at once with surge, and deletes them subject to
    the failed-pod backoff)."""
    problems = []
    for node, pods in sorted(snap.by_node().items()):
        if snap.surge_enabled:
            live = [p for p in pods if not terminating(p) and not terminal(p)]
            new = sum(1 for p in live if snap.updated(p))
            old = len(live) - new
            if new > 1 or old > 1:
                problems.append(f"{node}: {new} updated + {old} old live pods (surge allows 1 + 1)")
        elif len(pods) > 1:
            desc = [(p["metadata"]["name"], "terminating" if terminating(p) else "live") for p in pods]
            problems.append(f"{node}: {desc} without surge")
    return problems


def surging_nodes(snap: Snapshot) -> set[str]:
    """Nodes where a surge is in flight: a live, available old pod next to a live, not yet
    available updated pod (what the surge budget limits, §5.3)."""
    out = set()
    for node, pods in snap.by_node().items():
        live = [p for p in pods if not terminating(p)]
        if any(not snap.updated(p) and snap.available(p) for p in live) and \
                any(snap.updated(p) and not snap.available(p) for p in live):
            out.add(node)
    return out


def convergence_problems(snap: Snapshot) -> list[str]:
    """What keeps the DaemonSet from being converged, [] when it is:

    * every eligible node has exactly one pod, and it is updated and available (and not
      terminating);
    * nodes where the DaemonSet may not continue running (selector mismatch, untolerated
      NoExecute taint) and vanished nodes have no pods at all;
    * nodes where it may continue but not start (untolerated NoSchedule taint only) keep at most
      one updated, available pod — upstream never deletes it (§3.3 row 4), and it is counted in
      ``numberMisscheduled``;
    * status: desired = current = ready = updated = available = #eligible, unavailable 0,
      misscheduled = #pods kept on NoSchedule-only nodes, observedGeneration = generation."""
    problems: list[str] = []
    fit = snap.fit()
    groups = snap.by_node()
    all_pods_by_node: dict[str, list[Obj]] = {}
    for pod in snap.pods:
        all_pods_by_node.setdefault(target_node(pod) or "<none>", []).append(pod)
    kept = 0
    for name in sorted(set(fit) | set(all_pods_by_node)):
        run, cont = fit.get(name, (False, False))
        pods = all_pods_by_node.get(name, [])
        desc = [(p["metadata"]["name"], snap.updated(p), snap.available(p), terminating(p)) for p in pods]
        if run:
            if len(pods) != 1 or not snap.updated(pods[0]) or not snap.available(pods[0]) or terminating(pods[0]):
                problems.append(f"eligible node {name}: pods {desc}")
        elif cont and name in snap.nodes:
            if len(pods) > 1 or any(not snap.updated(p) or not snap.available(p) or terminating(p) for p in pods):
                problems.append(f"NoSchedule-tainted node {name}: pods {desc}")
            kept += len(groups.get(name, ()))
        elif pods:
            problems.append(f"node {name} (ineligible or gone): pods {desc}")
    status = snap.ds.get("status") or {}
    eligible = sum(1 for run, _ in fit.values() if run)
    want = {"desiredNumberScheduled": eligible, "currentNumberScheduled": eligible, "numberReady": eligible,
            "updatedNumberScheduled": eligible, "numberAvailable": eligible, "numberUnavailable": 0,
            "numberMisscheduled": kept}
    got = {k: int(status.get(k) or 0) for k in want}
    if got != want:
        problems.append(f"status {got} != {want}")
    if status.get("observedGeneration") != snap.ds["metadata"]["generation"]:
        problems.append(f"observedGeneration {status.get('observedGeneration')} != "
                        f"generation {snap.ds['metadata']['generation']}")
    return problems


def status_problems(snap: Snapshot) -> list[str]:
    """The stored status against the independent recount (and the generation observed)."""
    status = snap.ds.get("status") or {}
    stored = {k: int(status.get(k) or 0) for k in COUNTERS}
    expected = recount(snap)
    problems = []
    if stored != expected:
        diff = {k: (stored[k], expected[k]) for k in COUNTERS if stored[k] != expected[k]}
        problems.append(f"status differs from recount (stored, recount): {diff}")
    if status.get("observedGeneration") != snap.ds["metadata"]["generation"]:
        problems.append(f"observedGeneration {status.get('observedGeneration')} != "
                        f"generation {snap.ds['metadata']['generation']}")
    return problems


# ---------------------------------------------------------------------------------------------
# Churn scenarios with invariant checks after every step
# ---------------------------------------------------------------------------------------------

CONVERGENCE_ROUNDS = 12


class Churn:
    """A scripted or generated churn scenario on an :class:`Env`: the step interpreter and the
    invariant checks after every step (documented in tests/property/test_daemonset_invariants.py).

    Steps are tuples: ``("add_node", role, taint_effect|None)``, ``("remove_node", i, gc_now)``
    (``gc_now``: pod GC removes the node's bound pods at once, not at the next kubelet round),
    ``("relabel", i, role)``, ``("taint", i, effect)``, ``("untaint", i)``, ``("fail_pod", i)``,
    ``("unready", i)``, ``("ready", i)``, ``("image", image)``, ``("restart",)``,
    ``("kubelet", {i, …} nodes left unready, finish_deletions)``; ``i`` indexes the sorted node
    (or live bound pod) names modulo their number.  The DaemonSet selects ``role=a``.
    ``wait_retries``: also wait out rate-limited retries of failed syncs (when faults make syncs
    fail)."""

    def __init__(self, env: Env, *, strategy: dict[str, Any], wait_retries: bool = False) -> None:
        self.env = env
        self.strategy = strategy
        self.wait_retries = wait_retries
        self.next_node = 0
        self.log: list[str] = []

    async def settle(self) -> None:
        if self.wait_retries:
            await self.env.settle_retries()
        await self.env.settle()

    async def setup(self, roles: list[str]) -> None:
        for role in roles:
            await self.add_node(role, None)
        await self.env.ctrl.start()
        await self.env.daemonset(image="v1", node_selector={"role": "a"}, strategy=self.strategy)
        await self.settle()
        await self.env.kubelet()
        await self.check_settled()

    async def add_node(self, role: str, effect: str | None) -> None:
        name = f"n{self.next_node}"
        self.next_node += 1
        taints = [{"key": TAINT_KEY, "value": "x", "effect": effect}] if effect else None
        await self.env.node(name, labels={"role": role}, taints=taints)

    async def node_names(self) -> list[str]:
        return sorted(n["metadata"]["name"] for n in (await self.env.client.list("nodes"))["items"])

    async def live_bound_pods(self) -> list[dict]:
        return [p for p in await self.env.pods(include_terminating=False)
                if p["spec"].get("nodeName") and (p.get("status") or {}).get("phase") not in ("Failed", "Succeeded")]

    async def apply(self, action: tuple) -> str | None:
        """Perform one step's writes.  Returns what to do after the pre-settle snapshot:
        ``"restart"`` (the controller was stopped here) or ``"resync <node>"`` (a node was removed)."""
        env, kind = self.env, action[0]
        names = await self.node_names()
        if kind == "add_node":
            if len(names) < MAX_NODES:
                await self.add_node(action[1], action[2])
        elif kind == "remove_node" and names:
            name = names[action[1] % len(names)]
            await env.client.delete("nodes", name)
            if action[2]:
                await env.collect_pods_on_missing_nodes()
            return f"resync {name}"
        elif kind == "relabel" and names:
            await env.patch_node(names[action[1] % len(names)], {"metadata": {"labels": {"role": action[2]}}})
        elif kind == "taint" and names:
            await env.patch_node(names[action[1] % len(names)],
                                 {"spec": {"taints": [{"key": TAINT_KEY, "value": "x", "effect": action[2]}]}})
        elif kind == "untaint" and names:
            await env.patch_node(names[action[1] % len(names)], {"spec": {"taints": None}})
        elif kind in ("fail_pod", "unready", "ready"):
            pods = await self.live_bound_pods()
            if pods:
                pod = pods[action[1] % len(pods)]
                if kind == "fail_pod":
                    await env.set_phase(pod, "Failed", ready=False)
                else:
                    await env.set_phase(pod, "Running", ready=kind == "ready")
        elif kind == "image":
            await env.set_image(action[1])
        elif kind == "restart":
            await env.ctrl.stop()
            return "restart"
        elif kind == "kubelet":
            unready = {names[i % len(names)] for i in action[1]} if names else set()
            await env.kubelet(unready_nodes=unready, finish_deletions=action[2])
        return None

    async def resync_after_node_removal(self, name: str) -> None:
        """Upstream has no node-delete handler (§4.1): enqueue the DaemonSet once the controller's
        node cache has dropped the node, standing in for the resync pod GC or time would bring."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 5
        while self.env.ctrl.node_informer.get(name) is not None:
            assert loop.time() < deadline, f"node informer still has {name}"
            await asyncio.sleep(0.001)
        self.env.ctrl.queue.add(KEY)

    async def step(self, action: tuple) -> None:
        self.log.append(repr(action))
        self.env.clock.advance(1)
        syncs = self.env.ctrl.syncs
        then = await self.apply(action)
        before = await self.env.snapshot()
        # The in-process API never yields to the loop on these writes, so the controller has not
        # reacted yet: ``before`` is the state it starts from (invariant 2 depends on that).
        assert self.env.ctrl.syncs == syncs, "the controller ran before the pre-settle snapshot"
        if then == "restart":
            self.env.ctrl = self.env.new_controller()
            await self.env.ctrl.start()
        elif then is not None:
            await self.resync_after_node_removal(then.split()[1])
        await self.check_settled(before)

    async def check_settled(self, before: Snapshot | None = None) -> Snapshot:
        await self.settle()
        after = await self.env.snapshot()
        context = f"after steps {self.log}"
        assert not pods_per_node_violations(after), (pods_per_node_violations(after), context)
        if before is not None:
            desired = len(after.eligible())
            budget = max_unavailable(after.ds, desired) if not after.surge_enabled else 0
            u_before, u_after = unavailable_nodes(before), unavailable_nodes(after)
            assert len(u_after) <= max(budget, len(u_before)), (
                f"unavailable {sorted(u_after)} > max(maxUnavailable={budget}, before={sorted(u_before)})", context)
            surge = max_surge(after.ds, desired)
            s_before, s_after = surging_nodes(before), surging_nodes(after)
            assert len(s_after) <= max(surge, len(s_before)), (
                f"surging {sorted(s_after)} > max(maxSurge={surge}, before={sorted(s_before)})", context)
        assert not status_problems(after), (status_problems(after), context)
        return after

    async def converge(self) -> None:
        problems: list[str] = []
        for round_ in range(CONVERGENCE_ROUNDS):
            self.log.append(f"<converge {round_}>")
            await self.env.kubelet()
            self.env.clock.advance(min(900, 2 ** (round_ + 2)))  # let failed-pod backoff expire
            before = await self.env.snapshot()
            self.env.ctrl.queue.add(KEY)
            after = await self.check_settled(before)
            problems = convergence_problems(after)
            if not problems:
                return
        pods = [(p["metadata"]["name"], target_node(p), terminating(p), (p.get("status") or {}).get("phase"))
                for p in after.pods]
        raise AssertionError(f"not converged after {CONVERGENCE_ROUNDS} rounds: {problems}; pods {pods}; "
                             f"steps {self.log}")
