"""Inter-pod affinity, topology spreading and default spreading, through the in-process API."""

from __future__ import annotations

from typing import Any

from everynode.virtualtime import run_virtual
from tests.integration.test_scheduler import Cluster, eventually, scheduled_condition

Obj = dict[str, Any]

WEB = {"app": "web"}
HOSTNAME = "kubernetes.io/hostname"
CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}
ANTI_HOSTNAME = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": WEB}, "topologyKey": HOSTNAME}]}}
RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f", "uid": "rs-uid", "controller": True}


async def create_pod(c: Cluster, name: str, *, labels: dict[str, str] | None = None, affinity: Obj | None = None,
                     spread: list[Obj] | None = None, owner: Obj | None = None,
                     priority_class: str | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "c", "image": "nginx"}]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    md: Obj = {"name": name, "namespace": "default", "labels": labels or {}}
    if owner:
        md["ownerReferences"] = [owner]
    return await c.client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})


async def placement(c: Cluster, names: list[str]) -> dict[str, str]:
    return {n: (await c.get_pod(n))["spec"].get("nodeName") or "" for n in names}


def test_required_anti_affinity_one_replica_per_node_extras_pending_with_upstreams_message() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("cp", taints=[CONTROL_PLANE_TAINT])
            for i in (1, 2, 3):
                await c.node(f"w{i}")
            names = [f"web-{i}" for i in range(5)]
            for n in names:
                await create_pod(c, n, labels=WEB, affinity=ANTI_HOSTNAME, owner=RS_OWNER)

            async def settled() -> bool:
                placed = await placement(c, names)
                pending = [n for n, node in placed.items() if not node]
                if len(pending) != 2:
                    return False
                for n in pending:
                    cond = scheduled_condition(await c.get_pod(n))
                    if cond is None or cond.get("status") != "False":
                        return False
                return True

            await eventually(settled)
            placed = await placement(c, names)
            assert sorted(n for n in placed.values() if n) == ["w1", "w2", "w3"]
            expected = ("0/4 nodes are available: 1 node(s) had untolerated taint "
                        "{node-role.kubernetes.io/control-plane: }, 3 node(s) didn't match pod anti-affinity rules. "
                        "preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, "
                        "3 No preemption victims found for incoming pod.")
            pending = [n for n, node in placed.items() if not node]
            for n in pending:
                cond = scheduled_condition(await c.get_pod(n))
                assert (cond["reason"], cond["message"]) == ("Unschedulable", expected)
                events = await c.events(n)
                assert events[-1]["reason"] == "FailedScheduling" and events[-1]["message"] == expected

            # A replica goes away: one waiting replica takes its node.
            gone = next(n for n, node in placed.items() if node == "w2")
            await c.client.delete("pods", gone, namespace="default", grace_period_seconds=0)

            async def refilled() -> bool:
                now = await placement(c, [n for n in names if n != gone])
                return sorted(v for v in now.values() if v) == ["w1", "w2", "w3"]

            await eventually(refilled)

            # A new node: the last waiting replica goes there.
            await c.node("w4")

            async def all_bound() -> bool:
                now = await placement(c, [n for n in names if n != gone])
                return sorted(now.values()) == ["w1", "w2", "w3", "w4"]

            await eventually(all_bound)

    run_virtual(main())


def test_pod_with_required_affinity_waits_for_its_partner() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("n1", labels={"topology.kubernetes.io/zone": "a"})
            await c.node("n2", labels={"topology.kubernetes.io/zone": "b"})
            near_cache = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "topology.kubernetes.io/zone"}]}}
            await create_pod(c, "web", labels=WEB, affinity=near_cache)

            async def waiting() -> bool:
                cond = scheduled_condition(await c.get_pod("web"))
                return cond is not None and cond.get("status") == "False"

            await eventually(waiting)
            assert scheduled_condition(await c.get_pod("web"))["message"] == (
                "0/2 nodes are available: 2 node(s) didn't match pod affinity rules. "
                "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
            await create_pod(c, "cache", labels={"app": "cache"},
                             affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                                 "nodeSelectorTerms": [{"matchFields": [
                                     {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}]}}})

            async def together() -> bool:
                return (await placement(c, ["web", "cache"])) == {"web": "n2", "cache": "n2"}

            await eventually(together)

    run_virtual(main())


def test_topology_spread_do_not_schedule_across_zones() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            for name, zone in (("a1", "a"), ("a2", "a"), ("b1", "b")):
                await c.node(name, labels={"topology.kubernetes.io/zone": zone})
            constraint = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                           "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": WEB}}]
            names = [f"web-{i}" for i in range(4)]
            for n in names:
                await create_pod(c, n, labels=WEB, spread=constraint)

            async def bound() -> bool:
                return all((await placement(c, names)).values())

            await eventually(bound)
            zones = [node[0] for node in (await placement(c, names)).values()]
            assert sorted(zones) == ["a", "a", "b", "b"]

    run_virtual(main())


def test_default_spreading_of_pods_behind_a_service() -> None:
    async def main() -> None:
        async with Cluster(kubelet=False) as c:
            await c.node("big", cpu="64")
            await c.node("small1")
            await c.node("small2")
            await c.client.create("services", {"apiVersion": "v1", "kind": "Service",
                                               "metadata": {"name": "web", "namespace": "default"},
                                               "spec": {"selector": WEB, "ports": [{"port": 80}]}})
            await c.scheduler._service_informer.wait_synced()  # type: ignore[union-attr]

            async def service_seen() -> bool:
                return bool(c.scheduler._service_informer and len(c.scheduler._service_informer))

            await eventually(service_seen)
            names = [f"web-{i}" for i in range(3)]
            loose = [f"job-{i}" for i in range(3)]
            for n in names:
                await create_pod(c, n, labels=WEB)
                await eventually(lambda n=n: _bound(c, n))  # type: ignore[misc]
            for n in loose:
                await create_pod(c, n, labels={"app": "batch"})
                await eventually(lambda n=n: _bound(c, n))  # type: ignore[misc]
            # Selected by the Service: spread over the three nodes.  Not selected by anything:
            # least-allocated alone, every one to the big node.
            assert sorted((await placement(c, names)).values()) == ["big", "small1", "small2"]
            assert set((await placement(c, loose)).values()) == {"big"}

    run_virtual(main())


def test_higher_priority_pod_preempts_the_pod_its_anti_affinity_rejects() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.client.create("priorityclasses.scheduling.k8s.io", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": "high"}, "value": 1000})
            await c.node("n1")
            await create_pod(c, "old-web", labels=WEB)
            await eventually(lambda: _bound(c, "old-web"))
            # Equal priority: anti-affinity keeps it out, preemption finds no victim.
            await create_pod(c, "peer", labels={"app": "peer"}, affinity=ANTI_HOSTNAME)

            async def peer_refused() -> bool:
                cond = scheduled_condition(await c.get_pod("peer"))
                return cond is not None and cond.get("status") == "False"

            await eventually(peer_refused)
            assert scheduled_condition(await c.get_pod("peer"))["message"] == (
                "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules. "
                "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
            # Higher priority: the pod its anti-affinity rejects is preempted, and it takes the node.
            await create_pod(c, "vip", labels={"app": "vip"}, affinity=ANTI_HOSTNAME, priority_class="high")

            async def vip_bound() -> bool:
                return (await c.get_pod("vip"))["spec"].get("nodeName") == "n1"

            await eventually(vip_bound)
            names = {p["metadata"]["name"] for p in (await c.client.list("pods", namespace="default"))["items"]}
            assert "old-web" not in names
            assert any(e["reason"] == "Preempted" for e in await c.events("old-web"))

    run_virtual(main())


async def _bound(c: Cluster, name: str) -> bool:
    return bool((await c.get_pod(name))["spec"].get("nodeName"))
