"""Leader election on a Lease: one leader among candidates, CAS, failover, release, lease fields."""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from everynode.api import errors
from everynode.client.leaderelection import LEASES, LeaderElector
from everynode.clock import Clock

Obj = dict[str, Any]
MICROTIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class LeaseApi:
    """Leases with resourceVersion compare-and-swap, as the API server enforces it."""

    def __init__(self) -> None:
        self.rv = 0
        self.leases: dict[tuple[str, str], Obj] = {}
        self.writes = 0

    async def get(self, resource: str, name: str, *, namespace: str = "", **_: Any) -> Obj:
        assert resource == LEASES
        await asyncio.sleep(0)
        try:
            return self.leases[(namespace, name)]
        except KeyError:
            raise errors.not_found("leases", "coordination.k8s.io", name) from None

    async def create(self, resource: str, obj: Obj, *, namespace: str | None = None, **_: Any) -> Obj:
        await asyncio.sleep(0)
        key = (namespace or obj["metadata"]["namespace"], obj["metadata"]["name"])
        if key in self.leases:
            raise errors.already_exists("leases", "coordination.k8s.io", key[1])
        return self._store(key, obj)

    async def update(self, resource: str, obj: Obj, **_: Any) -> Obj:
        await asyncio.sleep(0)
        md = obj["metadata"]
        key = (md["namespace"], md["name"])
        cur = self.leases.get(key)
        if cur is None:
            raise errors.not_found("leases", "coordination.k8s.io", key[1])
        if md.get("resourceVersion") != cur["metadata"]["resourceVersion"]:
            raise errors.stale("leases", "coordination.k8s.io", key[1])
        return self._store(key, obj)

    def _store(self, key: tuple[str, str], obj: Obj) -> Obj:
        self.rv += 1
        self.writes += 1
        stored = {**obj, "metadata": {**obj["metadata"], "namespace": key[0], "resourceVersion": str(self.rv)}}
        self.leases[key] = stored
        return stored


def elector(api: LeaseApi, identity: str, **kw: Any) -> LeaderElector:
    opts = {"lease_duration": 0.3, "renew_deadline": 0.2, "retry_period": 0.02}
    opts.update(kw)
    return LeaderElector(api, lease_name="everynode-controllers", namespace="kube-system", identity=identity,
                         clock=Clock(), **opts)


async def until(cond, timeout: float = 5.0) -> None:
    async def poll() -> None:
        while not cond():
            await asyncio.sleep(0.005)
    await asyncio.wait_for(poll(), timeout)


@pytest.mark.parametrize(("kw", "message"), [
    ({"lease_duration": 1, "renew_deadline": 1}, "lease_duration"),
    ({"renew_deadline": 0.1, "retry_period": 0.1}, "renew_deadline"),
])
def test_invalid_timings_rejected(kw, message):
    with pytest.raises(ValueError, match=message):
        elector(LeaseApi(), "a", **kw)


async def test_first_candidate_creates_lease_with_upstream_fields():
    api = LeaseApi()
    e = elector(api, "a")
    assert await e.try_acquire_or_renew()
    lease = api.leases[("kube-system", "everynode-controllers")]
    spec = lease["spec"]
    assert lease["apiVersion"] == "coordination.k8s.io/v1" and lease["kind"] == "Lease"
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 0  # rounded seconds of 0.3
    assert spec["leaseTransitions"] == 0
    assert MICROTIME.match(spec["acquireTime"]) and MICROTIME.match(spec["renewTime"])
    # Renewing keeps acquireTime and transitions.
    assert await e.try_acquire_or_renew()
    spec2 = api.leases[("kube-system", "everynode-controllers")]["spec"]
    assert spec2["acquireTime"] == spec["acquireTime"] and spec2["leaseTransitions"] == 0


async def test_second_candidate_cannot_take_a_live_lease():
    api = LeaseApi()
    a, b = elector(api, "a"), elector(api, "b")
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    assert b.leader == "a"


async def test_concurrent_attempts_only_one_wins():
    api = LeaseApi()
    cands = [elector(api, f"c{i}") for i in range(5)]
    results = await asyncio.gather(*(c.try_acquire_or_renew() for c in cands))
    assert sum(results) == 1


async def test_two_electors_one_leads_and_failover_after_leader_stops():
    api = LeaseApi()
    leading: set[str] = set()
    both_at_once = []

    def started(name: str):
        def cb() -> None:
            leading.add(name)
            if len(leading) > 1:
                both_at_once.append(set(leading))
        return cb

    def stopped(name: str):
        return lambda: leading.discard(name)

    a = elector(api, "a", release_on_cancel=False)
    b = elector(api, "b", release_on_cancel=False)
    ta = asyncio.ensure_future(a.run(started("a"), stopped("a")))
    await until(lambda: leading == {"a"})
    tb = asyncio.ensure_future(b.run(started("b"), stopped("b")))
    # b campaigns for a while (several retry periods) without winning.
    await until(lambda: api.writes >= 5)
    assert leading == {"a"} and not b.is_leader
    # a dies without releasing: b takes over after the lease duration.
    ta.cancel()
    await asyncio.gather(ta, return_exceptions=True)
    await until(lambda: leading == {"b"})
    spec = api.leases[("kube-system", "everynode-controllers")]["spec"]
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert both_at_once == []
    tb.cancel()
    await asyncio.gather(tb, return_exceptions=True)


async def test_release_on_cancel_lets_successor_in_quickly():
    api = LeaseApi()
    a = elector(api, "a", lease_duration=30, renew_deadline=20, retry_period=0.02)
    b = elector(api, "b", lease_duration=30, renew_deadline=20, retry_period=0.02)
    ta = asyncio.ensure_future(a.run(lambda: None))
    await until(lambda: a.is_leader)
    tb = asyncio.ensure_future(b.run(lambda: None))
    await until(lambda: b.leader == "a")
    ta.cancel()
    await asyncio.gather(ta, return_exceptions=True)
    spec = api.leases[("kube-system", "everynode-controllers")]["spec"]
    assert spec["holderIdentity"] == "" and spec["leaseDurationSeconds"] == 1
    # An empty holder may be taken at once: b leads long before the 30 s lease would have expired.
    await until(lambda: b.is_leader, timeout=5)
    tb.cancel()
    await asyncio.gather(tb, return_exceptions=True)


async def test_leader_that_cannot_renew_steps_down():
    api = LeaseApi()
    stopped = asyncio.Event()
    work_cancelled = asyncio.Event()

    async def work() -> None:
        try:
            await asyncio.sleep(100)
        except asyncio.CancelledError:
            work_cancelled.set()
            raise

    a = elector(api, "a")
    task = asyncio.ensure_future(a.run(work, stopped.set))
    await until(lambda: a.is_leader)
    # Someone else overwrites the lease (a's CAS fails from now on).
    key = ("kube-system", "everynode-controllers")
    api._store(key, {**api.leases[key], "spec": {**api.leases[key]["spec"], "holderIdentity": "intruder"}})
    await asyncio.wait_for(task, 5)  # run returns after renew_deadline
    assert stopped.is_set() and work_cancelled.is_set() and not a.is_leader


def test_failover_with_upstream_timings_under_virtual_time():
    """15 s / 10 s / 2 s as kube-controller-manager uses them, on a virtual-time loop."""
    from everynode.virtualtime import run_virtual, virtual_clock

    async def main() -> tuple[float, float, dict]:
        loop = asyncio.get_running_loop()
        api = LeaseApi()
        clock = virtual_clock()
        a = LeaderElector(api, lease_name="l", namespace="kube-system", identity="a", clock=clock,
                          release_on_cancel=False)
        b = LeaderElector(api, lease_name="l", namespace="kube-system", identity="b", clock=clock)
        ta = asyncio.ensure_future(a.run(lambda: None))
        await until(lambda: a.is_leader, timeout=60)
        tb = asyncio.ensure_future(b.run(lambda: None))
        await asyncio.sleep(60)  # a renews for a minute; b never gets in
        assert a.is_leader and not b.is_leader
        ta.cancel()
        await asyncio.gather(ta, return_exceptions=True)
        died = loop.time()
        await until(lambda: b.is_leader, timeout=120)
        took = loop.time() - died
        spec = api.leases[("kube-system", "l")]["spec"]
        tb.cancel()
        await asyncio.gather(tb, return_exceptions=True)
        return took, loop.time(), spec

    took, _end, spec = run_virtual(main())
    # b waits out the lease duration from when it *noticed* a's last renewal (a renewed at most 2 s
    # before dying; b polls every 2-4.4 s, so it notices up to 4.4 s after), plus one more poll.
    assert 15.0 - 2.0 <= took <= 15.0 + 2 * 4.4
    assert spec["holderIdentity"] == "b" and spec["leaseTransitions"] == 1
    assert spec["leaseDurationSeconds"] == 15
