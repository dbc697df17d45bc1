"""The incremental health monitor against the full walk (the oracle of
tests/support/nodelifecycle_oracle.py): the same scenario, run twice on a
virtual-time loop (once per controller), must produce the same writes, events and zone decisions at
the same virtual times.

Scenario (two zones, seven nodes, a client that yields to the loop on every write so that
Lease renewals land in the middle of a pass, one excluded from disruption, kubelets renewing their Leases
at staggered offsets so renewals land between and on monitor ticks): a node stops
heartbeating (Unknown, unreachable taints, its pods marked not ready) and comes back; a node
reports Ready=False; a whole zone goes silent (fully disrupted); a node is deleted; a node that
never posts status is created (startup grace); every node goes silent (master disruption mode)
and one comes back; a pod is bound to a not-Ready node.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from everynode.api import errors
from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.clock import Clock
from everynode.controllers.nodelifecycle import EXCLUDE_DISRUPTION_LABEL, NodeLifecycleController
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock
from tests.support.nodelifecycle_oracle import FullWalkNodeLifecycleController
from tests.support.nodes import post_condition

Obj = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
NODES = {"a1": "z1", "a2": "z1", "a3": "z1", "a4": "z1", "ax": "z1", "b1": "z2", "b2": "z2"}


class RecordingClient(InProcessClient):
    """Logs every write the controller makes: (virtual time, verb, resource, name, what).  Each
    write yields to the loop first, as a networked client would, so that other tasks (kubelet
    renewals, informer deliveries) run in the middle of a monitor pass."""

    log: list[tuple[Any, ...]]
    on_write: Callable[[str, str], Awaitable[None]] | None = None
    fail_every = 0  # every n-th node patch fails with a 500 (interrupting the pass that made it)
    patches = 0

    async def _yield(self, resource: str, name: str) -> None:
        if self.on_write is not None:
            await self.on_write(resource, name)
        for _ in range(8):
            await asyncio.sleep(0)

    def _t(self) -> float:
        return round(asyncio.get_running_loop().time(), 6)

    async def update(self, resource: str, obj: Obj, **kw: Any) -> Obj:
        conds = sorted((c.get("type"), c.get("status"), c.get("reason")) for c in
                       (obj.get("status") or {}).get("conditions") or ())
        self.log.append((self._t(), "update", resource, kw.get("subresource"), obj["metadata"]["name"], conds))
        await self._yield(resource, obj["metadata"]["name"])
        return await super().update(resource, obj, **kw)

    async def patch(self, resource: str, name: str, patch: Any, **kw: Any) -> Obj:
        self.log.append((self._t(), "patch", resource, name, repr(patch)))
        await self._yield(resource, name)
        self.patches += 1
        if self.fail_every and self.patches % self.fail_every == 0:
            raise errors.internal("injected failure")
        return await super().patch(resource, name, patch, **kw)


class Recorder:
    def __init__(self, log: list[tuple[Any, ...]]) -> None:
        self.log = log

    def event(self, obj: Obj, type_: str, reason: str, message: str) -> None:
        self.log.append((round(asyncio.get_running_loop().time(), 6), "event", obj.get("kind"),
                         obj.get("name") or obj["metadata"]["name"], reason, message))


class Kubelets:
    """Stand-in kubelets: each live node renews its Lease every 10 s at its own offset."""

    def __init__(self, client: InProcessClient, clock: Clock) -> None:
        self.client = client
        self.clock = clock
        self.alive: set[str] = set()
        self._tasks: list[asyncio.Task[None]] = []

    async def add(self, name: str, zone: str, *, ready: bool = True, offset: float = 0.0) -> None:
        labels = {ZONE: zone}
        if name == "ax":
            labels[EXCLUDE_DISRUPTION_LABEL] = ""
        await self.client.create("nodes", {"apiVersion": "v1", "kind": "Node",
                                           "metadata": {"name": name, "labels": labels}})
        if not ready:
            return
        await self.post("Ready", "True", name)
        await self.client.create("leases.coordination.k8s.io", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40, "renewTime": self.clock.rfc3339_micro()}})
        self.alive.add(name)
        self._tasks.append(asyncio.create_task(self._renew(name, offset)))

    async def post(self, ctype: str, status: str, name: str) -> None:
        await post_condition(self.client, self.clock, name, ctype, status)

    async def _renew(self, name: str, offset: float) -> None:
        await asyncio.sleep(offset)
        while True:
            await asyncio.sleep(10)
            if name in self.alive:
                await self.renew(name)

    async def renew(self, name: str) -> None:
        lease = await self.client.get("leases.coordination.k8s.io", name, namespace="kube-node-lease")
        lease = {**lease, "spec": {**lease["spec"], "renewTime": self.clock.rfc3339_micro()}}
        await self.client.update("leases.coordination.k8s.io", lease)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def pod(client: InProcessClient, name: str, node: str) -> None:
    await client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
                                 "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}})
    await client.patch("pods", name, {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True"}]}}, namespace="default", patch_type="strategic", subresource="status")


def api(log: list[tuple[Any, ...]]) -> tuple[Clock, InProcessClient, RecordingClient]:
    """A fresh in-process API on a virtual clock: a client for the kubelets and a recording one
    for the controller."""
    clock = virtual_clock()
    service = ApiService(MemoryStore(), clock=clock)
    controller_client = RecordingClient(service)
    controller_client.log = log
    return clock, InProcessClient(service), controller_client


def record_monitor_passes(controller: NodeLifecycleController, log: list[tuple[Any, ...]]) -> None:
    """After every monitor pass, log the controller's zone, rate, queue and retry state."""
    real_monitor = controller.monitor_once

    async def monitor_once() -> None:
        await real_monitor()
        log.append((round(asyncio.get_running_loop().time(), 6), "zones", sorted(controller._zone_states.items()),
                    sorted((z, b.rate) for z, b in controller._buckets.items()),
                    sorted((z, list(q)) for z, q in controller._to_taint.items()),
                    sorted(controller._retry_pods), sorted(controller._known)))

    controller.monitor_once = monitor_once  # type: ignore[method-assign]


def run_scenario(*, full_scan: bool, tick_offset: float) -> list[tuple[Any, ...]]:
    log: list[tuple[Any, ...]] = []

    async def main() -> None:
        random.seed(7)
        clock, client, controller_client = api(log)

        async def last_renewal_mid_pass(resource: str, name: str) -> None:
            # While the pass is writing a1's Unknown status, b2 (later in the walk) renews its
            # Lease one last time: a full walk sees that renewal in this very pass.
            if resource == "nodes" and name == "a1" and "b2" in kubelets.alive:
                kubelets.alive.discard("b2")
                await kubelets.renew("b2")

        controller_client.on_write = last_renewal_mid_pass
        kubelets = Kubelets(client, clock)
        for i, (name, zone) in enumerate(NODES.items()):
            await kubelets.add(name, zone, offset=i * 1.25)
        await pod(client, "p-a1", "a1")
        await pod(client, "p-b1", "b1")
        informers = SharedInformerFactory(controller_client)
        # Periods that are binary fractions keep every virtual time exact (see the note at the end).
        cls = FullWalkNodeLifecycleController if full_scan else NodeLifecycleController
        controller = cls(controller_client, informers=informers, clock=clock, recorder=Recorder(log),
                         tainting_period=0.125)
        record_monitor_passes(controller, log)
        await asyncio.sleep(tick_offset)
        await controller.start()
        try:
            await asyncio.sleep(30)
            kubelets.alive.discard("a1")  # stops heartbeating
            await asyncio.sleep(30)
            await kubelets.post("Ready", "False", "a2")  # reports not ready
            await asyncio.sleep(60)
            kubelets.alive.add("a1")  # comes back
            await kubelets.post("Ready", "True", "a1")
            await asyncio.sleep(30)
            kubelets.alive -= {"b1", "b2"}  # zone z2 goes silent: fully disrupted
            await asyncio.sleep(50)
            await kubelets.post("Ready", "True", "a2")
            await client.delete("nodes", "a3")  # deleted
            await kubelets.add("c1", "z2", ready=False)  # never posts: startup grace
            await asyncio.sleep(40)
            await pod(client, "p-a2", "b2")  # bound to a not-Ready node
            await asyncio.sleep(40)
            kubelets.alive.clear()  # everything silent: master disruption mode
            await asyncio.sleep(90)
            kubelets.alive.add("a4")  # one comes back
            await kubelets.post("Ready", "True", "a4")
            await asyncio.sleep(60)
        finally:
            await controller.stop()
            await kubelets.stop()
            await informers.stop()

    run_virtual(main())
    return log


@pytest.mark.parametrize("tick_offset", [0.0, 0.625, 2.5])
def test_incremental_monitor_equals_full_walk(tick_offset: float) -> None:
    full = run_scenario(full_scan=True, tick_offset=tick_offset)
    incremental = run_scenario(full_scan=False, tick_offset=tick_offset)
    # The scenario exercises what it claims to (so that equality means something).
    kinds = {(entry[1], entry[4]) for entry in full if entry[1] == "event"}
    assert {("event", "NodeNotReady"), ("event", "RegisteredNode"), ("event", "RemovingNode")} <= kinds
    zone_states = {state for entry in full if entry[1] == "zones" for _, state in entry[2]}
    assert {"Normal", "FullDisruption"} <= zone_states
    assert any(entry[1] == "update" and entry[4] == "c1" for entry in full)  # startup grace ran out
    assert any(entry[1] == "update" and entry[2] == "pods" for entry in full)  # pods marked not ready
    for i, (a, b) in enumerate(zip(full, incremental, strict=False)):
        assert a == b, f"entry {i} differs:\nfull:        {a}\nincremental: {b}"
    assert len(full) == len(incremental)


# Note on the periods: binary fractions (0.125 s, offsets of 1.25 s) keep every virtual time
# exact, so the two runs compare times with ``==``.  (Inexact 0.1 s steps once exposed a virtual
# loop hang — a timer fired within the clock resolution before its deadline, re-armed forever —
# fixed in everynode/virtualtime.py and tested in tests/unit/test_virtualtime.py.)


def run_random_scenario(*, full_scan: bool, seed: int, fail_every: int = 0) -> list[tuple[Any, ...]]:
    """Random churn on three zones: kubelets stop and come back, report Ready=False, nodes are
    deleted, created (some never post status), relabelled (zone, exclusion), pods bound; with
    ``fail_every``, some taint writes fail and interrupt the pass that made them."""
    log: list[tuple[Any, ...]] = []
    rng = random.Random(seed)

    async def main() -> None:
        random.seed(7)
        clock, client, controller_client = api(log)
        controller_client.fail_every = fail_every
        kubelets = Kubelets(client, clock)
        zones = ("z1", "z2", "z3")
        names = [f"n{i}" for i in range(9)]
        for i, name in enumerate(names):
            await kubelets.add(name, zones[i % 3], offset=(i % 8) * 1.25)
        informers = SharedInformerFactory(controller_client)
        cls = FullWalkNodeLifecycleController if full_scan else NodeLifecycleController
        controller = cls(controller_client, informers=informers, clock=clock, recorder=Recorder(log),
                         tainting_period=0.125, grace_period=20, startup_grace_period=30)
        record_monitor_passes(controller, log)
        await controller.start()
        created = len(names)
        try:
            for step in range(80):
                await asyncio.sleep(rng.choice((1.25, 2.5, 3.75, 5.0)))
                present = [n["metadata"]["name"] for n in (await client.list("nodes"))["items"]]
                if not present:
                    continue
                name = rng.choice(present)
                action = rng.random()
                if action < 0.25:
                    kubelets.alive.discard(name)
                elif action < 0.45:
                    if name in kubelets.alive or rng.random() < 0.7:
                        kubelets.alive.add(name)
                        if not any(t.get_name() == name for t in kubelets._tasks):
                            kubelets._tasks.append(asyncio.create_task(kubelets._renew(name, 0.0), name=name))
                        await kubelets.post("Ready", "True", name)
                elif action < 0.55:
                    await kubelets.post("Ready", "False", name)
                elif action < 0.62:
                    kubelets.alive.discard(name)
                    await client.delete("nodes", name)
                elif action < 0.72:
                    created += 1
                    await kubelets.add(f"n{created}", rng.choice(zones), ready=rng.random() < 0.6,
                                       offset=rng.choice((0.0, 2.5, 5.0)))
                elif action < 0.8:
                    await client.patch("nodes", name, {"metadata": {"labels": {ZONE: rng.choice(zones)}}})
                elif action < 0.85:
                    label = rng.choice(("", None))
                    await client.patch("nodes", name, {"metadata": {"labels": {EXCLUDE_DISRUPTION_LABEL: label}}})
                elif action < 0.9:
                    await pod(client, f"p{step}", name)
                else:
                    kubelets.alive.clear() if rng.random() < 0.3 else kubelets.alive.update(rng.sample(present, 2))
        finally:
            await controller.stop()
            await kubelets.stop()
            await informers.stop()

    run_virtual(main())
    return log


@pytest.mark.parametrize(("seed", "fail_every"), [(0, 0), (1, 0), (2, 0), (3, 0), (4, 5), (5, 3)])
def test_incremental_monitor_equals_full_walk_under_random_churn(seed: int, fail_every: int) -> None:
    full = run_random_scenario(full_scan=True, seed=seed, fail_every=fail_every)
    incremental = run_random_scenario(full_scan=False, seed=seed, fail_every=fail_every)
    assert any(entry[1] == "update" for entry in full)  # some node went Unknown
    for i, (a, b) in enumerate(zip(full, incremental, strict=False)):
        assert a == b, f"entry {i} differs:\nfull:        {a}\nincremental: {b}"
    assert len(full) == len(incremental)
