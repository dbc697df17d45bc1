"""The copy `everynode plan` runs is the snapshot it was loaded from: nothing in it moves before
the change is applied.

The snapshot is the plan cluster (``tests/support/plan_cluster.py``) as a cluster with real
kubelets would dump it (``tests/support/real_snapshot.py``: nodes under memory, disk and PID
pressure with their taints, a cordoned node, a node without a route, a GPU node, a kubelet
posting NotReady, an Unknown node, a pod not Ready, a crash-looping pod), written and read as
``kubectl get … -o yaml``.  The invariant: ``why``'s explanation of the DaemonSet on the
snapshot is, node by node — verdict, pod, revision, reason codes and messages, the node's state
line — and in its summary, the explanation on the copy, right after the copy started and again
after ten idle minutes (longer than the node monitor's grace period and the kubelet's 5-minute
status report); only times and ages may differ.  The nodes themselves keep what the snapshot
says of them (conditions, taints, cordon, capacity, allocatable, addresses, nodeInfo), and the
pods their status, node and priority.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

from everynode.product.clusterdump import ClusterObjects, read_live
from everynode.product.plan import running_copy, snapshot_time
from everynode.product.why import Explanation, explain
from everynode.virtualtime import run_virtual, virtual_clock
from tests.support import plan_cluster as pc
from tests.support import real_snapshot as rs

Obj = dict[str, Any]

IDLE_SECONDS = 600.0
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")
_AGE = re.compile(r"\b\d+(s|m|h|d)(\d+(s|m|h))?\b")
# The node lifecycle controller, like upstream's when kube-controller-manager starts, removes the
# NoExecute not-ready/unreachable taints of every node it first sees and taints the nodes that are
# still not Ready again (``markNodeAsReachable`` for added nodes; the zone's rate-limited queue):
# for a few seconds after the start they are missing, and their ``timeAdded`` moves.  The
# DaemonSet's pods tolerate them; only the eviction of other pods on those nodes is later.
RESTART_TAINTS = frozenset({"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"})


def _times_and_ages(text: str) -> str:
    return _AGE.sub("<age>", _TIME.sub("<time>", text))


def view(exp: Explanation) -> dict[str, Any]:
    """The explanation with times and ages blanked."""
    nodes = {}
    for nv in exp.nodes:
        out = nv.to_json()
        out["reasons"] = [{**r, "message": _times_and_ages(r["message"])} for r in out["reasons"]]
        out["state"] = _times_and_ages(nv.state)
        nodes[nv.node] = out
    summary = exp.summary.to_json()
    summary["message"] = _times_and_ages(summary["message"])
    return {"updateRevision": exp.update_revision, "summary": summary, "nodes": nodes}


def _restart_taint(taint: Obj) -> bool:
    return taint.get("effect") == "NoExecute" and taint.get("key") in RESTART_TAINTS


def node_view(node: Obj, *, restarting: bool = False) -> Obj:
    """What a node says that decisions read, heartbeats left out (and, ``restarting``, the
    NoExecute taints the controller's start removes for a while)."""
    status = node.get("status") or {}
    taints = sorted(({k: v for k, v in t.items() if not (k == "timeAdded" and _restart_taint(t))}
                     for t in (node.get("spec") or {}).get("taints") or () if not (restarting and _restart_taint(t))),
                    key=lambda t: sorted(t.items()))
    return {"labels": node["metadata"].get("labels"), "unschedulable": (node.get("spec") or {}).get("unschedulable"),
            "taints": taints,
            "conditions": sorted(({k: v for k, v in c.items() if k != "lastHeartbeatTime"}
                                  for c in status.get("conditions") or ()), key=lambda c: c["type"]),
            **{k: status.get(k) for k in ("capacity", "allocatable", "addresses", "nodeInfo")}}


def pod_view(pod: Obj) -> Obj:
    spec = pod.get("spec") or {}
    return {"node": spec.get("nodeName"), "priority": spec.get("priority"), "status": pod.get("status"),
            "terminating": bool(pod["metadata"].get("deletionTimestamp"))}


def _key(obj: Obj) -> str:
    md = obj["metadata"]
    return f"{md.get('namespace') or ''}/{md['name']}"


class Copied:
    """The snapshot's explanation, and the copy's objects and explanation at start and after idling."""

    def __init__(self) -> None:
        self.before: Explanation | None = None
        self.states: list[tuple[ClusterObjects, Explanation]] = []


async def _observe(snapshot: ClusterObjects) -> Copied:
    out = Copied()
    ds = snapshot.daemonset(pc.NAME, pc.NS)
    assert ds is not None
    out.before = explain(ds, snapshot, now=virtual_clock().now())
    async with running_copy(snapshot, namespace=pc.NS, pod_startup=5.0) as copy:
        for wait in (0.0, IDLE_SECONDS):
            await asyncio.sleep(wait)
            objects = await read_live(copy.plane.client)
            copied_ds = objects.daemonset(pc.NAME, pc.NS)
            assert copied_ds is not None
            out.states.append((objects, explain(copied_ds, objects, now=copy.plane.clock.now())))
    return out


@pytest.fixture(scope="module")
def snapshot() -> ClusterObjects:
    return rs.realistic_dump(run_virtual(rs.virtual_dump()))


@pytest.fixture(scope="module")
def copied(snapshot: ClusterObjects) -> Copied:
    return run_virtual(_observe(snapshot), start=snapshot_time(snapshot))


def test_the_snapshot_is_realistic(snapshot: ClusterObjects, copied: Copied) -> None:
    """The cases the copy must keep are in the snapshot, and ``why`` sees them there."""
    assert copied.before is not None
    verdicts = {nv.node: (nv.verdict, nv.codes()) for nv in copied.before.nodes}
    assert verdicts[rs.NO_ROUTE] == ("misscheduled", ["TaintNotTolerated"])
    assert verdicts[rs.KUBELET_NOT_READY] == ("misscheduled", ["TaintNotTolerated", "NodeNotReady"])
    assert verdicts[pc.NOT_READY] == ("misscheduled", ["TaintNotTolerated", "NodeNotReady"])
    assert verdicts[rs.NOT_READY_POD] == ("unhealthy", ["NotReady"])
    assert verdicts[rs.CRASHING_POD] == ("unhealthy", ["CrashLoopBackOff"])
    nodes = {n["metadata"]["name"]: n for n in snapshot.nodes}
    for name, (type_, _, _) in rs.PRESSURES.items():
        assert {"type": type_, "status": "True"}.items() <= {
            k: v for c in nodes[name]["status"]["conditions"] if c["type"] == type_ for k, v in c.items()}.items()
        assert verdicts[name] == ("ok", [])  # the agent's pods tolerate the pressure taints
    assert nodes[rs.CORDONED]["spec"]["unschedulable"] is True
    assert not any(k.startswith("everynode.io/") for n in snapshot.nodes for k in n["metadata"].get("annotations") or {})


def test_why_explains_the_copy_as_it_explains_the_snapshot(copied: Copied) -> None:
    assert copied.before is not None
    expected = view(copied.before)
    for moment, (_, exp) in zip(("at start", f"after {IDLE_SECONDS:.0f}s idle"), copied.states, strict=True):
        got = view(exp)
        diff = {n: {"snapshot": expected["nodes"][n], "copy": got["nodes"].get(n)} for n in expected["nodes"]
                if got["nodes"].get(n) != expected["nodes"][n]}
        assert not diff, f"{moment}: {diff}"
        assert got == expected, moment


def test_the_copy_keeps_what_the_snapshot_says_of_its_nodes(snapshot: ClusterObjects, copied: Copied) -> None:
    for (objects, _), restarting in zip(copied.states, (True, False), strict=True):
        expected = {n["metadata"]["name"]: node_view(n, restarting=restarting) for n in snapshot.nodes}
        got = {n["metadata"]["name"]: node_view(n, restarting=restarting) for n in objects.nodes}
        diff = {name: {k: (v, got[name][k]) for k, v in want.items() if got[name][k] != v}
                for name, want in expected.items() if got.get(name) != want}
        assert not diff


def test_the_copy_keeps_its_pods_as_the_snapshot_has_them(snapshot: ClusterObjects, copied: Copied) -> None:
    """Status, node and priority (``web-old`` keeps the 0 it had before the cluster got a default
    class); a pod the scheduler nominated is bound where it preempted, as it will be."""
    nominated = {_key(p): p["status"]["nominatedNodeName"] for p in snapshot.pods
                 if not p["spec"].get("nodeName") and (p.get("status") or {}).get("nominatedNodeName")}
    assert nominated == {f"{pc.APPS}/urgent": rs.NOMINATED}
    expected = {_key(p): pod_view(p) for p in snapshot.pods}
    assert expected[f"{pc.APPS}/web-old"]["priority"] == 0 and expected[f"{pc.APPS}/web-new"]["priority"] == 1000
    for objects, _ in copied.states:
        got = {_key(p): pod_view(p) for p in objects.pods}
        assert set(got) == set(expected)
        for key, node in nominated.items():
            assert (got[key]["node"], got[key]["priority"]) == (node, expected[key]["priority"])
            got[key] = expected[key]
        diff = {k: {f: (v, got[k][f]) for f, v in want.items() if got[k][f] != v}
                for k, want in expected.items() if got[k] != want}
        assert not diff


def _agent_not_critical() -> Obj:
    """The change, for an agent that is not critical, with room to replace every node at once."""
    change = pc.change()
    del change["spec"]["template"]["spec"]["priorityClassName"]
    change["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = pc.NODES
    return change


def _without_pod_names(text: str) -> str:
    return re.sub(rf"\b{pc.NAME}-[a-z0-9]{{5}}\b", f"{pc.NAME}-<pod>", text)


def test_the_plan_keeps_the_pressure_the_cluster_reports(snapshot: ClusterObjects) -> None:
    """Memory pressure admits the agent (Burstable, and it tolerates the taint), so the node under
    it is updated and stays under pressure, tainted; disk and PID pressure refuse it (it is not
    critical): those nodes block the rollout with the code and message ``why`` gives for a dump
    in which the cluster's kubelet refused the pod."""
    from everynode.kubelet.admission import rejected_status
    from everynode.product.plan import PlanOptions, _apply_change, plan

    change = _agent_not_critical()
    answer = plan(snapshot, change, PlanOptions(pod_startup=5.0)).to_json()
    updated = {n for w in answer["waves"] for n in w["nodes"]}
    assert rs.MEMORY_PRESSURE in updated and not {rs.DISK_PRESSURE, rs.PID_PRESSURE} & updated
    blocked = {b["node"]: (b["code"], _without_pod_names(b["message"])) for b in answer["blocked"]
               if b["node"] in (rs.DISK_PRESSURE, rs.PID_PRESSURE)}

    refused = rs.realistic_dump(run_virtual(rs.virtual_dump()))  # the same cluster, its kubelets refusing
    for pod in refused.pods:
        node = pod["spec"].get("nodeName")
        if node in rs.PRESSURES and node != rs.MEMORY_PRESSURE and pod["metadata"]["labels"].get("app") == pc.NAME:
            pod["status"] = {**pod["status"], **rejected_status(
                f"The node had condition: [{rs.PRESSURES[node][0]}]. ")}
    ds = refused.daemonset(pc.NAME, pc.NS)
    assert ds is not None
    said = {nv.node: (nv.reasons[0].code, _without_pod_names(nv.reasons[0].message))
            for nv in explain(ds, refused, now=snapshot_time(refused)).nodes if nv.node in blocked}
    assert blocked == said and {code for code, _ in blocked.values()} == {"FailedBackoff"}
    assert "Evicted: Pod was rejected: The node had condition: [DiskPressure]. " in blocked[rs.DISK_PRESSURE][1]

    async def rolled_out() -> Obj:
        async with running_copy(snapshot, namespace=pc.NS, pod_startup=5.0) as copy:
            await _apply_change(copy.plane.client, change, snapshot.daemonset(pc.NAME, pc.NS), pc.NS)
            await asyncio.sleep(answer["simulated_seconds"] + 60)
            return dict(await copy.plane.client.get("nodes", rs.MEMORY_PRESSURE))

    node = run_virtual(rolled_out(), start=snapshot_time(snapshot))
    assert node_view(node) == node_view(next(n for n in snapshot.nodes if n["metadata"]["name"] == rs.MEMORY_PRESSURE))


def test_what_the_copy_leaves_out_changes_no_answer_on_a_real_cluster(snapshot: ClusterObjects) -> None:
    """The lean copy (no idle controllers, no unread Events, modelled heartbeats, no adoption
    write of a kept status) and the full one give the same trace on the realistic snapshot: with
    the critical agent, and with one that the pressured kubelets refuse again and again.  (Only
    the names the API server generates for the replacement pods differ: the full copy's Leases
    draw uids from the same seeded generator first.)"""
    from everynode.product.plan import PlanOptions, plan

    def traced(change: Obj, full: bool) -> Obj:
        trace = plan(snapshot, change, PlanOptions(pod_startup=5.0, trace=True, full_copy=full)).trace
        assert trace is not None and trace["steps"]
        for entry in trace["answer"]["blocked"]:
            entry["message"] = _without_pod_names(entry["message"])
        return trace

    for change in (pc.change(), _agent_not_critical()):
        assert traced(change, False) == traced(change, True)
