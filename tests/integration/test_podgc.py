"""Pod GC against the in-process API, on a virtual-time loop (20 s period, 40 s quarantine)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.api.node import TAINT_NODE_OUT_OF_SERVICE as OUT_OF_SERVICE
from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.controllers.podgc import PodGC, terminated_deletion_order
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock
from tests.support.nodes import post_condition

Obj = dict[str, Any]
NS = "default"


class RecordingClient(InProcessClient):
    """Records the delete calls, to see the grace period pod GC asks for."""

    def __init__(self, service: ApiService) -> None:
        super().__init__(service)
        self.deletes: list[tuple[str, str, int | None]] = []

    async def delete(self, resource: str, name: str, **kw: Any) -> Obj:
        self.deletes.append((resource, name, kw.get("grace_period_seconds")))
        return await super().delete(resource, name, **kw)


async def make_pod(client: InProcessClient, name: str, *, node: str | None, finalizers: list[str] | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "busybox"}]}
    if node:
        spec["nodeName"] = node
    md: Obj = {"name": name, "namespace": NS}
    if finalizers:
        md["finalizers"] = finalizers
    return await client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})


async def get_pod(client: InProcessClient, name: str) -> Obj | None:
    try:
        return await client.get("pods", name, namespace=NS)
    except ApiError as e:
        assert e.code == 404
        return None


def run_with_gc(scenario: Callable[[RecordingClient, Any], Awaitable[None]], **options: Any) -> None:
    """Run ``scenario(client, clock)`` in virtual time with a started pod GC on a fresh API."""
    async def main() -> None:
        clock = virtual_clock()
        client = RecordingClient(ApiService(MemoryStore(), clock=clock))
        informers = SharedInformerFactory(client)
        gc = PodGC(client, informers=informers, clock=clock, **options)
        await gc.start()
        try:
            await scenario(client, clock)
        finally:
            await gc.stop()
            await informers.stop()

    run_virtual(main())


def test_pods_of_a_deleted_node_are_failed_and_force_deleted_after_quarantine() -> None:
    async def scenario(client: RecordingClient, clock: Any) -> None:
        await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2"}})
        # A finalizer keeps the pod observable after the force delete.
        await make_pod(client, "stranded", node="n1", finalizers=["example.com/hold"])
        await make_pod(client, "plain", node="n1")
        await make_pod(client, "safe", node="n2")
        await client.delete("nodes", "n1")
        await asyncio.sleep(30)  # one pass: quarantined, untouched
        stranded = await get_pod(client, "stranded")
        assert stranded is not None and not stranded["metadata"].get("deletionTimestamp")
        await asyncio.sleep(60)  # past the 40 s quarantine (next passes)
        stranded = await get_pod(client, "stranded")
        assert stranded is not None
        assert stranded["status"]["phase"] == "Failed"
        cond = {c["type"]: c for c in stranded["status"]["conditions"]}["DisruptionTarget"]
        assert (cond["status"], cond["reason"], cond["message"]) == (
            "True", "DeletionByPodGC", "PodGC: node no longer exists")
        assert stranded["metadata"].get("deletionTimestamp")
        assert ("pods", "stranded", 0) in client.deletes
        assert await get_pod(client, "plain") is None
        assert await get_pod(client, "safe") is not None

    run_with_gc(scenario)


def test_unscheduled_terminating_pod_is_force_deleted() -> None:
    async def scenario(client: RecordingClient, clock: Any) -> None:
        await make_pod(client, "pending", node=None, finalizers=["example.com/hold"])
        await make_pod(client, "waiting", node=None)
        await client.delete("pods", "pending", namespace=NS)
        client.deletes.clear()
        await asyncio.sleep(25)
        assert ("pods", "pending", 0) in client.deletes
        pod = await get_pod(client, "pending")
        assert pod is not None and pod["status"]["phase"] == "Failed"
        await client.patch("pods", "pending", {"metadata": {"finalizers": None}}, namespace=NS)
        assert await get_pod(client, "pending") is None
        assert await get_pod(client, "waiting") is not None  # not terminating: left alone

    run_with_gc(scenario)


def test_terminated_pods_beyond_the_threshold_are_deleted_oldest_first() -> None:
    async def scenario(client: RecordingClient, clock: Any) -> None:
        for name in ("old", "middle", "new"):
            await make_pod(client, name, node="n1")
            await client.patch("pods", name, {"status": {"phase": "Succeeded"}}, namespace=NS,
                               subresource="status")
            await asyncio.sleep(2)
        await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        await asyncio.sleep(21)
        assert await get_pod(client, "old") is None
        assert await get_pod(client, "middle") is not None
        assert await get_pod(client, "new") is not None

    run_with_gc(scenario, terminated_threshold=2)


async def make_node(client: InProcessClient, clock: Any, name: str, *, out_of_service: bool = False,
                    ready: str | None = None) -> None:
    spec: Obj = {"taints": [{"key": OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}]} \
        if out_of_service else {}
    await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec})
    if ready is not None:
        await post_condition(client, clock, name, "Ready", ready)


def test_terminating_pods_on_out_of_service_nodes_are_failed_and_force_deleted() -> None:
    """Only terminating pods, only on nodes both tainted out-of-service and not Ready; the taint
    and the Ready condition may change after the pod arrived (tracked from node events)."""
    async def scenario(client: RecordingClient, clock: Any) -> None:
        await make_node(client, clock, "down", out_of_service=True, ready="False")
        await make_node(client, clock, "tainted-ready", out_of_service=True, ready="True")
        await make_node(client, clock, "not-ready", ready="False")
        await make_node(client, clock, "later", ready="True")
        for node in ("down", "tainted-ready", "not-ready", "later"):
            await make_pod(client, f"{node}-going", node=node, finalizers=["example.com/hold"])
            await client.delete("pods", f"{node}-going", namespace=NS)  # bound: graceful, terminating
        await make_pod(client, "down-running", node="down")
        client.deletes.clear()
        await asyncio.sleep(25)
        assert {name for _r, name, _g in client.deletes} == {"down-going"}
        pod = await get_pod(client, "down-going")
        assert pod is not None and pod["status"]["phase"] == "Failed"
        assert ("pods", "down-going", 0) in client.deletes
        assert await get_pod(client, "down-running") is not None  # not terminating: left alone
        # The shutdown taint arrives later on a Ready node, which then stops being Ready.
        await client.patch("nodes", "later", {"spec": {"taints": [
            {"key": OUT_OF_SERVICE, "value": "nodeshutdown", "effect": "NoExecute"}]}})
        client.deletes.clear()
        await asyncio.sleep(20)
        assert {name for _r, name, _g in client.deletes} == {"down-going"}  # "later" is Ready
        await post_condition(client, clock, "later", "Ready", "Unknown")
        await client.patch("nodes", "down", {"spec": {"taints": None}})  # taint removed: no more
        client.deletes.clear()
        await asyncio.sleep(20)
        assert {name for _r, name, _g in client.deletes} == {"later-going"}

    run_with_gc(scenario)


def test_a_node_back_within_the_quarantine_keeps_its_pods() -> None:
    async def scenario(client: RecordingClient, clock: Any) -> None:
        await make_node(client, clock, "n1")
        await make_pod(client, "p", node="n1")
        await client.delete("nodes", "n1")
        await asyncio.sleep(25)  # one pass: quarantined
        await make_node(client, clock, "n1")  # back before the 40 s are up
        await asyncio.sleep(20)  # a pass sees it: out of quarantine
        await client.delete("nodes", "n1")  # gone again: a fresh 40 s
        await asyncio.sleep(40)  # two passes: the first starts a new quarantine, the second is 20 s in
        assert await get_pod(client, "p") is not None
        assert client.deletes == [("nodes", "n1", None), ("nodes", "n1", None)]
        await asyncio.sleep(40)
        assert await get_pod(client, "p") is None

    run_with_gc(scenario)


@pytest.mark.parametrize(("pods", "expected"), [
    ([{"metadata": {"name": "b", "creationTimestamp": "2024-01-01T00:00:02Z"}, "status": {"phase": "Failed"}},
      {"metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:01Z"}, "status": {"phase": "Succeeded"}}],
     ["a", "b"]),
    ([{"metadata": {"name": "a", "creationTimestamp": "2024-01-01T00:00:01Z"}, "status": {"phase": "Succeeded"}},
      {"metadata": {"name": "e", "creationTimestamp": "2024-01-01T00:00:09Z"},
       "status": {"phase": "Failed", "reason": "Evicted"}}],
     ["e", "a"]),  # evicted first
    ([{"metadata": {"name": "y", "creationTimestamp": "2024-01-01T00:00:01Z"}, "status": {"phase": "Failed"}},
      {"metadata": {"name": "x", "creationTimestamp": "2024-01-01T00:00:01Z"}, "status": {"phase": "Failed"}}],
     ["x", "y"]),  # same time: by name
])
def test_terminated_deletion_order(pods: list[Obj], expected: list[str]) -> None:
    assert [p["metadata"]["name"] for p in terminated_deletion_order(pods)] == expected
