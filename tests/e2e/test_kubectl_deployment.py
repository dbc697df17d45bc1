"""Deployments through real kubectl 1.27 and 1.33, as on a real cluster — and the article's
Deployment-vs-DaemonSet table, row by row.

What each kubectl command sends and reads (``staging/src/k8s.io/kubectl/pkg``):
``create deployment`` posts a Deployment (protobuf from 1.32 on); ``rollout status`` watches
the Deployment and compares ``observedGeneration``, ``updatedReplicas``, ``replicas`` and
``availableReplicas`` (and fails on ``ProgressDeadlineExceeded``); ``rollout history`` lists the
ReplicaSets the Deployment controls and reads their ``deployment.kubernetes.io/revision`` and
``kubernetes.io/change-cause`` annotations; ``rollout undo`` copies a ReplicaSet's template back
with a JSON patch; ``rollout restart`` patches a ``restartedAt`` template annotation;
``rollout pause|resume`` and ``set image`` are strategic merge patches; ``scale`` patches the
``scale`` subresource; ``describe`` lists the ReplicaSets and the Deployment's events.

The table (article: "Kubernetes DaemonSet vs Deployment"): a new node gets the DaemonSet's pod at
once and nothing of the Deployment's; a Deployment with required pod anti-affinity on
``kubernetes.io/hostname`` runs one replica per node and leaves the extras Pending with
kube-scheduler's message; with preferred anti-affinity its replicas spread over the nodes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from everynode.product.cluster import Cluster
from tests.e2e import test_simulation_kubectl as simulation
from tests.e2e.test_kubectl_pod_affinity import EXPECTED as ANTI_AFFINITY_MESSAGE
from tests.e2e.test_simulation_kubectl import (  # noqa: F401 - make_cluster is a fixture
    NS,
    Kubectl,
    condition,
    daemonset,
    ds_converged,
    make_cluster,
    running_ready,
    wait_until,
)

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]
VERSIONS = ["1.27", "1.33"]
WAITING = re.compile(
    r'Waiting for deployment "web" rollout to finish: (\d+ out of \d+ new replicas have been updated|'
    r"\d+ old replicas are pending termination|\d+ of \d+ updated replicas are available)\.\.\."
    r"|Waiting for deployment spec update to be observed\.\.\.")
DONE = 'deployment "web" successfully rolled out'


@pytest.fixture
def use_kubectl(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    def use(version: str) -> None:
        binary = Path(simulation.KUBECTL).with_name(f"kubectl.{version}")
        assert binary.exists(), f"{binary} comes with the machine image"
        monkeypatch.setattr(simulation, "KUBECTL", str(binary))
    return use


def rollout_status(k: Kubectl) -> list[str]:
    lines = k("rollout", "status", "deployment/web", "-n", NS, "--timeout=60s").splitlines()
    assert lines[-1] == DONE, lines
    assert all(WAITING.fullmatch(line) for line in lines[:-1]), lines
    return lines


def web_pods(k: Kubectl) -> list[Obj]:
    return [p for p in k.pods("app=web") if not p["metadata"].get("deletionTimestamp")]


def replica_sets(k: Kubectl) -> list[Obj]:
    return k.json("get", "rs", "-n", NS, "-l", "app=web")["items"]


def images(k: Kubectl) -> set[str]:
    return {p["spec"]["containers"][0]["image"] for p in web_pods(k)}


def settled(k: Kubectl, *, replicas: int, image: str) -> list[Obj] | None:
    pods = web_pods(k)
    if len(pods) == replicas and all(running_ready(p) for p in pods) and images(k) == {image}:
        return pods
    return None


def history(k: Kubectl) -> list[str]:
    out = k("rollout", "history", "deployment/web", "-n", NS)
    return [line.split()[0] for line in out.splitlines()[2:] if line.strip()]


@pytest.mark.parametrize("version", VERSIONS)
def test_create_rollout_scale_undo_pause_resume_restart_describe_delete(
        make_cluster: Callable[..., tuple[Cluster, Kubectl]], use_kubectl: Callable[[str], None],  # noqa: F811
        version: str) -> None:
    use_kubectl(version)
    _, k = make_cluster(nodes=3)

    assert k("create", "deployment", "web", "--image=nginx:1.25", "--replicas=3", "-n", NS).strip() == \
        "deployment.apps/web created"
    rollout_status(k)
    wait_until(lambda: settled(k, replicas=3, image="nginx:1.25"), what="three web pods")
    table = k("get", "deploy,rs", "-n", NS)
    assert re.search(r"deployment\.apps/web\s+3/3\s+3\s+3\s+\S+", table), table
    [rs1] = replica_sets(k)
    hash1 = rs1["metadata"]["labels"]["pod-template-hash"]
    assert rs1["metadata"]["name"] == f"web-{hash1}"
    assert re.search(rf"replicaset\.apps/web-{hash1}\s+3\s+3\s+3\s+", table), table
    assert rs1["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert rs1["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "3"
    assert rs1["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "4"
    everything = k("get", "all", "-n", NS)  # category "all"
    assert "deployment.apps/web" in everything and f"replicaset.apps/web-{hash1}" in everything
    wide = k("get", "deploy", "web", "-n", NS, "-o", "wide")
    assert wide.split("\n")[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS",
                                           "IMAGES", "SELECTOR"]
    assert "nginx:1.25" in wide and "app=web" in wide

    # set image: a second ReplicaSet takes over, revision 2
    k("set", "image", "deployment/web", "nginx=nginx:1.26", "-n", NS)
    rollout_status(k)
    wait_until(lambda: settled(k, replicas=3, image="nginx:1.26"), what="web on nginx:1.26")
    assert history(k) == ["1", "2"]
    d = k.json("get", "deploy", "web", "-n", NS)
    progressing = condition(d, "Progressing")
    new_rs = next(rs for rs in replica_sets(k) if rs["spec"]["replicas"] == 3)
    assert (progressing["reason"], progressing["message"]) == \
        ("NewReplicaSetAvailable", f'ReplicaSet "{new_rs["metadata"]["name"]}" has successfully progressed.')
    available = condition(d, "Available")
    assert (available["status"], available["reason"]) == ("True", "MinimumReplicasAvailable")

    # scale through the scale subresource
    assert k("scale", "deployment", "web", "--replicas=5", "-n", NS).strip() == "deployment.apps/web scaled"
    wait_until(lambda: settled(k, replicas=5, image="nginx:1.26"), what="five web pods")
    assert k("get", "deploy", "web", "-n", NS, "--no-headers").split()[1] == "5/5"

    # undo: back to revision 1's template, renumbered 3
    assert "rolled back" in k("rollout", "undo", "deployment/web", "-n", NS)
    rollout_status(k)
    wait_until(lambda: settled(k, replicas=5, image="nginx:1.25"), what="web back on nginx:1.25")
    assert history(k) == ["2", "3"]
    assert len(replica_sets(k)) == 2  # the first ReplicaSet was reused, not a third made

    # pause: a template change makes no ReplicaSet; resume rolls it out
    k("rollout", "pause", "deployment/web", "-n", NS)
    k("set", "image", "deployment/web", "nginx=nginx:1.27", "-n", NS)
    paused = wait_until(lambda: (d := k.json("get", "deploy", "web", "-n", NS))
                        and (c := condition(d, "Progressing")) is not None and c["reason"] == "DeploymentPaused"
                        and c, what="Progressing DeploymentPaused")
    assert (paused["status"], paused["message"]) == ("Unknown", "Deployment is paused")
    assert len(replica_sets(k)) == 2 and images(k) == {"nginx:1.25"}
    k("rollout", "resume", "deployment/web", "-n", NS)
    rollout_status(k)
    wait_until(lambda: settled(k, replicas=5, image="nginx:1.27"), what="web on nginx:1.27 after resume")

    # restart: a restartedAt annotation, a new ReplicaSet with the same image
    assert "restarted" in k("rollout", "restart", "deployment/web", "-n", NS)
    rollout_status(k)
    d = k.json("get", "deploy", "web", "-n", NS)
    assert "kubectl.kubernetes.io/restartedAt" in d["spec"]["template"]["metadata"]["annotations"]
    assert len(replica_sets(k)) == 4

    described = k("describe", "deployment", "web", "-n", NS)
    assert re.search(r"Replicas:\s+5 desired \| 5 updated \| 5 total \| 5 available \| 0 unavailable", described)
    assert re.search(r"NewReplicaSet:\s+web-\S+ \(5/5 replicas created\)", described), described
    assert re.search(rf"ScalingReplicaSet\s+.*deployment-controller\s+Scaled up replica set web-{hash1} from 0 to 3",
                     described), described

    # delete cascades: ReplicaSets and pods go with the Deployment (garbage collector)
    k("delete", "deployment", "web", "-n", NS)
    wait_until(lambda: not replica_sets(k) and not k.pods("app=web"), what="ReplicaSets and pods deleted")


@pytest.mark.parametrize("version", VERSIONS)
def test_a_new_node_gets_the_daemonset_pod_and_nothing_of_the_deployment(
        make_cluster: Callable[..., tuple[Cluster, Kubectl]], use_kubectl: Callable[[str], None],  # noqa: F811
        version: str) -> None:
    use_kubectl(version)
    _, k = make_cluster(nodes=2)
    k.apply(daemonset("agent"))
    k("create", "deployment", "web", "--image=nginx", "--replicas=2", "-n", NS)
    wait_until(lambda: ds_converged(k, "agent", {"worker-1", "worker-2"}), what="agent on both workers")
    rollout_status(k)
    before = sorted(p["metadata"]["name"] for p in web_pods(k))

    k.apply({"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": "worker-3", "labels": {"kubernetes.io/hostname": "worker-3",
                                                         "kubernetes.io/os": "linux"}}})
    wait_until(lambda: ds_converged(k, "agent", {"worker-1", "worker-2", "worker-3"}), what="agent on worker-3")
    # the Deployment answers "how many?": still its two pods, none moved to the new node
    after = web_pods(k)
    assert sorted(p["metadata"]["name"] for p in after) == before
    assert all(p["spec"]["nodeName"] != "worker-3" for p in after)
    assert k.json("get", "deploy", "web", "-n", NS)["status"]["replicas"] == 2


ANTI_REQUIRED = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
ANTI_PREFERRED = {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "web"}},
                                        "topologyKey": "kubernetes.io/hostname"}}]}}


def deployment(replicas: int, affinity: Obj) -> Obj:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"affinity": affinity,
                                           "containers": [{"name": "web", "image": "nginx"}]}}}}


@pytest.mark.parametrize("version", VERSIONS)
def test_required_anti_affinity_deployment_one_replica_per_node_extras_pending(
        make_cluster: Callable[..., tuple[Cluster, Kubectl]], use_kubectl: Callable[[str], None],  # noqa: F811
        version: str) -> None:
    use_kubectl(version)
    _, k = make_cluster(nodes=3)
    k.apply(deployment(5, ANTI_REQUIRED))

    def spread() -> list[Obj] | None:
        pods = web_pods(k)
        placed = [p for p in pods if p["spec"].get("nodeName")]
        pending = [p for p in pods if not p["spec"].get("nodeName")
                   and (c := condition(p, "PodScheduled")) is not None and c["status"] == "False"]
        ok = len(placed) == 3 and len(pending) == 2 and all(running_ready(p) for p in placed)
        return pods if ok else None

    pods = wait_until(spread, what="three web pods running, two Pending")
    assert sorted(p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")) == \
        ["worker-1", "worker-2", "worker-3"]
    for p in pods:
        if not p["spec"].get("nodeName"):
            c = condition(p, "PodScheduled")
            assert (p["status"]["phase"], c["reason"], c["message"]) == \
                ("Pending", "Unschedulable", ANTI_AFFINITY_MESSAGE)
    table = k("get", "deploy", "web", "-n", NS, "--no-headers").split()
    assert table[1:4] == ["3/5", "5", "3"]
    d = k.json("get", "deploy", "web", "-n", NS)
    assert condition(d, "Available")["reason"] == "MinimumReplicasUnavailable"
    assert "didn't match pod anti-affinity rules" in k("get", "events", "-n", NS,
                                                       "--field-selector", "reason=FailedScheduling")


@pytest.mark.parametrize("version", VERSIONS)
def test_preferred_anti_affinity_deployment_spreads_its_replicas(
        make_cluster: Callable[..., tuple[Cluster, Kubectl]], use_kubectl: Callable[[str], None],  # noqa: F811
        version: str) -> None:
    use_kubectl(version)
    _, k = make_cluster(nodes=3)
    k.apply(deployment(3, ANTI_PREFERRED))
    rollout_status(k)
    pods = wait_until(lambda: (ps := web_pods(k)) and len(ps) == 3 and all(running_ready(p) for p in ps) and ps,
                      what="three web pods running")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["worker-1", "worker-2", "worker-3"]


@pytest.mark.parametrize("version", VERSIONS)
def test_rollout_status_fails_once_the_progress_deadline_is_exceeded(
        make_cluster: Callable[..., tuple[Cluster, Kubectl]], use_kubectl: Callable[[str], None],  # noqa: F811
        version: str) -> None:
    use_kubectl(version)
    _, k = make_cluster(nodes=2)
    d = deployment(2, {})
    d["spec"]["progressDeadlineSeconds"] = 3
    d["spec"]["template"]["metadata"]["annotations"] = {"everynode.io/behavior": "never-ready"}
    k.apply(d)
    result = k.run("rollout", "status", "deployment/web", "-n", NS, "--timeout=60s", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == 'error: deployment "web" exceeded its progress deadline'
    got = k.json("get", "deploy", "web", "-n", NS)
    c = condition(got, "Progressing")
    assert (c["status"], c["reason"]) == ("False", "ProgressDeadlineExceeded")
