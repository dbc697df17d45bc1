"""The 20-node cluster `everynode plan` is tested on, and the DaemonSet change planned on it.

Built on an ``everynode.Cluster(nodes=20, control_planes=0)`` (virtual or real time) through its
client, so the same cluster serves the virtual-time tests (dumped with ``read_live``) and the
real-time e2e test (dumped with real kubectl, then changed live):

* zones: ``topology.kubernetes.io/zone`` = zone-a / zone-b / zone-c (worker-i: i mod 3);
* ``agent`` (namespace ``monitoring``, ``system-node-critical``, RollingUpdate maxUnavailable 3)
  runs everywhere except worker-16 and worker-17 (tainted ``dedicated=gpu:NoSchedule``);
* worker-15 is labelled ``agent=off`` (the change excludes it: a loss);
* worker-18: a ``system-node-critical`` pod of another agent holds host port 9100 (the change's
  new port: the new pod stays Pending, HostPortConflict; same priority, so no preemption);
* worker-19 full: two ``low`` (priority 100) pods of 1900m CPU each beside the agent's 100m; the
  change asks 500m, so the scheduler preempts one of them;
* worker-20 NotReady: its kubelet is stopped once the agent runs there.

The change: image ``agent:2``, CPU request 100m → 500m, host port 9100, tolerates
``dedicated=gpu`` (worker-16, worker-17 gain a pod), excludes ``agent=off`` (worker-15 loses it).
"""

from __future__ import annotations

import copy
from typing import Any

Obj = dict[str, Any]

NS = "monitoring"
APPS = "apps"
NAME = "agent"
NODES = 20
ZONES = ("zone-a", "zone-b", "zone-c")
TAINTED = ("worker-16", "worker-17")
EXCLUDED_BY_CHANGE = "worker-15"
PORT_NODE = "worker-18"
FULL_NODE = "worker-19"
NOT_READY = "worker-20"
PORT = 9100
MAX_UNAVAILABLE = 3


def daemonset(*, version: int = 1) -> Obj:
    container: Obj = {"name": "agent", "image": f"agent:{version}",
                      "resources": {"requests": {"cpu": "100m" if version == 1 else "500m"}}}
    spec: Obj = {"priorityClassName": "system-node-critical", "containers": [container]}
    if version > 1:
        container["ports"] = [{"containerPort": PORT, "hostPort": PORT}]
        spec["tolerations"] = [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}]
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "agent", "operator": "NotIn", "values": ["off"]}]}]}}}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": NAME, "namespace": NS},
            "spec": {"selector": {"matchLabels": {"app": NAME}},
                     "updateStrategy": {"type": "RollingUpdate",
                                        "rollingUpdate": {"maxUnavailable": MAX_UNAVAILABLE, "maxSurge": 0}},
                     "template": {"metadata": {"labels": {"app": NAME}}, "spec": spec}}}


def change() -> Obj:
    return copy.deepcopy(daemonset(version=2))


def pod(name: str, node: str, *, cpu: str, priority_class: str | None = None, host_port: int | None = None,
        namespace: str = APPS) -> Obj:
    container: Obj = {"name": "main", "image": "app:1", "resources": {"requests": {"cpu": cpu}}}
    if host_port is not None:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    spec: Obj = {"nodeName": node, "containers": [container]}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def setup_objects() -> list[Obj]:
    """What is created before the agent: namespaces, the low PriorityClass, the application pods."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APPS}},
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "low"}, "value": 100},
        pod("batch-1", FULL_NODE, cpu="1900m", priority_class="low"),
        pod("batch-2", FULL_NODE, cpu="1900m", priority_class="low"),
        pod("old-exporter", PORT_NODE, cpu="50m", priority_class="system-node-critical", host_port=PORT,
            namespace="kube-system"),
    ]


def node_patches() -> list[tuple[str, Obj]]:
    out: list[tuple[str, Obj]] = []
    for i in range(1, NODES + 1):
        name = f"worker-{i}"
        labels: Obj = {"topology.kubernetes.io/zone": ZONES[i % 3]}
        if name == EXCLUDED_BY_CHANGE:
            labels["agent"] = "off"
        body: Obj = {"metadata": {"labels": labels}}
        if name in TAINTED:
            body["spec"] = {"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]}
        out.append((name, body))
    return out


STOP_PATCH: Obj = {"metadata": {"annotations": {"everynode.io/kubelet": "stopped"}}}

# What the plan must find (see tests/integration/test_plan_dump.py for the arithmetic).
GAINS = list(TAINTED)
LOSSES = [EXCLUDED_BY_CHANGE]
DESIRED_BEFORE = NODES - len(TAINTED) - 1  # worker-20 is NotReady: unreachable:NoSchedule excludes it
DESIRED_AFTER = NODES - 1 - 1


async def build(client: Any, *, sleep: Any) -> None:
    """Build the cluster through ``client`` (async); ``sleep(seconds)`` waits (virtual or real)."""
    for obj in setup_objects():
        kind = obj["kind"]
        resource = {"Namespace": "namespaces", "PriorityClass": "priorityclasses.scheduling.k8s.io",
                    "Pod": "pods"}[kind]
        await client.create(resource, obj)
    for name, body in node_patches():
        await client.patch("nodes", name, body)
    await client.create("daemonsets.apps", daemonset())
    while True:
        ds = await client.get("daemonsets.apps", NAME, namespace=NS)
        st = ds.get("status") or {}
        if st.get("observedGeneration", 0) >= ds["metadata"]["generation"] and \
                st.get("numberAvailable") == DESIRED_BEFORE + 1 == st.get("desiredNumberScheduled"):
            break
        await sleep(0.5)
    await client.patch("nodes", NOT_READY, STOP_PATCH)
    while True:  # the node lifecycle marks it Unknown and taints it, the DaemonSet drops it from desired
        ds = await client.get("daemonsets.apps", NAME, namespace=NS)
        st = ds.get("status") or {}
        node = await client.get("nodes", NOT_READY)
        taints = [t.get("key") for t in (node.get("spec") or {}).get("taints") or ()]
        if "node.kubernetes.io/unreachable" in taints and st.get("desiredNumberScheduled") == DESIRED_BEFORE:
            break
        await sleep(1.0)


async def virtual_dump() -> Any:
    """The cluster built in virtual time, read back as ``ClusterObjects`` (what a dump holds)."""
    from everynode.product.cluster import Cluster
    from everynode.product.clusterdump import read_live

    async with Cluster(nodes=NODES, control_planes=0, pod_startup=2.0, virtual_time=True) as cluster:
        import asyncio

        await build(cluster.client, sleep=asyncio.sleep)
        return await read_live(cluster.client)
