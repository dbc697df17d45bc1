"""The node simulation as a user sees it through real kubectl: `everynode.Cluster` in a plain
`with` (real time, HTTPS API), driven by `kubectl` 1.33 with a fresh discovery cache per test.

Each test starts its own small cluster (about a second), so the DaemonSets, cordons, stopped
kubelets and deleted nodes of one test cannot leak into another.  Convergence is awaited with
generous deadlines that are never asserted on; what is asserted is upstream's behaviour:

* a Node created with `kubectl apply` is adopted by the kubelet simulation and gets its
  DaemonSet pod (DESIGN.md, "A Node created through the API ... becomes Ready and takes pods");
* `everynode.io/kubelet=stopped` → Ready=Unknown, the `node.kubernetes.io/unreachable` NoSchedule
  and NoExecute taints (node_lifecycle_controller.go), DaemonSet pods kept (their unreachable
  toleration has no tolerationSeconds, daemonset_util.go), an ordinary pod evicted once its own
  tolerationSeconds ran out (taint_eviction.go), and DefaultTolerationSeconds admission's 300 s
  on a pod that brought no tolerations (semantics §3.2, §11);
* cordoned nodes keep and still receive DaemonSet pods (the `unschedulable` toleration);
* a `system-node-critical` DaemonSet pod preempts a low-priority pod on a full node, and a
  low-priority pod never preempts it (§11.6);
* a hostPort conflict leaves the second DaemonSet's pods Pending with kube-scheduler's NodePorts
  reason in `kubectl describe pod`;
* `hostNetwork` pods carry their node's InternalIP;
* deleting a Node removes its pods (pod GC, with a short quarantine).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from everynode.product.cluster import Cluster
from tests.support import waiting

KUBECTL = "/usr/lib/google-cloud-sdk/bin/kubectl.1.33"
WAIT = 45.0  # deadline for convergence on a loaded 2-core machine; never asserted on
wait_until = functools.partial(waiting.wait_until, timeout=WAIT, interval=0.2)
NS = "default"

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]


# -- harness -----------------------------------------------------------------------------------

class Kubectl:
    """Runs the real kubectl against one cluster, with its own discovery cache."""

    def __init__(self, kubeconfig: Path, cache_dir: Path) -> None:
        self.kubeconfig = kubeconfig
        self.cache_dir = cache_dir
        self.env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
        self.env["COLUMNS"] = "200"

    def run(self, *args: str, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        result = subprocess.run([KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache_dir),
                                 *args], input=stdin, capture_output=True, text=True, timeout=60, env=self.env)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout}\n{result.stderr}")
        return result

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        return self.run(*args, stdin=stdin).stdout

    def apply(self, *objects: Obj) -> str:
        return self("apply", "-f", "-", stdin=yaml.safe_dump_all(objects))

    def json(self, *args: str) -> Any:
        return json.loads(self(*args, "-o", "json"))

    def get_or_none(self, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        args = ["get", kind, name, "-o", "json"] + (["-n", namespace] if namespace else [])
        result = self.run(*args, check=False)
        if result.returncode != 0:
            if "NotFound" in result.stderr:
                return None
            raise AssertionError(result.stderr)
        return json.loads(result.stdout)

    def pods(self, selector: str | None = None, field_selector: str | None = None) -> list[Obj]:
        args = ["get", "pods", "-n", NS]
        if selector:
            args += ["-l", selector]
        if field_selector:
            args += ["--field-selector", field_selector]
        return self.json(*args)["items"]


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., tuple[Cluster, Kubectl]]]:
    """Starts a cluster (torn down after the test) and a kubectl with a fresh cache for it."""
    started: list[Cluster] = []

    def make(**options: Any) -> tuple[Cluster, Kubectl]:
        options.setdefault("nodes", 2)
        options.setdefault("pod_startup", 0.2)
        options.setdefault("port", 0)
        cluster = Cluster(**options)
        cluster.__enter__()
        started.append(cluster)
        cache = tmp_path / f"kube-cache-{len(started)}"
        cache.mkdir()
        return cluster, Kubectl(cluster.kubeconfig, cache)

    yield make
    for cluster in reversed(started):
        cluster.__exit__(None, None, None)


# -- objects -----------------------------------------------------------------------------------

def daemonset(name: str, *, node_selector: dict[str, str] | None = None, pod_spec: Obj | None = None,
              container: Obj | None = None) -> Obj:
    spec: Obj = {"containers": [{"name": "agent", "image": "registry.k8s.io/pause:3.9", **(container or {})}]}
    spec.update(pod_spec or {})
    if node_selector:
        spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": spec}},
    }


def pod(name: str, *, spec: Obj | None = None, labels: dict[str, str] | None = None) -> Obj:
    body: Obj = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9"}]}
    body.update(spec or {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": NS, "labels": labels or {"role": "workload"}},
            "spec": body}


def condition(obj: Obj | None, ctype: str) -> Obj | None:
    for c in ((obj or {}).get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return c
    return None


def is_ready(obj: Obj | None) -> bool:
    c = condition(obj, "Ready")
    return c is not None and c.get("status") == "True"


def running_ready(p: Obj | None) -> bool:
    return p is not None and (p.get("status") or {}).get("phase") == "Running" and is_ready(p)


def ds_pods_by_node(k: Kubectl, name: str) -> dict[str, Obj]:
    return {p["spec"].get("nodeName", ""): p for p in k.pods(f"app={name}")}


def ds_converged(k: Kubectl, name: str, nodes: set[str]) -> dict[str, Obj] | None:
    """The DaemonSet's pods by node once exactly ``nodes`` have one Running + Ready pod each."""
    pods = k.pods(f"app={name}")
    by_node = {p["spec"].get("nodeName", ""): p for p in pods}
    if len(pods) == len(nodes) and set(by_node) == nodes and all(running_ready(p) for p in pods):
        return by_node
    return None


def taints(node: Obj | None) -> set[tuple[str, str]]:
    return {(t["key"], t["effect"]) for t in ((node or {}).get("spec") or {}).get("taints") or ()}


def parse_time(text: str) -> float:
    from everynode.clock import parse_rfc3339

    return parse_rfc3339(text)


# -- (a) a Node created with kubectl apply -------------------------------------------------------

def test_applied_node_is_adopted_becomes_ready_and_gets_the_daemonset_pod(make_cluster) -> None:
    _, k = make_cluster(nodes=1)
    k.apply(daemonset("agent"))
    wait_until(lambda: ds_converged(k, "agent", {"worker-1"}), what="agent on worker-1")

    out = k.apply({"apiVersion": "v1", "kind": "Node",
                   "metadata": {"name": "edge-1", "labels": {"kubernetes.io/hostname": "edge-1",
                                                             "kubernetes.io/os": "linux"}}})
    assert "node/edge-1 created" in out

    node = wait_until(lambda: (n := k.get_or_none("node", "edge-1")) is not None and is_ready(n) and n,
                      what="edge-1 Ready")
    addresses = {a["type"]: a["address"] for a in node["status"]["addresses"]}
    assert addresses.get("InternalIP")
    assert node["status"]["allocatable"]["pods"] == "110"
    pods = wait_until(lambda: ds_converged(k, "agent", {"worker-1", "edge-1"}), what="agent on edge-1")
    assert pods["edge-1"]["status"]["hostIP"] == addresses["InternalIP"]
    # kubectl's own view agrees: the node is listed Ready, the DaemonSet counts two.
    assert k("get", "node", "edge-1", "--no-headers").split()[1] == "Ready"
    wait_until(lambda: k.json("get", "ds", "agent", "-n", NS)["status"].get("numberReady") == 2,
               what="numberReady 2")


# -- (b) a stopped kubelet: NotReady/Unknown, unreachable taints, eviction -------------------------

def test_stopped_kubelet_taints_node_keeps_daemonset_pod_and_evicts_ordinary_pod(make_cluster) -> None:
    # The kubelet simulation renews leases every 10 s and the health monitor looks every 5 s
    # (upstream's defaults); neither is a Cluster option, so the test shortens both on the running
    # components (a grace period must stay above renew interval + monitor period, or healthy
    # nodes would flap) to keep the test short.
    cluster, k = make_cluster(nodes=2, node_monitor_grace_period=3.0)
    assert cluster.plane is not None
    cluster.plane.components["kubelet"].heartbeat_interval = 0.5
    cluster.plane.components["node-lifecycle"].monitor_period = 0.5

    k.apply(daemonset("agent"))
    ds_pods = wait_until(lambda: ds_converged(k, "agent", {"worker-1", "worker-2"}), what="agent converged")
    k.apply(
        pod("tolerant", spec={"nodeName": "worker-1", "tolerations": [
            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
             "tolerationSeconds": 2}]}),
        pod("plain", spec={"nodeSelector": {"kubernetes.io/hostname": "worker-1"}}),
    )
    wait_until(lambda: all(running_ready(k.get_or_none("pod", n, NS)) for n in ("tolerant", "plain")),
               what="ordinary pods running")

    # DefaultTolerationSeconds admission: 300 s for both keys on the pod that brought none, and
    # only the missing one (not-ready) on the pod that brought its own unreachable toleration.
    def noexecute(p: Obj) -> dict[str, Any]:
        return {t["key"]: t.get("tolerationSeconds") for t in p["spec"].get("tolerations") or ()
                if t.get("effect") == "NoExecute"}

    assert noexecute(k.json("get", "pod", "plain", "-n", NS)) == {
        "node.kubernetes.io/not-ready": 300, "node.kubernetes.io/unreachable": 300}
    assert noexecute(k.json("get", "pod", "tolerant", "-n", NS)) == {
        "node.kubernetes.io/unreachable": 2, "node.kubernetes.io/not-ready": 300}
    # DaemonSet pods tolerate both forever (no tolerationSeconds), so admission added nothing.
    assert noexecute(ds_pods["worker-1"]) == {"node.kubernetes.io/not-ready": None,
                                              "node.kubernetes.io/unreachable": None}

    assert "node/worker-1 annotated" in k("annotate", "node", "worker-1", "everynode.io/kubelet=stopped")

    unreachable = {("node.kubernetes.io/unreachable", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")}
    node = wait_until(lambda: (n := k.get_or_none("node", "worker-1")) is not None
                      and unreachable <= taints(n) and n, what="unreachable taints on worker-1")
    ready = condition(node, "Ready")
    assert ready is not None
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status.")
    assert not any(key == "node.kubernetes.io/not-ready" for key, _ in taints(node))
    assert k("get", "node", "worker-1", "--no-headers").split()[1] == "NotReady"
    assert is_ready(k.get_or_none("node", "worker-2")), "the other node must stay Ready"

    # The pod with tolerationSeconds 2 is evicted (marked, then deleted gracefully; with its
    # kubelet stopped nothing completes the deletion, so it stays Terminating, as upstream).
    evicted = wait_until(lambda: (p := k.get_or_none("pod", "tolerant", NS)) is not None
                         and p["metadata"].get("deletionTimestamp") and p, what="tolerant pod evicted")
    target = condition(evicted, "DisruptionTarget")
    assert target is not None and (target["status"], target["reason"]) == ("True", "DeletionByTaintManager")
    taint_added = next(t["timeAdded"] for t in node["spec"]["taints"]
                       if (t["key"], t["effect"]) == ("node.kubernetes.io/unreachable", "NoExecute"))
    assert parse_time(target["lastTransitionTime"]) - parse_time(taint_added) >= 2, \
        "evicted before its tolerationSeconds ran out"
    events = k.json("get", "events", "-n", NS, "--field-selector", "reason=TaintManagerEviction")["items"]
    assert any(e["message"] == f"Marking for deletion Pod {NS}/tolerant" for e in events)

    # The DaemonSet pod on the stopped node stays (not even Terminating), marked not Ready by
    # the node lifecycle controller; the plain pod still has most of its 300 s left.
    after = ds_pods_by_node(k, "agent")
    assert after["worker-1"]["metadata"]["uid"] == ds_pods["worker-1"]["metadata"]["uid"]
    assert "deletionTimestamp" not in after["worker-1"]["metadata"]
    assert condition(after["worker-1"], "Ready")["status"] == "False"
    assert "deletionTimestamp" not in k.json("get", "pod", "plain", "-n", NS)["metadata"]
    # The DaemonSet no longer wants a pod there (the unreachable NoSchedule taint is not among
    # its tolerations: shouldRun false, shouldContinueRunning true) but keeps the existing one,
    # counted as misscheduled (semantics §3.2).
    status = wait_until(lambda: (s := k.json("get", "ds", "agent", "-n", NS)["status"]).get("numberReady") == 1
                        and s.get("desiredNumberScheduled") == 1 and s, what="DaemonSet status after the node failed")
    assert (status["currentNumberScheduled"], status["numberMisscheduled"]) == (1, 1)


# -- (c) cordon ------------------------------------------------------------------------------------

def test_cordon_keeps_daemonset_pods_and_new_daemonsets_still_land(make_cluster) -> None:
    _, k = make_cluster(nodes=2)
    k.apply(daemonset("agent"))
    before = wait_until(lambda: ds_converged(k, "agent", {"worker-1", "worker-2"}), what="agent converged")

    assert "node/worker-1 cordoned" in k("cordon", "worker-1")
    node = wait_until(lambda: (n := k.get_or_none("node", "worker-1")) is not None
                      and ("node.kubernetes.io/unschedulable", "NoSchedule") in taints(n) and n,
                      what="unschedulable taint")
    assert node["spec"]["unschedulable"] is True
    assert k("get", "node", "worker-1", "--no-headers").split()[1] == "Ready,SchedulingDisabled"

    # A new DaemonSet still lands on the cordoned node, an ordinary pod does not.
    k.apply(daemonset("late"), pod("ordinary", spec={"nodeSelector": {"kubernetes.io/hostname": "worker-1"}}))
    late = wait_until(lambda: ds_converged(k, "late", {"worker-1", "worker-2"}), what="late DaemonSet on both nodes")
    assert running_ready(late["worker-1"])
    wait_until(lambda: condition(k.get_or_none("pod", "ordinary", NS), "PodScheduled") is not None,
               what="ordinary pod judged by the scheduler")
    ordinary = k.json("get", "pod", "ordinary", "-n", NS)
    assert not ordinary["spec"].get("nodeName")
    assert "node(s) were unschedulable" in condition(ordinary, "PodScheduled")["message"]

    # The existing DaemonSet pods were never touched.
    after = ds_pods_by_node(k, "agent")
    assert {n: p["metadata"]["uid"] for n, p in after.items()} == \
        {n: p["metadata"]["uid"] for n, p in before.items()}
    assert all("deletionTimestamp" not in p["metadata"] for p in after.values())

    assert "node/worker-1 uncordoned" in k("uncordon", "worker-1")
    wait_until(lambda: (k.get_or_none("pod", "ordinary", NS) or {}).get("spec", {}).get("nodeName") == "worker-1",
               what="ordinary pod scheduled after uncordon")


# -- (d) priority and preemption -----------------------------------------------------------------

def test_system_node_critical_daemonset_pod_preempts_low_priority_pod_never_the_reverse(make_cluster) -> None:
    _, k = make_cluster(nodes=1)
    k.apply({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
             "metadata": {"name": "low"}, "value": 10, "description": "fillers"})
    # Nodes have 4 CPUs: the filler takes 3.5 of them.
    filler_spec = {"priorityClassName": "low",
                   "nodeSelector": {"kubernetes.io/hostname": "worker-1"},
                   "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.9",
                                   "resources": {"requests": {"cpu": "3500m"}}}]}
    k.apply(pod("filler", spec=filler_spec))
    filler = wait_until(lambda: (p := k.get_or_none("pod", "filler", NS)) is not None and running_ready(p) and p,
                        what="filler running")
    assert filler["spec"]["priority"] == 10

    k.apply(daemonset("critical", pod_spec={"priorityClassName": "system-node-critical"},
                      container={"resources": {"requests": {"cpu": "1"}}}))
    pods = wait_until(lambda: ds_converged(k, "critical", {"worker-1"}), what="critical agent on the full node")
    agent = pods["worker-1"]
    assert agent["spec"]["priority"] == 2000001000

    # The filler was the victim: marked by the scheduler, then gone.
    wait_until(lambda: k.get_or_none("pod", "filler", NS) is None, what="filler preempted")
    events = k.json("get", "events", "-n", NS, "--field-selector", "involvedObject.name=filler")["items"]
    assert any(e["reason"] == "Preempted" and e["message"].startswith("Preempted by pod ") for e in events), events

    # A low-priority pod that does not fit waits; it never preempts the DaemonSet pod.
    k.apply(pod("filler-2", spec=filler_spec))
    pending = wait_until(lambda: (c := condition(k.get_or_none("pod", "filler-2", NS), "PodScheduled")) is not None
                         and c["status"] == "False" and c, what="filler-2 unschedulable")
    assert pending["reason"] == "Unschedulable"
    assert "1 Insufficient cpu" in pending["message"]
    assert "No preemption victims found for incoming pod" in pending["message"]
    again = ds_pods_by_node(k, "critical")["worker-1"]
    assert again["metadata"]["uid"] == agent["metadata"]["uid"]
    assert "deletionTimestamp" not in again["metadata"]
    assert condition(again, "DisruptionTarget") is None
    assert not k.json("get", "pod", "filler-2", "-n", NS)["spec"].get("nodeName")


# -- (e) hostPort conflict ----------------------------------------------------------------------

def test_second_daemonset_with_the_same_host_port_stays_pending_with_failed_scheduling(make_cluster) -> None:
    _, k = make_cluster(nodes=2)
    ports = {"ports": [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}]}
    k.apply(daemonset("first", container=ports))
    wait_until(lambda: ds_converged(k, "first", {"worker-1", "worker-2"}), what="first converged")
    k.apply(daemonset("second", container=ports))

    reason = "node(s) didn't have free ports for the requested pod ports"

    def all_unschedulable() -> list[Obj] | None:
        pods = k.pods("app=second")
        ok = len(pods) == 2 and all((c := condition(p, "PodScheduled")) is not None and c["status"] == "False"
                                    for p in pods)
        return pods if ok else None

    pods = wait_until(all_unschedulable, what="second's pods unschedulable")
    for p in pods:
        assert p["status"]["phase"] == "Pending"
        assert not p["spec"].get("nodeName")
        c = condition(p, "PodScheduled")
        assert c["reason"] == "Unschedulable"
        assert c["message"].startswith("0/3 nodes are available: ")
        assert f"1 {reason}" in c["message"]
        described = k("describe", "pod", p["metadata"]["name"], "-n", NS)
        assert "FailedScheduling" in described
        assert reason in described
    events = k.json("get", "events", "-n", NS, "--field-selector", "reason=FailedScheduling")["items"]
    assert {e["involvedObject"]["name"] for e in events if reason in e["message"]} == \
        {p["metadata"]["name"] for p in pods}
    # The first DaemonSet is untouched, the second counts its pods as scheduled-but-not-ready.
    assert ds_converged(k, "first", {"worker-1", "worker-2"})
    status = wait_until(lambda: (s := k.json("get", "ds", "second", "-n", NS)["status"]).get("desiredNumberScheduled") == 2
                        and s, what="second status")
    assert status.get("numberReady", 0) == 0


# -- (f) hostNetwork -----------------------------------------------------------------------------

def test_host_network_pods_carry_their_nodes_ip(make_cluster) -> None:
    _, k = make_cluster(nodes=3)
    k.apply(daemonset("netagent", pod_spec={"hostNetwork": True},
                      container={"ports": [{"containerPort": 9100, "hostPort": 9100}]}))
    workers = {"worker-1", "worker-2", "worker-3"}
    wait_until(lambda: ds_converged(k, "netagent", workers), what="netagent converged")

    node_ips = {}
    for line in k("get", "nodes", "-o", "wide", "--no-headers").splitlines():
        cols = line.split()
        node_ips[cols[0]] = cols[5]  # NAME STATUS ROLES AGE VERSION INTERNAL-IP ...
    header = k("get", "pods", "-n", NS, "-l", "app=netagent", "-o", "wide").splitlines()[0].split()
    assert header[5:7] == ["IP", "NODE"]
    seen = {}
    for line in k("get", "pods", "-n", NS, "-l", "app=netagent", "-o", "wide", "--no-headers").splitlines():
        cols = line.split()
        seen[cols[6]] = cols[5]
    assert set(seen) == workers
    for node, ip in seen.items():
        assert ip == node_ips[node], (node, ip, node_ips)
    assert len(set(seen.values())) == 3

    # An ordinary pod gets an address from the node's pod CIDR instead.
    k.apply(pod("ordinary", spec={"nodeName": "worker-1"}))
    p = wait_until(lambda: (p := k.get_or_none("pod", "ordinary", NS)) is not None and running_ready(p) and p,
                   what="ordinary pod running")
    node = k.json("get", "node", "worker-1")
    assert p["status"]["podIP"] != node_ips["worker-1"]
    assert p["status"]["hostIP"] == node_ips["worker-1"]
    prefix = node["spec"]["podCIDR"].rsplit(".", 1)[0] + "."
    assert p["status"]["podIP"].startswith(prefix)


# -- (g) node deletion and pod GC -----------------------------------------------------------------

def test_deleting_a_node_removes_its_pods(make_cluster) -> None:
    _, k = make_cluster(nodes=2, pod_gc_period=0.5, pod_gc_quarantine=1.0)
    k.apply(daemonset("agent"))
    before = wait_until(lambda: ds_converged(k, "agent", {"worker-1", "worker-2"}), what="agent converged")
    k.apply(pod("ordinary", spec={"nodeName": "worker-2"}))
    wait_until(lambda: running_ready(k.get_or_none("pod", "ordinary", NS)), what="ordinary pod running")

    assert 'node "worker-2" deleted' in k("delete", "node", "worker-2")

    wait_until(lambda: not k.pods(field_selector="spec.nodeName=worker-2"), what="pods of worker-2 gone")
    assert k.get_or_none("pod", "ordinary", NS) is None
    remaining = wait_until(lambda: ds_converged(k, "agent", {"worker-1"}), what="agent only on worker-1")
    assert remaining["worker-1"]["metadata"]["uid"] == before["worker-1"]["metadata"]["uid"]
    status = wait_until(lambda: (s := k.json("get", "ds", "agent", "-n", NS)["status"]).get("desiredNumberScheduled") == 1
                        and s.get("currentNumberScheduled") == 1 and s, what="DaemonSet counts one node")
    assert status["numberReady"] == 1
    assert "No resources found" in k.run("get", "pods", "-n", NS, "--field-selector", "spec.nodeName=worker-2").stderr
