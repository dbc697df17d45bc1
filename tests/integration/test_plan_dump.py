"""`everynode plan` on a dump of the 20-node cluster of ``tests/support/plan_cluster.py``, through
the real command line (``-o json``, ``--trace``), and its pure helpers.

The dump is built in virtual time (the cluster converged, then worker-20's kubelet stopped until
the node is Unknown and tainted) and written as a v1 List, as ``kubectl get … -o json`` writes it.

The arithmetic the answer must match (start-up S = 5 s, maxUnavailable 3, maxSurge 0):

* worker-20 is Unknown: the controller deletes its unavailable old pod, which stays Terminating
  there (no kubelet), and upstream's rolling update counts that node as unavailable for good —
  so 2 of the 3 slots are left for the rollout (upstream ``rollingUpdate``: a node with neither
  a new nor an old non-terminating pod counts as unavailable);
* the gains (worker-16, worker-17) have no pod yet: they take the 2 slots first (ready at S);
* then two old pods at a time, oldest first (ties by name: worker-1, worker-10, …): waves at
  2S, 3S, 4S; the fifth wave is worker-18 and worker-19;
* worker-19 is full: the scheduler preempts one ``low`` pod and binds the agent on its retry
  one second later (upstream's initial back-off), so its pod is Ready at 5S + 1;
* worker-18's new pod never binds (the host port is held by a pod of the same priority): from
  then on one slot is left, and the 8 remaining nodes (worker-2 … worker-9) go one by one — the
  last one Ready at 5S + 1 + 8S = 66 s — and the rollout cannot complete.

Without the host-port holder, worker-18 is Ready at 5S and the rollout completes two at a time:
9 waves for 18 nodes, the preemption's second on top: 9S + 1 = 46 s.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from everynode.product.clusterdump import ClusterObjects, iter_objects
from everynode.product.collector import PLAN_YOUNG_LIMIT
from everynode.product.plan import PlanError, PlanOptions, estimate_startup, plan, snapshot_time
from everynode.virtualtime import run_virtual
from tests.support import plan_cluster as pc

S = 5.0
CLI = [sys.executable, "-m", "everynode.product.cli"]


def write_dump(objects: ClusterObjects, path: Path, *, drop_pods: tuple[str, ...] = ()) -> Path:
    items = [o for o in iter_objects(objects)
             if not (o.get("kind") == "Pod" and o["metadata"]["name"] in drop_pods)]
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


@pytest.fixture(scope="module")
def objects() -> ClusterObjects:
    return run_virtual(pc.virtual_dump())


@pytest.fixture(scope="module")
def files(objects: ClusterObjects, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("plan")
    change = tmp / "change.yaml"
    change.write_text(yaml.safe_dump(pc.change()))
    return {"dump": write_dump(objects, tmp / "dump.json"),
            "free": write_dump(objects, tmp / "free.json", drop_pods=("old-exporter",)),
            "change": change, "tmp": tmp}


def run_plan(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "plan", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, check=False)


def plan_json(files: dict[str, Path], dump: str = "dump", *extra: str) -> dict[str, Any]:
    r = run_plan("-f", str(files["change"]), "--from-dump", str(files[dump]), "--pod-startup", str(S),
                 "-o", "json", *extra)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def test_the_plan_names_gains_losses_waves_blockers_victims_and_the_pending_pod(files: dict[str, Path]) -> None:
    answer = plan_json(files)
    assert answer["daemonset"]["namespace"] == pc.NS and answer["daemonset"]["change"] == "update"
    assert (answer["desired_before"], answer["desired_after"]) == (pc.DESIRED_BEFORE, pc.DESIRED_AFTER)
    assert answer["gains"] == pc.GAINS and answer["losses"] == pc.LOSSES
    waves = [(w["at"], w["nodes"]) for w in answer["waves"]]
    assert waves[:4] == [(S, ["worker-16", "worker-17"]), (2 * S, ["worker-1", "worker-10"]),
                         (3 * S, ["worker-11", "worker-12"]), (4 * S, ["worker-13", "worker-14"])]
    assert waves[4] == (5 * S + 1, ["worker-19"])
    assert waves[5:] == [(5 * S + 1 + k * S, [f"worker-{k + 1}"]) for k in range(1, 9)]
    assert answer["simulated_seconds"] == 5 * S + 1 + 8 * S == 66
    assert answer["budget"] == pc.MAX_UNAVAILABLE and answer["peak_unavailable"] == 2
    blocked = {(b["node"], b["code"]) for b in answer["blocked"]}
    assert (pc.NOT_READY, "NodeNotReady") in blocked and {b["node"] for b in answer["blocked"]} == {pc.NOT_READY}
    assert [(p["node"], p["code"]) for p in answer["pending"]] == [(pc.PORT_NODE, "HostPortConflict")]
    assert "kube-system/old-exporter" in answer["pending"][0]["message"]
    assert [(v["pod"], v["node"], v["priority"]) for v in answer["preempted"]] == [("apps/batch-2", pc.FULL_NODE, 100)]
    # A pod that never binds keeps the rollout from completing (kubectl's rule); nothing else broke.
    assert answer["invariants"] == {"one_pod_per_node": True, "budget_respected": True, "completed": False}
    assert answer["pod_startup_seconds"] == S and answer["pod_startup_source"] == "--pod-startup"
    # Where the wall time went, phase by phase (the dump was read before the plan's clock started).
    phases = answer["wall_phases"]
    assert list(phases) == ["prepare", "load", "start", "rollout", "answer"] and min(phases.values()) >= 0
    assert abs(sum(phases.values()) - answer["wall_seconds"]) <= 0.01


def test_without_the_port_holder_the_rollout_completes_in_the_predicted_time(files: dict[str, Path]) -> None:
    answer = plan_json(files, "free")
    assert answer["invariants"] == {"one_pod_per_node": True, "budget_respected": True, "completed": True}
    assert answer["pending"] == [] and answer["gains"] == pc.GAINS and answer["losses"] == pc.LOSSES
    assert answer["simulated_seconds"] == 9 * S + 1 == 46
    assert sum(len(w["nodes"]) for w in answer["waves"]) == pc.DESIRED_AFTER
    assert [v["pod"] for v in answer["preempted"]] == ["apps/batch-2"]


def test_the_same_plan_twice_gives_the_same_trace(files: dict[str, Path]) -> None:
    traces = []
    for i, hash_seed in enumerate(("1", "2")):
        out = files["tmp"] / f"trace-{i}.json"
        r = run_plan("-f", str(files["change"]), "--from-dump", str(files["dump"]), "--pod-startup", str(S),
                     "--node-failures", "2", "--seed", "7", "-o", "json", "--trace", str(out),
                     env={"PYTHONHASHSEED": hash_seed})
        assert r.returncode == 0, r.stderr
        traces.append(out.read_bytes())
    assert traces[0] == traces[1]
    trace = json.loads(traces[0])
    assert "wall_seconds" not in trace["answer"] and "wall_phases" not in trace["answer"]  # wall times differ run to run
    assert len(trace["initial"]) == pc.NODES and trace["steps"]
    assert trace["initial"]["worker-1"] == {"ready": True, "wanted": True,
                                            "pods": [[trace["initial"]["worker-1"]["pods"][0][0], "Running", True, False]]}
    failures = trace["answer"]["node_failures"]
    assert len(failures) == 2 and all(f["at"] >= 0 for f in failures)
    # The failed nodes are seen going NotReady in the trace.
    for f in failures:
        assert any(not s["nodes"][f["node"]]["ready"] for s in trace["steps"] if f["node"] in s["nodes"])
    other = plan_json(files, "dump", "--node-failures", "2", "--seed", "8")
    assert other["node_failures"] != trace["answer"]["node_failures"]


def test_what_the_copy_leaves_out_changes_no_answer(objects: ClusterObjects) -> None:
    """The copy writes no Events its answer does not read, no heartbeat (Lease renewals, status
    reports that change nothing but heartbeat times: modelled), keeps no managedFields, does not
    type-check its own components' writes and runs no controller that would have nothing to do:
    the trace, answer included, is the same as with every controller, check and write a cluster
    has — with the preemption and the stuck node, and with node failures (whose NotReady comes at
    the same instant from written heartbeats as from the model)."""
    def traced(full_copy: bool, **failures: Any) -> dict[str, Any]:
        result = plan(objects, pc.change(), PlanOptions(pod_startup=S, trace=True, full_copy=full_copy, **failures))
        assert result.trace is not None
        return result.trace

    lean = traced(False)
    assert lean["answer"]["preempted"] and lean["answer"]["pending"]
    assert lean == traced(True)
    lean = traced(False, node_failures=2, seed=7)
    assert lean["answer"]["node_failures"] and lean["answer"]["blocked"]
    assert lean == traced(True, node_failures=2, seed=7)


def test_the_change_is_type_checked_though_the_copys_own_components_are_not(objects: ClusterObjects) -> None:
    bad = pc.change()
    bad["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": "eighty"}]
    with pytest.raises(PlanError, match="the change is refused: .*cannot unmarshal string"):
        plan(objects, bad, PlanOptions(pod_startup=S))


def test_the_copy_is_kept_out_of_the_collectors_passes_while_the_plan_runs(
        objects: ClusterObjects, monkeypatch: pytest.MonkeyPatch) -> None:
    """The loaded copy is frozen (collector.py) after the load and once started, and handed back
    to the collector when the plan ends, failed or not; meanwhile young objects are collected
    only past the plan's limit."""
    import gc

    from everynode.product import plan as plan_module

    counts: list[int] = []
    young_limits: list[int] = []
    real = plan_module.frozen_heap

    @contextlib.contextmanager
    def observed() -> Iterator[Callable[[], None]]:
        with real() as freeze:
            def counting() -> None:
                freeze()
                counts.append(gc.get_freeze_count())
                young_limits.append(gc.get_threshold()[0])
            yield counting

    monkeypatch.setattr(plan_module, "frozen_heap", observed)
    assert gc.get_freeze_count() == 0
    thresholds = gc.get_threshold()
    result = plan(objects, pc.change(), PlanOptions(pod_startup=S))
    assert result.preempted  # the plan ran through
    assert len(counts) == 2 and 0 < counts[0] <= counts[1]  # the loaded copy, then the started one
    assert gc.get_freeze_count() == 0
    # what the copy keeps meanwhile is not walked at every pass of the caller's pace
    assert young_limits == [PLAN_YOUNG_LIMIT, PLAN_YOUNG_LIMIT] and gc.get_threshold() == thresholds
    broken = pc.change()
    broken["spec"]["template"]["spec"]["containers"][0]["image"] = ""  # refused: the plan fails
    with pytest.raises(PlanError):
        plan(objects, broken, PlanOptions(pod_startup=S))
    assert gc.get_freeze_count() == 0


def test_added_nodes_like_a_node_gain_a_pod(files: dict[str, Path]) -> None:
    answer = plan_json(files, "free", "--add-nodes", "2", "--like", "worker-1")
    assert answer["added_nodes"] == ["worker-1-like-1", "worker-1-like-2"]
    assert answer["gains"] == sorted([*pc.GAINS, "worker-1-like-1", "worker-1-like-2"])
    assert answer["invariants"]["completed"] and answer["desired_after"] == pc.DESIRED_AFTER + 2


def test_table_output_reads_at_100_columns(files: dict[str, Path]) -> None:
    r = run_plan("-f", str(files["change"]), "--from-dump", str(files["dump"]), "--pod-startup", str(S),
                 env={"COLUMNS": "100"})
    assert r.returncode == 0, r.stderr
    assert "DOES NOT COMPLETE" in r.stdout and "DESIRED 17 → 18" in r.stdout
    assert "HostPortConflict" in r.stdout and "apps/batch-2" in r.stdout and "NodeNotReady" in r.stdout


def test_errors_are_one_line(files: dict[str, Path]) -> None:
    missing = run_plan("-f", str(files["change"]), "--from-dump", str(files["tmp"] / "nope.json"))
    assert missing.returncode == 1 and missing.stderr.strip().count("\n") == 0
    assert "no such file or directory" in missing.stderr
    bad = files["tmp"] / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    r = run_plan("-f", str(bad), "--from-dump", str(files["dump"]))
    assert r.returncode == 1 and r.stderr.strip() == f"error: {bad}: expected one DaemonSet, found 0"
    r = run_plan("-f", str(files["change"]), "--from-dump", str(files["dump"]), "--add-nodes", "1", "--like", "nope")
    assert r.returncode == 1 and r.stderr.strip() == 'error: --like: node "nope" not found'
    r = run_plan("-f", str(files["change"]), "--from-dump", str(files["dump"]), "--node-failures", "worker-99")
    assert r.returncode == 1 and r.stderr.strip() == 'error: --node-failures: node "worker-99" not found'
    r = run_plan("-f", str(files["change"]), "--from-dump", str(files["dump"]), "--node-failures", "50")
    assert r.returncode == 1 and r.stderr.strip() == "error: --node-failures 50: only 17 Ready nodes run the DaemonSet"
    assert "Traceback" not in r.stderr


def test_a_new_daemonset_is_all_gains(objects: ClusterObjects) -> None:
    new = pc.change()
    new["metadata"]["name"] = "fresh"
    new["spec"]["selector"] = {"matchLabels": {"app": "fresh"}}
    new["spec"]["template"]["metadata"]["labels"] = {"app": "fresh"}
    new["spec"]["template"]["spec"]["containers"][0].pop("ports")
    result = plan(objects, new, PlanOptions(pod_startup=2.0))
    assert result.daemonset["change"] == "create" and result.desired_before == 0
    assert result.gains == sorted(f"worker-{i}" for i in range(1, 20) if i != 15)
    assert result.losses == [] and result.invariants["completed"]
    # All created at once (a new DaemonSet is not a rolling update): one wave after start-up, plus
    # the full node's preemption retry.
    assert [w["at"] for w in result.waves] == [2.0, 3.0]
    assert result.pod_startup_source == "--pod-startup"


def test_startup_is_estimated_from_the_daemonsets_pods() -> None:
    ds = {"metadata": {"uid": "u1"}}

    def pod(created: str, ready: str) -> dict[str, Any]:
        return {"metadata": {"ownerReferences": [{"uid": "u1", "controller": True}], "creationTimestamp": created},
                "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": ready}]}}

    objects = ClusterObjects(pods=[pod("2026-01-01T00:00:00Z", "2026-01-01T00:00:04Z"),
                                   pod("2026-01-01T00:00:00Z", "2026-01-01T00:00:10Z"),
                                   pod("2026-01-01T00:00:00Z", "2026-01-01T00:00:06Z")])
    assert estimate_startup(ds, objects) == (6.0, 3)
    assert estimate_startup({"metadata": {"uid": "other"}}, objects) == (None, 0)
    assert snapshot_time(objects) == 1767225610.0
