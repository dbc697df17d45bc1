"""Modelled heartbeats change no decision: the same scenario in virtual time with the kubelets'
heartbeats written (Lease renewals every 10 s, status reports every 5 min, upstream's pace) and
modelled (nothing written that would change only a heartbeat time) gives the same sequence of
node condition and taint changes and of pod creations and deletions, at the same simulated times.

The scenario exercises every path where liveness decides something: kubelets stopped by
annotation (at different phases of their renewal and of the health monitor's passes) go Unknown,
get the unreachable taints and have their pods marked not ready; one resumes; a node's
MemoryPressure set by hand is undone by its kubelet's next periodic report (so that report is
written in both modes); a DaemonSet converges and rolls an image change out around them.  Stop
times avoid the integer instants of the renewal ticks (see the kubelet simulator's docstring).
"""

from __future__ import annotations

import asyncio
from typing import Any

from everynode.product.cluster import Cluster
from everynode.virtualtime import run_virtual

Obj = dict[str, Any]
NS = "default"


def daemonset(image: str) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
                 "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 3}},
                 "template": {"metadata": {"labels": {"app": "agent"}},
                              "spec": {"containers": [{"name": "agent", "image": image}]}}},
    }


def _node_view(node: Obj) -> tuple[Any, ...]:
    conds = {c.get("type"): c.get("status") for c in (node.get("status") or {}).get("conditions") or ()}
    taints = sorted((t.get("key", ""), t.get("effect", "")) for t in (node.get("spec") or {}).get("taints") or ())
    return tuple(sorted(conds.items())), tuple(taints)


def _pod_ready(pod: Obj) -> str:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return str(c.get("status"))
    return ""


async def scenario(heartbeats: str) -> tuple[list[tuple[Any, ...]], dict[str, int]]:
    cluster = Cluster(nodes=6, control_planes=0, pod_startup=3.0, virtual_time=True)
    cluster.config.heartbeats = heartbeats
    async with cluster:
        assert cluster.plane is not None
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        log: list[tuple[Any, ...]] = []
        seen: dict[str, tuple[Any, ...]] = {}

        def node_event(node: Obj) -> None:
            name = node["metadata"]["name"]
            view = _node_view(node)
            if seen.get(name) != view:
                seen[name] = view
                log.append((round(loop.time() - t0, 6), "node", name, view))

        def pod_event(kind: str, pod: Obj) -> None:
            md, spec = pod["metadata"], pod.get("spec") or {}
            log.append((round(loop.time() - t0, 6), kind, spec.get("nodeName") or "",
                        (md.get("labels") or {}).get("controller-revision-hash", ""), _pod_ready(pod),
                        bool(md.get("deletionTimestamp"))))

        def pod_update(old: Obj, new: Obj) -> None:
            if (_pod_ready(old), old["metadata"].get("deletionTimestamp"), (old.get("spec") or {}).get("nodeName")) != (
                    _pod_ready(new), new["metadata"].get("deletionTimestamp"), (new.get("spec") or {}).get("nodeName")):
                pod_event("pod", new)

        informers = cluster.plane.informers
        informers.informer("nodes").add_handler(node_event, lambda old, new: node_event(new), None)
        informers.informer("pods").add_handler(lambda p: pod_event("pod+", p), pod_update,
                                               lambda p: pod_event("pod-", p))
        client = cluster.client
        annotate = "everynode.io/kubelet"

        async def at(t: float) -> None:
            await asyncio.sleep(t0 + t - loop.time())

        await client.create("daemonsets.apps", daemonset("agent:1"))
        await at(37.3)
        await client.patch("nodes", "worker-2", {"metadata": {"annotations": {annotate: "stopped"}}})
        await at(52.7)
        await client.patch("nodes", "worker-5", {"metadata": {"annotations": {annotate: "stopped"}}})
        await at(81.45)
        await client.patch("nodes", "worker-3", {"status": {"conditions": [
            {"type": "MemoryPressure", "status": "True", "reason": "Manual", "message": "set by hand"}]}},
            subresource="status", patch_type="strategic")
        await at(130.2)
        await client.patch("daemonsets.apps", "agent", {"spec": {"template": {"spec": {"containers": [
            {"name": "agent", "image": "agent:2"}]}}}}, namespace=NS, patch_type="strategic")
        await at(203.9)
        await client.patch("nodes", "worker-2", {"metadata": {"annotations": {annotate: None}}})
        await at(260.6)
        await client.patch("nodes", "worker-1", {"metadata": {"annotations": {annotate: "stopped"}}})
        await at(700.0)
        kubelet = cluster.plane.components["kubelet"]
        writes = {"lease_renewals": kubelet.lease_renewals, "node_status_updates": kubelet.node_status_updates,
                  "modelled_renewals": kubelet.modelled_renewals}
    return log, writes


def test_modelled_heartbeats_make_the_same_decisions_at_the_same_times() -> None:
    written, written_counts = run_virtual(scenario("writes"))
    modelled, modelled_counts = run_virtual(scenario("modelled"))
    kinds = {entry[1] for entry in written}
    assert kinds == {"node", "pod+", "pod", "pod-"}
    # the scenario reaches every liveness decision: Unknown + unreachable taints, the pods marked
    # not ready, the resumed node Ready again, MemoryPressure undone by a periodic report
    views = [(e[2], e[3]) for e in written if e[1] == "node"]
    assert any(n == "worker-2" and ("Ready", "Unknown") in v[0] and ("node.kubernetes.io/unreachable", "NoExecute") in v[1]
               for n, v in views)
    assert any(n == "worker-3" and ("MemoryPressure", "True") in v[0] for n, v in views)
    assert [v[0] for n, v in views if n == "worker-3"][-1] == (
        ("DiskPressure", "False"), ("MemoryPressure", "False"), ("PIDPressure", "False"), ("Ready", "True"))
    assert any(e[1] == "pod" and e[4] == "False" for e in written)  # marked not ready
    assert len({e[3] for e in written if e[1] == "pod+"}) == 2  # the rollout created new-revision pods
    assert [v for n, v in views if n == "worker-2"][-1][0][-1] == ("Ready", "True")
    assert [v for n, v in views if n == "worker-1"][-1][0][-1] == ("Ready", "Unknown")
    # The node and the pod sequences are each compared whole, times included.  Between the two
    # they are not: at one instant the node lifecycle controller writes a node's Unknown status
    # and then its pods' Ready=False, and which of the two informers (each its own watch) tells
    # the test first depends on what else that instant holds (the written heartbeats), not on a
    # decision — it once failed one run in a few hundred.
    assert [e for e in modelled if e[1] == "node"] == [e for e in written if e[1] == "node"]
    assert [e for e in modelled if e[1] != "node"] == [e for e in written if e[1] != "node"]
    assert sorted(modelled, key=repr) == sorted(written, key=repr)
    # ...with a fraction of the writes
    assert written_counts["modelled_renewals"] == 0 and modelled_counts["modelled_renewals"] > 300
    assert modelled_counts["lease_renewals"] < written_counts["lease_renewals"] / 10
    assert modelled_counts["node_status_updates"] < written_counts["node_status_updates"]
