"""A node whose simulated kubelet keeps its status (``everynode.io/node-status: kept``, how
``plan`` loads a cluster's nodes) stays under the pressure it reports — the node lifecycle
controller keeps its taint, the kubelet refuses the pods upstream's eviction manager refuses —
while a node without it is reported healthy, as ``everynode up``'s nodes are (virtual time,
modelled heartbeats, past the kubelet's 5-minute status report)."""

from __future__ import annotations

import asyncio
from typing import Any

from everynode.kubelet.podstatus import KEPT, NODE_STATUS_ANNOTATION
from everynode.product.cluster import Cluster
from everynode.virtualtime import run_virtual

Obj = dict[str, Any]
KEPT_NODE = "worker-1"
HEALTHY_NODE = "worker-2"


def _cond(node: Obj, type_: str) -> Obj:
    return next(c for c in node["status"]["conditions"] if c["type"] == type_)


def _taints(node: Obj) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in (node.get("spec") or {}).get("taints") or ()}


def _pod(name: str, node: str, **spec: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "app:1"}], **spec}}


async def _under_pressure(client: Any, type_: str, reason: str) -> None:
    """Both nodes report ``type_`` (written as their kubelets would); only ``KEPT_NODE``'s kubelet
    keeps what its node says."""
    await client.patch("nodes", KEPT_NODE, {"metadata": {"annotations": {NODE_STATUS_ANNOTATION: KEPT}}})
    for node in (KEPT_NODE, HEALTHY_NODE):
        await client.patch("nodes", node, {"status": {"conditions": [
            {"type": type_, "status": "True", "reason": reason, "message": f"kubelet has {type_}"}]}},
            patch_type="strategic", subresource="status")


def test_a_kept_node_stays_under_pressure_and_a_simulated_one_is_healed() -> None:
    async def main() -> None:
        async with Cluster(nodes=2, control_planes=0, virtual_time=True) as cluster:
            client = cluster.client
            await _under_pressure(client, "MemoryPressure", "KubeletHasInsufficientMemory")
            await asyncio.sleep(5)
            for node in (KEPT_NODE, HEALTHY_NODE):
                assert ("node.kubernetes.io/memory-pressure", "NoSchedule") in _taints(await client.get("nodes", node))
            await asyncio.sleep(400)
            kept, healthy = await client.get("nodes", KEPT_NODE), await client.get("nodes", HEALTHY_NODE)
            assert (_cond(kept, "MemoryPressure")["status"], _cond(kept, "MemoryPressure")["reason"]) == (
                "True", "KubeletHasInsufficientMemory")
            assert ("node.kubernetes.io/memory-pressure", "NoSchedule") in _taints(kept)
            assert _cond(kept, "Ready")["status"] == "True"
            assert _cond(healthy, "MemoryPressure")["status"] == "False"
            assert ("node.kubernetes.io/memory-pressure", "NoSchedule") not in _taints(healthy)

    run_virtual(main())


def test_the_kubelet_of_a_kept_node_under_disk_pressure_refuses_pods_that_are_not_critical() -> None:
    async def main() -> None:
        async with Cluster(nodes=2, control_planes=0, virtual_time=True) as cluster:
            client = cluster.client
            await _under_pressure(client, "DiskPressure", "KubeletHasDiskPressure")
            await asyncio.sleep(1)
            await client.create("pods", _pod("refused", KEPT_NODE))
            await client.create("pods", _pod("critical", KEPT_NODE, priorityClassName="system-node-critical"))
            await client.create("pods", _pod("elsewhere", HEALTHY_NODE))
            await asyncio.sleep(5)
            refused = await client.get("pods", "refused", namespace="default")
            assert {k: refused["status"].get(k) for k in ("phase", "reason", "message")} == {
                "phase": "Failed", "reason": "Evicted", "message": "Pod was rejected: The node had condition: "
                                                                   "[DiskPressure]. "}
            assert "containerStatuses" not in refused["status"]
            for name in ("critical", "elsewhere"):
                assert (await client.get("pods", name, namespace="default"))["status"]["phase"] == "Running"
            events = (await client.list("events", namespace="default",
                                        field_selector="involvedObject.name=refused"))["items"]
            assert [(e["type"], e["reason"]) for e in events] == [("Warning", "Evicted")]

    run_virtual(main())
