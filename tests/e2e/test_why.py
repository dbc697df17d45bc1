"""`everynode why` as a user runs it: a real process against the embedded cluster, on a cluster
built to show every reason of the contract's table, then the same cluster dumped with real
kubectl and explained ``--from-dump``.

One cluster (7 nodes) carries all the cases at once, one DaemonSet per case, because the causes
that belong to nodes (a full node, a held host port, a cordon, a NoSchedule taint added under
running pods, a stopped kubelet) then show up in every DaemonSet's answer, as on a real cluster:

* worker-1 ``disktype=ssd``, ``zone=a``: the only node ``sel`` and ``aff`` want;
* worker-2 full: a pod requesting 3500m of its 4 CPUs → ``big`` (1 CPU) Pending there; the same
  pod is labelled ``role=exclusive`` → ``anti`` (required pod anti-affinity to it per hostname)
  refused there by the scheduler: Unschedulable, naming it, with the FailedScheduling message;
* worker-3: a pod holding host port 8080 → ``port`` Pending there, naming that pod; and a
  priority-0 pod holding 15Gi of its 16Gi memory, kept Terminating by a finalizer once preempted
  → ``prio`` (PriorityClass 1000, 2Gi) nominated there, Preempting, naming that victim;
* worker-4 cordoned before anything runs: DaemonSet pods tolerate it → ok;
* worker-5 tainted ``dedicated=x:NoSchedule`` after the pods run → misscheduled;
* worker-6 kubelet stopped (``everynode node stop``) → NodeNotReady;
* template behaviours: crash-loop, image-pull-error, never-ready, fail (FailedBackoff), a
  finalizer holding a deleted pod (Terminating), minReadySeconds 3600, OnDelete and a
  RollingUpdate (maxUnavailable 1) whose new revision never becomes Ready (WaitingForBudget),
  and a template with a scheduling gate (``gated``: SchedulingGated pods → Unschedulable).
"""

from __future__ import annotations

import functools
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from everynode.product.cluster import Cluster
from tests.e2e.test_cli_node_status import cli
from tests.support import waiting

NS = "why-e2e"
KUBECTL = "/usr/bin/kubectl"
HOLD = "everynode.io/test-hold"
WAIT = 60.0
wait_until = functools.partial(waiting.wait_until, timeout=WAIT, interval=0.3)
DUMP_KINDS = "nodes,pods,daemonsets,controllerrevisions,events,priorityclasses"


def daemonset(name: str, *, behavior: str | None = None, strategy: dict[str, Any] | None = None,
              container: dict[str, Any] | None = None, pod_spec: dict[str, Any] | None = None,
              min_ready: int = 0, finalizer: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"labels": {"app": name}}
    if behavior:
        metadata["annotations"] = {"everynode.io/behavior": behavior}
    if finalizer:
        metadata["finalizers"] = [HOLD]
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "agent:1", **(container or {})}],
                            **(pod_spec or {})}
    body: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": NS},
                            "spec": {"selector": {"matchLabels": {"app": name}},
                                     "template": {"metadata": metadata, "spec": spec}}}
    if strategy:
        body["spec"]["updateStrategy"] = strategy
    if min_ready:
        body["spec"]["minReadySeconds"] = min_ready
    return body


def plain_pod(name: str, node: str, container: dict[str, Any], *, finalizer: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": NS}
    if finalizer:
        metadata["finalizers"] = [HOLD]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
            "spec": {"nodeName": node, "containers": [{"name": "main", "image": "other:1", **container}]}}


PRIORITY_CLASS = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "why-e2e-high"},
                  "value": 1000, "description": "why e2e: a DaemonSet that preempts"}


DAEMONSETS = [
    daemonset("sel", pod_spec={"nodeSelector": {"disktype": "ssd"}}),
    daemonset("aff", pod_spec={"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}}),
    daemonset("big", container={"resources": {"requests": {"cpu": "1"}}}),
    daemonset("port", container={"ports": [{"containerPort": 80, "hostPort": 8080}]}),
    daemonset("crash", behavior="crash-loop"),
    daemonset("pull", behavior="image-pull-error"),
    daemonset("never", behavior="never-ready"),
    daemonset("minready", min_ready=3600),
    daemonset("ondelete", strategy={"type": "OnDelete"}),
    daemonset("budget", strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}),
    daemonset("fin", finalizer=True),
    daemonset("fail", behavior="fail"),
    daemonset("anti", pod_spec={"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"role": "exclusive"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
    daemonset("gated", pod_spec={"schedulingGates": [{"name": "everynode.io/test-gate"}]}),
    daemonset("prio", container={"resources": {"requests": {"memory": "2Gi"}}},
              pod_spec={"priorityClassName": "why-e2e-high"}),
]


def why(cluster: Cluster, name: str, *args: str) -> dict[str, Any]:
    r = cli(cluster, "why", name, "-n", NS, "-o", "json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def why_dump(path: Path, name: str) -> dict[str, Any]:
    r = cli(None, "why", name, "-n", NS, "-o", "json", "--from-dump", str(path))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def by_node(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {n["node"]: n for n in answer["nodes"]}


def codes(entry: dict[str, Any]) -> list[str]:
    return [r["code"] for r in entry["reasons"]]


def kubectl(cluster: Cluster, *args: str, tmp: Path) -> str:
    result = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(tmp / "kc"), *args],
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


def all_available(cluster: Cluster, name: str) -> bool:
    ds = cluster.client.get("daemonsets.apps", name, namespace=NS)
    st = ds.get("status") or {}
    return (st.get("observedGeneration", 0) >= ds["metadata"]["generation"]
            and st.get("desiredNumberScheduled", 0) > 0 and st.get("numberAvailable") == st["desiredNumberScheduled"])


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    tmp = tmp_path_factory.mktemp("why")
    with Cluster(nodes=6, control_planes=1, pod_startup=0.2, port=0, node_monitor_grace_period=3.0) as c:
        client = c.client
        client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
        client.patch("nodes", "worker-1", {"metadata": {"labels": {"disktype": "ssd", "zone": "a"}}},
                     patch_type="merge")
        client.patch("nodes", "worker-2", {"metadata": {"labels": {"disktype": "hdd", "zone": "b"}}},
                     patch_type="merge")
        kubectl(c, "cordon", "worker-4", tmp=tmp)
        hog = plain_pod("hog", "worker-2", {"resources": {"requests": {"cpu": "3500m"}}})
        hog["metadata"]["labels"] = {"role": "exclusive"}
        client.create("pods", hog)
        client.create("pods", plain_pod("holder", "worker-3", {"ports": [{"containerPort": 80, "hostPort": 8080}]}))
        client.create("pods", plain_pod("batch", "worker-3", {"resources": {"requests": {"memory": "15Gi"}}},
                                        finalizer=True))
        client.create("priorityclasses.scheduling.k8s.io", PRIORITY_CLASS)
        for ds in DAEMONSETS:
            client.create("daemonsets.apps", ds)
        for name in ("minready", "ondelete", "budget", "fin", "never"):
            wait_until(lambda name=name: cluster_has_pods(c, name, 6), what=f"{name} pods on 6 nodes")
        for name in ("ondelete", "budget", "fin"):
            wait_until(lambda name=name: all_available(c, name), what=f"{name} available")
        # A rollout the budget blocks: the new revision never becomes Ready.
        for name, behavior in (("budget", "never-ready"), ("ondelete", None)):
            patch: dict[str, Any] = {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "agent:2"}]}}}}
            if behavior:
                patch["spec"]["template"]["metadata"] = {"annotations": {"everynode.io/behavior": behavior}}
            client.patch("daemonsets.apps", name, patch, namespace=NS, patch_type="strategic")
        fin_pod = pod_on(c, "fin", "worker-1")
        kubectl(c, "delete", "pod", "-n", NS, fin_pod, "--wait=false", tmp=tmp)
        kubectl(c, "taint", "nodes", "worker-5", "dedicated=x:NoSchedule", tmp=tmp)
        r = cli(c, "node", "stop", "worker-6")
        assert r.returncode == 0, r.stderr
        try:
            yield c, tmp
        finally:
            for pod in client.list("pods", namespace=NS)["items"]:
                if HOLD in (pod["metadata"].get("finalizers") or ()):
                    client.patch("pods", pod["metadata"]["name"], {"metadata": {"finalizers": None}},
                                 namespace=NS, patch_type="merge")


def ds_pods(cluster: Cluster, name: str) -> list[dict[str, Any]]:
    return [p for p in cluster.client.list("pods", namespace=NS, label_selector=f"app={name}")["items"]]


def cluster_has_pods(cluster: Cluster, name: str, n: int) -> bool:
    return len({p["spec"].get("nodeName") for p in ds_pods(cluster, name) if p["spec"].get("nodeName")}) >= n


def pod_on(cluster: Cluster, name: str, node: str) -> str:
    return next(p["metadata"]["name"] for p in ds_pods(cluster, name) if p["spec"].get("nodeName") == node)


# (daemonset, node) -> (verdict, a code that must be among the reasons, or None for no reasons at all)
EXPECTED: dict[tuple[str, str], tuple[str, str | None]] = {
    ("sel", "worker-1"): ("ok", None),
    ("sel", "worker-2"): ("excluded", "NodeSelectorMismatch"),
    ("sel", "control-plane-1"): ("excluded", "NodeSelectorMismatch"),
    ("aff", "worker-1"): ("ok", None),
    ("aff", "worker-3"): ("excluded", "NodeAffinityMismatch"),
    ("big", "worker-1"): ("ok", None),
    ("big", "worker-2"): ("pending", "InsufficientResources"),
    ("big", "control-plane-1"): ("excluded", "TaintNotTolerated"),
    ("port", "worker-3"): ("pending", "HostPortConflict"),
    ("port", "worker-4"): ("ok", None),
    ("crash", "worker-1"): ("unhealthy", "CrashLoopBackOff"),
    ("pull", "worker-1"): ("unhealthy", "ImagePullError"),
    ("never", "worker-1"): ("unhealthy", "NotReady"),
    ("never", "worker-5"): ("misscheduled", "TaintNotTolerated"),
    ("minready", "worker-1"): ("unhealthy", "MinReadySeconds"),
    ("minready", "worker-4"): ("unhealthy", "MinReadySeconds"),  # cordoned: still runs the pod
    ("minready", "worker-5"): ("misscheduled", "TaintNotTolerated"),
    ("minready", "worker-6"): ("misscheduled", "NodeNotReady"),  # + the unreachable taints
    ("ondelete", "worker-1"): ("outdated", "OnDeleteStrategy"),
    ("ondelete", "worker-3"): ("outdated", "OnDeleteStrategy"),
    ("fin", "worker-1"): ("missing", "Terminating"),
    ("fin", "worker-2"): ("ok", None),
    ("gated", "worker-1"): ("pending", "Unschedulable"),
    ("anti", "worker-1"): ("ok", None),
    ("anti", "worker-2"): ("pending", "Unschedulable"),
    ("prio", "worker-1"): ("ok", None),
    ("prio", "worker-3"): ("pending", "Preempting"),
}


def _matches(answer: dict[str, Any], name: str) -> list[str]:
    problems = []
    nodes = by_node(answer)
    for (ds, node), (verdict, code) in EXPECTED.items():
        if ds != name:
            continue
        entry = nodes[node]
        if entry["verdict"] != verdict or (code is None and entry["reasons"]) or (
                code is not None and code not in codes(entry)):
            problems.append(f"{node}: {entry['verdict']} {entry['reasons']} (want {verdict} {code})")
    return problems


def test_every_reason_through_json(built: tuple[Cluster, Path]) -> None:
    cluster, _ = built
    for name in sorted({ds for ds, _ in EXPECTED}):
        last: list[Any] = []

        def holds(name: str = name, last: list[Any] = last) -> bool:
            answer = why(cluster, name)
            last[:] = _matches(answer, name)
            return not last

        try:
            wait_until(holds, what=f"why {name}")
        except AssertionError as e:
            raise AssertionError(f"{name}: {last}") from e
    answer = why(cluster, "big")
    message = next(r["message"] for r in by_node(answer)["worker-2"]["reasons"] if r["code"] == "InsufficientResources")
    assert message.startswith("Insufficient cpu: requests 1, free 500m"), message
    port = by_node(why(cluster, "port"))["worker-3"]["reasons"][0]["message"]
    assert port == f"host port TCP/8080 is held by pod {NS}/holder"
    sel = by_node(why(cluster, "ds/sel"))
    assert sel["worker-2"]["reasons"][0]["message"] == "nodeSelector disktype=ssd: node has disktype=hdd"
    assert sel["worker-3"]["reasons"][0]["message"] == "nodeSelector disktype=ssd: node has no label disktype"
    gated = by_node(why(cluster, "gated"))["worker-2"]["reasons"][0]["message"]
    assert gated.endswith("is SchedulingGated: the scheduler does not consider it until its schedulingGates are "
                          "removed (everynode.io/test-gate)"), gated
    anti = by_node(why(cluster, "anti"))["worker-2"]["reasons"][0]["message"]
    assert anti.startswith(f"required pod anti-affinity: {NS}/hog on worker-2 (kubernetes.io/hostname=worker-2) "
                           "matches; the scheduler said: 0/7 nodes are available: ") and \
        "1 node(s) didn't match pod anti-affinity rules" in anti, anti
    preempting = by_node(why(cluster, "prio"))["worker-3"]["reasons"][0]["message"]
    assert "(priority 1000) is nominated to node worker-3 and waits for the pods it preempts to go: " \
           f"{NS}/batch (terminating for " in preempting, preempting
    summary = why(cluster, "sel")["summary"]
    assert summary["nodes"] == 7 and summary["desired"] == 1 and summary["excluded"] == 6
    assert summary["message"].startswith("DESIRED 1 of 7 nodes: 6 nodes excluded by nodeSelector disktype=ssd")


def test_blocked_rollout_names_the_node_that_holds_the_budget(built: tuple[Cluster, Path]) -> None:
    cluster, _ = built

    def blocked() -> dict[str, Any] | None:
        answer = why(cluster, "budget")
        nodes = by_node(answer)
        new = [n for n in nodes.values() if n["revision"] == answer["daemonset"]["updateRevision"]]
        waiting_nodes = [n for n in nodes.values() if "WaitingForBudget" in codes(n)]
        if len(new) == 1 and new[0]["verdict"] == "unhealthy" and waiting_nodes:
            return {"answer": answer, "new": new[0], "waiting": waiting_nodes}
        return None

    found = wait_until(blocked, what="budget rollout blocked")
    holder = found["new"]["node"]
    for entry in found["waiting"]:
        assert entry["verdict"] == "outdated"
        message = next(r["message"] for r in entry["reasons"] if r["code"] == "WaitingForBudget")
        assert message.startswith("old revision, waiting: maxUnavailable 1 is used by "), message
        assert holder in message, message
    assert "rollout 1/" in found["answer"]["summary"]["message"]
    assert f"waiting for {holder}" in found["answer"]["summary"]["message"]


def test_failed_pods_show_the_backoff(built: tuple[Cluster, Path]) -> None:
    cluster, _ = built

    def backoff() -> bool:
        entry = by_node(why(cluster, "fail"))["worker-1"]
        return entry["verdict"] == "missing" and "FailedBackoff" in codes(entry)

    wait_until(backoff, what="fail: FailedBackoff on worker-1")


def test_table_node_story_and_errors(built: tuple[Cluster, Path]) -> None:
    cluster, _ = built
    r = cli(cluster, "why", "big", "-n", NS)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1].startswith("DESIRED ")
    assert "InsufficientResources" not in r.stdout and "Insufficient cpu" in r.stdout
    wide = cli(cluster, "why", "big", "-n", NS, "-o", "wide")
    assert "InsufficientResources" in wide.stdout and "REVISION" in wide.stdout
    story = cli(cluster, "why", "port", "-n", NS, "--node", "worker-3")
    assert story.returncode == 0, story.stderr
    assert "node worker-3: pending" in story.stdout and f"{NS}/holder" in story.stdout
    assert "HostPortConflict" in story.stdout
    status = cli(cluster, "status", "-n", NS)
    assert status.returncode == 0, status.stderr
    assert "◐ worker-2  Insufficient cpu: requests 1, free 500m" in status.stdout
    assert f"◐ worker-3  host port TCP/8080 is held by pod {NS}/holder" in status.stdout
    with_why = cli(cluster, "status", "-n", NS, "--why")
    assert "DESIRED 1 of 7 nodes: 6 nodes excluded by nodeSelector disktype=ssd" in with_why.stdout
    assert with_why.stdout.count("VERDICT") == len(DAEMONSETS)
    missing = cli(cluster, "why", "nosuch", "-n", NS)
    assert (missing.returncode, missing.stderr) == (1, 'Error from server (NotFound): daemonsets.apps "nosuch" '
                                                       'not found\n')
    no_node = cli(cluster, "why", "big", "-n", NS, "--node", "worker-99")
    assert (no_node.returncode, no_node.stderr) == (1, 'error: node "worker-99" not found\n')
    unreachable = cli(None, "why", "big", "--kubeconfig", "/nonexistent/kubeconfig")
    assert unreachable.returncode == 1 and len(unreachable.stderr.splitlines()) == 1


def test_the_same_cluster_from_a_kubectl_dump_gives_the_same_answer(built: tuple[Cluster, Path]) -> None:
    cluster, tmp = built
    pending = {"big", "port", "crash", "ondelete", "budget", "fin", "gated", "prio", "anti"}
    differences: dict[str, Any] = {}

    def shape(answer: dict[str, Any]) -> Any:
        return answer["daemonset"], [(n["node"], n["verdict"], n["pod"], n["revision"], codes(n))
                                     for n in answer["nodes"]]

    def same() -> bool:
        dump = tmp / "dump.yaml"
        dump.write_text(kubectl(cluster, "get", DUMP_KINDS, "-A", "-o", "yaml", tmp=tmp))
        for name in sorted(pending):
            live, offline = shape(why(cluster, name)), shape(why_dump(dump, name))
            if live == offline:
                pending.discard(name)
                differences.pop(name, None)
            else:  # the cluster moved between the two reads: read both again
                differences[name] = (live, offline)
        return not pending

    try:
        wait_until(same, what="dump answers equal live answers")
    except AssertionError as e:
        raise AssertionError(differences) from e
    # A directory of files, JSON this time, one resource per file.
    folder = tmp / "dumpdir"
    folder.mkdir()
    for kind in DUMP_KINDS.split(","):
        (folder / f"{kind}.json").write_text(kubectl(cluster, "get", kind, "-A", "-o", "json", tmp=tmp))
    offline = why_dump(folder, "sel")
    assert [(n["node"], n["verdict"]) for n in offline["nodes"]] == \
        [(n["node"], n["verdict"]) for n in why(cluster, "sel")["nodes"]]
    bad = tmp / "bad.yaml"
    bad.write_text("items: [\n")
    r = cli(None, "why", "sel", "--from-dump", str(bad))
    assert r.returncode == 1 and r.stderr.startswith(f"error: {bad}:") and len(r.stderr.splitlines()) == 1
    r = cli(None, "why", "nosuch", "--from-dump", str(tmp / "dump.yaml"))
    assert (r.returncode, r.stderr) == (1, f'error: daemonset "nosuch" not found in dump {tmp / "dump.yaml"}\n')
