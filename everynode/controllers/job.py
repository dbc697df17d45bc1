"""The Job controller: runs a Job's pods to completion, counts what finished, and ends the Job
Complete or Failed.

Upstream: ``pkg/controller/job/job_controller.go`` (``syncJob``, ``manageJob``,
``trackJobStatusAndRemoveFinalizers``, ``flushUncountedAndRemoveFinalizers``,
``newSuccessCondition``/``newFailureCondition``, ``pastActiveDeadline``), ``backoff_utils.go``
and, for ``ttlSecondsAfterFinished``, ``pkg/controller/ttlafterfinished``.  Only NonIndexed Jobs
are run (an Indexed Job is served and validated but gets no pods), without podFailurePolicy,
successPolicy or managedBy.

Per Job key, one pass:

1. A Job with a ``Complete`` or ``Failed`` condition is done; only its TTL is looked after
   (deleted, in the background, ``ttlSecondsAfterFinished`` after it finished).
2. Its pods are the pods whose controller reference is the Job (uid).  Pods that finished and
   still carry the ``batch.kubernetes.io/job-tracking`` finalizer (every pod the controller
   creates has it) are counted exactly once, as upstream tracks them: first their uids go to
   ``status.uncountedTerminatedPods`` (one status write), then their finalizers are removed, then
   they move into ``succeeded``/``failed`` (a second write).  A pod deleted before it finished
   counts as failed (``podReplacementPolicy: TerminatingOrFailed``, the default).
3. ``failed > backoffLimit`` (or, with ``restartPolicy: OnFailure``, as many container restarts)
   → ``FailureTarget`` (``BackoffLimitExceeded``, "Job has reached the
   specified backoff limit"); past ``activeDeadlineSeconds`` since ``startTime`` →
   ``FailureTarget`` (``DeadlineExceeded``); succeeded ≥ completions (or, without completions,
   one success) with nothing active → ``SuccessCriteriaMet`` (``CompletionsReached``, "Reached
   expected number of succeeded pods").  Once such a condition is set the remaining pods are
   deleted, and when none is left terminating or uncounted the terminal condition follows —
   ``Failed`` or ``Complete`` with the same reason and message, ``completionTime`` for Complete —
   as 1.33 delays terminal conditions (JobPodReplacementPolicy/JobManagedBy on).
4. Otherwise pods are created or deleted towards ``min(parallelism, completions − succeeded)``
   (``parallelism`` when completions is unset and nothing succeeded yet); a suspended Job has
   none (condition ``Suspended``).  After a failure a new pod waits the back-off: 10 s doubled per
   consecutive failure since the last success, capped at 10 min, from the last failure.

A pod left holding the finalizer by a Job that was deleted (``kubectl delete job``: the garbage
collector deletes its pods) has it removed, so it can go (``syncOrphanPod``).

Creations and deletions are recorded as expectations (``client/expectations.py``) so a pass
never acts on an informer cache that has not yet seen its own writes.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from everynode.api.errors import ApiError
from everynode.api.meta import (
    controller_ref,
    deep_copy,
    key_of,
    make_controller_ref,
    resource_version,
    split_key,
)
from everynode.api.pod import is_pod_ready, timestamp_seconds
from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.expectations import Expectations
from everynode.client.informer import SharedInformerFactory
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]

TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_UID_INDEX = "job-controller-uid"
FIELD_MANAGER = "kube-controller-manager"
POD_FAILURE_BACKOFF = 10.0  # DefaultJobPodFailureBackOff
MAX_POD_FAILURE_BACKOFF = 600.0  # MaxJobPodFailureBackOff
BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")


# --------------------------------------------------------------------------- pure decisions


def _int_or(value: Any, default: int) -> int:
    """A defaulted integer field (defaulting sets it; a missing one reads as the default)."""
    return default if value is None else int(value)

def condition_true(job: Obj, type_: str) -> Obj | None:
    for cond in (job.get("status") or {}).get("conditions") or ():
        if cond.get("type") == type_ and cond.get("status") == "True":
            return cond
    return None


def is_finished(job: Obj) -> bool:
    """``IsJobFinished``: a ``Complete`` or ``Failed`` condition is True."""
    return condition_true(job, "Complete") is not None or condition_true(job, "Failed") is not None


def want_active(spec: Obj, *, succeeded: int, active: int) -> int:
    """``manageJob``'s target number of active pods (before suspension and back-off)."""
    parallelism = _int_or(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    if completions is None:
        return active if succeeded > 0 else parallelism
    return max(0, min(int(completions) - succeeded, parallelism))


def is_complete(spec: Obj, *, succeeded: int, active: int) -> bool:
    if spec.get("completions") is None:
        return succeeded > 0 and active == 0
    return succeeded >= int(spec["completions"]) and active == 0


def backoff_delay(failures_after_last_success: int) -> float:
    """``getRemainingTime``'s delay: 10 s doubled per consecutive failure, at most 10 min."""
    if failures_after_last_success <= 0:
        return 0.0
    return min(POD_FAILURE_BACKOFF * 2 ** (failures_after_last_success - 1), MAX_POD_FAILURE_BACKOFF)


def counts_as_failed(pod: Obj, spec: Obj) -> bool:
    """``isPodFailed``: Failed, or (unless only failed pods are replaced) deleted before it
    succeeded."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed":
        return True
    if spec.get("podReplacementPolicy") == "Failed":
        return False
    return bool(pod["metadata"].get("deletionTimestamp")) and phase != "Succeeded"


def is_active(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed") \
        and not pod["metadata"].get("deletionTimestamp")


def new_condition(type_: str, reason: str, message: str, now: str) -> Obj:
    return {"type": type_, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def with_condition(conditions: list[Obj] | None, cond: Obj) -> list[Obj]:
    """``updateConditions``: a condition of the same type and status is refreshed, else it is
    replaced or appended."""
    out = []
    found = False
    for existing in conditions or ():
        if existing.get("type") == cond["type"]:
            found = True
            if existing.get("status") == cond["status"] and existing.get("reason") == cond.get("reason"):
                out.append(existing)
            else:
                out.append(cond)
        else:
            out.append(existing)
    if not found:
        out.append(cond)
    return out


def past_backoff_limit_on_failure(spec: Obj, pods: list[Obj]) -> bool:
    """``pastBackoffLimitOnFailure``: with ``restartPolicy: OnFailure`` the kubelet restarts
    failing containers in place, so their restarts (of running and pending pods) count against
    the backoffLimit."""
    if ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") != "OnFailure":
        return False
    restarts = 0
    for pod in pods:
        status = pod.get("status") or {}
        if status.get("phase") in ("Running", "Pending"):
            for cs in (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or []):
                restarts += int(cs.get("restartCount") or 0)
    limit = _int_or(spec.get("backoffLimit"), 6)
    return restarts > 0 if limit == 0 else restarts >= limit


def _finished_at(pod: Obj) -> float | None:
    for cs in (pod.get("status") or {}).get("containerStatuses") or ():
        finished = ((cs.get("state") or {}).get("terminated") or {}).get("finishedAt")
        if finished:
            return timestamp_seconds(finished)
    return None


@dataclass
class BackoffRecord:
    """``backoffRecord``: consecutive failures since the last success and when the last was."""

    failures_after_last_success: int = 0
    last_failure_time: float | None = None


# --------------------------------------------------------------------------- the controller

def _job_uid_of_pod(pod: Obj) -> list[str]:
    ref = controller_ref(pod)
    if ref is None or ref.get("kind") != "Job" or not str(ref.get("apiVersion") or "").startswith("batch/"):
        return []
    return [str(ref.get("uid") or "")]


def _log_failure(key: Any, exc: Exception, _retried: bool) -> None:
    log.debug("job %s: %s", key, exc)


class JobController(ControllerLifecycle):
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock,
                 recorder: EventRecorder | None = None) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.expectations = Expectations(clock=clock)
        self.backoff: dict[str, BackoffRecord] = {}
        self._written: dict[str, Obj] = {}
        self._finalizers_removed: dict[str, set[str]] = {}
        self.kit = ControllerKit("job", informers=informers)
        self.queue = self.kit.queue()
        self.orphans = self.kit.queue("job_orphan_pod")
        self.jobs = self.kit.informer("jobs.batch")
        self.pods = self.kit.informer("pods", indexers={JOB_UID_INDEX: _job_uid_of_pod})
        self.kit.watch(self.jobs, on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new),
                       on_delete=self._job_deleted)
        self.kit.watch(self.pods, on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted)
        self.kit.workers(self.queue, self.sync, on_error=_log_failure)
        self.kit.workers(self.orphans, self.sync_orphan_pod)

    # -- events -----------------------------------------------------------------------------------

    def _enqueue(self, job: Obj) -> None:
        self.queue.add(key_of(job))

    def _job_deleted(self, job: Obj) -> None:
        """``deleteJob``: forget it, and free its pods of the tracking finalizer
        (``cleanupPodFinalizers``) so they can go."""
        key = key_of(job)
        self.expectations.delete_expectations(key)
        self.backoff.pop(key, None)
        self._written.pop(key, None)
        self._finalizers_removed.pop(key, None)
        for pod in self.pods.by_index(JOB_UID_INDEX, job["metadata"].get("uid") or ""):
            self._check_orphan(pod)

    def _owner_key(self, pod: Obj) -> str | None:
        ref = controller_ref(pod)
        if ref is None or not _job_uid_of_pod(pod):
            return None
        return f"{pod['metadata'].get('namespace') or ''}/{ref.get('name') or ''}"

    def _check_orphan(self, pod: Obj) -> None:
        """``enqueueOrphanPod``: a pod holding the tracking finalizer with no Job (of its uid) to
        count it."""
        md = pod["metadata"]
        if TRACKING_FINALIZER not in (md.get("finalizers") or ()):
            return
        ref = controller_ref(pod)
        key = self._owner_key(pod)
        job = self.jobs.get(key) if key is not None else None
        if ref is None or job is None or job["metadata"].get("uid") != ref.get("uid"):
            self.orphans.add(key_of(pod))

    def _pod_added(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        self._check_orphan(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.queue.add(key)

    def _pod_updated(self, old: Obj, pod: Obj) -> None:
        """A pod marked for deletion counts as the deletion observed (it may stay, finalized)."""
        key = self._owner_key(pod)
        self._check_orphan(pod)
        if key is None:
            return
        if pod["metadata"].get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
            self.expectations.deletion_observed(key)
        self.queue.add(key)

    def _pod_deleted(self, pod: Obj) -> None:
        key = self._owner_key(pod)
        if key is not None:
            if not pod["metadata"].get("deletionTimestamp"):
                self.expectations.deletion_observed(key)
            self.queue.add(key)

    # -- one pass ---------------------------------------------------------------------------------

    async def sync(self, key: str) -> float | None:
        job = self._current(key)
        if job is None:
            return None
        if is_finished(job):
            return await self._ttl(job)
        if not self.expectations.satisfied(key):
            return None
        uid = job["metadata"]["uid"]
        pods = [p for p in self.pods.by_index(JOB_UID_INDEX, uid)
                if p["metadata"].get("namespace") == job["metadata"].get("namespace")]
        spec = job.get("spec") or {}
        status = dict(job.get("status") or {})
        now, now_text = self.clock.now(), self.clock.rfc3339()
        uncounted = status.get("uncountedTerminatedPods") or {}
        uncounted_succeeded = list(uncounted.get("succeeded") or [])
        uncounted_failed = list(uncounted.get("failed") or [])
        known = set(uncounted_succeeded) | set(uncounted_failed)

        # 2. what finished since the last pass (pods still carrying our finalizer)
        record = self.backoff.setdefault(key, BackoffRecord())
        # Pods whose finalizer this controller already removed (and counted), while the informer
        # still shows it — upstream's finalizer expectations (uidTrackingExpectations).
        removed = self._finalizers_removed.setdefault(key, set())
        removed &= {p["metadata"]["uid"] for p in pods
                    if TRACKING_FINALIZER in (p["metadata"].get("finalizers") or ())}
        for pod in pods:
            pod_uid = pod["metadata"]["uid"]
            if TRACKING_FINALIZER not in (pod["metadata"].get("finalizers") or ()) or pod_uid in known \
                    or pod_uid in removed:
                continue
            if (pod.get("status") or {}).get("phase") == "Succeeded":
                uncounted_succeeded.append(pod_uid)
                record.failures_after_last_success = 0
                record.last_failure_time = None
            elif counts_as_failed(pod, spec):
                uncounted_failed.append(pod_uid)
                record.failures_after_last_success += 1
                record.last_failure_time = _finished_at(pod) or now
        active = [p for p in pods if is_active(p)]
        terminating = [p for p in pods if p["metadata"].get("deletionTimestamp")
                       and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
        succeeded = int(status.get("succeeded") or 0) + len(uncounted_succeeded)
        failed = int(status.get("failed") or 0) + len(uncounted_failed)

        suspended = bool(spec.get("suspend"))
        conditions = list(status.get("conditions") or [])
        if not suspended and not status.get("startTime"):
            status["startTime"] = now_text
        target = condition_true(job, "FailureTarget") or condition_true(job, "SuccessCriteriaMet")
        recheck: float | None = None
        if target is None:
            deadline = spec.get("activeDeadlineSeconds")
            limit = _int_or(spec.get("backoffLimit"), 6)
            if failed > limit or past_backoff_limit_on_failure(spec, active):
                target = new_condition("FailureTarget", *BACKOFF_LIMIT_EXCEEDED, now_text)
            elif deadline is not None and status.get("startTime") and not suspended:
                remaining = timestamp_seconds(status["startTime"]) + int(deadline) - now
                if remaining <= 0:
                    target = new_condition("FailureTarget", *DEADLINE_EXCEEDED, now_text)
                else:
                    recheck = remaining
            if target is None and not suspended and is_complete(spec, succeeded=succeeded, active=len(active)):
                target = new_condition("SuccessCriteriaMet", *COMPLETIONS_REACHED, now_text)
            if target is not None:
                conditions = with_condition(conditions, target)
                if target["type"] == "FailureTarget":
                    self._event(job, "Warning", target["reason"], target["message"])

        # 3./4. the pods
        if target is not None:
            await self._delete_pods(key, job, active)
            terminating = terminating + active  # counted as they go; the Job finishes after them
            active = []
        else:
            conditions, wait = await self._manage(key, job, spec, active, succeeded, record, conditions, now,
                                                  now_text, suspended)
            if wait is not None:
                recheck = wait if recheck is None else min(recheck, wait)

        # the status, with the newly finished pods as uncounted
        if active:
            status["active"] = len(active)
        else:
            status.pop("active", None)  # omitempty
        status["ready"] = sum(1 for p in active if is_pod_ready(p))
        status["terminating"] = len(terminating)
        status["uncountedTerminatedPods"] = _uncounted(uncounted_succeeded, uncounted_failed)
        if conditions:
            status["conditions"] = conditions
        job = await self._write_status(job, status)

        # finalizers off the counted pods, then the counters
        if uncounted_succeeded or uncounted_failed:
            await self._remove_finalizers(pods, set(uncounted_succeeded) | set(uncounted_failed))
            removed |= set(uncounted_succeeded) | set(uncounted_failed)
            status = dict(job.get("status") or {})
            if uncounted_succeeded:
                status["succeeded"] = int(status.get("succeeded") or 0) + len(uncounted_succeeded)
            if uncounted_failed:
                status["failed"] = int(status.get("failed") or 0) + len(uncounted_failed)
            status["uncountedTerminatedPods"] = {}
            job = await self._write_status(job, status)

        # the terminal condition once nothing is left running or uncounted
        if target is not None and not terminating and not active:
            await self._finish(job, target, now_text)
            return None
        return recheck

    def _current(self, key: str) -> Obj | None:
        """The Job from the informer, or the version this controller last wrote when the informer
        has not caught up with it yet: counting again from a status that predates our own write
        would count finished pods twice or create their replacements again."""
        cached = self.jobs.get(key)
        written = self._written.get(key)
        if cached is None or written is None:
            self._written.pop(key, None)
            return cached
        if written["metadata"].get("uid") == cached["metadata"].get("uid") and \
                resource_version(written) > resource_version(cached):
            return written
        del self._written[key]
        return cached

    async def sync_orphan_pod(self, key: str) -> None:
        """``syncOrphanPod``: remove the tracking finalizer of a pod whose Job is gone."""
        pod = self.pods.get(key)
        if pod is None:
            return
        ref = controller_ref(pod)
        owner = self._owner_key(pod)
        job = self.jobs.get(owner) if owner is not None else None
        if ref is not None and job is not None and job["metadata"].get("uid") == ref.get("uid"):
            return  # its Job counts it
        await self._remove_finalizers([pod], {pod["metadata"]["uid"]})

    async def _manage(self, key: str, job: Obj, spec: Obj, active: list[Obj], succeeded: int,
                      record: BackoffRecord, conditions: list[Obj], now: float, now_text: str,
                      suspended: bool) -> tuple[list[Obj], float | None]:
        if suspended:
            conditions = with_condition(conditions, new_condition("Suspended", "JobSuspended", "Job suspended",
                                                                  now_text))
            await self._delete_pods(key, job, active)
            return conditions, None
        if any(c.get("type") == "Suspended" and c.get("status") == "True" for c in conditions):
            conditions = with_condition(conditions, {**new_condition("Suspended", "JobResumed", "Job resumed",
                                                                     now_text), "status": "False"})
        want = want_active(spec, succeeded=succeeded, active=len(active))
        if len(active) > want:
            extra = sorted(active, key=lambda p: is_pod_ready(p))[: len(active) - want]
            await self._delete_pods(key, job, extra)
            return conditions, None
        missing = want - len(active)
        if missing <= 0:
            return conditions, None
        if record.last_failure_time is not None:
            remaining = record.last_failure_time + backoff_delay(record.failures_after_last_success) - now
            if remaining > 0:
                return conditions, remaining
        await self._create_pods(key, job, missing)
        return conditions, None

    async def _create_pods(self, key: str, job: Obj, count: int) -> None:
        """``manageJob``'s slow start: batches of 1, 2, 4, … until a create fails."""
        template = (job.get("spec") or {}).get("template") or {}
        tmd = template.get("metadata") or {}
        md = job["metadata"]
        body: Obj = {"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"generateName": f"{md['name']}-", "namespace": md.get("namespace") or "",
                                  "labels": dict(tmd.get("labels") or {}),
                                  "ownerReferences": [make_controller_ref(job, api_version="batch/v1", kind="Job")],
                                  "finalizers": [TRACKING_FINALIZER]},
                     "spec": deep_copy(template.get("spec") or {})}
        if tmd.get("annotations"):
            body["metadata"]["annotations"] = dict(tmd["annotations"])
        self.expectations.expect_creations(key, count)
        batch, done = 1, 0
        while done < count:
            size = min(batch, count - done)
            results = await asyncio.gather(*(self._create_one(key, job, body) for _ in range(size)))
            done += size
            if not all(results):
                self.expectations.lower_expectations(key, count - done, 0)
                return
            batch *= 2

    async def _create_one(self, key: str, job: Obj, body: Obj) -> bool:
        try:
            pod = await self.client.create("pods", deep_copy(body), field_manager=FIELD_MANAGER)
        except ApiError as exc:
            self.expectations.creation_observed(key)
            self._event(job, "Warning", "FailedCreate", f"Error creating: {exc.message}")
            return False
        self._event(job, "Normal", "SuccessfulCreate", f"Created pod: {pod['metadata']['name']}")
        return True

    async def _delete_pods(self, key: str, job: Obj, pods: list[Obj]) -> None:
        if not pods:
            return
        self.expectations.expect_deletions(key, len(pods))
        for pod in pods:
            try:
                await self.client.delete("pods", pod["metadata"]["name"], namespace=pod["metadata"]["namespace"],
                                         preconditions={"uid": pod["metadata"]["uid"]})
                self._event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
            except ApiError as exc:
                self.expectations.deletion_observed(key)
                if exc.code != 404:
                    raise

    async def _remove_finalizers(self, pods: list[Obj], uids: set[str]) -> None:
        for pod in pods:
            md = pod["metadata"]
            finalizers = md.get("finalizers") or []
            if md["uid"] not in uids or TRACKING_FINALIZER not in finalizers:
                continue
            i = finalizers.index(TRACKING_FINALIZER)
            patch = [{"op": "test", "path": f"/metadata/finalizers/{i}", "value": TRACKING_FINALIZER},
                     {"op": "remove", "path": f"/metadata/finalizers/{i}"}]
            try:
                await self.client.patch("pods", md["name"], patch, namespace=md["namespace"], patch_type="json",
                                        field_manager=FIELD_MANAGER)
            except ApiError as exc:
                if exc.code not in (404, 422):
                    raise

    async def _write_status(self, job: Obj, status: Obj) -> Obj:
        if status == (job.get("status") or {}):
            return job
        new = deep_copy(job)
        new.setdefault("apiVersion", "batch/v1")
        new.setdefault("kind", "Job")
        new["status"] = status
        written = await self.client.update("jobs.batch", new, subresource="status", field_manager=FIELD_MANAGER)
        self._written[key_of(written)] = written
        return written

    async def _finish(self, job: Obj, target: Obj, now_text: str) -> None:
        status = dict(job.get("status") or {})
        final = "Complete" if target["type"] == "SuccessCriteriaMet" else "Failed"
        status["conditions"] = with_condition(status.get("conditions"),
                                              new_condition(final, target["reason"], target["message"], now_text))
        if final == "Complete":
            status["completionTime"] = now_text
            self._event(job, "Normal", "Completed", "Job completed")
        await self._write_status(job, status)
        self.backoff.pop(key_of(job), None)

    async def _ttl(self, job: Obj) -> float | None:
        """``ttlafterfinished``: delete a finished Job ``ttlSecondsAfterFinished`` after it finished."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return None
        finished = next((c.get("lastTransitionTime") for c in (job.get("status") or {}).get("conditions") or ()
                         if c.get("type") in ("Complete", "Failed") and c.get("status") == "True"), None)
        if not finished:
            return None
        remaining = timestamp_seconds(finished) + int(ttl) - self.clock.now()
        if remaining > 0:
            return remaining
        namespace, name = split_key(key_of(job))
        try:
            await self.client.delete("jobs.batch", name, namespace=namespace, propagation_policy="Background",
                                     preconditions={"uid": job["metadata"]["uid"]})
        except ApiError as exc:
            if exc.code != 404:
                raise
        return None

    def _event(self, job: Obj, type_: str, reason: str, message: str) -> None:
        if self.recorder is not None:
            obj = dict(job)
            obj.setdefault("apiVersion", "batch/v1")
            obj.setdefault("kind", "Job")
            self.recorder.event(obj, type_, reason, message)


def _uncounted(succeeded: list[str], failed: list[str]) -> Obj:
    out: Obj = {}
    if succeeded:
        out["succeeded"] = succeeded
    if failed:
        out["failed"] = failed
    return out
