"""A dump of the plan cluster (``tests/support/plan_cluster.py``) made to look like one taken from a
cluster whose kubelets are real, as ``kubectl get nodes,pods,daemonsets,controllerrevisions,events,
priorityclasses -A -o yaml`` writes it.

The virtual-time cluster gives the objects their true shapes (what the controllers, scheduler
and kubelets wrote); the edits here are what real kubelets and the node lifecycle controller
would have written on top — each edit is the one upstream's component makes:

* every node: a real kubelet's ``nodeInfo`` and addresses, ``allocatable`` below ``capacity``
  (kube-reserved, eviction threshold), ``ephemeral-storage`` and hugepages, the cloud route
  controller's ``NetworkUnavailable=False`` (``RouteCreated``), heartbeats spread over the last
  10 s; no everynode annotation;
* ``MEMORY_PRESSURE`` / ``DISK_PRESSURE`` / ``PID_PRESSURE``: the kubelet's eviction manager
  reports the pressure (``KubeletHasInsufficientMemory`` …) and the node lifecycle controller
  taints the node (:func:`~everynode.controllers.nodelifecycle.taints.reconcile_noschedule_taints`,
  with ``timeAdded``); the agent's pods tolerate these taints (the DaemonSet controller adds the
  tolerations);
* ``CORDONED``: ``kubectl cordon`` (``spec.unschedulable``) and the controller's
  ``unschedulable`` taint;
* ``NO_ROUTE``: ``NetworkUnavailable=True`` (``NoRouteCreated``) and its taint, which the agent
  (not host network) does not tolerate: its pod stays, the DaemonSet no longer wants one there;
* ``GPU_NODE``: extended resources (``nvidia.com/gpu``) in capacity and allocatable;
* ``KUBELET_NOT_READY``: a kubelet that posts ``Ready=False`` (the runtime's network is down),
  the controller's ``not-ready`` taints, and the pods on it marked not Ready
  (``MarkPodsNotReady``); the Unknown node of the plan cluster has its ``unreachable:NoExecute``
  taint by now;
* pods of the agent as real kubelets leave them: ``NOT_READY_POD`` Running but not Ready (a
  failing readiness probe), ``CRASHING_POD`` in CrashLoopBackOff.

Built live in the cluster, before it is dumped (:func:`virtual_dump`): a ``globalDefault``
PriorityClass added after one application pod was created (``web-old`` keeps priority 0, as
in a cluster, ``web-new`` got the default's 1000), and a ``high`` class; then, in the dump, a
``high`` pod the scheduler has nominated to ``NOMINATED`` after preempting there (its victim gone,
``status.nominatedNodeName`` set, not bound yet).
"""

from __future__ import annotations

from typing import Any

import orjson
import yaml

from everynode.api.node import ready_status
from everynode.clock import format_rfc3339
from everynode.controllers.nodelifecycle.taints import (
    NOT_READY,
    UNREACHABLE,
    reconcile_noschedule_taints,
    swap_noexecute_taint,
)
from everynode.product.clusterdump import ClusterObjects, dump_time, iter_objects, parse_dump
from tests.support import plan_cluster as pc

Obj = dict[str, Any]

MEMORY_PRESSURE = "worker-3"
DISK_PRESSURE = "worker-4"
CORDONED = "worker-5"
NO_ROUTE = "worker-6"
GPU_NODE = "worker-7"
PID_PRESSURE = "worker-8"
KUBELET_NOT_READY = "worker-9"
NOT_READY_POD = "worker-10"
CRASHING_POD = "worker-11"

NOMINATED = "worker-12"
DEFAULT_CLASS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "apps-default"},
                 "value": 1000, "globalDefault": True}
HIGH_CLASS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
              "value": 500000}

PRESSURES = {MEMORY_PRESSURE: ("MemoryPressure", "KubeletHasInsufficientMemory",
                               "kubelet has insufficient memory available"),
             DISK_PRESSURE: ("DiskPressure", "KubeletHasDiskPressure", "kubelet has disk pressure"),
             PID_PRESSURE: ("PIDPressure", "KubeletHasInsufficientPID", "kubelet has insufficient PID available")}


def _at(t: float) -> str:
    return format_rfc3339(t)


def _cond(node: Obj, type_: str) -> Obj:
    conds = node.setdefault("status", {}).setdefault("conditions", [])
    for c in conds:
        if c.get("type") == type_:
            return c
    c = {"type": type_}
    conds.append(c)
    return c


def _set(cond: Obj, *, status: str, reason: str, message: str, since: str, heartbeat: str) -> None:
    cond.update(status=status, reason=reason, message=message, lastTransitionTime=since, lastHeartbeatTime=heartbeat)


def _real_node(node: Obj, index: int, now: float) -> None:
    md = node["metadata"]
    md["annotations"] = {k: v for k, v in (md.get("annotations") or {}).items() if not k.startswith("everynode.io/")}
    md["annotations"]["node.alpha.kubernetes.io/ttl"] = "0"
    md["annotations"]["volumes.kubernetes.io/controller-managed-attach-detach"] = "true"
    status = node["status"]
    name = md["name"]
    status["addresses"] = [{"type": "InternalIP", "address": f"10.128.0.{10 + index}"},
                           {"type": "ExternalIP", "address": f"34.70.1.{10 + index}"},
                           {"type": "Hostname", "address": name}]
    status["nodeInfo"] = {"architecture": "amd64", "bootID": f"b00710{index:02d}-0000-4000-8000-000000000000",
                          "containerRuntimeVersion": "containerd://1.7.20", "kernelVersion": "6.1.100+",
                          "kubeProxyVersion": "v1.30.4", "kubeletVersion": "v1.30.4",
                          "machineID": f"{index:032x}", "operatingSystem": "linux",
                          "osImage": "Container-Optimized OS from Google",
                          "systemUUID": f"5f1c{index:04x}-0000-4000-8000-000000000000"}
    status["capacity"] = {"cpu": "4", "ephemeral-storage": "98831908Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0",
                          "memory": "16374460Ki", "pods": "110"}
    status["allocatable"] = {"cpu": "3920m", "ephemeral-storage": "47060071478", "hugepages-1Gi": "0",
                             "hugepages-2Mi": "0", "memory": "13548732Ki", "pods": "110"}
    heartbeat = _at(now - index % 10)
    for c in status.get("conditions") or ():
        if c.get("status") != "Unknown":  # a stopped kubelet's heartbeat stays where it stopped
            c["lastHeartbeatTime"] = heartbeat
    route = _cond(node, "NetworkUnavailable")
    _set(route, status="False", reason="RouteCreated", message="RouteController created a route",
         since=md["creationTimestamp"], heartbeat=md["creationTimestamp"])
    status["conditions"] = [route, *[c for c in status["conditions"] if c is not route]]


def _taint(node: Obj, at: str) -> None:
    """The taints the node lifecycle controller gives the node for its conditions and cordon, and
    for a node not Ready the NoExecute one (the controller's own rules)."""
    spec = node.setdefault("spec", {})
    taints = reconcile_noschedule_taints(node, now=at)
    if taints is not None:
        spec["taints"] = taints
    noexecute = {"False": NOT_READY, "Unknown": UNREACHABLE}.get(ready_status(node) or "Unknown")
    swapped = swap_noexecute_taint(spec.get("taints") or [], noexecute, now=at)
    if swapped is not None:
        spec["taints"] = swapped


def _not_ready_pod(pod: Obj, since: str) -> None:
    """A container not Ready, as the kubelet reports it."""
    names = " ".join(c["name"] for c in pod["spec"]["containers"])
    for c in pod["status"]["conditions"]:
        if c["type"] in ("Ready", "ContainersReady"):
            c.update(status="False", lastTransitionTime=since, reason="ContainersNotReady",
                     message=f"containers with unready status: [{names}]")
    for cs in pod["status"].get("containerStatuses") or ():
        cs["ready"] = False


def _marked_not_ready(pod: Obj, since: str) -> None:
    """The node lifecycle controller's ``MarkPodsNotReady``: only the Ready condition turns False."""
    for c in pod["status"]["conditions"]:
        if c["type"] == "Ready":
            c.update(status="False", lastTransitionTime=since)


def realistic(objects: ClusterObjects) -> ClusterObjects:
    """The dump as a cluster with real kubelets would give it (see the module docstring)."""
    out = parse_dump(orjson.dumps({"kind": "List", "items": list(iter_objects(objects))}))  # no shared parts
    now = dump_time(out) or 0.0
    now = float(int(now)) + 600  # ten minutes after the cluster converged
    earlier = _at(now - 300)
    nodes = {n["metadata"]["name"]: n for n in out.nodes}
    for i, name in enumerate(sorted(nodes, key=lambda n: int(n.split("-")[1]))):
        _real_node(nodes[name], i, now)
    heartbeat = _at(now - 3)
    for name, (type_, reason, message) in PRESSURES.items():
        _set(_cond(nodes[name], type_), status="True", reason=reason, message=message, since=earlier,
             heartbeat=heartbeat)
    nodes[CORDONED]["spec"]["unschedulable"] = True
    _set(_cond(nodes[NO_ROUTE], "NetworkUnavailable"), status="True", reason="NoRouteCreated",
         message="Node created without a route", since=earlier, heartbeat=earlier)
    gpu = nodes[GPU_NODE]["status"]
    gpu["capacity"]["nvidia.com/gpu"] = "8"
    gpu["allocatable"]["nvidia.com/gpu"] = "8"
    _set(_cond(nodes[KUBELET_NOT_READY], "Ready"), status="False", reason="KubeletNotReady",
         message="container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                 "message:Network plugin returns error: cni plugin not initialized", since=earlier, heartbeat=heartbeat)
    for node in nodes.values():
        _taint(node, _at(now - 299))
    for pod in out.pods:
        node = pod["spec"].get("nodeName")
        if not node or (pod["metadata"].get("labels") or {}).get("app") != pc.NAME:
            continue
        if node == KUBELET_NOT_READY:
            _marked_not_ready(pod, _at(now - 299))
        elif node == NOT_READY_POD:
            _not_ready_pod(pod, earlier)
        elif node == CRASHING_POD:
            _not_ready_pod(pod, earlier)
            cs = pod["status"]["containerStatuses"][0]
            cs.update(restartCount=5, started=False, state={"waiting": {
                "reason": "CrashLoopBackOff",
                "message": f"back-off 2m40s restarting failed container=agent pod={pod['metadata']['name']}"}},
                lastState={"terminated": {"exitCode": 1, "reason": "Error", "startedAt": _at(now - 100),
                                          "finishedAt": _at(now - 99), "containerID": cs["containerID"]}})
    out.pods.append(_nominated(next(p for p in out.pods if p["metadata"]["name"] == "web-new"), _at(now - 2)))
    for obj in iter_objects(out):
        obj["metadata"].pop("managedFields", None)  # kubectl get -o yaml leaves them out
    return out


def _nominated(like: Obj, at: str) -> Obj:
    """A ``high`` pod as the scheduler leaves it after preempting for it on ``NOMINATED``: not bound,
    ``PodScheduled=False`` with the scheduler's message, ``nominatedNodeName`` set."""
    pod = orjson.loads(orjson.dumps(like))
    md = pod["metadata"]
    md.update(name="urgent", uid="0e5d1c2a-0000-4000-8000-00000000a11a", creationTimestamp=at)
    spec = pod["spec"]
    spec.pop("nodeName")
    spec.update(priorityClassName="high", priority=HIGH_CLASS["value"])
    spec["containers"][0]["resources"] = {"requests": {"cpu": "3"}}
    pod["status"] = {"phase": "Pending", "qosClass": "Burstable", "nominatedNodeName": NOMINATED, "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastProbeTime": None,
         "lastTransitionTime": at,
         "message": "0/20 nodes are available: 20 Insufficient cpu. preemption: 0/20 nodes are available: "
                    "19 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."}]}
    return pod


async def virtual_dump() -> ClusterObjects:
    """The plan cluster built in virtual time with the priority cases, read back as a dump holds it."""
    import asyncio

    from everynode.product.cluster import Cluster
    from everynode.product.clusterdump import read_live

    async with Cluster(nodes=pc.NODES, control_planes=0, pod_startup=2.0, virtual_time=True) as cluster:
        client = cluster.client
        await pc.build(client, sleep=asyncio.sleep)
        classes = "priorityclasses.scheduling.k8s.io"
        await client.create("pods", pc.pod("web-old", "worker-13", cpu="200m"))
        await client.create(classes, DEFAULT_CLASS)
        await client.create(classes, HIGH_CLASS)
        await client.create("pods", pc.pod("web-new", "worker-14", cpu="200m"))
        while any((p.get("status") or {}).get("phase") != "Running"
                  for p in (await client.list("pods", namespace=pc.APPS))["items"]):
            await asyncio.sleep(0.5)
        return await read_live(client)


def as_kubectl_yaml(objects: ClusterObjects) -> str:
    """``kubectl get … -A -o yaml``: one v1 List of every object."""
    return yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": list(iter_objects(objects)),
                           "metadata": {"resourceVersion": ""}}, sort_keys=True)


def realistic_dump(objects: ClusterObjects) -> ClusterObjects:
    """:func:`realistic` written as kubectl writes it and read back as ``plan --from-dump`` reads it."""
    return parse_dump(as_kubectl_yaml(realistic(objects)), source="dump.yaml")
