"""`everynode bench why`: every node of an N-node cluster explained, against kubectl listing the
same objects.

The cluster is the embedded one over HTTPS (N simulated nodes, one DaemonSet converged onto all
of them, so N nodes and N+ pods; the transport is always ``http``: both sides read over HTTPS).  Timed, each the median of three runs, all from outside the
server process as a user runs them:

* ``seconds``: ``everynode why agent -n bench -o json`` against the live cluster — process start,
  the six lists over HTTPS, the explanation of every node, the JSON printed;
* ``floor_seconds``: ``kubectl get nodes,pods -A -o json`` — kubectl listing the nodes and pods
  (the contract's yardstick); ``ratio = seconds / floor_seconds`` (the issue asks for ≤ 2);
* ``raw_floor_seconds`` / ``raw_ratio``: the stricter yardstick of ``kubectl get --raw`` of the
  node and pod lists (the same JSON bytes, no decoding or printing by kubectl) — against the
  embedded server, kubectl's typed ``get`` spends most of its time outside the transfer;
* also ``dump_seconds`` (``--from-dump`` of a JSON dump of the same objects),
  ``explain_seconds`` (the pure :func:`~everynode.product.why.explain` on objects already in
  memory, in this process) and ``explained_nodes`` / ``pods``.

``cpu_seconds`` is the CPU of the timed ``why`` child processes (all three runs).  Start-up and
convergence are not timed.
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from everynode.product.bench import (
    DS_NAME,
    DS_NAMESPACE,
    _available,
    _result,
    _start_plane,
    _wait_status,
    daemonset_manifest,
)
from everynode.product.controlplane import ControlPlane

RUNS = 3
KUBECTL = "kubectl"


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def _timed(*argv: str, stdout_path: Path | None = None) -> float:
    """Wall seconds of one child process (its output kept in ``stdout_path`` or discarded)."""
    sink = open(stdout_path, "wb") if stdout_path is not None else None  # noqa: SIM115
    out = sink if sink is not None else asyncio.subprocess.DEVNULL
    try:
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(*argv, stdout=out, stderr=asyncio.subprocess.PIPE)
        _, err = await proc.communicate()
        seconds = time.perf_counter() - t0
    finally:
        if sink is not None:
            sink.close()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} … failed ({proc.returncode}): {err.decode(errors='replace')[:500]}")
    return seconds


async def _median(*argv: str) -> float:
    return statistics.median([await _timed(*argv) for _ in range(RUNS)])


async def bench_why(nodes: int, transport: str) -> dict[str, Any]:
    kubectl = shutil.which(KUBECTL)
    if kubectl is None:
        raise RuntimeError("bench why needs kubectl on PATH (its listing is the yardstick)")
    work = Path(tempfile.mkdtemp(prefix="everynode-bench-why-"))
    plane = await _start_plane(nodes, transport="http")  # served over HTTPS: kubectl and `why` read it
    try:
        assert plane.client is not None
        await plane.client.create("daemonsets.apps", daemonset_manifest())
        await _wait_status(plane, _available(nodes), timeout=3600)
        kc = str(plane.config.kubeconfig_path)
        everynode = [sys.executable, "-m", "everynode.product.cli"]
        cache = ["--cache-dir", str(work / "kubectl-cache")]
        await _timed(kubectl, "--kubeconfig", kc, *cache, "get", "nodes", "-o", "name")  # warm discovery
        floor = await _median(kubectl, "--kubeconfig", kc, *cache, "get", "nodes,pods", "-A", "-o", "json")
        raw_floor = statistics.median([
            await _timed(kubectl, "--kubeconfig", kc, *cache, "get", "--raw", "/api/v1/nodes")
            + await _timed(kubectl, "--kubeconfig", kc, *cache, "get", "--raw", "/api/v1/pods")
            for _ in range(RUNS)])
        cpu0 = _children_cpu()
        seconds = await _median(*everynode, "why", DS_NAME, "-n", DS_NAMESPACE, "-o", "json", "--kubeconfig", kc)
        cpu = _children_cpu() - cpu0
        dump = work / "dump.json"
        await _timed(kubectl, "--kubeconfig", kc, *cache, "get",
                     "nodes,pods,daemonsets,controllerrevisions,events,priorityclasses", "-A", "-o", "json",
                     stdout_path=dump)
        dump_seconds = await _median(*everynode, "why", DS_NAME, "-n", DS_NAMESPACE, "-o", "json",
                                     "--from-dump", str(dump))
        explain_seconds, explained, pods = await _explain_in_process(plane)
    finally:
        await plane.stop()
        shutil.rmtree(work, ignore_errors=True)
    return _result("why", nodes, "http", seconds, cpu, floor, floor_command="kubectl get nodes,pods -A -o json",
                   raw_floor_seconds=round(raw_floor, 4), raw_ratio=round(seconds / raw_floor, 2),
                   dump_seconds=round(dump_seconds, 4), explain_seconds=round(explain_seconds, 4),
                   explained_nodes=explained, pods=pods, runs=RUNS, cpus=os.cpu_count())


async def _explain_in_process(plane: ControlPlane) -> tuple[float, int, int]:
    from everynode.clock import Clock
    from everynode.product.clusterdump import read_live
    from everynode.product.why import explain

    assert plane.client is not None
    objects = await read_live(plane.client, namespace=DS_NAMESPACE)
    ds = next(d for d in objects.daemonsets if d["metadata"]["name"] == DS_NAME)
    runs = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        exp = explain(ds, objects, now=Clock().now())
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), len(exp.nodes), len(objects.pods)
