"""Required pod anti-affinity on ``kubernetes.io/hostname`` as a user sees it through kubectl
(1.27 and 1.33).

The article's claim "a Deployment with pod anti-affinity spreads pods too" — and its limit: one
replica per node, the extras stay Pending with kube-scheduler's message (the control-plane node
refused for its taint, the workers for the anti-affinity; preemption cannot help pods of equal
priority).  Pods are applied directly (no Deployment controller is needed to show the scheduler).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from everynode.product.cluster import Cluster
from tests.e2e import test_simulation_kubectl as simulation
from tests.e2e.test_simulation_kubectl import (  # noqa: F401 - make_cluster is a fixture
    NS,
    Kubectl,
    condition,
    make_cluster,
    pod,
    running_ready,
    wait_until,
)

pytestmark = pytest.mark.e2e

Obj = dict[str, Any]

ANTI_HOSTNAME = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
EXPECTED = ("0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, "
            "3 node(s) didn't match pod anti-affinity rules. preemption: 0/4 nodes are available: "
            "1 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod.")


@pytest.mark.parametrize("version", ["1.27", "1.33"])
def test_required_anti_affinity_one_pod_per_node_extras_pending(
        make_cluster: Callable[..., tuple[Cluster, Kubectl]], version: str,  # noqa: F811
        monkeypatch: pytest.MonkeyPatch) -> None:
    binary = Path(simulation.KUBECTL).with_name(f"kubectl.{version}")
    assert binary.exists(), binary
    monkeypatch.setattr(simulation, "KUBECTL", str(binary))
    _, k = make_cluster(nodes=3)
    k.apply(*(pod(f"web-{i}", labels={"app": "web"}, spec={"affinity": ANTI_HOSTNAME}) for i in range(5)))

    def settled() -> list[Obj] | None:
        pods = k.pods("app=web")
        placed = [p for p in pods if p["spec"].get("nodeName")]
        pending = [p for p in pods if not p["spec"].get("nodeName")
                   and (c := condition(p, "PodScheduled")) is not None and c["status"] == "False"]
        return pods if len(placed) == 3 and len(pending) == 2 and all(running_ready(p) for p in placed) else None

    pods = wait_until(settled, what="three web pods running, two unschedulable")
    nodes = sorted(p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName"))
    assert nodes == ["worker-1", "worker-2", "worker-3"]
    for p in pods:
        if p["spec"].get("nodeName"):
            continue
        assert p["status"]["phase"] == "Pending"
        c = condition(p, "PodScheduled")
        assert (c["reason"], c["message"]) == ("Unschedulable", EXPECTED)
        described = k("describe", "pod", p["metadata"]["name"], "-n", NS)
        assert "FailedScheduling" in described and "didn't match pod anti-affinity rules" in described
    wide = k("get", "pods", "-n", NS, "-l", "app=web", "-o", "wide")
    assert wide.count("Pending") == 2 and wide.count("Running") == 3
