"""`everynode bench`: the benchmark scenarios of DESIGN.md, one JSON object per result line.

Every result carries the contract keys — ``scenario``, ``nodes``, ``transport``, ``seconds``
(wall), ``cpu_seconds``, ``peak_rss_mib``, ``floor_seconds``, ``ratio`` — plus
scenario-specific figures.  The *floor* is the same run's time for the least work the scenario
implies, done straight against a fresh in-memory store (the writes the outcome needs, and
nothing else), measured *before* the cluster starts — on a heap the cluster has not grown, so
that garbage-collector passes over the cluster's objects are counted as the cluster's cost, not
the floor's; ``ratio = seconds / floor_seconds`` is therefore a machine-independent measure of
overhead.  ``converge`` also reports ``api_floor_seconds`` and ``api_ratio`` (see
:func:`api_floor`): the same pods' writes made through the API service alone, which splits the
ratio into the cost of upstream's API semantics per write and the cost of the controllers around
them; ``api_floor_events_seconds`` and ``api_ratio_events`` do the same with the pods' Events
among the writes (each pod's four, written as their recorders write them).  Pod start-up is set
to 0 so that the figures measure the machinery, not the simulated delays.  Benchmarks are never
run as timed tests.  ``compiled`` says whether the hot modules ran as mypyc's build
(everynode/compiled.py) or from source (``EVERYNODE_PURE=1``, or no fresh build).
"""

from __future__ import annotations

import asyncio
import gc
import resource
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import everynode
from everynode.api.errors import ApiError
from everynode.api.node import is_node_ready
from everynode.product.controlplane import ControlPlane, ControlPlaneConfig
from everynode.storage.memory import MemoryStore

SCENARIOS = ("converge", "rollout", "churn", "sync", "api", "schedule", "plan", "why")

DS_NAMESPACE = "bench"
DS_NAME = "agent"


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def daemonset_manifest(*, image: str = "registry.example/agent:1", max_unavailable: Any = 1) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": DS_NAME, "namespace": DS_NAMESPACE},
        "spec": {
            "selector": {"matchLabels": {"app": DS_NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": max_unavailable}},
            "template": {
                "metadata": {"labels": {"app": DS_NAME}},
                "spec": {"containers": [{"name": "agent", "image": image}]},
            },
        },
    }


def _pod(i: int, node: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{DS_NAME}-{i:06d}", "namespace": DS_NAMESPACE, "uid": f"uid-{i}",
                     "labels": {"app": DS_NAME, "controller-revision-hash": "h1"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": DS_NAME,
                                          "uid": "ds-uid", "controller": True, "blockOwnerDeletion": True}]},
        "spec": {"containers": [{"name": "agent", "image": "registry.example/agent:1"}],
                 "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchFields": [
                         {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}},
        "status": {"phase": "Pending"},
    }


async def storage_floor(n: int, *, writes_per_pod: int, repeat: int = 3) -> float:
    """Seconds to write ``n`` pods through ``writes_per_pod`` states straight into a store
    (the median of ``repeat`` runs, each on a fresh store after a garbage collection)."""
    runs = []
    for _ in range(repeat):
        gc.collect()
        runs.append(await _storage_floor_once(n, writes_per_pod=writes_per_pod))
    return statistics.median(runs)


async def _storage_floor_once(n: int, *, writes_per_pod: int) -> float:
    # Without structural sharing: the floor is the raw cost of keeping the objects, the
    # strictest yardstick (sharing trades CPU for memory, and that CPU counts as overhead).
    store = MemoryStore(share_capacity=0)
    t0 = time.perf_counter()
    for i in range(n):
        pod = _pod(i, f"worker-{i + 1}")
        stored = await store.create("pods", pod)
        for w in range(writes_per_pod - 1):
            nxt = dict(stored)
            nxt["status"] = {"phase": "Running", "step": w}
            stored = await store.update("pods", nxt)
    return time.perf_counter() - t0


async def api_floor(n: int, *, repeat: int = 3, events: bool = False) -> float:
    """Seconds for :func:`api_floor_once` of ``n`` pods: the median of ``repeat`` runs (each on
    a fresh API after a garbage collection), as :func:`storage_floor` measures the other side of
    ``api_floor_seconds / floor_seconds``.  One run was taken before: on a shared 2-core machine
    single runs of either side spread by ±20% from one minute to the next, and a median divided
    by a single run carried all of that spread into the ratio."""
    runs = []
    for _ in range(repeat):
        runs.append(await api_floor_once(n, events=events))
    return statistics.median(runs)


async def api_floor_once(n: int, *, events: bool = False) -> float:
    """Seconds for the same ``n`` pods' three writes — the DaemonSet controller's create, the
    scheduler's binding, the kubelet's Running + Ready status patch — made straight through the
    API service (admission, defaulting, validation, managedFields, the store with its structural
    sharing, watch fan-out to no one) on a fresh in-process API, with no controller, informer or
    Event involved.

    Why a second yardstick: the storage floor is a few dict operations per pod (about 4 µs a
    write), while upstream's API semantics for one pod write, done in Python, cost tens of times
    that before any controller runs.  ``api_ratio = seconds / api_floor_seconds`` is the cost of
    everything around those writes — informers, work queues, the controllers' decisions, Events,
    heartbeats — and ``ratio = api_ratio × api_floor_seconds / floor_seconds`` splits the
    contract's ratio into its two factors.

    ``events=True`` adds the Events a converge writes about each pod — the scheduler's
    ``Scheduled``, the kubelet's ``Pulled``, ``Created`` and ``Started`` — each created at once
    as its recorder would create it (:meth:`EventRecorder.write_first`: the same body, the same
    call), without the correlator and queue that decide it: then every write the converge makes
    is in the floor, and ``converge / api_floor_events_seconds`` is what the components around
    the writes cost, Events' bookkeeping included but not their writes.  (The kubelet's Events
    name the pod as created, where the kubelet's name it as bound: one resourceVersion apart.)"""
    from everynode.apiserver.service import ApiService
    from everynode.client.events import NORMAL, EventRecorder
    from everynode.client.inprocess import InProcessClient
    from everynode.clock import RealClock
    from everynode.controllers.daemonset.daemonpods import daemon_pod, pod_template_for
    from everynode.kubelet import containerevents, podstatus
    from everynode.scheduler.scheduler import DEFAULT_SCHEDULER_NAME, assigned_message

    clock = RealClock()
    service = ApiService(MemoryStore(), clock=clock)
    client = InProcessClient(service)
    await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": DS_NAMESPACE}})
    ds = await client.create("daemonsets.apps", daemonset_manifest())
    template = pod_template_for(ds, "h1")
    scheduler_events = EventRecorder(client, component=DEFAULT_SCHEDULER_NAME, clock=clock)
    kubelet_events = EventRecorder(client, component="kubelet", clock=clock)
    gc.collect()
    t0 = time.perf_counter()
    for i in range(n):
        node = f"worker-{i + 1}"
        body = daemon_pod(ds, template, node)
        assert body is not None  # the DaemonSet of the scenario has labels
        pod = await client.create("pods", body, namespace=DS_NAMESPACE)
        md = pod["metadata"]
        await client.create_subresource("pods", md["name"], "binding", {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": md["name"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node}}, namespace=DS_NAMESPACE)
        if events:
            await scheduler_events.write_first(pod, NORMAL, "Scheduled",
                                               assigned_message(DS_NAMESPACE, md["name"], node))
            for c in pod["spec"]["containers"]:
                for ev in containerevents.started(c, pull_seconds=0.0):
                    await kubelet_events.write_first(pod, ev.type, ev.reason, ev.message, host=node,
                                                     field_path=ev.field_path)
        now = clock.rfc3339()
        ip = f"10.{(i >> 8) & 255}.{i & 255}.1"
        status = {**podstatus.placement(ip, now, ip), **podstatus.running(pod, md["uid"], now, ready=True)}
        await client.patch("pods", md["name"], {"metadata": {"uid": md["uid"]}, "status": status},
                           namespace=DS_NAMESPACE, patch_type="strategic", subresource="status")
    return time.perf_counter() - t0


@dataclass
class Measure:
    wall0: float = 0.0
    cpu0: float = 0.0

    def start(self) -> None:
        gc.collect()
        self.wall0 = time.perf_counter()
        self.cpu0 = time.process_time()

    def stop(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall0, time.process_time() - self.cpu0


async def _wait_status(plane: ControlPlane, predicate: Any, *, timeout: float) -> dict[str, Any]:
    assert plane.client is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        try:
            ds = await plane.client.get("daemonsets.apps", DS_NAME, namespace=DS_NAMESPACE)
        except ApiError:
            ds = None
        if ds is not None and predicate(ds):
            return ds
        if loop.time() > deadline:
            raise TimeoutError(f"timed out; last status: {(ds or {}).get('status')}")
        await asyncio.sleep(0.01)


def _available(n: int) -> Any:
    def check(ds: dict[str, Any]) -> bool:
        st = ds.get("status") or {}
        return (st.get("desiredNumberScheduled") == n and st.get("numberAvailable") == n
                and st.get("observedGeneration", 0) >= ds["metadata"].get("generation", 1))
    return check


def _rolled_out(n: int) -> Any:
    def check(ds: dict[str, Any]) -> bool:
        st = ds.get("status") or {}
        return (_available(n)(ds) and st.get("updatedNumberScheduled") == n
                and st.get("currentNumberScheduled") == n)
    return check


async def _start_plane(nodes: int, *, transport: str) -> ControlPlane:
    cfg = ControlPlaneConfig(nodes=nodes, control_planes=0, port=0, in_memory=True, pod_startup=0.0,
                             data_dir=Path(tempfile.mkdtemp(prefix="everynode-bench-")),
                             serve_http=transport == "http", pod_gc_period=0.5, pod_gc_quarantine=0.0,
                             disable=frozenset({"daemonset"}) if transport == "http" else frozenset())
    plane = ControlPlane(cfg)
    await plane.start()
    if transport == "http":
        from everynode.client.http import HttpClient
        from everynode.client.informer import SharedInformerFactory
        from everynode.controllers.daemonset.controller import DaemonSetController

        http = HttpClient.from_kubeconfig(cfg.kubeconfig_path)
        ctrl = DaemonSetController(http, clock=plane.clock, informers=SharedInformerFactory(http))
        await ctrl.start()
        plane.components["daemonset-http"] = ctrl
    assert plane.client is not None
    await plane.client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": DS_NAMESPACE}})
    # every node Ready, and adopted by its simulated kubelet (address, pod CIDR, first status and
    # lease written), before the clock starts: otherwise start-up work is measured as converge
    await _wait_nodes_ready(plane, nodes)
    kubelet = plane.components.get("kubelet")
    while kubelet is not None and not getattr(kubelet, "idle", True):
        await asyncio.sleep(0.05)
    return plane


async def _wait_nodes_ready(plane: ControlPlane, n: int, timeout: float = 600) -> None:
    assert plane.client is not None
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        nodes = (await plane.client.list("nodes")).get("items") or []
        ready = sum(1 for nd in nodes if is_node_ready(nd))
        if ready >= n:
            return
        if loop.time() > deadline:
            raise TimeoutError(f"only {ready}/{n} nodes became Ready")
        # A LIST of every node is O(nodes): poll less often the larger the cluster, so that
        # waiting does not itself load the cluster being measured (65,000 nodes: every 1.35 s).
        await asyncio.sleep(0.05 + n / 50_000)


def _result(scenario: str, nodes: int, transport: str, seconds: float, cpu: float, floor: float,
            **extra: Any) -> dict[str, Any]:
    out = {"scenario": scenario, "nodes": nodes, "transport": transport, "seconds": round(seconds, 4),
           "cpu_seconds": round(cpu, 4), "peak_rss_mib": round(peak_rss_mib(), 1),
           # (to the microsecond: a tiny cluster's floor, 12 pods' creates, takes tens of them, and
           # rounded to 0.1 ms it read 0.0 beside a finite ratio)
           "floor_seconds": round(floor, 6), "ratio": round(seconds / floor, 2) if floor > 0 else None,
           "compiled": everynode.BUILD == "fresh"}  # mypyc's build of the hot modules in use (compiled.py)
    out.update(extra)
    return out


async def bench_converge(nodes: int, transport: str) -> dict[str, Any]:
    floor = await storage_floor(nodes, writes_per_pod=3)  # create, bind, Ready
    through_api = await api_floor(nodes)
    with_events = await api_floor(nodes, events=True)
    gc.collect()
    plane = await _start_plane(nodes, transport=transport)
    try:
        m = Measure()
        m.start()
        assert plane.client is not None
        await plane.client.create("daemonsets.apps", daemonset_manifest())
        await _wait_status(plane, _available(nodes), timeout=3600)
        seconds, cpu = m.stop()
    finally:
        await plane.stop()
    return _result("converge", nodes, transport, seconds, cpu, floor, pods_per_second=round(nodes / seconds, 1),
                   api_floor_seconds=round(through_api, 4), api_ratio=round(seconds / through_api, 2),
                   api_floor_events_seconds=round(with_events, 4),
                   api_ratio_events=round(seconds / with_events, 2))


async def bench_rollout(nodes: int, transport: str) -> dict[str, Any]:
    floor = await storage_floor(nodes, writes_per_pod=4)  # delete old, create, bind, Ready
    plane = await _start_plane(nodes, transport=transport)
    try:
        assert plane.client is not None
        await plane.client.create("daemonsets.apps", daemonset_manifest(max_unavailable="10%"))
        await _wait_status(plane, _available(nodes), timeout=3600)
        m = Measure()
        m.start()
        await plane.client.patch("daemonsets.apps", DS_NAME, {"spec": {"template": {"spec": {"containers": [
            {"name": "agent", "image": "registry.example/agent:2"}]}}}}, namespace=DS_NAMESPACE,
            patch_type="strategic")
        await _wait_status(plane, _rolled_out(nodes), timeout=3600)
        seconds, cpu = m.stop()
    finally:
        await plane.stop()
    return _result("rollout", nodes, transport, seconds, cpu, floor)


async def bench_churn(nodes: int, transport: str) -> dict[str, Any]:
    from everynode.product.nodes import node_manifest

    extra = max(1, nodes // 10)
    floor = await storage_floor(extra, writes_per_pod=4) + await storage_floor(extra, writes_per_pod=1)
    plane = await _start_plane(nodes, transport=transport)
    try:
        assert plane.client is not None
        await plane.client.create("daemonsets.apps", daemonset_manifest())
        await _wait_status(plane, _available(nodes), timeout=3600)
        m = Measure()
        m.start()
        names = [f"churn-{i + 1}" for i in range(extra)]
        await asyncio.gather(*(plane.client.create("nodes", node_manifest(n)) for n in names))
        await _wait_status(plane, _available(nodes + extra), timeout=3600)
        await asyncio.gather(*(plane.client.delete("nodes", n) for n in names))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 3600
        while True:
            pods = await plane.client.list("pods", namespace=DS_NAMESPACE)
            ds = await plane.client.get("daemonsets.apps", DS_NAME, namespace=DS_NAMESPACE)
            if len(pods["items"]) == nodes and _available(nodes)(ds):
                break
            if loop.time() > deadline:
                raise TimeoutError("churn did not converge")
            await asyncio.sleep(0.05)
        seconds, cpu = m.stop()
    finally:
        await plane.stop()
    return _result("churn", nodes, transport, seconds, cpu, floor, churned_nodes=extra)


async def bench_sync(nodes: int, transport: str, *, rounds: int = 200) -> dict[str, Any]:
    from everynode.controllers.daemonset.controller import DaemonSetController

    plane = await _start_plane(nodes, transport=transport)
    try:
        assert plane.client is not None
        await plane.client.create("daemonsets.apps", daemonset_manifest())
        await _wait_status(plane, _available(nodes), timeout=3600)
        ctrl = plane.components.get("daemonset") or plane.components.get("daemonset-http")
        assert isinstance(ctrl, DaemonSetController), "the sync scenario runs the DaemonSet controller"
        key = f"{DS_NAMESPACE}/{DS_NAME}"
        samples = []
        m = Measure()
        m.start()
        for _ in range(rounds):
            t = time.perf_counter()
            await ctrl.sync(key)
            samples.append(time.perf_counter() - t)
        seconds, cpu = m.stop()
        informer = plane.informers.informer("daemonsets.apps") if plane.informers else None
        t = time.perf_counter()
        for _ in range(rounds):
            if informer is not None:
                informer.get(key)
        floor = time.perf_counter() - t
    finally:
        await plane.stop()
    return _result("sync", nodes, transport, seconds, cpu, floor,
                   us_per_sync=round(statistics.median(samples) * 1e6, 1), rounds=rounds)


async def bench_schedule(nodes: int, transport: str) -> dict[str, Any]:
    """The scheduler alone: N pending DaemonSet-style pods (pinned to one node each by the
    matchFields affinity) are bound through the binding subresource; timed from the scheduler's
    start until the last pod is bound.  Floor: one binding write per pod into storage."""
    from everynode.client.events import EventRecorder
    from everynode.client.informer import SharedInformerFactory
    from everynode.scheduler.scheduler import Scheduler

    floor = await storage_floor(nodes, writes_per_pod=1)
    cfg = ControlPlaneConfig(nodes=nodes, control_planes=0, port=0, in_memory=True, serve_http=False,
                             data_dir=Path(tempfile.mkdtemp(prefix="everynode-bench-")),
                             disable=frozenset({"daemonset", "scheduler", "kubelet", "node-lifecycle", "pod-gc",
                                                "garbage-collector", "endpoints", "deployment", "replicaset", "disruption", "job"}))
    plane = ControlPlane(cfg)
    await plane.start()
    try:
        assert plane.client is not None
        await plane.client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                 "metadata": {"name": DS_NAMESPACE}})
        for i in range(nodes):
            pod = _pod(i, f"worker-{i + 1}")
            del pod["metadata"]["uid"], pod["metadata"]["ownerReferences"], pod["status"]
            await plane.client.create("pods", pod, namespace=DS_NAMESPACE)
        recorder = EventRecorder(plane.client, component="default-scheduler", clock=plane.clock)
        scheduler = Scheduler(plane.client, clock=plane.clock, informers=SharedInformerFactory(plane.client),
                              recorder=recorder)
        m = Measure()
        m.start()
        await scheduler.start()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 3600
        while scheduler.scheduled < nodes:
            if loop.time() > deadline:
                raise TimeoutError(f"only {scheduler.scheduled}/{nodes} pods bound")
            await asyncio.sleep(0.005)
        seconds, cpu = m.stop()
        await scheduler.stop()
        await recorder.close(flush=False)
    finally:
        await plane.stop()
    return _result("schedule", nodes, transport, seconds, cpu, floor, pods_per_second=round(nodes / seconds, 1))


def bench_plan(nodes: int, *, max_unavailable: int | str = 1, startup: float = 5.0) -> dict[str, Any]:
    """``plan``: ``everynode plan`` itself on an image change of a DaemonSet that runs on N nodes.

    The cluster is made first (converged in virtual time and read as ``plan --kubeconfig`` reads
    one: ``converge_wall_seconds``), then the plan runs on it as the command does
    (:func:`everynode.product.plan.plan`: load the snapshot into a copy, start its components,
    apply the change, run the rollout in virtual time, explain the end).  ``seconds`` (=
    ``wall_seconds``) and ``cpu_seconds`` are the rollout's (the change applied → every node runs
    an available pod of it), ``simulated_seconds`` its simulated duration (``expected_seconds``:
    waves × start-up), ``ratio`` = simulated / wall; ``plan_seconds`` is the whole plan as a user
    waits for it, ``phases`` its wall seconds per phase (prepare, load, start, rollout, answer).
    The floor is the rollout's writes (delete old, create, bind, Ready) straight into storage.
    Runs its own virtual-time loops, so call it outside any running loop (``run_scenario`` uses
    a thread)."""
    from everynode.product.plan import PlanOptions, plan
    from everynode.product.virtual_rollout import converged_snapshot, daemonset, expected_waves
    from everynode.virtualtime import run_virtual

    floor = asyncio.run(storage_floor(nodes, writes_per_pod=4))
    gc.collect()
    snapshot, converge_wall = run_virtual(converged_snapshot(nodes, startup=startup, max_unavailable=max_unavailable))
    gc.collect()
    result = plan(snapshot, daemonset("agent:2", max_unavailable=max_unavailable), PlanOptions(pod_startup=startup))
    wall, cpu = result.wall_phases["rollout"], result.cpu_phases["rollout"]
    if not result.invariants["completed"]:
        raise RuntimeError(f"bench plan: the rollout did not complete ({result.to_json()})")
    out = _result("plan", nodes, "inprocess", wall, cpu, floor)
    out.update(ratio=round(result.simulated_seconds / wall, 1) if wall > 0 else None, wall_seconds=round(wall, 4),
               simulated_seconds=result.simulated_seconds,
               expected_seconds=expected_waves(nodes, max_unavailable) * startup,
               max_unavailable=max_unavailable, pod_startup_seconds=startup, heartbeats="modelled",
               plan_seconds=round(result.wall_seconds, 4),
               phases={k: round(v, 3) for k, v in result.wall_phases.items()},
               converge_wall_seconds=round(converge_wall, 2))
    return out


async def run_scenario(scenario: str, *, nodes: int, transport: str,
                       max_unavailable: int | str = 1) -> list[dict[str, Any]]:
    if scenario == "plan":
        return [await asyncio.to_thread(bench_plan, nodes, max_unavailable=max_unavailable)]
    if scenario == "api":
        from everynode.product.bench_api import bench_api

        return await bench_api(pods=nodes)
    if scenario == "why":
        from everynode.product.bench_why import bench_why

        return [await bench_why(nodes, transport)]
    fn = {"converge": bench_converge, "rollout": bench_rollout, "churn": bench_churn, "sync": bench_sync,
          "schedule": bench_schedule}[scenario]
    return [await fn(nodes, transport)]
