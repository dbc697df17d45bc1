"""Pod GC's incremental passes against the full walk (upstream's way, kept here as the oracle).

The differential test runs two pod GCs on one shared pair of informers, on a virtual-time loop:
:class:`FullWalkPodGC` walks every node and every bound node name each pass, as upstream's
``gc`` does, the product's :class:`PodGC` reads the sets its event handlers keep.  Both write through a client that records instead of writing, so a pass cannot
change what the next one sees; after each pair of passes the two records must be equal (as
multisets: the walk's order is the informer's, the sets' order is a hash order, and upstream's
order is a map's), the quarantines must be equal, and the recorded writes are then made for real
so the history goes on as pod GC would make it.  Histories are random: nodes added and deleted,
tainted and untainted out-of-service, Ready flipped; pods bound (also to absent nodes), deleted
(bound pods become terminating), released from finalizers, terminated; time advanced past the
quarantine; informers restarted with changes in between (a relist delivers the differences);
informers started in either order with the GCs registered before or after they synced.

The targeted tests pin the two arrival orders of a node and its pods and a late registration.
"""

from __future__ import annotations

import asyncio
import collections
import random
from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.api.node import TAINT_NODE_OUT_OF_SERVICE as OUT_OF_SERVICE
from everynode.apiserver.service import ApiService
from everynode.client.informer import NODE_NAME_INDEX, Informer, SharedInformerFactory, index_pod_by_node_name
from everynode.client.inprocess import InProcessClient
from everynode.clock import Clock
from everynode.controllers.podgc import PodGC
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock
from tests.support.nodes import post_condition

Obj = dict[str, Any]
NS = "default"
NODE_NAMES = [f"n{i}" for i in range(6)]
OOS_TAINT = {"key": OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}
OTHER_TAINT = {"key": "example.com/other", "effect": "NoSchedule"}
HOLD = "example.com/hold"


class DryClient(InProcessClient):
    """Reads go to the API; pod GC's writes (status patch, delete) are only recorded."""

    def __init__(self, service: ApiService) -> None:
        super().__init__(service)
        self.writes: list[tuple[str, str, str, Any, dict[str, Any]]] = []

    async def patch(self, resource: str, name: str, patch: Any, **kw: Any) -> Obj:
        self.writes.append(("patch", resource, name, patch, kw))
        return {}

    async def delete(self, resource: str, name: str, **kw: Any) -> Obj:
        self.writes.append(("delete", resource, name, None, kw))
        return {}

    def comparable(self) -> list[str]:
        return sorted(repr(w) for w in self.writes)


async def replay(client: InProcessClient, writes: list[tuple[str, str, str, Any, dict[str, Any]]]) -> None:
    for verb, resource, name, patch, kw in writes:
        try:
            if verb == "patch":
                await client.patch(resource, name, patch, **kw)
            else:
                await client.delete(resource, name, **kw)
        except ApiError as e:
            assert e.code in (404, 409, 422), e


async def settle() -> None:
    await asyncio.sleep(0.001)  # virtual time moves only once every informer has caught up


async def node(client: InProcessClient, clock: Clock, name: str, *, taints: list[Obj] | None = None,
               ready: str | None = None) -> None:
    spec: Obj = {"taints": taints} if taints else {}
    await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec})
    if ready is not None:
        await post_condition(client, clock, name, "Ready", ready)


async def pod(client: InProcessClient, name: str, *, node_name: str | None, hold: bool = False) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "busybox"}]}
    if node_name:
        spec["nodeName"] = node_name
    md: Obj = {"name": name, "namespace": NS}
    if hold:
        md["finalizers"] = [HOLD]
    return await client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})


class World:
    """A random history against the API, through the real client."""

    def __init__(self, rng: random.Random, client: InProcessClient, clock: Clock,
                 nodes: Informer, pods: Informer) -> None:
        self.rng = rng
        self.client = client
        self.clock = clock
        self.nodes = nodes
        self.pods = pods
        self.next_pod = 0

    async def _node_names(self) -> list[str]:
        return sorted(n["metadata"]["name"] for n in (await self.client.list("nodes"))["items"])

    async def _pods(self) -> list[Obj]:
        return sorted((await self.client.list("pods", namespace=NS))["items"], key=lambda p: p["metadata"]["name"])

    async def add_node(self) -> None:
        absent = [n for n in NODE_NAMES if n not in await self._node_names()]
        if absent:
            rng = self.rng
            taints = rng.choice([None, [OOS_TAINT], [OTHER_TAINT, OOS_TAINT], [OTHER_TAINT]])
            await node(self.client, self.clock, rng.choice(absent), taints=taints,
                       ready=rng.choice([None, "True", "False", "Unknown"]))

    async def delete_node(self) -> None:
        names = await self._node_names()
        if names:
            await self.client.delete("nodes", self.rng.choice(names))

    async def taint(self) -> None:
        names = await self._node_names()
        if names:
            taints = self.rng.choice([None, [OOS_TAINT], [OTHER_TAINT], [OOS_TAINT, OTHER_TAINT]])
            await self.client.patch("nodes", self.rng.choice(names), {"spec": {"taints": taints}})

    async def flip_ready(self) -> None:
        names = await self._node_names()
        if names:
            await post_condition(self.client, self.clock, self.rng.choice(names), "Ready",
                                 self.rng.choice(["True", "False", "Unknown"]))

    async def bind_pod(self) -> None:
        name = f"p{self.next_pod}"
        self.next_pod += 1
        node_name = self.rng.choice([*NODE_NAMES, "gone", None])
        await pod(self.client, name, node_name=node_name, hold=self.rng.random() < 0.5)

    async def delete_pod(self) -> None:
        pods = await self._pods()
        if pods:
            await self.client.delete("pods", self.rng.choice(pods)["metadata"]["name"], namespace=NS)

    async def release_pod(self) -> None:
        held = [p for p in await self._pods() if p["metadata"].get("finalizers")]
        if held:
            await self.client.patch("pods", self.rng.choice(held)["metadata"]["name"],
                                    {"metadata": {"finalizers": None}}, namespace=NS)

    async def terminate_pod(self) -> None:
        pods = await self._pods()
        if pods:
            await self.client.patch("pods", self.rng.choice(pods)["metadata"]["name"],
                                    {"status": {"phase": self.rng.choice(["Succeeded", "Failed"])}},
                                    namespace=NS, subresource="status")

    async def wait(self) -> None:
        await asyncio.sleep(self.rng.choice([1, 5, 15, 25, 41]))

    async def restart_informer(self) -> None:
        """Stop an informer, change things it does not see, restart it: the relist's diff."""
        inf = self.rng.choice([self.nodes, self.pods])
        lists = inf.lists
        await inf.stop()
        for _ in range(self.rng.randint(1, 3)):
            await self.rng.choice(self.SIMPLE)(self)
        inf.start()
        while inf.lists == lists:
            await settle()

    SIMPLE = [add_node, add_node, delete_node, taint, flip_ready, bind_pod, bind_pod, bind_pod, delete_pod,
              delete_pod, release_pod, terminate_pod]
    ALL = [*SIMPLE, wait, wait, restart_informer]


class FullWalkPodGC(PodGC):
    """The oracle: pod GC's actions on upstream's look-ups, a walk over every cached node and
    every node name pods are bound to on each pass."""

    def _out_of_service_candidates(self) -> list[Obj]:
        return self._nodes.list()

    def _missing_node_names(self) -> set[str]:
        return {n for n in self._pods.index_values(NODE_NAME_INDEX) if self._nodes.get(n) is None}


class CountingPodGC(PodGC):
    """Counts the writes each pass makes (through a :class:`DryClient`)."""

    client: DryClient

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.acted: collections.Counter[str] = collections.Counter()

    async def _count(self, name: str, work: Any) -> None:
        before = len(self.client.writes)
        await work
        self.acted[name] += len(self.client.writes) - before

    async def _gc_terminated(self) -> None:
        await self._count("terminated", super()._gc_terminated())

    async def _gc_terminating_out_of_service(self) -> None:
        await self._count("out-of-service", super()._gc_terminating_out_of_service())

    async def _gc_orphaned(self) -> None:
        await self._count("orphaned", super()._gc_orphaned())

    async def _gc_unscheduled_terminating(self) -> None:
        await self._count("unscheduled", super()._gc_unscheduled_terminating())


def check_sets(full: FullWalkPodGC, inc: PodGC, nodes: Informer) -> None:
    """The handler-kept sets against the caches, at any instant (handlers run synchronously)."""
    tainted = {n["metadata"]["name"] for n in nodes.list()
               if any(t.get("key") == OUT_OF_SERVICE for t in n.get("spec", {}).get("taints") or ())}
    assert inc._out_of_service == tainted
    assert full._missing_node_names() <= inc._suspects


async def differential_run(seed: int, steps: int) -> collections.Counter[str]:
    rng = random.Random(seed)
    clock = virtual_clock()
    service = ApiService(MemoryStore(), clock=clock)
    client = InProcessClient(service)
    factory = SharedInformerFactory(client)
    nodes = factory.informer("nodes")
    pods = factory.informer("pods", indexers={NODE_NAME_INDEX: index_pod_by_node_name})
    world = World(rng, client, clock, nodes, pods)
    dry_full, dry_inc = DryClient(service), DryClient(service)
    threshold = rng.choice([0, 3])

    def make_gcs() -> tuple[FullWalkPodGC, CountingPodGC]:
        return (FullWalkPodGC(dry_full, informers=factory, clock=clock, terminated_threshold=threshold),
                CountingPodGC(dry_inc, informers=factory, clock=clock, terminated_threshold=threshold))

    for _ in range(rng.randint(0, 8)):  # some history before anything is listed
        await rng.choice(World.SIMPLE)(world)
    late = rng.random() < 0.5
    if not late:
        full, inc = make_gcs()
    first, second = rng.sample([nodes, pods], 2)  # either informer may sync first
    first.start()
    await first.wait_synced()
    if rng.random() < 0.5:
        await rng.choice(World.SIMPLE)(world)
        await settle()
    second.start()
    await second.wait_synced()
    await settle()
    if late:  # registered on synced informers: the cached objects arrive as adds
        full, inc = make_gcs()
    try:
        for _ in range(steps):
            await rng.choice(World.ALL)(world)
            if rng.random() < 0.7:
                await settle()  # else: compare with some events not delivered yet
            check_sets(full, inc, nodes)
            if rng.random() < 0.6:
                dry_full.writes.clear()
                dry_inc.writes.clear()
                await full.gc_once()
                await inc.gc_once()
                assert dry_inc.comparable() == dry_full.comparable()
                assert inc._quarantined == full._quarantined
                inc.acted["passes"] += 1
                await replay(client, dry_inc.writes)
    finally:
        await factory.stop()
    return inc.acted


@pytest.mark.parametrize("seed", range(24))
def test_incremental_passes_act_as_the_full_walk(seed: int) -> None:
    assert run_virtual(differential_run(seed, 70))["passes"] > 0


def test_the_random_histories_exercise_every_pass() -> None:
    """Guard against a differential test that compares nothing: over a few histories, each of
    the four passes must have failed and deleted pods."""
    acted: collections.Counter[str] = collections.Counter()
    for seed in range(6):
        acted += run_virtual(differential_run(seed, 70))
    assert {name: acted[name] > 0 for name in ("terminated", "out-of-service", "orphaned", "unscheduled")} == {
        "terminated": True, "out-of-service": True, "orphaned": True, "unscheduled": True}


# -- targeted: arrival orders and late registration ----------------------------------------------


class Setup:
    def __init__(self) -> None:
        self.clock = virtual_clock()
        self.service = ApiService(MemoryStore(), clock=self.clock)
        self.client = InProcessClient(self.service)
        self.dry = DryClient(self.service)
        self.factory = SharedInformerFactory(self.client)
        self.nodes = self.factory.informer("nodes")
        self.pods = self.factory.informer("pods", indexers={NODE_NAME_INDEX: index_pod_by_node_name})

    def gc(self, **kw: Any) -> PodGC:
        return PodGC(self.dry, informers=self.factory, clock=self.clock, **kw)

    def deleted(self) -> set[str]:
        return {name for verb, _r, name, _p, _kw in self.dry.writes if verb == "delete"}


def test_pod_listed_before_its_node_is_cleared_by_the_node_add() -> None:
    async def main() -> None:
        s = Setup()
        gc = s.gc(quarantine=0.0)
        await node(s.client, s.clock, "n1", ready="True")
        await pod(s.client, "p1", node_name="n1")
        try:
            s.pods.start()
            await s.pods.wait_synced()
            assert gc._suspects == {"n1"}  # the node informer has not listed yet
            s.nodes.start()
            await s.nodes.wait_synced()
            assert gc._suspects == set()  # the node's add cleared it
            await gc.gc_once()
            assert s.dry.writes == [] and gc._quarantined == {}
        finally:
            await s.factory.stop()

    run_virtual(main())


def test_pod_before_its_node_with_a_pass_in_between() -> None:
    """A pass that runs while the node is not cached yet quarantines the name (as the walk
    would); once the node is cached the next pass releases it and nothing is deleted."""
    async def main() -> None:
        s = Setup()
        gc = s.gc()
        await node(s.client, s.clock, "n1", ready="True")
        await pod(s.client, "p1", node_name="n1")
        try:
            s.pods.start()
            await s.pods.wait_synced()
            await gc.gc_once()
            assert set(gc._quarantined) == {"n1"}
            s.nodes.start()
            await s.nodes.wait_synced()
            await asyncio.sleep(60)  # past the quarantine
            await gc.gc_once()
            assert gc._quarantined == {} and gc._suspects == set()
            assert s.dry.writes == []
        finally:
            await s.factory.stop()

    run_virtual(main())


def test_node_listed_before_its_pods_makes_no_suspect() -> None:
    async def main() -> None:
        s = Setup()
        gc = s.gc(quarantine=0.0)
        await node(s.client, s.clock, "n1", ready="True")
        await pod(s.client, "p1", node_name="n1")
        await pod(s.client, "p2", node_name="gone")
        try:
            s.nodes.start()
            await s.nodes.wait_synced()
            s.pods.start()
            await s.pods.wait_synced()
            assert gc._suspects == {"gone"}
            await gc.gc_once()
            assert s.deleted() == {"p2"}
        finally:
            await s.factory.stop()

    run_virtual(main())


def test_late_registration_receives_the_cached_objects() -> None:
    """A pod GC built on informers that have already synced (a shared factory started by
    someone else) gets the cached nodes and pods as adds, so its sets start complete."""
    async def main() -> None:
        s = Setup()
        await node(s.client, s.clock, "down", taints=[OOS_TAINT], ready="False")
        await node(s.client, s.clock, "up", taints=[OOS_TAINT], ready="True")
        await pod(s.client, "stuck", node_name="down", hold=True)
        await pod(s.client, "running", node_name="up", hold=True)
        await pod(s.client, "orphan", node_name="gone")
        for name in ("stuck", "running"):
            await s.client.delete("pods", name, namespace=NS)
        try:
            s.factory.start()
            await s.factory.wait_for_sync()
            gc = s.gc(quarantine=0.0)
            assert gc._out_of_service == {"down", "up"}
            assert gc._suspects == {"gone"}
            await gc.gc_once()
            assert s.deleted() == {"stuck", "orphan"}
        finally:
            await s.factory.stop()

    run_virtual(main())


def test_node_deleted_while_the_watch_is_down_is_found_by_the_relist() -> None:
    async def main() -> None:
        s = Setup()
        gc = s.gc(quarantine=0.0)
        await node(s.client, s.clock, "n1", taints=[OOS_TAINT], ready="False")
        await pod(s.client, "p1", node_name="n1")
        try:
            s.factory.start()
            await s.factory.wait_for_sync()
            assert gc._out_of_service == {"n1"} and gc._suspects == set()
            await s.nodes.stop()
            await s.client.delete("nodes", "n1")
            s.nodes.start()
            while s.nodes.get("n1") is not None:
                await settle()
            assert gc._out_of_service == set() and gc._suspects == {"n1"}
            await gc.gc_once()
            assert s.deleted() == {"p1"}
        finally:
            await s.factory.stop()

    run_virtual(main())


def test_suspects_are_dropped_once_not_missing() -> None:
    """The suspect set does not grow with history: a pass drops names whose pods are gone or
    whose node is back."""
    async def main() -> None:
        s = Setup()
        gc = s.gc()
        await node(s.client, s.clock, "a", ready="True")
        await node(s.client, s.clock, "b", ready="True")
        await pod(s.client, "pa", node_name="a")
        await pod(s.client, "pb", node_name="b")
        try:
            s.factory.start()
            await s.factory.wait_for_sync()
            await s.client.delete("nodes", "a")
            await s.client.delete("nodes", "b")
            await settle()
            assert gc._suspects == {"a", "b"}
            await s.client.delete("pods", "pa", namespace=NS, grace_period_seconds=0)
            await node(s.client, s.clock, "b", ready="True")
            await node(s.client, s.clock, "b2")  # no pods: never a suspect
            await s.client.delete("nodes", "b2")
            await settle()
            assert gc._suspects == {"a"}  # b came back (the add cleared it)
            await gc.gc_once()
            assert gc._suspects == set() and gc._quarantined == {}
        finally:
            await s.factory.stop()

    run_virtual(main())
