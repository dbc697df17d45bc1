"""The scheduler against the real in-process API, in virtual time."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.kubelet import KubeletSimulator
from everynode.scheduler import Scheduler
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock

Obj = dict[str, Any]


class Cluster:
    def __init__(self, *, kubelet: bool = True) -> None:
        self.clock = virtual_clock()
        self.service = ApiService(MemoryStore(), clock=self.clock)
        self.client = InProcessClient(self.service)
        self.factory = SharedInformerFactory(self.client)
        self.scheduler = Scheduler(self.client, clock=self.clock, informers=self.factory)
        self.kubelet = KubeletSimulator(self.client, clock=self.clock, informers=self.factory) if kubelet else None

    async def __aenter__(self) -> Cluster:
        await self.scheduler.start()
        if self.kubelet is not None:
            await self.kubelet.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.scheduler.stop()
        if self.kubelet is not None:
            await self.kubelet.stop()
        await self.factory.stop()

    async def node(self, name: str, *, labels: dict[str, str] | None = None, cpu: str = "4",
                   taints: list[Obj] | None = None) -> Obj:
        node: Obj = {"apiVersion": "v1", "kind": "Node",
                     "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
                     "spec": {},
                     "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                                "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}}
        if taints:
            node["spec"]["taints"] = taints
        return await self.client.create("nodes", node)

    async def pod(self, name: str, *, host_port: int | None = None, node_selector: dict[str, str] | None = None,
                  pin: str | None = None, cpu: str | None = None, priority_class: str | None = None,
                  tolerations: list[Obj] | None = None) -> Obj:
        container: Obj = {"name": "c", "image": "nginx"}
        if host_port:
            container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
        if cpu:
            container["resources"] = {"requests": {"cpu": cpu}}
        spec: Obj = {"containers": [container]}
        if node_selector:
            spec["nodeSelector"] = node_selector
        if priority_class:
            spec["priorityClassName"] = priority_class
        if tolerations:
            spec["tolerations"] = tolerations
        if pin:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": [pin]}]}]}}}
        return await self.client.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                                 "metadata": {"name": name, "namespace": "default"}, "spec": spec})

    async def get_pod(self, name: str) -> Obj:
        return await self.client.get("pods", name, namespace="default")

    async def events(self, name: str) -> list[Obj]:
        await self.scheduler.recorder.flush()
        items = (await self.client.list("events", namespace="default"))["items"]
        return [e for e in items if e["involvedObject"].get("name") == name]


async def eventually(check: Callable[[], Awaitable[bool]], *, timeout: float = 120.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in virtual time")
        await asyncio.sleep(0.25)


def scheduled_condition(pod: Obj) -> Obj | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "PodScheduled":
            return c
    return None


def test_pod_is_bound_and_scheduled_event_recorded() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("n1")
            await c.pod("web")

            async def bound() -> bool:
                return bool((await c.get_pod("web"))["spec"].get("nodeName"))

            await eventually(bound)
            pod = await c.get_pod("web")
            assert pod["spec"]["nodeName"] == "n1"
            assert scheduled_condition(pod)["status"] == "True"
            events = await c.events("web")
            assert [(e["reason"], e["message"], e["source"]["component"]) for e in events] == [
                ("Scheduled", "Successfully assigned default/web to n1", "default-scheduler")]

    run_virtual(main())


def test_second_pod_with_the_same_host_port_stays_pending() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("n1")
            await c.pod("a", host_port=8080)

            async def a_bound() -> bool:
                return bool((await c.get_pod("a"))["spec"].get("nodeName"))

            await eventually(a_bound)
            await c.pod("b", host_port=8080)
            expected = ("0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports. "
                        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")

            async def b_unschedulable() -> bool:
                cond = scheduled_condition(await c.get_pod("b"))
                return cond is not None and cond.get("status") == "False"

            await eventually(b_unschedulable)
            pod = await c.get_pod("b")
            cond = scheduled_condition(pod)
            assert (cond["reason"], cond["message"]) == ("Unschedulable", expected)
            assert not pod["spec"].get("nodeName")
            assert pod["status"]["phase"] == "Pending"
            events = await c.events("b")
            assert events and events[-1]["reason"] == "FailedScheduling"
            assert events[-1]["type"] == "Warning" and events[-1]["message"] == expected

    run_virtual(main())


def test_failed_scheduling_message_counts_reasons_over_nodes() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("n1", labels={"disk": "ssd"})
            await c.node("n2")
            await c.node("n3")
            await c.pod("holder", host_port=80, node_selector={"disk": "ssd"})

            async def holder_bound() -> bool:
                return bool((await c.get_pod("holder"))["spec"].get("nodeName"))

            await eventually(holder_bound)
            await c.pod("p", host_port=80, node_selector={"disk": "ssd"})

            async def failed() -> bool:
                cond = scheduled_condition(await c.get_pod("p"))
                return cond is not None and cond.get("status") == "False"

            await eventually(failed)
            assert scheduled_condition(await c.get_pod("p"))["message"] == (
                "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, "
                "2 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: "
                "1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.")

    run_virtual(main())


def test_pinned_pod_only_looks_at_its_node_and_counts_the_others() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("n1")
            await c.node("n2")
            await c.pod("ghost", pin="missing")

            async def failed() -> bool:
                cond = scheduled_condition(await c.get_pod("ghost"))
                return cond is not None and cond.get("status") == "False"

            await eventually(failed)
            assert scheduled_condition(await c.get_pod("ghost"))["message"] == (
                "0/2 nodes are available: 2 node(s) didn't satisfy plugin(s) [NodeAffinity]. "
                "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
            # The node appears: the parked pod is retried and bound there.
            await c.node("missing")

            async def bound() -> bool:
                return (await c.get_pod("ghost"))["spec"].get("nodeName") == "missing"

            await eventually(bound)

    run_virtual(main())


def test_unschedulable_pod_is_retried_when_a_matching_node_arrives() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("n1")
            await c.pod("gpu", node_selector={"gpu": "yes"})

            async def failed() -> bool:
                cond = scheduled_condition(await c.get_pod("gpu"))
                return cond is not None and cond.get("status") == "False"

            await eventually(failed)
            await c.node("n2", labels={"gpu": "yes"})

            async def bound() -> bool:
                return (await c.get_pod("gpu"))["spec"].get("nodeName") == "n2"

            await eventually(bound)

    run_virtual(main())


def test_critical_pinned_pod_preempts_a_lower_priority_pod() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.client.create("priorityclasses.scheduling.k8s.io", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "low"}, "value": 10})
            await c.node("n1", cpu="2")
            await c.pod("filler", cpu="2", priority_class="low")

            async def filler_running() -> bool:
                return (await c.get_pod("filler")).get("status", {}).get("phase") == "Running"

            await eventually(filler_running)
            await c.pod("agent", cpu="1", pin="n1", priority_class="system-node-critical")

            async def agent_bound() -> bool:
                return (await c.get_pod("agent"))["spec"].get("nodeName") == "n1"

            await eventually(agent_bound)
            names = [p["metadata"]["name"] for p in (await c.client.list("pods", namespace="default"))["items"]]
            assert names == ["agent"]
            assert c.scheduler.preemptions == 1
            events = await c.events("filler")
            assert any(e["reason"] == "Preempted" for e in events)

    run_virtual(main())


def test_lower_priority_pod_never_preempts_a_critical_one() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.client.create("priorityclasses.scheduling.k8s.io", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "low"}, "value": 10})
            await c.node("n1", cpu="2")
            await c.pod("agent", cpu="2", pin="n1", priority_class="system-node-critical")

            async def agent_bound() -> bool:
                return (await c.get_pod("agent"))["spec"].get("nodeName") == "n1"

            await eventually(agent_bound)
            await c.pod("app", cpu="1", priority_class="low")

            async def failed() -> bool:
                cond = scheduled_condition(await c.get_pod("app"))
                return cond is not None and cond.get("status") == "False"

            await eventually(failed)
            assert scheduled_condition(await c.get_pod("app"))["message"] == (
                "0/1 nodes are available: 1 Insufficient cpu. "
                "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
            assert (await c.get_pod("agent"))["metadata"].get("deletionTimestamp") is None

    run_virtual(main())


def test_pod_deletion_frees_the_port_for_a_waiting_pod() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("n1")
            await c.pod("a", host_port=9100)

            async def a_bound() -> bool:
                return bool((await c.get_pod("a"))["spec"].get("nodeName"))

            await eventually(a_bound)
            await c.pod("b", host_port=9100)

            async def b_failed() -> bool:
                cond = scheduled_condition(await c.get_pod("b"))
                return cond is not None and cond.get("status") == "False"

            await eventually(b_failed)
            await c.client.delete("pods", "a", namespace="default", grace_period_seconds=0)

            async def b_bound() -> bool:
                return (await c.get_pod("b"))["spec"].get("nodeName") == "n1"

            await eventually(b_bound)

    run_virtual(main())


def test_a_status_update_of_a_bound_pod_replaces_the_cached_version() -> None:
    """The cache keeps the bound pod's current version, not the one seen at binding (which the
    store and the informers have long dropped): usage unchanged, the old version not kept alive."""
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("n1")
            await c.pod("web", cpu="1")

            async def bound() -> bool:
                return bool((await c.get_pod("web"))["spec"].get("nodeName"))

            await eventually(bound)
            pod = await c.get_pod("web")
            await c.client.update("pods", {**pod, "status": {**pod["status"], "phase": "Running"}},
                                  subresource="status")
            latest = await c.get_pod("web")

            async def refreshed() -> bool:
                info = c.scheduler.cache.node("n1")
                pi = info.pods.get("default/web") if info is not None else None
                return pi is not None and pi.pod["metadata"]["resourceVersion"] == latest["metadata"]["resourceVersion"]

            await eventually(refreshed)
            info = c.scheduler.cache.node("n1")
            assert info.req_milli_cpu == 1000 and len(info.pods) == 1

    run_virtual(main())
