"""`everynode why` as pure functions: each verdict and reason code from hand-built objects, the
summary in the article's words, the dump loader's formats and errors, the renderer at 100
columns, and Placement.fit naming the row that refused a node."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from everynode.clock import format_rfc3339
from everynode.controllers.daemonset.placement import Placement
from everynode.product.clusterdump import ClusterObjects, DumpError, load_dump, parse_dump
from everynode.product.status import render_status
from everynode.product.why import EVENT_REASONS, explain, update_revision
from everynode.product.why_render import node_story, render

NOW = 1_800_000_000.0
NS = "monitoring"
UID = "ds-uid"


def ts(ago: float) -> str:
    return format_rfc3339(NOW - ago)


def node(name: str, *, labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
         ready: str = "True", cpu: str = "4", unschedulable: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels or {}}, "spec": spec,
            "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
                       "conditions": [{"type": "Ready", "status": ready, "lastTransitionTime": ts(240),
                                       "message": "" if ready == "True" else "Kubelet stopped posting node status."}]}}


def daemonset(*, selector: dict[str, str] | None = None, affinity: list[dict[str, Any]] | None = None,
              strategy: dict[str, Any] | None = None, requests: dict[str, str] | None = None,
              host_port: int | None = None, min_ready: int = 0) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "exporter:1"}
    if requests:
        container["resources"] = {"requests": requests}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port, "protocol": "TCP"}]
    spec: dict[str, Any] = {"containers": [container]}
    if selector:
        spec["nodeSelector"] = selector
    if affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": affinity}}}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "node-exporter", "namespace": NS, "uid": UID, "generation": 1},
            "spec": {"selector": {"matchLabels": {"app": "x"}}, "minReadySeconds": min_ready,
                     "updateStrategy": strategy or {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
                     "template": {"metadata": {"labels": {"app": "x"}}, "spec": spec}},
            "status": {"observedGeneration": 1}}


def pod(name: str, on: str, ds: dict[str, Any], *, hash_: str | None = None, bound: bool = True,
        phase: str = "Running", ready: bool = True, ready_since: float = 600, containers: list[dict] | None = None,
        deleting: float | None = None, nominated: str | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "namespace": NS, "creationTimestamp": ts(900),
                          "labels": {"app": "x", "controller-revision-hash": hash_ or update_revision(ds, [])},
                          "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "node-exporter",
                                               "uid": UID, "controller": True}]}
    if deleting is not None:
        md["deletionTimestamp"] = ts(deleting - 30)
        md["deletionGracePeriodSeconds"] = 30
    spec = dict(ds["spec"]["template"]["spec"])
    spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [on]}]}]}}}
    spec["tolerations"] = Placement(ds).tolerations
    if bound:
        spec["nodeName"] = on
    status: dict[str, Any] = {"phase": phase if bound else "Pending",
                              "conditions": [{"type": "Ready", "status": "True" if ready and bound else "False",
                                              "lastTransitionTime": ts(ready_since)}]}
    if containers is not None:
        status["containerStatuses"] = containers
    if nominated:
        status["nominatedNodeName"] = nominated
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec, "status": status}


def other_pod(name: str, on: str, *, cpu: str | None = None, host_port: int | None = None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "other"}
    if cpu:
        container["resources"] = {"requests": {"cpu": cpu}}
    if host_port:
        container["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": on, "containers": [container]}, "status": {"phase": "Running"}}


def answer(ds: dict[str, Any], nodes: list[dict], pods: list[dict], events: list[dict] | None = None
           ) -> dict[str, tuple[str, list[str], list[str]]]:
    exp = explain(ds, ClusterObjects(nodes=nodes, pods=pods, daemonsets=[ds], events=events or []), now=NOW)
    return {nv.node: (nv.verdict, nv.codes(), [r.message for r in nv.reasons]) for nv in exp.nodes}


CP_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


def test_excluded_nodes_name_the_label_the_term_and_the_taint() -> None:
    ds = daemonset(selector={"disktype": "ssd"})
    nodes = [node("a", labels={"disktype": "hdd"}), node("b"), node("c", labels={"disktype": "ssd"}, taints=[CP_TAINT])]
    got = answer(ds, nodes, [])
    assert got["a"] == ("excluded", ["NodeSelectorMismatch"], ["nodeSelector disktype=ssd: node has disktype=hdd"])
    assert got["b"] == ("excluded", ["NodeSelectorMismatch"], ["nodeSelector disktype=ssd: node has no label disktype"])
    assert got["c"] == ("excluded", ["TaintNotTolerated"],
                        ["taint node-role.kubernetes.io/control-plane:NoSchedule is not tolerated"])
    both = answer(ds, [node("d", taints=[CP_TAINT])], [])["d"]
    assert both[:2] == ("excluded", ["NodeSelectorMismatch", "TaintNotTolerated"])  # the next fix is named too
    ds = daemonset(affinity=[{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]},
                             {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}])
    got = answer(ds, [node("z", labels={"zone": "c"})], [])
    assert got["z"] == ("excluded", ["NodeAffinityMismatch"], [
        "no required node affinity term matches: term 1: zone In [a, b] (node has zone=c); "
        "term 2: gpu Exists (node has no label gpu)"])


def test_pending_pods_say_what_the_scheduler_refuses() -> None:
    ds = daemonset(requests={"cpu": "1"}, host_port=9100)
    nodes = [node("full"), node("port"), node("nominated"), node("fits")]
    pods = [other_pod("hog", "full", cpu="3500m"), other_pod("web", "port", host_port=9100),
            pod("p1", "full", ds, bound=False), pod("p2", "port", ds, bound=False),
            pod("p3", "nominated", ds, bound=False, nominated="nominated"), pod("p4", "fits", ds, bound=False)]
    got = answer(ds, nodes, pods)
    assert got["full"] == ("pending", ["InsufficientResources"], [
        "Insufficient cpu: requests 1, free 500m (allocatable 4 minus 3500m requested by 1 pods)"])
    assert got["port"] == ("pending", ["HostPortConflict"], ["host port TCP/9100 is held by pod default/web"])
    assert got["nominated"][1] == ["Preempting"]
    assert got["fits"] == ("pending", [], [])


def test_unschedulable_carries_the_last_failed_scheduling_message() -> None:
    ds = daemonset()
    tainted = node("t", taints=[{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}])
    p = pod("p", "t", ds, bound=False)
    p["spec"]["tolerations"] = []  # an older pod, created before the toleration existed
    events = [{"kind": "Event", "reason": "FailedScheduling", "message": "old", "lastTimestamp": ts(60),
               "involvedObject": {"kind": "Pod", "namespace": NS, "name": "p"}},
              {"kind": "Event", "reason": "FailedScheduling", "lastTimestamp": ts(5),
               "message": "0/1 nodes are available: 1 node(s) had untolerated taint {node.kubernetes.io/disk-pressure: }.",
               "involvedObject": {"kind": "Pod", "namespace": NS, "name": "p"}}]
    got = answer(ds, [tainted], [p], events)
    assert got["t"][:2] == ("pending", ["Unschedulable"])
    assert got["t"][2] == ["0/1 nodes are available: 1 node(s) had untolerated taint "
                           "{node.kubernetes.io/disk-pressure: }."]


def test_unhealthy_pods_name_the_container_state() -> None:
    ds = daemonset(min_ready=60)
    nodes = [node(n) for n in ("pull", "crash", "unready", "young", "ok")]
    pull = [{"name": "main", "ready": False, "restartCount": 0,
             "state": {"waiting": {"reason": "ImagePullBackOff", "message": 'Back-off pulling image "exporter:1"'}}}]
    crash = [{"name": "main", "ready": False, "restartCount": 5,
              "state": {"waiting": {"reason": "CrashLoopBackOff"}},
              "lastState": {"terminated": {"exitCode": 1, "reason": "Error"}}}]
    pods = [pod("p1", "pull", ds, phase="Pending", ready=False, containers=pull),
            pod("p2", "crash", ds, ready=False, containers=crash),
            pod("p3", "unready", ds, ready=False, ready_since=240),
            pod("p4", "young", ds, ready_since=20), pod("p5", "ok", ds)]
    got = answer(ds, nodes, pods)
    assert got["pull"] == ("unhealthy", ["ImagePullError"],
                           ['container main: ImagePullBackOff (Back-off pulling image "exporter:1")'])
    assert got["crash"] == ("unhealthy", ["CrashLoopBackOff"], ["container main: CrashLoopBackOff, 5 restarts, "
                                                                "last exit code 1"])
    assert got["unready"] == ("unhealthy", ["NotReady"], [f"pod p3 is Running, not Ready since {ts(240)} (4m)"])
    assert got["young"] == ("unhealthy", ["MinReadySeconds"], ["Ready, available in 40s (minReadySeconds 60)"])
    assert got["ok"] == ("ok", [], [])


def test_failed_pods_terminating_pods_and_not_ready_nodes() -> None:
    ds = daemonset()
    nodes = [node("failed"), node("backoff"), node("deleting"), node("down", ready="Unknown")]
    events = [{"kind": "Event", "reason": "FailedDaemonPod", "lastTimestamp": ts(1), "count": 3,
               "message": f"Found failed daemon pod {NS}/p0 on node backoff, will try to kill it",
               "involvedObject": {"kind": "DaemonSet", "namespace": NS, "name": "node-exporter", "uid": UID}}]
    pods = [pod("p1", "failed", ds, phase="Failed", ready=False), pod("p2", "deleting", ds, deleting=75),
            pod("p3", "down", ds)]
    got = answer(ds, nodes, pods, events)
    assert got["failed"][:2] == ("missing", ["FailedBackoff"])
    assert got["backoff"][:2] == ("missing", ["FailedBackoff"])
    assert got["backoff"][2][0].startswith("3 failed pods deleted here, the last 1s ago; the controller waits about 3s")
    assert got["deleting"] == ("missing", ["Terminating"], ["pod p2 is being deleted (for 75s, grace period 30s)"])
    assert got["down"][:2] == ("ok", ["NodeNotReady"])
    assert got["down"][2][0].startswith("node Ready condition is Unknown since")


def test_rollouts_waiting_for_the_budget_and_on_delete() -> None:
    ds = daemonset()
    new = update_revision(ds, [])
    nodes = [node(f"worker-{i}") for i in range(1, 5)]
    pods = [pod("p1", "worker-1", ds, hash_="old"), pod("p2", "worker-2", ds, hash_="old"),
            pod("p3", "worker-3", ds, ready=False, ready_since=240), pod("p4", "worker-4", ds, hash_="old")]
    exp = explain(ds, ClusterObjects(nodes=nodes, pods=pods, daemonsets=[ds]), now=NOW)
    got = {nv.node: (nv.verdict, nv.codes(), [r.message for r in nv.reasons]) for nv in exp.nodes}
    assert got["worker-1"] == ("outdated", ["WaitingForBudget"], [
        "old revision, waiting: maxUnavailable 1 is used by worker-3 (not Ready for 4m)"])
    assert got["worker-3"][:2] == ("unhealthy", ["NotReady"])
    assert exp.update_revision == new
    assert exp.summary.message == "DESIRED 4 of 4 nodes; 1 pod unhealthy: not Ready for 4m; rollout 1/4 updated, " \
                                  "waiting for worker-3"
    on_delete = daemonset(strategy={"type": "OnDelete"})
    got = answer(on_delete, nodes[:1], [pod("p1", "worker-1", on_delete, hash_="old")])
    assert got["worker-1"] == ("outdated", ["OnDeleteStrategy"], ["OnDelete: delete the pod to update"])


def test_misscheduled_and_the_summary_in_the_articles_terms() -> None:
    ds = daemonset(selector={"role": "worker"}, requests={"cpu": "1"})
    workers = [node(f"worker-{i}", labels={"role": "worker"}) for i in range(1, 6)]
    nodes = [node("control-plane-1", labels={"role": "worker"}, taints=[CP_TAINT]), node("db-1"), *workers]
    nodes[-1]["spec"]["taints"] = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    pods = [pod("p1", "worker-1", ds), pod("p2", "worker-2", ds), pod("p3", "worker-3", ds),
            other_pod("hog", "worker-4", cpu="3500m"), pod("p4", "worker-4", ds, bound=False),
            pod("p5", "worker-5", ds)]
    exp = explain(ds, ClusterObjects(nodes=nodes, pods=pods, daemonsets=[ds]), now=NOW)
    assert exp.node("worker-5").verdict == "misscheduled"  # type: ignore[union-attr]
    assert exp.summary.message == (
        "DESIRED 4 of 7 nodes: 1 node excluded by nodeSelector role=worker, 1 by taint "
        "node-role.kubernetes.io/control-plane:NoSchedule (no toleration); 1 pod Pending: Insufficient cpu; "
        "1 pod misscheduled: taint dedicated=gpu:NoSchedule (no toleration); rollout 4/4 updated")
    j = exp.to_json()
    assert j["daemonset"] == {"namespace": NS, "name": "node-exporter", "updateRevision": exp.update_revision}
    assert {k: v for k, v in j["summary"].items() if k != "message"} == {
        "nodes": 7, "desired": 4, "ok": 3, "excluded": 2, "missing": 0, "pending": 1, "unhealthy": 0,
        "outdated": 0, "misscheduled": 1}
    assert [n["node"] for n in j["nodes"]] == sorted(n["metadata"]["name"] for n in nodes)
    assert j["nodes"][0] == {"node": "control-plane-1", "verdict": "excluded", "pod": None, "revision": None,
                             "reasons": [{"code": "TaintNotTolerated", "message": "taint node-role.kubernetes.io/"
                                                                                  "control-plane:NoSchedule is not "
                                                                                  "tolerated"}]}


def rendered(renderable: Any, width: int = 100) -> str:
    out = io.StringIO()
    Console(file=out, width=width, color_system=None, highlight=False).print(renderable)
    return out.getvalue()


def test_tables_read_at_100_columns_and_a_node_tells_its_story() -> None:
    ds = daemonset(requests={"cpu": "1"})
    nodes = [node("worker-1"), node("worker-2"), node("worker-10", ready="False")]
    pods = [other_pod("hog", "worker-2", cpu="3500m"), pod("p2", "worker-2", ds, bound=False),
            pod("p1", "worker-1", ds), pod("p10", "worker-10", ds)]
    exp = explain(ds, ClusterObjects(nodes=nodes, pods=pods, daemonsets=[ds]), now=NOW)
    for wide in (False, True):
        text = rendered(render(exp, wide=wide))
        assert all(len(line.rstrip()) <= 100 for line in text.splitlines()), text
        rows = [line.split()[0] for line in text.splitlines() if line.startswith("worker-")]
        assert rows == ["worker-1", "worker-2", "worker-10"]  # natural order
    assert "InsufficientResources" in rendered(render(exp, wide=True))
    story = rendered(node_story(exp, exp.node("worker-2"), nodes[1]))  # type: ignore[arg-type]
    assert "node worker-2: pending" in story and "InsufficientResources: Insufficient cpu" in story
    assert "pod p2" in story and "(not bound)" in story


def test_status_shows_the_reason_beside_cells_that_are_not_ready() -> None:
    ds = daemonset(requests={"cpu": "1"})
    nodes = [node("worker-1"), node("worker-2")]
    pods = [other_pod("hog", "worker-2", cpu="3500m"), pod("p2", "worker-2", ds, bound=False),
            pod("p1", "worker-1", ds)]
    text = rendered(render_status([ds], nodes, pods, [], now=NOW, namespace=NS), width=120)
    # no ControllerRevision listed: the grid counts the pods as old (status' rule), why still explains them
    assert "○ worker-2  Insufficient cpu: requests 1, free 500m" in text
    assert "worker-1  " not in text.split("○ worker-2  ")[1]  # only cells that are not ready
    why = rendered(render_status([ds], nodes, pods, [], now=NOW, namespace=NS, why=True), width=120)
    assert "DESIRED 2 of 2 nodes" in why and "VERDICT" in why


def test_placement_fit_names_the_refusing_row() -> None:
    ds = daemonset(selector={"a": "b"})
    assert Placement(ds).fit(node("x")) == (False, False, "affinity", None)
    assert Placement(ds).fit(node("x", labels={"a": "b"})) == (True, True, "", None)
    taint = {"key": "k", "value": "v", "effect": "NoSchedule"}
    fit = Placement(ds).fit(node("x", labels={"a": "b"}, taints=[taint]))
    assert (fit.should_run, fit.should_continue, fit.failed, fit.taint) == (False, True, "taint", taint)
    assert Placement(ds).evaluate(node("x", labels={"a": "b"}, taints=[taint])) == (False, True)


DUMP_YAML = """apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, creationTimestamp: 2025-01-01T00:00:00Z}
- apiVersion: apps/v1
  kind: DaemonSet
  metadata: {name: d, namespace: x}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: ignored}
metadata: {resourceVersion: ""}
"""


def test_dump_formats(tmp_path: Path) -> None:
    objects = parse_dump(DUMP_YAML)
    assert objects.counts() == {"nodes": 1, "pods": 0, "daemonsets": 1, "controllerrevisions": 0, "events": 0,
                                "priorityclasses": 0}
    assert objects.nodes[0]["metadata"]["creationTimestamp"] == "2025-01-01T00:00:00Z"  # stays a string
    typed = parse_dump('{"kind": "PodList", "apiVersion": "v1", "items": [{"metadata": {"name": "p"}}]}')
    assert typed.pods[0]["kind"] == "Pod"
    multi = parse_dump("kind: Node\napiVersion: v1\nmetadata: {name: a}\n---\nkind: Node\napiVersion: v1\n"
                       "metadata: {name: b}\n")
    assert [n["metadata"]["name"] for n in multi.nodes] == ["a", "b"]
    (tmp_path / "a.yaml").write_text(DUMP_YAML)
    (tmp_path / "b.json").write_text('{"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"}}')
    (tmp_path / "notes.txt").write_text("not read")
    both = load_dump(tmp_path)
    assert (len(both.nodes), len(both.pods)) == (1, 1)
    assert both.daemonset("d", None) is not None and both.daemonset("d", "y") is None


@pytest.mark.parametrize(("content", "message"), [
    ("items: [\n", "not YAML or JSON"),
    ("- just\n- a list\n", "expected a Kubernetes object or List, found list"),
    ("kind: ConfigMap\napiVersion: v1\n", "no nodes, pods, daemonsets"),
])
def test_dump_errors_are_one_line_naming_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "dump.yaml"
    path.write_text(content)
    with pytest.raises(DumpError) as e:
        load_dump(path)
    assert str(e.value).startswith(str(path)) and message in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(DumpError, match="no such file"):
        load_dump(tmp_path / "absent.yaml")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(DumpError, match="no \\*.yaml"):
        load_dump(empty)


def explained(ds: dict[str, Any], nodes: list[dict], pods: list[dict], events: list[dict] | None = None,
              *, now: float = NOW) -> dict[str, Any]:
    exp = explain(ds, ClusterObjects(nodes=nodes, pods=pods, daemonsets=[ds], events=events or []), now=now)
    return {nv.node: nv for nv in exp.nodes}


def test_gated_and_preempting_pods_and_a_pod_the_scheduler_has_not_tried() -> None:
    ds = daemonset(requests={"cpu": "1"})
    gated = pod("g", "gated", ds, bound=False)
    gated["spec"]["schedulingGates"] = [{"name": "example.com/quota"}, {"name": "example.com/image"}]
    gated["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                                      "message": "Scheduling is blocked due to non-empty scheduling gates"}]
    preemptor = pod("p", "busy", ds, bound=False, nominated="busy")
    preemptor["spec"]["priority"] = 1000
    victim = other_pod("batch-1", "busy", cpu="3500m")
    victim["metadata"].update(deletionTimestamp=ts(10), deletionGracePeriodSeconds=30)
    done = pod("d", "freed", ds, bound=False, nominated="freed")
    waiting = pod("w", "new", ds, bound=False)
    waiting["metadata"]["creationTimestamp"] = ts(5)
    custom = pod("c", "custom", ds, bound=False)
    custom["spec"]["schedulerName"] = "my-scheduler"
    refused = pod("r", "was-full", ds, bound=False)  # the condition carries the message once the event expired
    refused["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                        "message": "0/6 nodes are available: 1 Insufficient cpu."}]
    nodes = [node(n) for n in ("gated", "busy", "freed", "new", "custom", "was-full")]
    got = explained(ds, nodes, [gated, preemptor, victim, done, waiting, custom, refused])
    assert (got["gated"].verdict, got["gated"].codes()) == ("pending", ["Unschedulable"])
    assert got["gated"].reasons[0].message == ("pod g is SchedulingGated: the scheduler does not consider it until "
                                               "its schedulingGates are removed (example.com/quota, example.com/image)")
    assert (got["busy"].verdict, got["busy"].codes()) == ("pending", ["Preempting"])
    assert got["busy"].reasons[0].message == ("pod p (priority 1000) is nominated to node busy and waits for the "
                                              "pods it preempts to go: default/batch-1 (terminating for 40s)")
    assert got["freed"].reasons[0].message.endswith("(none is left: the scheduler binds it at its next attempt)")
    assert (got["new"].verdict, got["new"].reasons) == ("pending", [])
    assert got["new"].line == "not scheduled yet: the scheduler has not reported on it, created 5s ago"
    assert got["custom"].line.startswith("not scheduled yet: scheduler my-scheduler (spec.schedulerName) has not")
    assert (got["was-full"].codes(), got["was-full"].reasons[0].message) == (
        ["Unschedulable"], "fits the node now; the scheduler said: 0/6 nodes are available: 1 Insufficient cpu.")


def test_a_bound_pod_still_starting_says_what_the_kubelet_reports() -> None:
    ds = daemonset()
    creating = pod("a", "creating", ds, phase="Pending", ready=False, containers=[
        {"name": "main", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}])
    config = pod("b", "config", ds, phase="Pending", ready=False, containers=[
        {"name": "main", "ready": False, "restartCount": 0, "state": {"waiting": {
            "reason": "CreateContainerConfigError", "message": 'configmap "agent-config" not found'}}}])
    fresh = pod("c", "fresh", ds, phase="Pending", ready=False)
    fresh["status"]["conditions"].append({"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(3)})
    got = explained(ds, [node("creating"), node("config"), node("fresh")], [creating, config, fresh])
    assert all((nv.verdict, nv.reasons) == ("pending", []) for nv in got.values())
    assert got["creating"].line == "pod a Pending: container main ContainerCreating (bound to creating)"
    assert got["config"].line == ('pod b Pending: container main CreateContainerConfigError: configmap '
                                  '"agent-config" not found (bound to config)')
    assert got["fresh"].line == ("pod c Pending: ContainerCreating, no container status reported yet "
                                 "(bound to fresh 3s ago)")


def test_a_pod_waiting_for_a_mount_says_what_it_waits_for() -> None:
    # kubeadm-kuberouter-all-features.yaml on a cluster not made by kubeadm: the kubelet's newest
    # FailedMount event is what `kubectl describe pod` shows, and what why says.
    ds = daemonset()
    creating = [{"name": "main", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]
    mounting = pod("a", "mounting", ds, phase="Pending", ready=False, containers=creating)
    unreported = pod("b", "unreported", ds, phase="Pending", ready=False)
    other = pod("c", "other", ds, phase="Pending", ready=False, containers=creating)

    def failed_mount(pod_name: str, message: str, ago: float) -> dict[str, Any]:
        return {"kind": "Event", "reason": "FailedMount", "type": "Warning", "message": message,
                "lastTimestamp": ts(ago), "involvedObject": {"kind": "Pod", "namespace": NS, "name": pod_name}}

    missing = 'MountVolume.SetUp failed for volume "kubeconfig" : configmap "kube-proxy" not found'
    events = [failed_mount("a", 'MountVolume.SetUp failed for volume "x" : configmap "old" not found', 30),
              failed_mount("a", missing, 2), failed_mount("b", missing, 1)]
    got = explained(ds, [node("mounting"), node("unreported"), node("other")], [mounting, unreported, other], events)
    assert all((nv.verdict, nv.reasons) == ("pending", []) for nv in got.values())
    assert got["mounting"].line == f"pod a Pending: container main ContainerCreating: {missing} (bound to mounting)"
    assert got["unreported"].line == f"pod b Pending: ContainerCreating: {missing} (bound to unreported)"
    assert got["other"].line == "pod c Pending: container main ContainerCreating (bound to other)"


def test_why_reads_no_event_reasons_but_those_plan_s_copy_writes() -> None:
    """``plan``'s copy writes only the Events of ``EVENT_REASONS``: leaving every other reason
    out must not change one word of the explanation (a reason why reads that is missing from the
    set would)."""
    ds = daemonset()
    creating = [{"name": "main", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}]
    tainted = node("t", taints=[{"key": "node.kubernetes.io/disk-pressure", "effect": "NoSchedule"}])
    unbound = pod("u", "t", ds, bound=False)
    unbound["spec"]["tolerations"] = []
    pods = [pod("m", "mounting", ds, phase="Pending", ready=False, containers=creating), unbound]

    def event(reason: str, subject: dict[str, Any], message: str) -> dict[str, Any]:
        return {"kind": "Event", "reason": reason, "type": "Warning", "message": message, "count": 2,
                "lastTimestamp": ts(3), "involvedObject": subject}

    def on_pod(name: str) -> dict[str, Any]:
        return {"kind": "Pod", "namespace": NS, "name": name}

    ds_ref = {"kind": "DaemonSet", "namespace": NS, "name": "node-exporter", "uid": UID}
    events = [event("FailedMount", on_pod("m"), 'MountVolume.SetUp failed for volume "x" : configmap "x" not found'),
              event("FailedScheduling", on_pod("u"), "0/3 nodes are available: 1 node(s) had untolerated taint."),
              event("FailedDaemonPod", ds_ref, f"Found failed daemon pod {NS}/p0 on node backoff, will try to kill it"),
              event("Pulled", on_pod("m"), "pulled"), event("Killing", on_pod("u"), "killing"),
              event("SuccessfulCreate", ds_ref, "Created pod: x")]
    nodes = [node("mounting"), tainted, node("backoff")]
    everything = explain(ds, ClusterObjects(nodes=nodes, pods=pods, daemonsets=[ds], events=events), now=NOW)
    read = [e for e in events if e["reason"] in EVENT_REASONS]
    assert len(read) == 3
    assert explain(ds, ClusterObjects(nodes=nodes, pods=pods, daemonsets=[ds], events=read), now=NOW) == everything
    assert explain(ds, ClusterObjects(nodes=nodes, pods=pods, daemonsets=[ds], events=[]), now=NOW) != everything


def test_a_dump_is_explained_at_its_own_newest_timestamp(tmp_path: Path) -> None:
    from everynode.product.clusterdump import dump_time
    from everynode.product.commands_why import dump_now, explain_dump

    ds = daemonset()
    deleting = pod("p", "n", ds, deleting=75)
    deleting["metadata"]["deletionTimestamp"] = ts(-3600)  # a long grace period: in the future, not a "now"
    deleting["metadata"]["deletionGracePeriodSeconds"] = 3675
    n = node("n")
    n["status"]["conditions"][0]["lastHeartbeatTime"] = ts(0)
    event = {"kind": "Event", "reason": "Pulled", "lastTimestamp": ts(20), "metadata": {"name": "e", "namespace": NS}}
    objects = ClusterObjects(nodes=[n], pods=[deleting], daemonsets=[ds], events=[event])
    assert dump_time(objects) == NOW
    odd = ClusterObjects(events=[{**event, "firstTimestamp": "not a time", "eventTime": 5}])  # hand-edited
    assert dump_time(odd) == NOW - 20
    assert dump_time(ClusterObjects(nodes=[{"kind": "Node", "metadata": {"name": "x"}}])) is None
    assert dump_now(objects, NOW + 86_400) == NOW  # read a day later: ages as when it was written
    assert dump_now(objects, NOW - 60) == NOW - 60  # a clock behind the dump's: never a negative age
    import orjson

    then = 1_600_000_000.0  # a dump written in 2020, read today through the command's loader
    deleting["metadata"]["deletionTimestamp"] = format_rfc3339(then + 3600)
    deleting["metadata"]["creationTimestamp"] = format_rfc3339(then - 900)
    deleting["status"]["conditions"][0]["lastTransitionTime"] = format_rfc3339(then - 600)
    n["status"]["conditions"][0]["lastHeartbeatTime"] = format_rfc3339(then)  # the newest time: the dump's moment
    n["status"]["conditions"][0]["lastTransitionTime"] = format_rfc3339(then - 600)
    path = tmp_path / "dump.json"
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": [n, deleting, ds]}))
    exp, _ = explain_dump(path, "node-exporter", NS)
    assert [r.message for r in exp.nodes[0].reasons] == ["pod p is being deleted (for 75s, grace period 3675s)"]


def test_a_node_whose_pod_count_is_used_up_is_an_insufficient_resource() -> None:
    # Upstream's NodeResourcesFit reports the pod count as an insufficient resource (ResourceName
    # "pods", reason "Too many pods"): the contract's InsufficientResources, not Unschedulable.
    ds = daemonset()
    small = node("small")
    small["status"]["allocatable"]["pods"] = "2"
    pods = [other_pod("a", "small"), other_pod("b", "small"), pod("p", "small", ds, bound=False)]
    got = explained(ds, [small], pods)["small"]
    assert (got.verdict, got.codes(), got.reasons[0].message) == (
        "pending", ["InsufficientResources"], "Too many pods: 2 of 2 allowed already run there")


def test_the_summary_groups_pods_still_starting_by_their_state() -> None:
    ds = daemonset()
    pods = [pod(f"p{i}", f"n{i}", ds, phase="Pending", ready=False, containers=[
        {"name": "main", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}])
        for i in range(3)]
    pods.append(pod("q", "n3", ds, bound=False))
    exp = explain(ds, ClusterObjects(nodes=[node(f"n{i}") for i in range(4)], pods=pods, daemonsets=[ds]), now=NOW)
    assert "4 pods Pending: 3 ContainerCreating, 1 not scheduled yet" in exp.summary.message, exp.summary.message


def test_the_scheduler_s_own_view_anti_affinity_and_pods_nominated_ahead() -> None:
    ds = daemonset(requests={"cpu": "1"})
    ds["spec"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"role": "exclusive"}}, "topologyKey": "kubernetes.io/hostname",
         "namespaces": ["default"]}]}}
    loner = other_pod("loner", "taken")
    loner["metadata"]["labels"] = {"role": "exclusive"}
    big = other_pod("web", "promised")  # not bound yet: nominated there, priority above the DaemonSet's
    del big["spec"]["nodeName"]
    big["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "3500m"}}
    big["spec"]["priority"] = 100
    big["status"] = {"phase": "Pending", "nominatedNodeName": "promised"}
    nodes = [node(n, labels={"kubernetes.io/hostname": n}) for n in ("taken", "promised")]
    refused = pod("a", "taken", ds, bound=False)  # the pin joins the template's pod anti-affinity
    refused["spec"]["affinity"]["podAntiAffinity"] = ds["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    pods = [loner, big, refused, pod("b", "promised", ds, bound=False)]
    events = [{"kind": "Event", "reason": "FailedScheduling", "lastTimestamp": ts(5),
               "message": "0/2 nodes are available: 1 node(s) didn't match pod anti-affinity rules.",
               "involvedObject": {"kind": "Pod", "namespace": NS, "name": "a"}}]
    got = explained(ds, nodes, pods, events)
    assert (got["taken"].verdict, got["taken"].codes()) == ("pending", ["Unschedulable"])
    assert got["taken"].reasons[0].message == (
        "required pod anti-affinity: default/loner on taken (kubernetes.io/hostname=taken) matches; the scheduler "
        "said: 0/2 nodes are available: 1 node(s) didn't match pod anti-affinity rules.")
    assert (got["promised"].verdict, got["promised"].codes()) == ("pending", ["InsufficientResources"])
    assert got["promised"].reasons[0].message == (
        "Insufficient cpu: requests 1, free 500m (allocatable 4 minus 3500m requested by 1 pods); counted ahead: "
        "default/web (nominated here, priority 100)")
