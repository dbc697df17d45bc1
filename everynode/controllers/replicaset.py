"""The ReplicaSet controller: keeps ``spec.replicas`` pods of a ReplicaSet in existence.

Upstream: ``pkg/controller/replicaset/replica_set.go`` (handlers, ``syncReplicaSet``,
``manageReplicas``, ``slowStartBatch``, ``getPodsToDelete``), ``replica_set_utils.go``
(``calculateStatus``, ``updateReplicaSetStatus``) and ``pkg/controller/controller_utils.go``
(``ActivePodsWithRanks``, ``GetPodFromTemplate``, ``UIDTrackingControllerExpectations``).

What is kept exactly: one queue keyed ``namespace/name``; pod handlers that resolve the
controller ref (creation observed, deletion observed by pod key, orphans enqueue every
ReplicaSet whose selector matches); claiming by selector and controllerRef with the live
re-read before the first adoption (the DaemonSet controller's :class:`Claimer`, parameterised
by kind); expectations gating ``manageReplicas`` (creates counted, deletes tracked by key);
creates in slow-start batches (1, 2, 4, … up to ``burstReplicas``; the first failing batch stops
the rest and their expectations are lowered); deletions choose the pods upstream's
``ActivePodsWithRanks`` orders first (unassigned, pending, not ready, low deletion cost,
doubled up on a node with related pods, recently ready, restarted, recently created — the last
two with the logarithmic buckets of ``LogarithmicScaleDown``); status with ``replicas``,
``fullyLabeledReplicas``, ``readyReplicas``, ``availableReplicas`` (``minReadySeconds``),
``observedGeneration`` and the ``ReplicaFailure`` condition; events ``SuccessfulCreate``,
``FailedCreate``, ``SuccessfulDelete``, ``FailedDelete`` from ``replicaset-controller``.

Why a full scan per sync (unlike the DaemonSet controller's incremental state): a ReplicaSet
sync reads the pods of its namespace from the informer cache (O(pods in the namespace)); the
handlers cost O(ReplicaSets in the namespace) only for orphan pods, and nothing for pods
another kind controls — so DaemonSet pods cost the ReplicaSet controller one dict lookup.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from collections.abc import Callable, Iterable
from typing import Any

from everynode.api.errors import ApiError, is_namespace_terminating
from everynode.api.meta import controller_ref, key_of, make_controller_ref
from everynode.api.pod import is_pod_available, is_pod_ready, pod_ready_condition, timestamp_seconds
from everynode.api.selectors import LabelSelector, SelectorError, label_selector_from_dict, selecting
from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.expectations import Expectations
from everynode.client.informer import NAMESPACE_INDEX, Informer, SharedInformerFactory, index_by_namespace
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock
from everynode.controllers.daemonset.adoption import Claimer, aggregate_message

log = logging.getLogger(__name__)

Obj = dict[str, Any]

REPLICASETS = "replicasets.apps"
PODS = "pods"
COMPONENT = "replicaset-controller"
BURST_REPLICAS = 500
SLOW_START_INITIAL_BATCH_SIZE = 1
REPLICA_FAILURE = "ReplicaFailure"
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


class SyncError(Exception):
    """A sync failed; the key is retried with rate limiting."""


# ---------------------------------------------------------------------------------------------
# pure decisions
# ---------------------------------------------------------------------------------------------

def is_pod_active(pod: Obj) -> bool:
    """``IsPodActive``: not Succeeded or Failed, and not being deleted."""
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") \
        and not pod["metadata"].get("deletionTimestamp")


def replicas_of(obj: Obj) -> int:
    """``*spec.replicas`` (defaulting sets 1; 0 is written out)."""
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


def slow_start_batches(count: int, initial: int = SLOW_START_INITIAL_BATCH_SIZE) -> list[int]:
    """The batch sizes ``slowStartBatch`` runs ``count`` calls in: 1, 2, 4, … summing to ``count``."""
    sizes: list[int] = []
    remaining = count
    batch = min(remaining, initial)
    while batch > 0:
        sizes.append(batch)
        remaining -= batch
        batch = min(2 * batch, remaining)
    return sizes


_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: Obj) -> int:
    value = ((pod["metadata"].get("annotations") or {}).get(POD_DELETION_COST))
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return 0


def _ready_time(pod: Obj) -> float | None:
    cond = pod_ready_condition(pod)
    if cond is None or not cond.get("lastTransitionTime"):
        return None
    return timestamp_seconds(cond["lastTransitionTime"])


def _max_restarts(pod: Obj) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or ()
    return max((int(s.get("restartCount") or 0) for s in statuses), default=0)


def _created(pod: Obj) -> float | None:
    stamp = pod["metadata"].get("creationTimestamp")
    return timestamp_seconds(stamp) if stamp else None


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    """``afterOrZero``: a zero time sorts first, then the later time."""
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _log_rank(t: float, now: float) -> int:
    elapsed_ns = (now - t) * 1e9
    return int(math.log2(elapsed_ns)) if elapsed_ns > 0 else -1


def _log_less(t1: float | None, t2: float | None, now: float | None, uid1: str, uid2: str) -> bool:
    """Upstream's ``LogarithmicScaleDown`` comparison: newer power-of-two bucket first, then uid."""
    if now is None or t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return uid1 < uid2
    return diff < 0


def pod_deletion_less(a: Obj, b: Obj, rank_a: int, rank_b: int, now: float | None) -> bool:
    """``ActivePodsWithRanks.Less``: should ``a`` be deleted before ``b``?"""
    node_a = (a.get("spec") or {}).get("nodeName") or ""
    node_b = (b.get("spec") or {}).get("nodeName") or ""
    if node_a != node_b and (not node_a or not node_b):  # 1. unassigned first
        return not node_a
    phase_a = _PHASE_ORDINAL.get((a.get("status") or {}).get("phase") or "", 0)
    phase_b = _PHASE_ORDINAL.get((b.get("status") or {}).get("phase") or "", 0)
    if phase_a != phase_b:  # 2. Pending < Unknown < Running
        return phase_a < phase_b
    ready_a, ready_b = is_pod_ready(a), is_pod_ready(b)
    if ready_a != ready_b:  # 3. not ready first
        return not ready_a
    cost_a, cost_b = _deletion_cost(a), _deletion_cost(b)
    if cost_a != cost_b:  # 4. lower deletion cost first
        return cost_a < cost_b
    if rank_a != rank_b:  # 5. doubled up on a node first
        return rank_a > rank_b
    if ready_a and ready_b:  # 6. ready for less time first
        ta, tb = _ready_time(a), _ready_time(b)
        if ta != tb:
            return _log_less(ta, tb, now, a["metadata"].get("uid") or "", b["metadata"].get("uid") or "")
    restarts_a, restarts_b = _max_restarts(a), _max_restarts(b)
    if restarts_a != restarts_b:  # 7. more restarts first
        return restarts_a > restarts_b
    ca, cb = _created(a), _created(b)
    if ca != cb:  # 8. newer first
        return _log_less(ca, cb, now, a["metadata"].get("uid") or "", b["metadata"].get("uid") or "")
    return False


def pods_to_delete(pods: list[Obj], related: Iterable[Obj], diff: int, *, now: float | None) -> list[Obj]:
    """``getPodsToDelete``: the ``diff`` pods to delete first, ranked by the number of related
    active pods (this ReplicaSet's and its siblings') on the same node."""
    if diff < len(pods):
        on_node: dict[str, int] = {}
        for pod in related:
            if is_pod_active(pod):
                node = (pod.get("spec") or {}).get("nodeName") or ""
                on_node[node] = on_node.get(node, 0) + 1
        ranked = [(pod, on_node.get((pod.get("spec") or {}).get("nodeName") or "", 0)) for pod in pods]

        def compare(x: tuple[Obj, int], y: tuple[Obj, int]) -> int:
            if pod_deletion_less(x[0], y[0], x[1], y[1], now):
                return -1
            if pod_deletion_less(y[0], x[0], y[1], x[1], now):
                return 1
            return 0

        pods = [pod for pod, _ in sorted(ranked, key=functools.cmp_to_key(compare))]
    return pods[:diff]


def pod_from_template(rs: Obj, *, owner_kind: str = "ReplicaSet") -> Obj:
    """``GetPodFromTemplate``: the pod a ReplicaSet creates (``generateName`` ``<rs>-``)."""
    md = rs["metadata"]
    template = (rs.get("spec") or {}).get("template") or {}
    tmd = template.get("metadata") or {}
    metadata: Obj = {"generateName": f"{md['name']}-", "namespace": md.get("namespace") or "",
                     "ownerReferences": [make_controller_ref(rs, api_version="apps/v1", kind=owner_kind)]}
    if tmd.get("labels"):
        metadata["labels"] = dict(tmd["labels"])
    if tmd.get("annotations"):
        metadata["annotations"] = dict(tmd["annotations"])
    if tmd.get("finalizers"):
        metadata["finalizers"] = list(tmd["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": dict(template.get("spec") or {})}


def replica_set_status(rs: Obj, pods: list[Obj], manage_error: Exception | None, *, now: float,
                       stamp: str) -> Obj:
    """``calculateStatus`` (the fields as Go writes them: zero counters other than ``replicas``
    and ``observedGeneration`` are omitted)."""
    old = rs.get("status") or {}
    template_labels = (((rs.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels") or {}
    min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
    fully_labeled = ready = available = 0
    for pod in pods:
        labels = pod["metadata"].get("labels") or {}
        if all(labels.get(k) == v for k, v in template_labels.items()):
            fully_labeled += 1
        if is_pod_ready(pod):
            ready += 1
            if is_pod_available(pod, min_ready, now):
                available += 1
    conditions = [c for c in old.get("conditions") or () if c.get("type") != REPLICA_FAILURE]
    failure = next((c for c in old.get("conditions") or () if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        diff = len(pods) - replicas_of(rs)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        conditions.append({"type": REPLICA_FAILURE, "status": "True", "lastTransitionTime": stamp,
                           "reason": reason, "message": str(manage_error)})
    elif manage_error is not None and failure is not None:
        conditions.append(failure)
    status: Obj = {"replicas": len(pods)}
    for name, value in (("fullyLabeledReplicas", fully_labeled), ("readyReplicas", ready),
                        ("availableReplicas", available)):
        if value:
            status[name] = value
    generation = old.get("observedGeneration")
    if generation:
        status["observedGeneration"] = generation
    if conditions:
        status["conditions"] = conditions
    return status


# ---------------------------------------------------------------------------------------------
# the controller
# ---------------------------------------------------------------------------------------------

def _log_failure(key: Any, exc: Exception, _retried: bool) -> None:
    log.info("replicaset %s: %s", key, exc)


class ReplicaSetController(ControllerLifecycle):
    def __init__(self, client: Client, *, clock: Clock, informers: SharedInformerFactory,
                 recorder: EventRecorder, workers: int = 2, burst_replicas: int = BURST_REPLICAS) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.burst_replicas = burst_replicas
        self.kit = ControllerKit("replicaset", informers=informers)
        self.queue = self.kit.queue()
        self.expectations = Expectations(clock=clock)
        self._deleting: dict[str, set[str]] = {}  # UIDTrackingControllerExpectations: pod keys
        ns_index = {NAMESPACE_INDEX: index_by_namespace}
        self.rs_informer: Informer = self.kit.informer(REPLICASETS, indexers=ns_index)
        self.pod_informer: Informer = self.kit.informer(PODS, indexers=ns_index)
        self.kit.watch(self.rs_informer, on_add=self._add_rs, on_update=self._update_rs, on_delete=self._delete_rs)
        self.kit.watch(self.pod_informer, on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod)
        self.kit.workers(self.queue, self.sync, count=workers, on_error=_log_failure)
        self.syncs = 0

    # -- handlers -------------------------------------------------------------------------------

    def enqueue(self, rs: Obj) -> None:
        self.queue.add(key_of(rs))

    def _add_rs(self, rs: Obj) -> None:
        self.enqueue(rs)

    def _update_rs(self, old: Obj, new: Obj) -> None:
        if (old["metadata"].get("uid") != new["metadata"].get("uid")):
            self._delete_rs(old)
        self.enqueue(new)

    def _delete_rs(self, rs: Obj) -> None:
        key = key_of(rs)
        self.expectations.delete_expectations(key)
        self._deleting.pop(key, None)
        self.queue.add(key)

    def _resolve(self, namespace: str, ref: dict[str, Any] | None) -> Obj | None:
        """``resolveControllerRef``: the ReplicaSet a controller ref names (same uid), or None."""
        if ref is None or ref.get("kind") != "ReplicaSet":
            return None
        rs = self.rs_informer.get(f"{namespace}/{ref.get('name')}" if namespace else ref.get("name") or "")
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return None
        return rs

    def _matching(self, pod: Obj) -> list[Obj]:
        """``getPodReplicaSets``: the ReplicaSets of the pod's namespace whose selector selects it."""
        md = pod["metadata"]
        return selecting(self.rs_informer.by_index(NAMESPACE_INDEX, md.get("namespace") or ""), md.get("labels"),
                         _selector)

    def _add_pod(self, pod: Obj) -> None:
        md = pod["metadata"]
        if md.get("deletionTimestamp"):
            self._delete_pod(pod)
            return
        ref = controller_ref(pod)
        if ref is not None:
            rs = self._resolve(md.get("namespace") or "", ref)
            if rs is not None:
                self.expectations.creation_observed(key_of(rs))
                self.enqueue(rs)
            return
        for rs in self._matching(pod):
            self.enqueue(rs)

    def _update_pod(self, old: Obj, new: Obj) -> None:
        new_md, old_md = new["metadata"], old["metadata"]
        if new_md.get("resourceVersion") == old_md.get("resourceVersion"):
            return
        labels_changed = new_md.get("labels") != old_md.get("labels")
        if new_md.get("deletionTimestamp"):
            self._delete_pod(new)
            if labels_changed:
                self._delete_pod(old)
            return
        ns = new_md.get("namespace") or ""
        new_ref, old_ref = controller_ref(new), controller_ref(old)
        ref_changed = new_ref != old_ref
        if ref_changed and old_ref is not None:
            old_rs = self._resolve(ns, old_ref)
            if old_rs is not None:
                self.enqueue(old_rs)
        if new_ref is not None:
            rs = self._resolve(ns, new_ref)
            if rs is None:
                return
            self.enqueue(rs)
            min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(new):
                self.queue.add_after(key_of(rs), float(min_ready) + 1.0)
            return
        if labels_changed or ref_changed:
            for rs in self._matching(new):
                self.enqueue(rs)

    def _delete_pod(self, pod: Obj) -> None:
        rs = self._resolve(pod["metadata"].get("namespace") or "", controller_ref(pod))
        if rs is None:
            return
        key = key_of(rs)
        tracked = self._deleting.get(key)
        pod_key = key_of(pod)
        if tracked is not None and pod_key in tracked:
            tracked.discard(pod_key)
            self.expectations.deletion_observed(key)
        self.enqueue(rs)

    # -- sync -----------------------------------------------------------------------------------

    async def sync(self, key: str) -> float | None:
        """``syncReplicaSet``; returns a delay to look again (``minReadySeconds``), or None."""
        self.syncs += 1
        rs = self.rs_informer.get(key)
        if rs is None:
            self.expectations.delete_expectations(key)
            self._deleting.pop(key, None)
            return None
        needs_sync = self.expectations.satisfied(key)
        selector = _selector(rs)
        if selector is None:
            return None  # an invalid selector never passes validation; nothing to act on
        ns = rs["metadata"].get("namespace") or ""
        active = [p for p in self.pod_informer.by_index(NAMESPACE_INDEX, ns) if is_pod_active(p)]
        claimer = Claimer(self.client, rs, selector, owner_resource=REPLICASETS, owner_kind="ReplicaSet")
        pods = await claimer.claim(active, resource=PODS, kind="Pod")
        manage_error: Exception | None = None
        if needs_sync and not rs["metadata"].get("deletionTimestamp"):
            try:
                await self._manage(rs, key, pods)
            except SyncError as e:
                manage_error = e
        now = self.clock.now()
        status = replica_set_status(rs, pods, manage_error, now=now, stamp=self.clock.rfc3339())
        stored = await self._store_status(rs, status)
        if manage_error is not None:
            raise manage_error
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        st = stored.get("status") or {}
        if min_ready > 0 and int(st.get("readyReplicas") or 0) == replicas_of(rs) \
                and int(st.get("availableReplicas") or 0) != replicas_of(rs):
            return float(min_ready)
        return None

    async def _manage(self, rs: Obj, key: str, pods: list[Obj]) -> None:
        diff = len(pods) - replicas_of(rs)
        if diff < 0:
            count = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, count)
            created, error = await self._create_batches(rs, count)
            for _ in range(count - created):
                self.expectations.creation_observed(key)
            if error is not None:
                raise SyncError(str(error))
        elif diff > 0:
            count = min(diff, self.burst_replicas)
            victims = pods_to_delete(pods, self._related_pods(rs), count, now=self.clock.now())
            keys = {key_of(p) for p in victims}
            self._deleting[key] = set(keys)
            self.expectations.expect_deletions(key, len(keys))
            results = await asyncio.gather(*(self._delete_pod_for(rs, key, p) for p in victims))
            errors = [e for e in results if e is not None]
            if errors:
                raise SyncError(aggregate_message(errors))

    async def _create_batches(self, rs: Obj, count: int) -> tuple[int, Exception | None]:
        created = 0
        for size in slow_start_batches(count):
            results = await asyncio.gather(*(self._create_pod(rs) for _ in range(size)))
            errors = [e for e in results if e is not None]
            created += size - len(errors)
            if errors:
                return created, errors[0]
        return created, None

    async def _create_pod(self, rs: Obj) -> Exception | None:
        pod = pod_from_template(rs)
        try:
            created = await self.client.create(PODS, pod, namespace=pod["metadata"]["namespace"])
        except ApiError as e:
            if is_namespace_terminating(e):
                return None
            self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {e.message}")
            return e
        self.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        return None

    async def _delete_pod_for(self, rs: Obj, key: str, pod: Obj) -> Exception | None:
        name = pod["metadata"]["name"]
        try:
            await self.client.delete(PODS, name, namespace=pod["metadata"].get("namespace") or "")
        except ApiError as e:
            pod_key = key_of(pod)
            tracked = self._deleting.get(key)
            if tracked is not None and pod_key in tracked:
                tracked.discard(pod_key)
                self.expectations.deletion_observed(key)
            if e.code == 404:
                return None
            self.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {e.message}")
            return e
        self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")
        return None

    def _related_pods(self, rs: Obj) -> list[Obj]:
        """``getIndirectlyRelatedPods``: pods of every ReplicaSet with the same controller."""
        owner = controller_ref(rs)
        if owner is None:
            uids = {rs["metadata"].get("uid")}
        else:
            uids = {other["metadata"].get("uid")
                    for other in self.rs_informer.by_index(NAMESPACE_INDEX, rs["metadata"].get("namespace") or "")
                    if (controller_ref(other) or {}).get("uid") == owner.get("uid")}
        related = []
        for pod in self.pod_informer.by_index(NAMESPACE_INDEX, rs["metadata"].get("namespace") or ""):
            ref = controller_ref(pod)
            if ref is not None and ref.get("uid") in uids:
                related.append(pod)
        return related

    async def _store_status(self, rs: Obj, status: Obj) -> Obj:
        """``updateReplicaSetStatus``: write when anything changed or the generation is new."""
        generation = rs["metadata"].get("generation")
        old = rs.get("status") or {}
        comparable = {k: v for k, v in status.items() if k != "observedGeneration"}
        old_comparable = {k: v for k, v in old.items() if k != "observedGeneration"}
        if comparable == old_comparable and old.get("observedGeneration") == generation:
            return rs
        if generation:
            status["observedGeneration"] = generation
        body = {**rs, "status": status}
        try:
            return await self.client.update_status(REPLICASETS, body)
        except ApiError as e:
            if e.code == 404:
                return rs
            if e.code != 409:
                raise
        fresh = await self.client.get(REPLICASETS, rs["metadata"]["name"], namespace=rs["metadata"].get("namespace") or "")
        return await self.client.update_status(REPLICASETS, {**fresh, "status": status})


def _selector(rs: Obj) -> LabelSelector | None:
    try:
        return label_selector_from_dict((rs.get("spec") or {}).get("selector"))
    except SelectorError:
        return None


Enqueue = Callable[[Obj], None]
