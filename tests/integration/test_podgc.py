"""Pod GC against the in-process API, on a virtual-time loop (20 s period, 40 s quarantine)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.controllers.podgc import PodGC, terminated_deletion_order
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock

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


def test_pods_of_a_deleted_node_are_failed_and_force_deleted_after_quarantine() -> None:
    async def main() -> None:
        clock = virtual_clock()
        client = RecordingClient(ApiService(MemoryStore(), clock=clock))
        informers = SharedInformerFactory(client)
        gc = PodGC(client, informers=informers, clock=clock)
        await gc.start()
        try:
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
        finally:
            await gc.stop()
            await informers.stop()

    run_virtual(main())


def test_unscheduled_terminating_pod_is_force_deleted() -> None:
    async def main() -> None:
        clock = virtual_clock()
        client = RecordingClient(ApiService(MemoryStore(), clock=clock))
        informers = SharedInformerFactory(client)
        gc = PodGC(client, informers=informers, clock=clock)
        await gc.start()
        try:
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
        finally:
            await gc.stop()
            await informers.stop()

    run_virtual(main())


def test_terminated_pods_beyond_the_threshold_are_deleted_oldest_first() -> None:
    async def main() -> None:
        clock = virtual_clock()
        client = InProcessClient(ApiService(MemoryStore(), clock=clock))
        informers = SharedInformerFactory(client)
        gc = PodGC(client, informers=informers, clock=clock, terminated_threshold=2)
        await gc.start()
        try:
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
        finally:
            await gc.stop()
            await informers.stop()

    run_virtual(main())


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
