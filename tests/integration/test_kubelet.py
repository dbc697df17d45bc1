"""The kubelet simulation against the real in-process API, in virtual time."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.clock import parse_rfc3339
from everynode.kubelet import KubeletSimulator
from everynode.kubelet.podlifecycle import backoff_delay
from everynode.scheduler import Scheduler
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock

Obj = dict[str, Any]


class Cluster:
    def __init__(self, *, store: MemoryStore | None = None, pod_startup: float = 1.0,
                 pending_status: bool = True) -> None:
        self.clock = virtual_clock()
        self.store = store or MemoryStore()
        self.service = ApiService(self.store, clock=self.clock)
        self.client = InProcessClient(self.service)
        self.factory = SharedInformerFactory(self.client)
        self.scheduler = Scheduler(self.client, clock=self.clock, informers=self.factory)
        self.kubelet = KubeletSimulator(self.client, clock=self.clock, informers=self.factory,
                                        pod_startup=pod_startup, pending_status=pending_status)

    async def __aenter__(self) -> Cluster:
        await self.scheduler.start()
        await self.kubelet.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.scheduler.stop()
        await self.kubelet.stop()
        await self.factory.stop()

    async def node(self, name: str, *, annotations: dict[str, str] | None = None) -> Obj:
        md: Obj = {"name": name, "labels": {"kubernetes.io/hostname": name}}
        if annotations:
            md["annotations"] = annotations
        return await self.client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": md})

    async def pod(self, name: str, *, annotations: dict[str, str] | None = None, host_network: bool = False,
                  env: list[Obj] | None = None, restart_policy: str | None = None) -> Obj:
        container: Obj = {"name": "c", "image": "nginx:1.27"}
        if env:
            container["env"] = env
        spec: Obj = {"containers": [container]}
        if host_network:
            spec["hostNetwork"] = True
        if restart_policy:
            spec["restartPolicy"] = restart_policy
        md: Obj = {"name": name, "namespace": "default"}
        if annotations:
            md["annotations"] = annotations
        return await self.client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})

    async def get_pod(self, name: str) -> Obj:
        return await self.client.get("pods", name, namespace="default")

    async def get_node(self, name: str) -> Obj:
        return await self.client.get("nodes", name)

    async def post_ready(self, name: str, status: str, reason: str, message: str) -> None:
        """Write the node's Ready condition as someone other than its kubelet would."""
        await self.client.patch("nodes", name, {"status": {"conditions": [
            {"type": "Ready", "status": status, "reason": reason, "message": message}]}},
            patch_type="strategic", subresource="status")

    async def lease(self, name: str) -> Obj:
        return await self.client.get("leases.coordination.k8s.io", name, namespace="kube-node-lease")


async def eventually(check: Callable[[], Awaitable[bool]], *, timeout: float = 120.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not await check():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in virtual time")
        await asyncio.sleep(0.25)


def cond(obj: Obj, type_: str) -> Obj | None:
    for c in (obj.get("status") or {}).get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def container(pod: Obj) -> Obj:
    return pod["status"]["containerStatuses"][0]


def test_node_is_adopted_with_status_addresses_and_lease() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.node("w2")

            async def ready() -> bool:
                nodes = [await c.get_node(n) for n in ("w1", "w2")]
                return all((cond(n, "Ready") or {}).get("status") == "True" for n in nodes)

            await eventually(ready)
            n1, n2 = await c.get_node("w1"), await c.get_node("w2")
            ready_cond = cond(n1, "Ready")
            assert (ready_cond["reason"], ready_cond["message"]) == ("KubeletReady", "kubelet is posting ready status")
            for t in ("MemoryPressure", "DiskPressure", "PIDPressure"):
                assert cond(n1, t)["status"] == "False"
            ips = [n["status"]["addresses"][0] for n in (n1, n2)]
            assert ips == [{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "InternalIP", "address": "10.0.0.3"}]
            assert n1["status"]["addresses"][1] == {"type": "Hostname", "address": "w1"}
            assert (n1["spec"]["podCIDR"], n2["spec"]["podCIDR"]) == ("10.244.0.0/24", "10.244.1.0/24")
            assert n1["status"]["capacity"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
            assert n1["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi", "pods": "110"}
            info = n1["status"]["nodeInfo"]
            assert (info["kubeletVersion"], info["containerRuntimeVersion"], info["architecture"],
                    info["operatingSystem"]) == ("v1.33.0", "everynode://0.1.0", "amd64", "linux")
            lease = await c.lease("w1")
            assert lease["spec"]["holderIdentity"] == "w1"
            assert lease["spec"]["leaseDurationSeconds"] == 40
            assert lease["spec"]["renewTime"].endswith("Z") and "." in lease["spec"]["renewTime"]
            assert lease["metadata"]["ownerReferences"][0]["kind"] == "Node"

    run_virtual(main())


def test_each_node_is_adopted_once() -> None:
    """Nodes registered together are adopted once each: the watch delivers the kubelet's own
    earlier writes (the adoption's metadata patch, not yet Ready) after its status report, and
    those must not count as "someone marked the node not Ready"."""

    async def main() -> None:
        async with Cluster() as c:
            names = [f"w{i}" for i in range(20)]
            for name in names:
                await c.node(name)

            async def all_ready() -> bool:
                nodes = [await c.get_node(n) for n in names]
                return all((cond(n, "Ready") or {}).get("status") == "True" for n in nodes)

            await eventually(all_ready)
            await asyncio.sleep(5)  # (status reports are every 300 s, renewals every 10 s)
            assert c.kubelet.node_status_updates == len(names)
            assert c.kubelet.errors == 0

    run_virtual(main())


def test_writers_hand_the_loop_over_during_a_long_queue() -> None:
    """In-process writes never suspend, so a writer yields every ``yield_every`` queue items:
    other tasks (the informers, the API server) run while a long queue is worked off."""

    async def main() -> None:
        async with Cluster() as c:
            c.kubelet.yield_every = 4
            seen: list[int] = []

            async def probe() -> None:
                while c.kubelet.node_status_updates < 40:
                    seen.append(c.kubelet.node_status_updates)
                    await asyncio.sleep(0)

            task = asyncio.get_running_loop().create_task(probe())
            for i in range(40):
                await c.node(f"w{i}")
            await asyncio.wait_for(task, 60)
            assert any(0 < n < 40 for n in seen), seen

    run_virtual(main())


def test_not_ready_written_by_someone_else_is_reasserted() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await asyncio.sleep(5)
            reports = c.kubelet.node_status_updates
            await c.post_ready("w1", "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
            await asyncio.sleep(1)
            assert (cond(await c.get_node("w1"), "Ready") or {}).get("status") == "True"
            assert c.kubelet.node_status_updates == reports + 1

    run_virtual(main())


def test_a_kept_not_ready_status_is_reported_not_reasserted() -> None:
    """A node whose status its kubelet keeps (``everynode.io/node-status: kept``) and that posts
    Ready=False goes on posting it: every 300 s, with a new heartbeat, and no re-assertion."""
    from everynode.kubelet.podstatus import KEPT, NODE_STATUS_ANNOTATION

    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1", annotations={NODE_STATUS_ANNOTATION: KEPT})
            await asyncio.sleep(5)
            reports = c.kubelet.node_status_updates
            await c.post_ready("w1", "False", "KubeletNotReady", "container runtime network not ready")
            await asyncio.sleep(301)
            ready = cond(await c.get_node("w1"), "Ready") or {}
            assert (ready.get("status"), ready.get("reason")) == ("False", "KubeletNotReady")
            assert parse_rfc3339(ready["lastHeartbeatTime"]) > c.clock.now() - 300
            assert c.kubelet.node_status_updates == reports + 1  # the periodic report, nothing more

    run_virtual(main())


def test_lease_is_renewed_every_heartbeat_interval() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await asyncio.sleep(5)
            first = parse_rfc3339((await c.lease("w1"))["spec"]["renewTime"])
            await asyncio.sleep(30)
            later = parse_rfc3339((await c.lease("w1"))["spec"]["renewTime"])
            assert 25 <= later - first <= 35

    run_virtual(main())


def test_lease_renewal_is_an_update_of_the_held_copy() -> None:
    """As the kubelet's lease controller: renewals PUT the Lease our last write returned (no GET,
    no patch); someone else's write makes the next PUT conflict, which is resolved with one GET;
    a deleted Lease is created again."""

    async def main() -> None:
        async with Cluster() as c:
            calls: list[tuple[str, str]] = []
            real_update, real_get, real_patch = c.client.update, c.client.get, c.client.patch

            async def update(resource: str, obj: Obj, **kw: Any) -> Obj:
                calls.append(("update", resource))
                return await real_update(resource, obj, **kw)

            async def get(resource: str, name: str, **kw: Any) -> Obj:
                calls.append(("get", resource))
                return await real_get(resource, name, **kw)

            async def patch(resource: str, name: str, body: Any, **kw: Any) -> Obj:
                calls.append(("patch", resource))
                return await real_patch(resource, name, body, **kw)

            c.client.update, c.client.get, c.client.patch = update, get, patch  # type: ignore[method-assign]
            leases = "leases.coordination.k8s.io"
            await c.node("w1")
            await asyncio.sleep(5)
            calls.clear()
            await asyncio.sleep(30)
            assert [k for k in calls if k[1] == leases] == [("update", leases)] * 3
            before = await real_get(leases, "w1", namespace="kube-node-lease")
            # Another writer: our held copy is stale now.
            await real_patch(leases, "w1", {"metadata": {"labels": {"x": "y"}}}, namespace="kube-node-lease")
            calls.clear()
            await asyncio.sleep(10)
            assert [k for k in calls if k[1] == leases] == [("update", leases), ("get", leases), ("update", leases)]
            after = await real_get(leases, "w1", namespace="kube-node-lease")
            assert after["metadata"]["labels"] == {"x": "y"}  # kept: the renewal changes renewTime only
            assert parse_rfc3339(after["spec"]["renewTime"]) - parse_rfc3339(before["spec"]["renewTime"]) == 10
            assert after["metadata"]["ownerReferences"][0]["name"] == "w1"
            await c.client.delete(leases, "w1", namespace="kube-node-lease")
            await asyncio.sleep(10)
            recreated = await real_get(leases, "w1", namespace="kube-node-lease")
            assert recreated["metadata"]["uid"] != after["metadata"]["uid"]
            assert recreated["spec"]["holderIdentity"] == "w1"
            assert c.kubelet.errors == 0

    run_virtual(main())


def test_stopped_kubelet_stops_renewing_and_resumes() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await asyncio.sleep(5)
            await c.client.patch("nodes", "w1", {"metadata": {"annotations": {"everynode.io/kubelet": "stopped"}}})
            await asyncio.sleep(1)
            stopped_at = (await c.lease("w1"))["spec"]["renewTime"]
            await asyncio.sleep(120)
            assert (await c.lease("w1"))["spec"]["renewTime"] == stopped_at
            await c.client.patch("nodes", "w1", {"metadata": {"annotations": {"everynode.io/kubelet": None}}})
            await asyncio.sleep(1)
            assert (await c.lease("w1"))["spec"]["renewTime"] != stopped_at

    run_virtual(main())


def test_pod_becomes_running_and_ready_with_ips() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.pod("web")

            async def ready() -> bool:
                return (cond(await c.get_pod("web"), "Ready") or {}).get("status") == "True"

            await eventually(ready)
            pod = await c.get_pod("web")
            st = pod["status"]
            assert st["phase"] == "Running"
            assert st["hostIP"] == "10.0.0.2" and st["hostIPs"] == [{"ip": "10.0.0.2"}]
            assert st["podIP"] == "10.244.0.2" and st["podIPs"] == [{"ip": "10.244.0.2"}]
            assert st["startTime"]
            cs = container(pod)
            assert cs["ready"] is True and cs["started"] is True and cs["restartCount"] == 0
            assert cs["containerID"].startswith("everynode://")
            assert cs["imageID"].startswith("docker.io/library/nginx@sha256:")
            assert cs["image"] == "docker.io/library/nginx:1.27"
            assert "running" in cs["state"]
            types = {c["type"]: c["status"] for c in st["conditions"]}
            assert types == {"PodReadyToStartContainers": "True", "Initialized": "True", "Ready": "True",
                             "ContainersReady": "True", "PodScheduled": "True"}
            assert all(c.get("lastTransitionTime") for c in st["conditions"])

    run_virtual(main())


def test_startup_seconds_annotation_keeps_the_pod_creating() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.pod("slow", annotations={"everynode.io/startup-seconds": "60"})

            async def creating() -> bool:
                cs = (await c.get_pod("slow")).get("status", {}).get("containerStatuses") or [{}]
                return cs[0].get("state", {}).get("waiting", {}).get("reason") == "ContainerCreating"

            await eventually(creating)
            loop = asyncio.get_running_loop()
            t0 = loop.time()
            pod = await c.get_pod("slow")
            assert pod["status"]["phase"] == "Pending" and cond(pod, "Ready")["status"] == "False"

            async def running() -> bool:
                return (await c.get_pod("slow"))["status"]["phase"] == "Running"

            await eventually(running)
            assert loop.time() - t0 >= 55

    run_virtual(main())


def test_a_pending_status_left_out_is_what_the_next_write_stores_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """``plan``'s copy leaves the Pending write out (``pending_status=False``): the pod is written
    once, when its containers start, and then holds exactly what it holds after both writes —
    its ``startTime`` and the Initialized condition's transition from the moment the kubelet
    acknowledged it, five seconds before.  Until then it has no kubelet status at all."""
    from everynode.api import meta

    def run(pending_status: bool) -> tuple[int, list[str], Obj]:
        uids = iter(range(1, 100))
        monkeypatch.setattr(meta, "new_uid", lambda: f"00000000-0000-0000-0000-{next(uids):012d}")

        async def main() -> tuple[int, list[str], Obj]:
            async with Cluster(pod_startup=5.0, pending_status=pending_status) as c:
                await c.node("w1")
                await c.pod("web")
                seen: list[str] = []

                async def ready() -> bool:
                    pod = await c.get_pod("web")
                    waiting = [cs["state"]["waiting"]["reason"] for cs in pod["status"].get("containerStatuses") or ()
                               if "waiting" in cs["state"]]
                    seen.extend(w for w in waiting if w not in seen)
                    return (cond(pod, "Ready") or {}).get("status") == "True"

                await eventually(ready)
                return c.kubelet.lifecycle.pod_status_updates, seen, await c.get_pod("web")

        return run_virtual(main())

    writes, seen, written = run(True)
    lean_writes, lean_seen, lean = run(False)
    assert (writes, seen) == (2, ["ContainerCreating"])
    assert (lean_writes, lean_seen) == (1, [])
    assert lean["status"] == written["status"]
    start = parse_rfc3339(lean["status"]["startTime"])
    assert parse_rfc3339(cond(lean, "Initialized")["lastTransitionTime"]) == start
    assert parse_rfc3339(cond(lean, "Ready")["lastTransitionTime"]) == start + 5


def test_host_network_pod_gets_the_node_ip() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.pod("agent", host_network=True)

            async def running() -> bool:
                return (await c.get_pod("agent")).get("status", {}).get("phase") == "Running"

            await eventually(running)
            st = (await c.get_pod("agent"))["status"]
            assert st["podIP"] == st["hostIP"] == "10.0.0.2"

    run_virtual(main())


def test_never_ready() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.pod("p", annotations={"everynode.io/behavior": "never-ready"})
            await asyncio.sleep(60)
            pod = await c.get_pod("p")
            assert pod["status"]["phase"] == "Running"
            assert cond(pod, "Ready")["status"] == "False"
            assert cond(pod, "Ready")["reason"] == "ContainersNotReady"
            assert container(pod)["ready"] is False and container(pod)["started"] is True

    run_virtual(main())


def test_crash_loop_restarts_with_backoff() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.pod("p", annotations={"everynode.io/behavior": "crash-loop"})
            await asyncio.sleep(120)
            pod = await c.get_pod("p")
            cs = container(pod)
            assert pod["status"]["phase"] == "Running"
            assert cs["restartCount"] >= 3
            assert cs["lastState"]["terminated"]["reason"] == "Error"
            assert cs["lastState"]["terminated"]["exitCode"] == 1
            await asyncio.sleep(3600)
            cs = container(await c.get_pod("p"))
            # at most one restart per 5 minutes once the back-off is capped
            assert 10 <= cs["restartCount"] <= 25

            async def backing_off() -> bool:
                s = container(await c.get_pod("p"))["state"]
                return s.get("waiting", {}).get("reason") == "CrashLoopBackOff"

            await eventually(backing_off, timeout=400)

    run_virtual(main())


@pytest.mark.parametrize(("restarts", "delay"), [(0, 10), (1, 10), (2, 20), (3, 40), (5, 160), (6, 300), (20, 300)])
def test_backoff_delay(restarts: int, delay: float) -> None:
    assert backoff_delay(restarts) == delay


def test_image_pull_error_stays_pending() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.pod("p", annotations={"everynode.io/behavior": "image-pull-error"})
            seen: set[str] = set()
            for _ in range(120):
                await asyncio.sleep(0.5)
                pod = await c.get_pod("p")
                assert pod.get("status", {}).get("phase", "Pending") == "Pending"
                reason = (container(pod) if pod.get("status", {}).get("containerStatuses") else {}).get(
                    "state", {}).get("waiting", {}).get("reason")
                if reason:
                    seen.add(reason)
            assert {"ErrImagePull", "ImagePullBackOff"} <= seen

    run_virtual(main())


def test_fail_behavior() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.pod("p", annotations={"everynode.io/behavior": "fail"})

            async def failed() -> bool:
                return (await c.get_pod("p")).get("status", {}).get("phase") == "Failed"

            await eventually(failed)
            term = container(await c.get_pod("p"))["state"]["terminated"]
            assert (term["reason"], term["exitCode"]) == ("Error", 1)

    run_virtual(main())


def test_deleting_a_pod_completes() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await c.pod("p")

            async def running() -> bool:
                return (await c.get_pod("p")).get("status", {}).get("phase") == "Running"

            await eventually(running)
            await c.client.delete("pods", "p", namespace="default")  # graceful: sets deletionTimestamp

            async def gone() -> bool:
                items = (await c.client.list("pods", namespace="default"))["items"]
                return not items

            await eventually(gone, timeout=10)
            assert c.kubelet.pod_removals == 1

    run_virtual(main())


def test_downward_api_environment_is_recorded() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            env = [
                {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                {"name": "POD_NS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.namespace"}}},
                {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "HOST_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                {"name": "SA", "valueFrom": {"fieldRef": {"fieldPath": "spec.serviceAccountName"}}},
                {"name": "GREETING", "value": "hello $(NODE_NAME)"},
            ]
            await c.pod("p", env=env)

            async def recorded() -> bool:
                return "everynode.io/resolved-env" in ((await c.get_pod("p"))["metadata"].get("annotations") or {})

            await eventually(recorded)
            pod = await c.get_pod("p")
            resolved = json.loads(pod["metadata"]["annotations"]["everynode.io/resolved-env"])
            assert resolved == {"c": {"NODE_NAME": "w1", "POD_NAME": "p", "POD_NS": "default", "POD_IP": "10.244.0.2",
                                      "HOST_IP": "10.0.0.2", "SA": "default", "GREETING": "hello w1"}}
            assert c.kubelet.environment(pod) == resolved

    run_virtual(main())


def test_node_index_is_stable_across_restarts() -> None:
    async def main() -> None:
        store = MemoryStore()
        async with Cluster(store=store) as c:
            await c.node("a")
            await c.node("b")

            async def adopted() -> bool:
                nodes = [await c.get_node(n) for n in ("a", "b")]
                return all(n.get("status", {}).get("addresses") for n in nodes)

            await eventually(adopted)
            await c.client.delete("nodes", "a")
        async with Cluster(store=store) as c2:
            await c2.node("c")

            async def adopted_c() -> bool:
                return bool((await c2.get_node("c")).get("status", {}).get("addresses"))

            await eventually(adopted_c)
            b, new = await c2.get_node("b"), await c2.get_node("c")
            assert b["status"]["addresses"][0]["address"] == "10.0.0.3"
            assert new["status"]["addresses"][0]["address"] != "10.0.0.3"

    run_virtual(main())
