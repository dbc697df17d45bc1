"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's ``tools/leaderelection`` does it.

Several controller-manager replicas may run; exactly one may act.  The rules (``leaderelection.go``,
``resourcelock/leaselock.go``):

* A candidate *acquires* by writing itself as ``holderIdentity`` into the Lease, retrying every
  ``retry_period`` (jittered ×1.2).  It may only do so when the Lease does not exist, has no holder,
  or its record has not changed for ``lease_duration`` seconds *as observed locally*: expiry is
  measured on the candidate's own monotonic clock from the moment it last saw the record change,
  never by comparing ``renewTime`` with local wall time, so clock skew between machines does not
  matter.
* Every write is a compare-and-swap on the Lease's resourceVersion (create for a missing Lease), so
  two candidates can never both succeed from the same observed state: **two electors never both
  lead**.
* The leader *renews* (``renewTime``) every ``retry_period``; when it has not managed to renew for
  ``renew_deadline`` seconds it stops leading (``on_stopped_leading``) and :meth:`run` returns.
  ``lease_duration > renew_deadline`` guarantees it gives up before anybody else may take over.
* Taking over from another holder increments ``leaseTransitions`` and sets ``acquireTime``.
* When :meth:`run` is cancelled while leading and ``release_on_cancel`` is set, the Lease is
  released (empty holder, ``leaseDurationSeconds: 1``) so a successor need not wait.

Timestamps are ``metav1.MicroTime`` (``2006-01-02T15:04:05.000000Z``) from the injected clock; waits
are ``asyncio.sleep`` (virtual-time friendly).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from everynode.api.errors import ApiError
from everynode.clock import Clock

log = logging.getLogger(__name__)

LEASES = "leases.coordination.k8s.io"
JITTER_FACTOR = 1.2

Obj = dict[str, Any]
Callback = Callable[[], Any]


class LeaderElector:
    def __init__(self, client: Any, *, lease_name: str, namespace: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 clock: Clock | None = None, release_on_cancel: bool = True,
                 on_new_leader: Callable[[str], None] | None = None) -> None:
        if lease_duration <= renew_deadline:
            raise ValueError("lease_duration must be greater than renew_deadline")
        if renew_deadline <= JITTER_FACTOR * retry_period:
            raise ValueError("renew_deadline must be greater than retry_period*1.2")
        if retry_period <= 0:
            raise ValueError("retry_period must be greater than zero")
        if not identity:
            raise ValueError("identity may not be empty")
        self.client = client
        self.lease_name = lease_name
        self.namespace = namespace
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.clock = clock if clock is not None else Clock()
        self.release_on_cancel = release_on_cancel
        self.on_new_leader = on_new_leader
        self._observed: Obj | None = None  # the Lease spec last seen (or written) by us
        self._observed_rv: str | None = None
        self._observed_time: float = 0.0  # clock.monotonic() when the record last changed
        self._reported_leader: str | None = None
        self._leading = False

    # -- state -----------------------------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self._leading

    @property
    def leader(self) -> str | None:
        """The holder as last observed (may be another candidate)."""
        if self._observed is None:
            return None
        return self._observed.get("holderIdentity") or None

    # -- one attempt (tryAcquireOrRenew) ---------------------------------------------------------

    def _spec(self, *, acquire_time: str, transitions: int, now: str) -> Obj:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": int(round(self.lease_duration)),
            "acquireTime": acquire_time,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def _observe(self, lease: Obj) -> None:
        spec = lease.get("spec") or {}
        if spec != self._observed:
            self._observed = dict(spec)
            self._observed_time = self.clock.monotonic()
        self._observed_rv = (lease.get("metadata") or {}).get("resourceVersion")
        holder = spec.get("holderIdentity") or ""
        if holder != self._reported_leader:
            self._reported_leader = holder
            if holder and self.on_new_leader is not None:
                try:
                    self.on_new_leader(holder)
                except Exception:
                    log.exception("on_new_leader callback failed")

    async def try_acquire_or_renew(self) -> bool:
        now = self.clock.rfc3339_micro()
        try:
            lease = await self.client.get(LEASES, self.lease_name, namespace=self.namespace)
        except ApiError as exc:
            if exc.code != 404:
                log.warning("error retrieving lease %s/%s: %s", self.namespace, self.lease_name, exc.message)
                return False
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.lease_name, "namespace": self.namespace},
                "spec": self._spec(acquire_time=now, transitions=0, now=now),
            }
            try:
                created = await self.client.create(LEASES, body, namespace=self.namespace)
            except ApiError as exc2:
                log.info("error creating lease %s/%s: %s", self.namespace, self.lease_name, exc2.message)
                return False
            self._observe(created)
            return True

        self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        held_by_me = holder == self.identity
        if holder and not held_by_me and self._observed_time + self._duration_of(spec) > self.clock.monotonic():
            return False  # held by another candidate and not expired
        if held_by_me:
            acquire_time = spec.get("acquireTime") or now
            transitions = int(spec.get("leaseTransitions") or 0)
        else:
            acquire_time = now
            transitions = int(spec.get("leaseTransitions") or 0) + 1
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {**_keep_metadata(lease), "resourceVersion": self._observed_rv},
            "spec": self._spec(acquire_time=acquire_time, transitions=transitions, now=now),
        }
        try:
            updated = await self.client.update(LEASES, body)
        except ApiError as exc:
            log.info("failed to update lease %s/%s: %s", self.namespace, self.lease_name, exc.message)
            return False
        self._observe(updated)
        return True

    def _duration_of(self, spec: Obj) -> float:
        # The holder's own duration is what it promised; fall back to ours when absent.
        value = spec.get("leaseDurationSeconds")
        return float(value) if value else self.lease_duration

    async def release(self) -> bool:
        """Give the Lease up if we hold it (``holderIdentity`` emptied, duration 1 s)."""
        if self._observed is None or self._observed.get("holderIdentity") != self.identity:
            return False
        now = self.clock.rfc3339_micro()
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.lease_name, "namespace": self.namespace,
                         "resourceVersion": self._observed_rv},
            "spec": {
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": int(self._observed.get("leaseTransitions") or 0),
            },
        }
        try:
            updated = await self.client.update(LEASES, body)
        except ApiError as exc:
            log.warning("failed to release lease %s/%s: %s", self.namespace, self.lease_name, exc.message)
            return False
        self._observe(updated)
        return True

    # -- the loop --------------------------------------------------------------------------------

    async def _attempt(self, timeout: float | None) -> bool:
        try:
            if timeout is None:
                return await self.try_acquire_or_renew()
            return await asyncio.wait_for(self.try_acquire_or_renew(), timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # transport errors, timeouts
            log.warning("leader election attempt failed: %r", exc)
            return False

    async def _acquire(self) -> None:
        while True:
            if await self._attempt(self.renew_deadline):
                log.info("%s acquired lease %s/%s", self.identity, self.namespace, self.lease_name)
                return
            await asyncio.sleep(self.retry_period * (1.0 + random.random() * JITTER_FACTOR))

    async def _renew(self) -> None:
        """Renew every retry_period; return when renewing failed for renew_deadline."""
        while True:
            await asyncio.sleep(self.retry_period)
            deadline = self.clock.monotonic() + self.renew_deadline
            while True:
                remaining = deadline - self.clock.monotonic()
                if remaining <= 0:
                    log.info("%s failed to renew lease %s/%s: timed out", self.identity, self.namespace,
                             self.lease_name)
                    return
                if await self._attempt(remaining):
                    break
                await asyncio.sleep(min(self.retry_period, max(0.0, deadline - self.clock.monotonic())))

    async def run(self, on_started_leading: Callback, on_stopped_leading: Callback | None = None) -> None:
        """Campaign until elected, call ``on_started_leading`` (a coroutine function runs as a task,
        cancelled when leadership ends), keep renewing; return once leadership is lost, after
        ``on_stopped_leading``.  Cancelling ``run`` while leading releases the Lease."""
        lead_task: asyncio.Task[Any] | None = None
        cancelled = False
        try:
            await self._acquire()
            self._leading = True
            result = on_started_leading()
            if inspect.isawaitable(result):
                lead_task = asyncio.ensure_future(_log_errors(result))
            await self._renew()
        except asyncio.CancelledError:
            cancelled = True
            raise
        finally:
            was_leading = self._leading
            self._leading = False
            if lead_task is not None and not lead_task.done():
                lead_task.cancel()
                try:
                    await lead_task
                except BaseException:  # noqa: BLE001 - the leader's work ended; nothing to report
                    pass
            if was_leading and cancelled and self.release_on_cancel:
                await self.release()
            if was_leading and on_stopped_leading is not None:
                try:
                    result = on_stopped_leading()
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("on_stopped_leading failed")


def _keep_metadata(lease: Obj) -> Obj:
    md = lease.get("metadata") or {}
    return {k: v for k, v in md.items() if k not in ("managedFields",)}


async def _log_errors(aw: Awaitable[Any]) -> Any:
    try:
        return await aw
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("on_started_leading failed")
        return None
