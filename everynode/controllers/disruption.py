"""The disruption controller: keeps every PodDisruptionBudget's status — how many of its pods are
healthy, how many must be, how many may be disrupted now.

Upstream: ``pkg/controller/disruption/disruption.go`` (``trySync``, ``getExpectedPodCount``,
``getExpectedScale``, ``countHealthyPods``, ``buildDisruptedPodMap``, ``failSafe``,
``updatePdbStatus``) and ``k8s.io/component-helpers/apps/poddisruptionbudget``
(``UpdateDisruptionAllowedCondition``).  The eviction subresource
(``apiserver/registry/core/pod/eviction.py``) reads what this controller writes and decrements
``disruptionsAllowed`` itself, recording the pod in ``disruptedPods``; this controller then stops
counting that pod as healthy until it is deleted or ``DELETION_TIMEOUT`` passed.

The arithmetic, per budget, over the pods its selector matches in its namespace:

* ``maxUnavailable`` (int or percent): expected = the sum of the pods' controllers' scales
  (each controller once), desired = expected − scaled maxUnavailable (percent rounded up), ≥ 0;
* ``minAvailable`` integer: desired = the number, expected = the number of matching pods — no
  controller needed (bare pods work);
* ``minAvailable`` percent: expected = the controllers' scale, desired = scaled minAvailable
  (rounded up);
* healthy = matching pods that are Ready, not being deleted, and not in ``disruptedPods``
  (within the timeout); allowed = healthy − desired, 0 when negative or when expected ≤ 0;
* the ``DisruptionAllowed`` condition: True/``SufficientPods`` when allowed > 0, else
  False/``InsufficientPods``; any failure (a pod with no controller when a scale is needed, a
  bad percent) writes ``disruptionsAllowed: 0`` with False/``SyncFailed`` and the error as its
  message (``failSafe``: fail closed).

Why the owners are read through the client rather than informers: the scale of a pod's
controller is needed only for percentages and ``maxUnavailable``, the owners are few, and the
workload kinds (ReplicaSet, Deployment, StatefulSet, ReplicationController) may or may not be
served by this build — a GET of a resource nobody serves is a clean 404, an informer of one is
not.  Per controller reference (checked by uid, as upstream does): a ReplicaSet controlled by a
Deployment counts with the Deployment's ``spec.replicas``, any other ReplicaSet, a StatefulSet or
a ReplicationController with its own ``spec.replicas``, and any other kind through its ``scale``
subresource.  A change of an owner's scale alone is noticed at the next pod event or recheck.

Left out: resetting a stale ``DisruptionTarget`` condition on pods that were never deleted
(``syncStalePodDisruption``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from everynode.api import registry
from everynode.api.errors import ApiError
from everynode.api.intstr import scaled_value
from everynode.api.meta import controller_ref, deep_copy, key_of
from everynode.api.pod import is_pod_ready, timestamp_seconds
from everynode.api.selectors import SelectorError, label_selector_from_dict
from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.informer import NAMESPACE_INDEX, SharedInformerFactory, index_by_namespace
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DELETION_TIMEOUT = 120.0
"""Seconds an eviction's entry in ``disruptedPods`` keeps its pod out of the healthy count."""
EVENT_COMPONENT = "controllermanager"  # upstream's EventSource of this controller
CONDITION = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
SYNC_FAILED = "SyncFailed"

ScaleLookup = Callable[[Obj, str], Awaitable[tuple[str, int] | None]]
"""(controller reference, namespace) → (controller uid, scale), or None when no such controller."""


class ExpectedCountError(Exception):
    """The expected pod count cannot be computed; the message is upstream's."""


# --------------------------------------------------------------------------- pure decisions

def pdb_selects(pdb: Obj, pod: Obj) -> bool:
    """The budget's selector matches the pod (same namespace; an empty selector matches every
    pod, a missing or invalid one none — ``GetPodPodDisruptionBudgets``)."""
    if (pod.get("metadata") or {}).get("namespace") != (pdb.get("metadata") or {}).get("namespace"):
        return False
    try:
        selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
    except SelectorError:
        return False
    return selector.matches((pod.get("metadata") or {}).get("labels") or {})


def _needs_scale(spec: Obj) -> bool:
    if spec.get("maxUnavailable") is not None:
        return True
    return isinstance(spec.get("minAvailable"), str)


def expected_and_desired(spec: Obj, pod_count: int, scale: int | None) -> tuple[int, int]:
    """``getExpectedPodCount`` once the controllers' total ``scale`` is known (None when the
    spec needs none): (expectedCount, desiredHealthy).  A bad percent raises ``ValueError``."""
    if spec.get("maxUnavailable") is not None:
        expected = scale or 0
        return expected, max(expected - scaled_value(spec["maxUnavailable"], expected, round_up=True), 0)
    min_available = spec.get("minAvailable")
    if isinstance(min_available, int) and not isinstance(min_available, bool):
        return pod_count, min_available
    if min_available is not None:
        expected = scale or 0
        return expected, scaled_value(min_available, expected, round_up=True)
    return 0, 0


def disrupted_pod_map(pods: Iterable[Obj], disrupted: Mapping[str, str] | None,
                      now: float) -> tuple[dict[str, str], float | None]:
    """``buildDisruptedPodMap``: the entries still pending (pod there, not yet being deleted,
    within the timeout) and when the earliest of them expires."""
    result: dict[str, str] = {}
    recheck: float | None = None
    if not disrupted:
        return result, None
    for pod in pods:
        md = pod.get("metadata") or {}
        if md.get("deletionTimestamp"):
            continue
        when = disrupted.get(md.get("name") or "")
        if when is None:
            continue
        expires = timestamp_seconds(when) + DELETION_TIMEOUT
        if expires < now:
            continue  # expected to be deleted but was not: dropped (upstream logs and emits NotDeleted)
        result[md["name"]] = when
        recheck = expires if recheck is None else min(recheck, expires)
    return result, recheck


def count_healthy(pods: Iterable[Obj], disrupted: Mapping[str, str], now: float) -> int:
    """``countHealthyPods``: Ready pods not being deleted and not just evicted."""
    healthy = 0
    for pod in pods:
        md = pod.get("metadata") or {}
        if md.get("deletionTimestamp"):
            continue
        when = disrupted.get(md.get("name") or "")
        if when is not None and timestamp_seconds(when) + DELETION_TIMEOUT > now:
            continue
        if is_pod_ready(pod):
            healthy += 1
    return healthy


def disruptions_allowed(current_healthy: int, desired_healthy: int, expected: int) -> int:
    """``updatePdbStatus``: none while no pod is expected (a budget whose pods have not appeared
    yet must stay safe), else the healthy surplus, never negative."""
    allowed = current_healthy - desired_healthy
    return 0 if expected <= 0 or allowed <= 0 else allowed


def set_condition(conditions: list[Obj] | None, condition: Obj, now: str) -> list[Obj]:
    """``meta.SetStatusCondition``: replace the condition of the same type, keeping its
    ``lastTransitionTime`` unless the status changes."""
    out: list[Obj] = []
    found = False
    for existing in conditions or ():
        if existing.get("type") != condition["type"]:
            out.append(existing)
            continue
        found = True
        merged = dict(existing)
        if existing.get("status") != condition["status"] or not existing.get("lastTransitionTime"):
            merged["lastTransitionTime"] = now
        merged.update({k: v for k, v in condition.items() if k != "lastTransitionTime"})
        out.append(merged)
    if not found:
        out.append({**condition, "lastTransitionTime": condition.get("lastTransitionTime") or now})
    return out


def allowed_condition(allowed: int, observed_generation: int) -> Obj:
    """``UpdateDisruptionAllowedCondition``'s condition for a budget allowing ``allowed``."""
    cond: Obj = {"type": CONDITION, "status": "True" if allowed > 0 else "False",
                 "reason": SUFFICIENT_PODS if allowed > 0 else INSUFFICIENT_PODS, "message": ""}
    if observed_generation:
        cond["observedGeneration"] = observed_generation
    return cond


def conditions_up_to_date(pdb: Obj) -> bool:
    """``ConditionsAreUpToDate``."""
    status = pdb.get("status") or {}
    if status.get("observedGeneration") != (pdb.get("metadata") or {}).get("generation"):
        return False
    cond = next((c for c in status.get("conditions") or () if c.get("type") == CONDITION), None)
    if cond is None:
        return False
    if int(status.get("disruptionsAllowed") or 0) > 0:
        return cond.get("status") == "True" and cond.get("reason") == SUFFICIENT_PODS
    return cond.get("status") == "False" and cond.get("reason") == INSUFFICIENT_PODS


def budget_status(pdb: Obj, *, current_healthy: int, desired_healthy: int, expected: int,
                  disrupted: dict[str, str], now: str) -> Obj | None:
    """The status ``updatePdbStatus`` writes, or None when the stored one is already it."""
    status = pdb.get("status") or {}
    allowed = disruptions_allowed(current_healthy, desired_healthy, expected)
    generation = int((pdb.get("metadata") or {}).get("generation") or 0)
    if (int(status.get("currentHealthy") or 0) == current_healthy
            and int(status.get("desiredHealthy") or 0) == desired_healthy
            and int(status.get("expectedPods") or 0) == expected
            and int(status.get("disruptionsAllowed") or 0) == allowed
            and (status.get("disruptedPods") or {}) == disrupted
            and status.get("observedGeneration") == generation
            and conditions_up_to_date(pdb)):
        return None
    new: Obj = {"disruptionsAllowed": allowed, "currentHealthy": current_healthy,
                "desiredHealthy": desired_healthy, "expectedPods": expected}
    if disrupted:
        new["disruptedPods"] = dict(disrupted)
    if generation:
        new["observedGeneration"] = generation
    new["conditions"] = set_condition(status.get("conditions"), allowed_condition(allowed, generation), now)
    return new


def fail_safe_status(pdb: Obj, message: str, now: str) -> Obj:
    """``failSafe``: no disruption allowed, the condition says why."""
    status = dict(pdb.get("status") or {})
    status["disruptionsAllowed"] = 0
    cond: Obj = {"type": CONDITION, "status": "False", "reason": SYNC_FAILED, "message": message}
    if status.get("observedGeneration"):
        cond["observedGeneration"] = status["observedGeneration"]
    status["conditions"] = set_condition(status.get("conditions"), cond, now)
    return status


async def expected_scale(pods: Iterable[Obj], lookup: ScaleLookup) -> tuple[int, list[str]]:
    """``getExpectedScale``: the sum of the scales of the pods' controllers (each once) and the
    names of the pods without one.  A controller no finder knows raises :class:`ExpectedCountError`."""
    scales: dict[str, int] = {}
    unmanaged: list[str] = []
    for pod in pods:
        md = pod.get("metadata") or {}
        ref = controller_ref(pod)
        if ref is None:
            unmanaged.append(md.get("name") or "")
            continue
        if ref.get("uid") in scales:
            continue
        found = await lookup(ref, md.get("namespace") or "")
        if found is None:
            raise ExpectedCountError(f'found no controllers for pod "{md.get("name") or ""}"')
        scales[found[0]] = found[1]
    return sum(scales.values()), unmanaged


# --------------------------------------------------------------------------- the controller

def _group_of(api_version: str) -> str:
    return api_version.split("/", 1)[0] if "/" in api_version else ""


def _replicas(obj: Obj) -> int:
    value = (obj.get("spec") or {}).get("replicas")
    return 1 if value is None else int(value)


async def controller_scale(client: Client, ref: Obj, namespace: str) -> tuple[str, int] | None:
    """The finders, in upstream's order: ReplicationController, Deployment (through its
    ReplicaSet), ReplicaSet, StatefulSet, then any kind's ``scale`` subresource.  (uid, scale) of
    the controller that counts, None when ``ref`` names no such object (any more)."""
    kind, group = ref.get("kind") or "", _group_of(ref.get("apiVersion") or "")
    if kind == "ReplicaSet" and group in ("apps", "extensions"):
        rs = await _get_owner(client, "replicasets.apps", ref, namespace)
        if rs is None:
            return None
        owner = controller_ref(rs)
        if owner is not None and owner.get("kind") == "Deployment":
            if _group_of(owner.get("apiVersion") or "") not in ("apps", "extensions"):
                return None
            deployment = await _get_owner(client, "deployments.apps", owner, namespace)
            return None if deployment is None else (owner["uid"], _replicas(deployment))
        return ref["uid"], _replicas(rs)
    simple = {("ReplicationController", ""): "replicationcontrollers", ("StatefulSet", "apps"): "statefulsets.apps"}
    if (kind, group) in simple:
        owner_obj = await _get_owner(client, simple[(kind, group)], ref, namespace)
        return None if owner_obj is None else (ref["uid"], _replicas(owner_obj))
    rt = registry.by_kind(ref.get("apiVersion") or "", kind)
    if rt is None:
        raise ExpectedCountError(f'no matches for kind "{kind}" in version "{ref.get("apiVersion") or ""}"')
    if rt.subresource("scale") is None:
        raise ExpectedCountError(f"{rt.key} does not implement the scale subresource")
    try:
        scale = await client.get(rt.key, ref.get("name") or "", namespace=namespace, subresource="scale")
    except ApiError as exc:
        if exc.code == 404:
            return None
        raise
    if (scale.get("metadata") or {}).get("uid") != ref.get("uid"):
        return None
    return ref["uid"], int((scale.get("spec") or {}).get("replicas") or 0)


async def _get_owner(client: Client, resource: str, ref: Obj, namespace: str) -> Obj | None:
    """The owner ``ref`` names if it is still that object (uid), else None (a kind this build
    does not serve counts as not found)."""
    try:
        obj = await client.get(resource, ref.get("name") or "", namespace=namespace)
    except ApiError as exc:
        if exc.code == 404:
            return None
        raise
    return obj if (obj.get("metadata") or {}).get("uid") == ref.get("uid") else None


def _log_failure(key: Any, exc: Exception, _retried: bool) -> None:
    log.debug("PodDisruptionBudget %s: %s", key, exc)


class DisruptionController(ControllerLifecycle):
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock,
                 recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.kit = ControllerKit("disruption", informers=informers)
        ns_index = {NAMESPACE_INDEX: index_by_namespace}
        self.pdbs = self.kit.informer("poddisruptionbudgets.policy", indexers=ns_index)
        self.pods = self.kit.informer("pods", indexers=ns_index)
        self.queue = self.kit.queue()
        self.kit.watch(self.pdbs, on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new),
                       on_delete=self._enqueue)
        self.kit.watch(self.pods, on_add=self._pod_changed, on_update=lambda _old, new: self._pod_changed(new),
                       on_delete=self._pod_changed)
        self.kit.workers(self.queue, self.sync, on_error=_log_failure)
        self.writes = 0

    def _enqueue(self, pdb: Obj) -> None:
        self.queue.add(key_of(pdb))

    def _pod_changed(self, pod: Obj) -> None:
        """``getPdbForPod``: the budgets of the pod's namespace that select it."""
        namespace = (pod.get("metadata") or {}).get("namespace") or ""
        for pdb in self.pdbs.by_index(NAMESPACE_INDEX, namespace):
            if pdb_selects(pdb, pod):
                self._enqueue(pdb)

    def pods_for(self, pdb: Obj) -> list[Obj]:
        namespace = (pdb.get("metadata") or {}).get("namespace") or ""
        return [p for p in self.pods.by_index(NAMESPACE_INDEX, namespace) if pdb_selects(pdb, p)]

    async def sync(self, key: str) -> float | None:
        """One pass over one budget; returns when to look again (a ``disruptedPods`` expiry)."""
        pdb = self.pdbs.get(key)
        if pdb is None:
            return None
        try:
            return await self._try_sync(pdb)
        except ApiError as exc:
            if exc.code in (404, 409):
                return None  # gone, or a newer version is on its way through the informer
            await self._fail_safe(pdb, exc.message or str(exc))
        except (ExpectedCountError, ValueError) as exc:
            await self._fail_safe(pdb, str(exc))
        return None

    async def _try_sync(self, pdb: Obj) -> float | None:
        pods = self.pods_for(pdb)
        if not pods:
            self._event(pdb, "Normal", "NoPods", "No matching pods found")
        spec = pdb.get("spec") or {}
        scale: int | None = None
        if _needs_scale(spec):
            try:
                scale, unmanaged = await expected_scale(pods, lambda ref, ns: controller_scale(self.client, ref, ns))
            except (ExpectedCountError, ValueError) as exc:
                self._event(pdb, "Warning", "CalculateExpectedPodCountFailed",
                            f"Failed to calculate the number of expected pods: {exc}")
                raise
            if unmanaged:
                self._event(pdb, "Warning", "UnmanagedPods",
                            "Pods selected by this PodDisruptionBudget (selector: "
                            f"{spec.get('selector')}) were found to be unmanaged. As a result, the status of "
                            "the PDB cannot be calculated correctly, which may result in undefined behavior. "
                            'To account for these pods please set ".spec.minAvailable" field of the PDB to '
                            "an integer value.")
        expected, desired = expected_and_desired(spec, len(pods), scale)
        now = self.clock.now()
        disrupted, recheck = disrupted_pod_map(pods, (pdb.get("status") or {}).get("disruptedPods"), now)
        healthy = count_healthy(pods, disrupted, now)
        status = budget_status(pdb, current_healthy=healthy, desired_healthy=desired, expected=expected,
                               disrupted=disrupted, now=self.clock.rfc3339())
        if status is not None:
            await self._write_status(pdb, status)
        return None if recheck is None else max(recheck - now, 0.0) + 0.001

    async def _write_status(self, pdb: Obj, status: Obj) -> None:
        new = deep_copy(pdb)
        new.setdefault("apiVersion", "policy/v1")
        new.setdefault("kind", "PodDisruptionBudget")
        new["status"] = status
        await self.client.update("poddisruptionbudgets.policy", new, subresource="status")
        self.writes += 1

    async def _fail_safe(self, pdb: Obj, message: str) -> None:
        try:
            await self._write_status(pdb, fail_safe_status(pdb, message, self.clock.rfc3339()))
        except ApiError as exc:
            if exc.code not in (404, 409):
                raise

    def _event(self, pdb: Obj, type_: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            obj = dict(pdb)
            obj.setdefault("apiVersion", "policy/v1")
            obj.setdefault("kind", "PodDisruptionBudget")
            self.recorder.event(obj, type_, reason, message)


__all__ = ["DisruptionController", "budget_status", "count_healthy", "disrupted_pod_map", "disruptions_allowed",
           "expected_and_desired", "expected_scale", "pdb_selects"]
