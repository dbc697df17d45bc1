"""The scheduler (layer 6): binds pending pods to nodes, as kube-scheduler's default profile does.

One object, one worker coroutine.  Pods and nodes come from shared informers; each event updates
the :class:`~everynode.scheduler.cache.SchedulerCache` (per-node usage, incrementally) and the
:class:`~everynode.scheduler.queue.SchedulingQueue`.  The worker takes the highest-priority pod,
filters nodes (``filters.py``), picks one, *assumes* the pod there (so the next decision counts
it) and binds it through ``pods/binding``; bindings run as tasks, a bounded number in flight, so
that a slow transport (HTTP) does not serialize decisions.  A pod that fits nowhere gets, as
upstream: preemption (``preemption.py``), a ``FailedScheduling`` event, the condition
``PodScheduled=False`` (reason ``Unschedulable``) with the same message, and waits for a
cluster change with back-off.

Choices, each against a cost:
* **The DaemonSet pin is a lookup.**  A pod whose required affinity names its node (what the
  DaemonSet controller creates) is filtered against that one node only — O(1) per decision
  regardless of cluster size; the other nodes are counted as
  ``node(s) didn't satisfy plugin(s) [NodeAffinity]`` without being looked at (upstream does
  the same through the NodeAffinity PreFilter).
* **Sampling for the rest.**  Unpinned pods stop after ``numFeasibleNodesToFind`` feasible nodes
  (all nodes below 100; else 50 % − nodes/125, at least 5 % and 100 nodes), starting where the
  previous search stopped, as upstream.  Only a pod that fits nowhere looks at every node.
* **Cluster-wide filters only when needed.**  Inter-pod affinity and topology spreading read
  counts made once per attempt (``cycle.prefilter``); a pod with neither, in a cluster where no
  existing pod's required anti-affinity matches it, gets no such state and its filters stay
  node-local — a DaemonSet pod's decision costs the same as before these plugins existed.
* **Scoring as the default profile** (``scoring.py``: resources least-allocated and balanced,
  PreferNoSchedule taints, preferred node affinity, topology spreading incl. the system default
  spreading of pods behind a Service or owned by a ReplicaSet/StatefulSet/ReplicationController,
  inter-pod affinity; upstream's weights), only when more than one node is feasible; ties go to
  the first node found, for determinism (upstream picks randomly among ties).
* **Responsibility**: pods with ``spec.schedulerName`` equal to ``name`` (the API defaults it to
  ``default-scheduler``), no ``spec.nodeName`` and no ``deletionTimestamp``.
* Terminal pods (Succeeded/Failed) hold no resources, as upstream's scheduler ignores them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable
from typing import Any, Final

from everynode.api import registry
from everynode.api.errors import ApiError
from everynode.api.meta import field_of
from everynode.api.podaffinity import default_spread_selector
from everynode.api.selectors import LabelSelector, SelectorError, label_selector_from_dict
from everynode.client.base import Client
from everynode.client.events import NORMAL, WARNING, EventRecorder
from everynode.client.informer import NAMESPACE_INDEX, Informer, SharedInformerFactory, index_by_namespace
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock
from everynode.scheduler.cache import TERMINAL_PHASES, SchedulerCache
from everynode.scheduler.cycle import CycleState, prefilter
from everynode.scheduler.filters import (
    NO_NODES_AVAILABLE,
    PIN_EXCLUDED,
    REASON_AFFINITY_CONFLICT,
    Status,
    fit_error_message,
    reasons_histogram,
    run_filters_with_nominated,
)
from everynode.scheduler.nodeinfo import NodeInfo
from everynode.scheduler.podinfo import PodInfo
from everynode.scheduler.preemption import eligible_to_preempt, find_preemption
from everynode.scheduler.queue import SchedulingQueue
from everynode.scheduler.scoring import select_host

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
FAILED_SCHEDULING: Final = "FailedScheduling"  # the reason of the scheduler's Events about a pod it cannot place
MIN_FEASIBLE_NODES_TO_FIND: Final = 100
MIN_FEASIBLE_NODES_PERCENTAGE: Final = 5
YIELD_EVERY: Final = 64
# The controllers whose selector the system default spreading uses (``helper.DefaultSelector``):
# (apiVersion, kind) of the pod's controller -> resource.
_SPREAD_OWNERS: Final = {("v1", "ReplicationController"): "replicationcontrollers",
                         ("apps/v1", "ReplicaSet"): "replicasets.apps",
                         ("apps/v1", "StatefulSet"): "statefulsets.apps"}


def num_feasible_nodes_to_find(num_all_nodes: int, percentage: int | None = None) -> int:
    """Upstream ``numFeasibleNodesToFind`` with the adaptive percentage."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if percentage is None or percentage <= 0:
        percentage = 50 - num_all_nodes // 125
        if percentage < MIN_FEASIBLE_NODES_PERCENTAGE:
            percentage = MIN_FEASIBLE_NODES_PERCENTAGE
    if percentage >= 100:
        return num_all_nodes
    n = num_all_nodes * percentage // 100
    return max(n, MIN_FEASIBLE_NODES_TO_FIND)


def spread_selector(pi: PodInfo, services: Iterable[Obj],
                    controller: Callable[[str, str, str], Obj | None]) -> LabelSelector:
    """Upstream ``helper.DefaultSelector``: the selectors of the Services selecting the pod
    (``services``: those of its namespace) and of its ReplicaSet / StatefulSet /
    ReplicationController (``controller(resource, namespace, name)``, None when unknown), merged.
    A function of its inputs, apart from the scheduler's informers, so that it can be checked on
    objects alone (the scheduler is compiled: its attributes take real informers only)."""
    owner: LabelSelector | dict[str, str] | None = None
    ref = pi.controller_ref
    if ref is not None:
        resource = _SPREAD_OWNERS.get((ref.get("apiVersion") or "", ref.get("kind") or ""))
        obj = controller(resource, pi.namespace, ref.get("name") or "") if resource is not None else None
        if obj is not None:
            selector = field_of(obj.get("spec"), "selector")
            if resource == "replicationcontrollers":
                owner = selector or None
            else:
                try:
                    owner = label_selector_from_dict(selector)
                except SelectorError:
                    owner = None
    return default_spread_selector(pi.labels, (field_of(svc.get("spec"), "selector") for svc in services), owner)


class Diagnosis:
    """Why a pod fits nowhere: per evaluated node the rejecting Status, plus nodes not evaluated."""

    __slots__ = ("num_all_nodes", "rejected", "excluded", "prefilter_msg", "cycle")

    def __init__(self, num_all_nodes: int) -> None:
        self.num_all_nodes = num_all_nodes
        self.rejected: list[tuple[NodeInfo, Status]] = []
        self.excluded = 0  # nodes ruled out by the pin (NodeAffinity PreFilter)
        self.prefilter_msg = ""
        self.cycle: CycleState | None = None  # the attempt's PreFilter state (preemption reuses it)

    def counts(self) -> Counter[str]:
        c = reasons_histogram(st for _, st in self.rejected)
        if self.excluded:
            for r in PIN_EXCLUDED.reasons:
                c[r] += self.excluded
        return c


def assigned_message(namespace: str, name: str, node: str) -> str:
    """The message of the ``Scheduled`` Event of a bound pod (``schedule_one.go``)."""
    return f"Successfully assigned {namespace}/{name} to {node}"


class Scheduler(ControllerLifecycle):
    def __init__(self, client: Client, *, clock: Clock, informers: SharedInformerFactory | None = None,
                 recorder: EventRecorder | None = None, name: str = DEFAULT_SCHEDULER_NAME,
                 max_binds_in_flight: int = 64, percentage_of_nodes_to_score: int | None = None) -> None:
        self.client = client
        self.clock = clock
        self.name = name
        own_factory = informers is None
        self.informers = informers if informers is not None else SharedInformerFactory(client)
        own_recorder = recorder is None
        self.recorder = recorder if recorder is not None else EventRecorder(client, component=name, clock=clock)
        # Informers are made in start() (the served kinds decide which), and the loop does not
        # wait for their caches: pods arrive as the informers deliver them.
        self.kit = ControllerKit(f"scheduler:{name}", informers=self.informers, wait_for_sync=False)
        if own_recorder:
            self.kit.on_stop(self._close_recorder)
        if own_factory:
            self.kit.on_stop(self.informers.stop)
        self.cache = SchedulerCache()
        self.queue: SchedulingQueue | None = None
        self._pending: dict[str, Obj] = {}
        self._max_binds = max(1, max_binds_in_flight)
        self._percentage = percentage_of_nodes_to_score
        self._binds_in_flight = 0
        self._bind_slot = asyncio.Event()
        self._next_start = 0
        self._pod_informer: Informer | None = None
        self._node_informer: Informer | None = None
        self._service_informer: Informer | None = None
        self._owner_informers: dict[str, Informer] = {}
        # Counters (diagnostics, benchmarks).
        self.scheduled = 0
        self.failed_attempts = 0
        self.preemptions = 0
        self.bind_errors = 0

    # -- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> None:
        self.queue = SchedulingQueue()
        self.queue.start()
        kit = self.kit
        self._node_informer = kit.informer("nodes")
        self._pod_informer = kit.informer("pods")
        kit.watch(self._node_informer, on_add=self._on_node_add, on_update=self._on_node_update,
                  on_delete=self._on_node_delete)
        kit.watch(self._pod_informer, on_add=self._on_pod_add, on_update=self._on_pod_update,
                  on_delete=self._on_pod_delete)
        # Namespace labels (namespaceSelector of affinity terms); Services and controllers
        # (the system default spreading's selector).  Controllers only where they are served.
        kit.watch(kit.informer("namespaces"), on_add=self.cache.set_namespace, on_update=self._on_namespace_update,
                  on_delete=self._on_namespace_delete)
        self._service_informer = kit.informer("services", indexers={NAMESPACE_INDEX: index_by_namespace})
        for resource in _SPREAD_OWNERS.values():
            try:
                registry.resource(resource)
            except KeyError:
                continue
            self._owner_informers[resource] = kit.informer(resource)
        kit.loop(self._run, name="loop")
        await super().start()

    async def wait_synced(self) -> None:
        for inf in (self._node_informer, self._pod_informer):
            if inf is not None:
                await inf.wait_synced()

    async def stop(self) -> None:
        if self.queue is not None:
            self.queue.close()  # the loop's pop() returns None: it ends
        await super().stop()

    async def _close_recorder(self) -> None:
        await self.recorder.close(flush=False)

    # -- informer handlers ----------------------------------------------------------------------

    def _on_node_add(self, node: Obj) -> None:
        info, _ = self.cache.set_node(node)
        if self.queue is not None:
            self.queue.node_changed(info.name)

    def _on_node_update(self, old: Obj, new: Obj) -> None:
        info, changed = self.cache.set_node(new)
        if changed and self.queue is not None:
            self.queue.node_changed(info.name)

    def _on_node_delete(self, node: Obj) -> None:
        self.cache.remove_node(node["metadata"]["name"])

    def _on_namespace_update(self, old: Obj, new: Obj) -> None:
        self.cache.set_namespace(new)

    def _on_namespace_delete(self, ns: Obj) -> None:
        self.cache.remove_namespace(field_of(ns.get("metadata"), "name") or "")

    def default_spread_selector(self, pi: PodInfo) -> LabelSelector:
        """Upstream ``helper.DefaultSelector`` (:func:`spread_selector`) over the informers'
        Services and controllers."""
        services = (self._service_informer.by_index(NAMESPACE_INDEX, pi.namespace)
                    if self._service_informer is not None else [])
        return spread_selector(pi, services, self._controller)

    def _controller(self, resource: str, namespace: str, name: str) -> Obj | None:
        inf = self._owner_informers.get(resource)
        return inf.get_by_name(namespace, name) if inf is not None else None

    def _on_pod_add(self, pod: Obj) -> None:
        self._pod_upsert(pod, None)

    def _on_pod_update(self, old: Obj, new: Obj) -> None:
        self._pod_upsert(new, old)

    def _on_pod_delete(self, pod: Obj) -> None:
        md: dict[str, Any] = pod.get("metadata") or {}
        key = f"{md.get('namespace') or ''}/{md.get('name') or ''}"
        self._forget_pending(key)
        node = self.cache.remove_pod(key)
        if node is not None and self.queue is not None:
            self.queue.node_changed(node)

    def _forget_pending(self, key: str) -> None:
        if self._pending.pop(key, None) is not None and self.queue is not None:
            self.queue.remove(key)
        self.cache.unnominate(key)

    def _pod_upsert(self, pod: Obj, old: Obj | None) -> None:
        md: Obj = pod.get("metadata") or {}
        spec: Obj = pod.get("spec") or {}
        key = f"{md.get('namespace') or ''}/{md.get('name') or ''}"
        node_name = spec.get("nodeName")
        queue = self.queue
        if node_name:
            self._forget_pending(key)
            phase = field_of(pod.get("status"), "phase")
            if phase in TERMINAL_PHASES:
                freed = self.cache.remove_pod(key)
                if freed is not None and queue is not None:
                    queue.node_changed(freed)
                return
            old_spec: Obj | None = old.get("spec") if old is not None else None
            old_md: Obj = (old.get("metadata") or {}) if old is not None else {}
            old_labels = old_md.get("labels")
            labels = md.get("labels")
            if (old_spec is not None and key not in self.cache.assumed and self.cache.has_pod(key)
                    and old_spec.get("nodeName") == node_name
                    and bool(old_md.get("deletionTimestamp")) == bool(md.get("deletionTimestamp"))
                    # (stored versions share what a write left alone: mostly the same objects)
                    and (old_spec is spec or old_spec == spec)
                    and (old_labels is labels or old_labels == labels)):
                self.cache.refresh_pod(key, pod)  # a status-only change: usage is unchanged
                return
            self.cache.set_pod(PodInfo(pod))
            if queue is not None:
                queue.pod_assigned()  # may satisfy a parked pod's affinity or spreading
            return
        if ((spec.get("schedulerName") or DEFAULT_SCHEDULER_NAME) != self.name or md.get("deletionTimestamp")
                or spec.get("schedulingGates")):  # gated pods wait (SchedulingGates PreEnqueue)
            self._forget_pending(key)
            return
        if key in self.cache.assumed:
            return  # being bound right now; the binding's event will follow
        prev = self._pending.get(key)
        self._pending[key] = pod
        if queue is None:
            return
        if prev is None or prev.get("spec") != spec:
            queue.add(key, int(spec.get("priority") or 0))

    # -- the scheduling loop --------------------------------------------------------------------

    async def _run(self) -> None:
        queue = self.queue
        assert queue is not None
        done = 0
        while True:
            key = await queue.pop()
            if key is None:
                return
            pod = self._pending.get(key)
            if pod is None:
                continue
            try:
                self._schedule_one(key, pod)
            except Exception:  # a bug must not stop scheduling; the pod is retried
                log.exception("scheduling %s failed", key)
                queue.requeue_after_error(key, int(field_of(pod.get("spec"), "priority") or 0))
            done += 1
            if self._binds_in_flight >= self._max_binds:
                while self._binds_in_flight >= self._max_binds:
                    self._bind_slot.clear()
                    await self._bind_slot.wait()
            elif done % YIELD_EVERY == 0:
                await asyncio.sleep(0)

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        self.kit.spawn(coro)

    def _schedule_one(self, key: str, pod: Obj) -> None:
        pi = PodInfo(pod)
        diag = Diagnosis(self.cache.live_count())
        node = self.find_node(pi, diag, nominated=field_of(pod.get("status"), "nominatedNodeName") or "")
        if node is not None:
            self.cache.assume(pi, node.name)
            self._binds_in_flight += 1
            self._spawn(self._bind(pi, node.name))
            return
        self._unschedulable(pi, diag)

    def find_node(self, pi: PodInfo, diag: Diagnosis, *, nominated: str = "") -> NodeInfo | None:
        """The node to bind to, or None with the reasons in ``diag`` (and the attempt's
        PreFilter state in ``diag.cycle``, which preemption reuses)."""
        cache = self.cache
        num_all = diag.num_all_nodes
        if num_all == 0:
            return None
        cycle = diag.cycle = prefilter(pi, cache)
        candidates = pi.candidates
        if candidates is not None:
            if not candidates:
                diag.prefilter_msg = REASON_AFFINITY_CONFLICT
                return None
            feasible: list[NodeInfo] = []
            evaluated = 0
            for name in sorted(candidates) if len(candidates) > 1 else candidates:
                info = cache.node(name)
                if info is None:
                    continue
                evaluated += 1
                st = run_filters_with_nominated(pi, info, cycle)
                if st is None:
                    feasible.append(info)
                else:
                    diag.rejected.append((info, st))
            diag.excluded = num_all - evaluated
            if not feasible:
                return None
            return feasible[0] if len(feasible) == 1 else self._best(pi, feasible)
        if nominated:
            info = cache.node(nominated)
            if info is not None and run_filters_with_nominated(pi, info, cycle) is None:
                return info
        live = cache.live
        infos = cache.infos
        n = len(live)
        to_find = num_feasible_nodes_to_find(n, self._percentage)
        start = self._next_start % n
        feasible = []
        rejected = diag.rejected
        processed = 0
        for i in range(n):
            info = infos[live[(start + i) % n]]
            processed += 1
            st = run_filters_with_nominated(pi, info, cycle)
            if st is None:
                feasible.append(info)
                if len(feasible) >= to_find:
                    break
            else:
                rejected.append((info, st))
        self._next_start = (start + processed) % n
        if not feasible:
            return None
        return feasible[0] if len(feasible) == 1 else self._best(pi, feasible)

    def _best(self, pi: PodInfo, feasible: list[NodeInfo]) -> NodeInfo:
        return select_host(pi, feasible, self.cache, default_selector=self.default_spread_selector)

    # -- binding --------------------------------------------------------------------------------

    async def _bind(self, pi: PodInfo, node_name: str) -> None:
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pi.name, "namespace": pi.namespace, "uid": pi.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        if not pi.uid:
            del body["metadata"]["uid"]
        try:
            await self.client.create_subresource("pods", pi.name, "binding", body, namespace=pi.namespace)
        except ApiError as e:
            self.bind_errors += 1
            self.cache.forget(pi.key)
            queue = self.queue
            if queue is not None:
                queue.node_changed(node_name)
            if e.code == 404:
                self._forget_pending(pi.key)
                return
            log.info("binding %s to %s failed: %s", pi.key, node_name, e)
            if pi.key in self._pending and queue is not None:
                self.recorder.event(pi.pod, WARNING, FAILED_SCHEDULING, f"Binding rejected: {e}")
                queue.requeue_after_error(pi.key, pi.priority)
            return
        except Exception:
            self.bind_errors += 1
            self.cache.forget(pi.key)
            log.exception("binding %s to %s failed", pi.key, node_name)
            if self.queue is not None and pi.key in self._pending:
                self.queue.requeue_after_error(pi.key, pi.priority)
            return
        finally:
            self._binds_in_flight -= 1
            self._bind_slot.set()
        self.scheduled += 1
        if self.queue is not None:
            self.queue.done(pi.key)
        self.cache.unnominate(pi.key)
        self.recorder.event(pi.pod, NORMAL, "Scheduled", assigned_message(pi.namespace, pi.name, node_name))

    # -- failure, preemption --------------------------------------------------------------------

    def failure_message(self, pi: PodInfo, diag: Diagnosis) -> tuple[str, str | None, list[PodInfo]]:
        """(message, node nominated by preemption, victims) for a pod that fits nowhere."""
        if diag.num_all_nodes == 0:
            return NO_NODES_AVAILABLE, None, []
        counts = diag.counts()
        nominated_name = field_of(pi.pod.get("status"), "nominatedNodeName") or ""
        reason = eligible_to_preempt(pi, self.cache.node(nominated_name) if nominated_name else None)
        postfilter = ""
        nominated: str | None = None
        victims: list[PodInfo] = []
        if reason is not None:
            postfilter = "preemption: " + reason
        else:
            resolvable = (info for info, st in diag.rejected if not st.unresolvable)
            result = find_preemption(pi, resolvable, diag.num_all_nodes, cycle=diag.cycle)
            if result.node is not None:
                nominated, victims = result.node, result.victims
            else:
                postfilter = result.message
        msg = fit_error_message(diag.num_all_nodes, counts, prefilter_msg=diag.prefilter_msg,
                                postfilter_msg=postfilter)
        return msg, nominated, victims

    def _unschedulable(self, pi: PodInfo, diag: Diagnosis) -> None:
        self.failed_attempts += 1
        msg, nominated, victims = self.failure_message(pi, diag)
        if nominated is not None:
            self.preemptions += 1
            self.cache.nominate(pi, nominated)
            for v in victims:
                self.recorder.event(v.pod, NORMAL, "Preempted",
                                    f"Preempted by pod {pi.uid} on node {nominated}")
            self._spawn(self._evict(pi, victims))
        self.recorder.event(pi.pod, WARNING, FAILED_SCHEDULING, msg)
        patch = self._condition_patch(pi.pod, msg, nominated)
        if patch is not None:
            self._spawn(self._patch_status(pi, patch))
        if self.queue is not None:
            self.queue.park(pi.key, pi.priority, pi.candidates,
                            on_pod_assigned=pi.has_pod_affinity or bool(pi.spread_constraints))

    def _condition_patch(self, pod: Obj, msg: str, nominated: str | None) -> Obj | None:
        status: dict[str, Any] = pod.get("status") or {}
        current = None
        for c in status.get("conditions") or ():
            if c.get("type") == "PodScheduled":
                current = c
                break
        same_nomination = nominated is None or status.get("nominatedNodeName") == nominated
        if (current is not None and current.get("status") == "False" and current.get("reason") == "Unschedulable"
                and current.get("message") == msg and same_nomination):
            return None
        ltt = self.clock.rfc3339()
        if current is not None and current.get("status") == "False" and current.get("lastTransitionTime"):
            ltt = current["lastTransitionTime"]
        cond = {"type": "PodScheduled", "status": "False", "lastProbeTime": None, "lastTransitionTime": ltt,
                "reason": "Unschedulable", "message": msg}
        body: Obj = {"conditions": [cond]}
        if nominated is not None:
            body["nominatedNodeName"] = nominated
        return {"status": body}

    async def _patch_status(self, pi: PodInfo, patch: Obj) -> None:
        try:
            await self.client.patch("pods", pi.name, patch, namespace=pi.namespace, patch_type="strategic",
                                    subresource="status")
        except ApiError as e:
            if e.code != 404:
                log.info("updating the PodScheduled condition of %s failed: %s", pi.key, e)
        except Exception:
            log.exception("updating the PodScheduled condition of %s failed", pi.key)

    async def _evict(self, preemptor: PodInfo, victims: list[PodInfo]) -> None:
        """Mark each victim ``DisruptionTarget`` and delete it gracefully (upstream's order)."""
        for v in victims:
            cond = {"type": "DisruptionTarget", "status": "True", "lastProbeTime": None,
                    "lastTransitionTime": self.clock.rfc3339(), "reason": "PreemptionByScheduler",
                    "message": f"{self.name}: preempting to accommodate a higher priority pod"}
            try:
                await self.client.patch("pods", v.name, {"status": {"conditions": [cond]}}, namespace=v.namespace,
                                        patch_type="strategic", subresource="status")
            except ApiError as e:
                if e.code == 404:
                    continue
                log.info("marking victim %s failed: %s", v.key, e)
            except Exception:
                log.exception("marking victim %s failed", v.key)
            try:
                await self.client.delete("pods", v.name, namespace=v.namespace,
                                         preconditions={"uid": v.uid} if v.uid else None)
            except ApiError as e:
                if e.code not in (404, 409):
                    log.info("preempting %s failed: %s", v.key, e)
            except Exception:
                log.exception("preempting %s failed", v.key)

    # -- introspection --------------------------------------------------------------------------

    def pending_keys(self) -> list[str]:
        return sorted(self._pending)

    @property
    def idle(self) -> bool:
        """Nothing queued for an immediate attempt and no binding in flight."""
        q = self.queue
        return self._binds_in_flight == 0 and (q is None or q.pop_ready_count() == 0)
