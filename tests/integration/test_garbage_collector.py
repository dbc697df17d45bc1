"""The garbage collector against the in-process API (service + MemoryStore + InProcessClient),
on a virtual-time loop: background, orphan and foreground deletion, dangling references, an
owner with another live owner, and a node's Lease."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from everynode.api.errors import ApiError
from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.controllers.garbagecollector import GarbageCollector, deletion_policy
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock

Obj = dict[str, Any]
NS = "default"


async def eventually(check: Callable[[], Awaitable[bool]], *, seconds: float = 60.0) -> None:
    """Poll (in virtual time) until ``check`` holds; fail with the last state otherwise."""
    deadline = asyncio.get_running_loop().time() + seconds
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.05)


async def exists(client: InProcessClient, resource: str, name: str, namespace: str = NS) -> bool:
    try:
        await client.get(resource, name, namespace=namespace)
        return True
    except ApiError as e:
        assert e.code == 404
        return False


def run(scenario: Callable[[InProcessClient], Awaitable[None]]) -> None:
    async def main() -> None:
        clock = virtual_clock()
        client = InProcessClient(ApiService(MemoryStore(), clock=clock))
        informers = SharedInformerFactory(client)
        gc = GarbageCollector(client, informers=informers, clock=clock)
        await gc.start()
        try:
            await scenario(client)
        finally:
            await gc.stop()
            await informers.stop()

    run_virtual(main())


def ref(owner: Obj, *, controller: bool = True, block: bool = True) -> Obj:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": controller, "blockOwnerDeletion": block}


async def make_ds(client: InProcessClient, name: str = "agent") -> Obj:
    return await client.create("daemonsets.apps", {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})


async def make_pod(client: InProcessClient, name: str, refs: list[Obj]) -> Obj:
    return await client.create("pods", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NS, "ownerReferences": refs},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})


async def make_revision(client: InProcessClient, name: str, refs: list[Obj]) -> Obj:
    return await client.create("controllerrevisions.apps", {
        "apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": name, "namespace": NS, "ownerReferences": refs}, "revision": 1, "data": {}})


def test_background_deletion_removes_pods_and_revisions() -> None:
    async def scenario(client: InProcessClient) -> None:
        ds = await make_ds(client)
        await make_pod(client, "agent-a", [ref(ds)])
        await make_pod(client, "agent-b", [ref(ds)])
        await make_revision(client, "agent-1", [ref(ds)])
        await make_pod(client, "bystander", [])
        await client.delete("daemonsets.apps", "agent", namespace=NS, propagation_policy="Background")

        async def gone() -> bool:
            return not any([await exists(client, "pods", "agent-a"), await exists(client, "pods", "agent-b"),
                            await exists(client, "controllerrevisions.apps", "agent-1")])

        await eventually(gone)
        assert await exists(client, "pods", "bystander")

    run(scenario)


def test_orphan_deletion_keeps_dependents_without_the_reference() -> None:
    async def scenario(client: InProcessClient) -> None:
        ds = await make_ds(client)
        await make_pod(client, "agent-a", [ref(ds)])
        await make_revision(client, "agent-1", [ref(ds)])
        await client.delete("daemonsets.apps", "agent", namespace=NS, propagation_policy="Orphan")

        async def ds_gone() -> bool:
            return not await exists(client, "daemonsets.apps", "agent")

        await eventually(ds_gone)
        await asyncio.sleep(5)
        pod = await client.get("pods", "agent-a", namespace=NS)
        rev = await client.get("controllerrevisions.apps", "agent-1", namespace=NS)
        assert not pod["metadata"].get("ownerReferences")
        assert not rev["metadata"].get("ownerReferences")

    run(scenario)


def test_foreground_deletion_waits_for_blocking_dependents() -> None:
    async def scenario(client: InProcessClient) -> None:
        ds = await make_ds(client)
        # A dependent with a finalizer keeps the owner waiting until it is really gone.
        await client.create("pods", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "agent-a", "namespace": NS, "ownerReferences": [ref(ds)],
                         "finalizers": ["example.com/hold"]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        await make_revision(client, "agent-1", [ref(ds)])
        await client.delete("daemonsets.apps", "agent", namespace=NS, propagation_policy="Foreground")

        async def pod_terminating() -> bool:
            pod = await client.get("pods", "agent-a", namespace=NS)
            return bool(pod["metadata"].get("deletionTimestamp"))

        await eventually(pod_terminating)
        await eventually(lambda: _not(exists(client, "controllerrevisions.apps", "agent-1")))
        await asyncio.sleep(5)
        owner = await client.get("daemonsets.apps", "agent", namespace=NS)
        assert owner["metadata"].get("deletionTimestamp")
        assert "foregroundDeletion" in owner["metadata"]["finalizers"]

        await client.patch("pods", "agent-a", {"metadata": {"finalizers": None}}, namespace=NS)
        await eventually(lambda: _not(exists(client, "daemonsets.apps", "agent")))

    run(scenario)


async def _not(check: Awaitable[bool]) -> bool:
    return not await check


def test_dangling_reference_to_a_uid_that_never_existed_deletes_the_dependent() -> None:
    async def scenario(client: InProcessClient) -> None:
        ghost = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                 "metadata": {"name": "ghost", "uid": "00000000-0000-0000-0000-000000000000"}}
        await make_pod(client, "orphan", [ref(ghost)])
        # Same name as a live object, other uid: dangling too.
        await make_ds(client, "real")
        await make_pod(client, "impostor", [ref({**ghost, "metadata": {"name": "real", "uid": "not-the-uid"}})])
        await eventually(lambda: _not(exists(client, "pods", "orphan")))
        await eventually(lambda: _not(exists(client, "pods", "impostor")))

    run(scenario)


def test_live_owner_keeps_the_dependent_and_only_the_dangling_reference_goes() -> None:
    async def scenario(client: InProcessClient) -> None:
        live = await make_ds(client, "live")
        ghost = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                 "metadata": {"name": "ghost", "uid": "11111111-1111-1111-1111-111111111111"}}
        await make_pod(client, "shared", [ref(ghost), ref(live, controller=False)])

        async def cleaned() -> bool:
            pod = await client.get("pods", "shared", namespace=NS)
            return [r["uid"] for r in pod["metadata"].get("ownerReferences") or ()] == [live["metadata"]["uid"]]

        await eventually(cleaned)
        assert await exists(client, "pods", "shared")

    run(scenario)


def test_node_deletion_deletes_its_lease() -> None:
    async def scenario(client: InProcessClient) -> None:
        node = await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        await client.create("leases.coordination.k8s.io", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "n1", "namespace": "kube-node-lease",
                         "ownerReferences": [ref(node, controller=False, block=False)]},
            "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}})
        await asyncio.sleep(1)
        assert await exists(client, "leases.coordination.k8s.io", "n1", "kube-node-lease")
        await client.delete("nodes", "n1")
        await eventually(lambda: _not(exists(client, "leases.coordination.k8s.io", "n1", "kube-node-lease")))

    run(scenario)


def test_updates_that_leave_the_graph_as_it_was_are_not_observed_again() -> None:
    """A Lease renewal (spec only) changes nothing the collector tracks: it is skipped; a change
    of owner references, finalizers or deletion state is observed (upstream's processGraphChanges
    acts on those transitions only)."""
    observed: list[str] = []

    async def main() -> None:
        clock = virtual_clock()
        client = InProcessClient(ApiService(MemoryStore(), clock=clock))
        informers = SharedInformerFactory(client)
        gc = GarbageCollector(client, informers=informers, clock=clock)
        real_observe = gc._observe
        gc._observe = lambda resource, obj: (observed.append(obj["metadata"]["name"]), real_observe(resource, obj))
        await gc.start()
        try:
            node = await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
            lease = await client.create("leases.coordination.k8s.io", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "n1", "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 40}})
            await asyncio.sleep(1)
            observed.clear()
            for seconds in (10, 20):
                lease = await client.update("leases.coordination.k8s.io",
                                            {**lease, "spec": {**lease["spec"], "leaseDurationSeconds": seconds}})
            await asyncio.sleep(1)
            assert observed == []
            lease = await client.update("leases.coordination.k8s.io", {
                **lease, "metadata": {**lease["metadata"], "ownerReferences": [ref(node, controller=False)]}})
            await asyncio.sleep(1)
            assert observed == ["n1"]
            await client.update("leases.coordination.k8s.io", {
                **lease, "metadata": {**lease["metadata"], "finalizers": ["example.com/keep"]}})
            await asyncio.sleep(1)
            assert observed == ["n1", "n1"]
            assert gc._dependents[node["metadata"]["uid"]] == {lease["metadata"]["uid"]}
        finally:
            await gc.stop()
            await informers.stop()

    run_virtual(main())


def test_deletion_policy_table() -> None:
    assert deletion_policy([], owner_waiting=False, has_dependents=True) == "Background"
    assert deletion_policy([], owner_waiting=True, has_dependents=True) == "Foreground"
    assert deletion_policy([], owner_waiting=True, has_dependents=False) == "Background"
    assert deletion_policy(["orphan"], owner_waiting=False, has_dependents=False) == "Orphan"
    assert deletion_policy(["foregroundDeletion"], owner_waiting=False, has_dependents=False) == "Foreground"
