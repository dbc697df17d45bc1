"""The node lifecycle controller against the in-process API, on a virtual-time loop (50 s grace
period, 5 s monitor period) with a stand-in kubelet that renews Leases and posts node status."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from everynode.apiserver.service import ApiService
from everynode.client.events import EventRecorder
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.clock import Clock
from everynode.controllers.nodelifecycle import NOT_READY, UNREACHABLE, NodeLifecycleController
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock
from tests.support.nodes import post_condition

Obj = dict[str, Any]
NODES = ("n1", "n2", "n3")
USER_TAINT = {"key": "example.com/dedicated", "value": "x", "effect": "NoSchedule"}



class Kubelets:
    """Renews each live node's Lease every 10 s, as the kubelet does."""

    def __init__(self, client: InProcessClient, clock: Clock) -> None:
        self.client = client
        self.clock = clock
        self.alive = set(NODES)
        self._task: asyncio.Task[None] | None = None

    async def setup(self) -> None:
        for name in NODES:
            node = await self.client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
                                                      "spec": {"taints": [USER_TAINT]}})
            await self.post_status(name, "Ready", "True", node=node)
            await self.client.create("leases.coordination.k8s.io", {
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": name, "namespace": "kube-node-lease"},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                         "renewTime": self.clock.rfc3339_micro()}})
        self._task = asyncio.create_task(self._renew())

    async def post_status(self, name: str, ctype: str, status: str, *, node: Obj | None = None) -> None:
        await post_condition(self.client, self.clock, name, ctype, status, node=node)

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(10)
            for name in sorted(self.alive):
                lease = await self.client.get("leases.coordination.k8s.io", name, namespace="kube-node-lease")
                lease = {**lease, "spec": {**lease["spec"], "renewTime": self.clock.rfc3339_micro()}}
                await self.client.update("leases.coordination.k8s.io", lease)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


async def eventually(check: Callable[[], Awaitable[bool]], *, seconds: float = 120.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not await check():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.5)


def taints_of(node: Obj) -> dict[tuple[str, str], Obj]:
    return {(t["key"], t["effect"]): t for t in (node.get("spec") or {}).get("taints") or ()}


def condition(obj: Obj, ctype: str) -> Obj:
    return {c["type"]: c for c in obj["status"]["conditions"]}[ctype]


def test_node_lifecycle() -> None:
    async def main() -> None:
        clock = virtual_clock()
        client = InProcessClient(ApiService(MemoryStore(), clock=clock))
        kubelets = Kubelets(client, clock)
        await kubelets.setup()
        pod = await client.create("pods", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]}})
        await client.patch("pods", "web", {"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True"}]}}, namespace="default", patch_type="strategic", subresource="status")
        informers = SharedInformerFactory(client)
        recorder = EventRecorder(client, component="node-controller", clock=clock)
        controller = NodeLifecycleController(client, informers=informers, clock=clock, recorder=recorder)
        await controller.start()

        async def node(name: str) -> Obj:
            return await client.get("nodes", name)

        try:
            await asyncio.sleep(30)
            for name in NODES:  # healthy: only the user's taint
                assert list(taints_of(await node(name))) == [("example.com/dedicated", "NoSchedule")]

            # n1's kubelet stops: Unknown after the grace period, then the unreachable taints.
            kubelets.alive.discard("n1")
            stopped = asyncio.get_running_loop().time()

            async def n1_unknown() -> bool:
                return condition(await node("n1"), "Ready")["status"] == "Unknown"

            await eventually(n1_unknown)
            assert asyncio.get_running_loop().time() - stopped >= 40  # not before the grace period
            ready = condition(await node("n1"), "Ready")
            assert ready["reason"] == "NodeStatusUnknown"
            assert ready["message"] == "Kubelet stopped posting node status."
            assert condition(await node("n1"), "MemoryPressure")["reason"] == "NodeStatusNeverUpdated"

            async def n1_unreachable() -> bool:
                t = taints_of(await node("n1"))
                return (UNREACHABLE, "NoSchedule") in t and (UNREACHABLE, "NoExecute") in t

            await eventually(n1_unreachable)
            t = taints_of(await node("n1"))
            assert t[(UNREACHABLE, "NoExecute")].get("timeAdded")
            assert t[("example.com/dedicated", "NoSchedule")] == USER_TAINT
            web = await client.get("pods", "web", namespace="default")
            assert condition(web, "Ready")["status"] == "False"
            assert pod["metadata"]["uid"] == web["metadata"]["uid"]

            # The kubelet comes back: Ready again, taints gone.
            kubelets.alive.add("n1")
            await kubelets.post_status("n1", "Ready", "True")

            async def n1_clean() -> bool:
                return list(taints_of(await node("n1"))) == [("example.com/dedicated", "NoSchedule")]

            await eventually(n1_clean)

            # n2 reports Ready=False: not-ready taints.
            await kubelets.post_status("n2", "Ready", "False")

            async def n2_not_ready() -> bool:
                t = taints_of(await node("n2"))
                return (NOT_READY, "NoSchedule") in t and (NOT_READY, "NoExecute") in t

            await eventually(n2_not_ready)
            await kubelets.post_status("n2", "Ready", "True")

            # Cordon and pressure on n3.
            await client.patch("nodes", "n3", {"spec": {"unschedulable": True}}, patch_type="strategic")

            async def n3_has(key: str) -> bool:
                return (key, "NoSchedule") in taints_of(await node("n3"))

            await eventually(lambda: n3_has("node.kubernetes.io/unschedulable"))
            assert taints_of(await node("n3"))[("node.kubernetes.io/unschedulable", "NoSchedule")].get("timeAdded")
            await kubelets.post_status("n3", "MemoryPressure", "True")
            await eventually(lambda: n3_has("node.kubernetes.io/memory-pressure"))
            await client.patch("nodes", "n3", {"spec": {"unschedulable": None}}, patch_type="strategic")

            async def uncordoned() -> bool:
                return not await n3_has("node.kubernetes.io/unschedulable")

            await eventually(uncordoned)
            t = taints_of(await node("n3"))
            assert ("node.kubernetes.io/memory-pressure", "NoSchedule") in t
            assert t[("example.com/dedicated", "NoSchedule")] == USER_TAINT
            await kubelets.post_status("n3", "MemoryPressure", "False")

            async def n3_clean() -> bool:
                return list(taints_of(await node("n3"))) == [("example.com/dedicated", "NoSchedule")]

            await eventually(n3_clean)
            await eventually(n1_clean)

            await recorder.flush()
            events = (await client.list("events", namespace="default"))["items"]
            reasons = {(e["reason"], e["message"]) for e in events}
            assert ("NodeNotReady", "Node n1 status is now: NodeNotReady") in reasons
            assert ("NodeNotReady", "Node is not ready") in reasons
            assert ("RegisteredNode", "Node n2 event: Registered Node n2 in Controller") in reasons
        finally:
            await controller.stop()
            await kubelets.stop()
            await recorder.close()
            await informers.stop()

    run_virtual(main())


def test_all_zones_fully_disrupted_adds_no_noexecute_taint() -> None:
    """A single-node cluster whose node goes silent is "master disruption mode": Unknown, the
    NoSchedule taint, but no NoExecute taint (nothing gets evicted)."""

    async def main() -> None:
        clock = virtual_clock()
        client = InProcessClient(ApiService(MemoryStore(), clock=clock))
        await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "solo"}})
        await client.patch("nodes", "solo", {"status": {"conditions": [
            {"type": "Ready", "status": "True", "lastHeartbeatTime": clock.rfc3339(),
             "lastTransitionTime": clock.rfc3339()}]}}, patch_type="merge", subresource="status")
        informers = SharedInformerFactory(client)
        controller = NodeLifecycleController(client, informers=informers, clock=clock, grace_period=20)
        await controller.start()
        try:
            await asyncio.sleep(120)
            solo = await client.get("nodes", "solo")
            assert condition(solo, "Ready")["status"] == "Unknown"
            t = taints_of(solo)
            assert (UNREACHABLE, "NoSchedule") in t
            assert (UNREACHABLE, "NoExecute") not in t
        finally:
            await controller.stop()
            await informers.stop()

    run_virtual(main())


def test_node_that_never_reported_gets_startup_grace() -> None:
    async def main() -> None:
        clock = virtual_clock()
        client = InProcessClient(ApiService(MemoryStore(), clock=clock))
        await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "mute"}})
        informers = SharedInformerFactory(client)
        controller = NodeLifecycleController(client, informers=informers, clock=clock, startup_grace_period=60)
        await controller.start()
        try:
            await asyncio.sleep(50)
            assert not (await client.get("nodes", "mute")).get("status", {}).get("conditions")
            await asyncio.sleep(20)
            ready = condition(await client.get("nodes", "mute"), "Ready")
            assert (ready["status"], ready["reason"], ready["message"]) == (
                "Unknown", "NodeStatusNeverUpdated", "Kubelet never posted node status.")
        finally:
            await controller.stop()
            await informers.stop()

    run_virtual(main())
