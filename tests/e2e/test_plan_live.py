"""`everynode plan` against a live `everynode up` cluster, then the same change applied there.

The 20-node cluster of ``tests/support/plan_cluster.py`` runs in real time behind HTTPS.  Three
answers must agree:

1. ``plan --kubeconfig`` (the live read) and ``plan --from-dump`` of the same cluster dumped with
   real kubectl give the same answer (durations in messages aside: the two reads are seconds
   apart);
2. the plan's prediction and what happens when the change is then applied with real kubectl and
   the cluster's own controllers roll it out in real time: the nodes that gain and lose a pod,
   the blocked node, the pod left Pending (with why's codes, asked live) and the victim of the
   preemption.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from everynode.product.cluster import Cluster
from tests.e2e.test_cli_node_status import cli
from tests.support import plan_cluster as pc
from tests.support import waiting

KUBECTL = "/usr/bin/kubectl"
DUMP_KINDS = "nodes,pods,daemonsets,controllerrevisions,events,priorityclasses"
S = "5"


def kubectl(cluster: Cluster, tmp: Path, *args: str) -> str:
    import subprocess

    r = subprocess.run([KUBECTL, "--kubeconfig", str(cluster.kubeconfig), "--cache-dir", str(tmp / "kc"), *args],
                       capture_output=True, text=True, timeout=60, check=False)
    assert r.returncode == 0, r.stderr
    return r.stdout


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Path]]:
    tmp = tmp_path_factory.mktemp("plan-e2e")
    with Cluster(nodes=pc.NODES, control_planes=0, pod_startup=0.3, port=0, node_monitor_grace_period=4.0) as c:
        assert c.plane is not None
        c.run(pc.build(c.plane.client, sleep=asyncio.sleep), timeout=120)
        (tmp / "change.yaml").write_text(yaml.safe_dump(pc.change()))
        (tmp / "dump.yaml").write_text(kubectl(c, tmp, "get", DUMP_KINDS, "-A", "-o", "yaml"))
        yield c, tmp


def normalized(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without wall times and without the ages in messages ("(11m)", "for 3s")."""
    out = {k: v for k, v in answer.items() if k not in ("wall_seconds", "wall_phases")}
    for key in ("blocked", "pending"):
        out[key] = [{**r, "message": re.sub(r"\((for )?[0-9][^)]*\)|for [0-9]+[smhd]\w*", "", r["message"])}
                    for r in answer[key]]
    return out


def plan_json(*args: str, cluster: Cluster | None = None) -> dict[str, Any]:
    r = cli(cluster, "plan", *args, "--pod-startup", S, "-o", "json", timeout=120)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def test_plan_live_equals_plan_of_the_kubectl_dump_and_predicts_the_real_rollout(
        live: tuple[Cluster, Path]) -> None:
    cluster, tmp = live
    change = str(tmp / "change.yaml")
    from_dump = plan_json("-f", change, "--from-dump", str(tmp / "dump.yaml"))
    from_live = plan_json("-f", change, cluster=cluster)
    assert normalized(from_live) == normalized(from_dump)
    predicted = from_live
    assert predicted["gains"] == pc.GAINS and predicted["losses"] == pc.LOSSES

    # Read-only: planning changed nothing in the cluster.
    ds = cluster.client.get("daemonsets.apps", pc.NAME, namespace=pc.NS)
    assert ds["metadata"]["generation"] == 1

    before = why(cluster)
    kubectl(cluster, tmp, "apply", "--server-side", "--force-conflicts", "-f", change)

    def rolled_as_far_as_it_goes() -> dict[str, Any] | None:
        answer = why(cluster)
        verdicts = {n["node"]: n["verdict"] for n in answer["nodes"]}
        done = all(v in ("ok", "excluded", "misscheduled") for n, v in verdicts.items() if n != pc.PORT_NODE)
        return answer if done and verdicts[pc.PORT_NODE] == "pending" else None

    after = waiting.wait_until(rolled_as_far_as_it_goes, timeout=90, interval=0.5)
    desired_before = {n["node"] for n in before["nodes"] if n["verdict"] not in ("excluded", "misscheduled")}
    desired_after = {n["node"] for n in after["nodes"] if n["verdict"] not in ("excluded", "misscheduled")}
    assert sorted(desired_after - desired_before) == predicted["gains"]
    assert sorted(desired_before - desired_after) == predicted["losses"]
    by_node = {n["node"]: n for n in after["nodes"]}
    for blocked in predicted["blocked"]:
        assert blocked["code"] in [r["code"] for r in by_node[blocked["node"]]["reasons"]], by_node[blocked["node"]]
    assert {b["node"] for b in predicted["blocked"]} == {pc.NOT_READY}
    for pending in predicted["pending"]:
        assert by_node[pending["node"]]["verdict"] == "pending"
        assert pending["code"] in [r["code"] for r in by_node[pending["node"]]["reasons"]]
    remaining = {p["metadata"]["name"] for p in cluster.client.list("pods", namespace=pc.APPS)["items"]}
    victims = {v["pod"].split("/", 1)[1] for v in predicted["preempted"]}
    assert victims == {"batch-2"} and remaining == {"batch-1", "batch-2"} - victims


def why(cluster: Cluster) -> dict[str, Any]:
    r = cli(cluster, "why", pc.NAME, "-n", pc.NS, "-o", "json")
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))
