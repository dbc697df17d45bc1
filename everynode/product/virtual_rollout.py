"""The virtual-time engine's yardstick: a DaemonSet rolling update on N simulated nodes in
virtual time, with the simulated duration it takes and the wall time it costs.

Scenario: the embedded control plane (``everynode.Cluster(nodes=N, control_planes=0,
virtual_time=True)``), a DaemonSet with RollingUpdate ``maxUnavailable`` (1 by default, or a
percentage; maxSurge 0) and pod start-up S, converged; then an image change, until every node
runs a Ready pod of the new revision.  Every step but the start-up is API work, which takes no
virtual time, so the expectation is

    simulated rollout time T = waves × S,  waves = ceil(N / maxUnavailable)

(tests/integration/test_virtual_time.py checks it for maxUnavailable 1).  Wall time is what the
simulated cluster really does: with modelled heartbeats (the default in virtual time, see
``everynode/kubelet/nodeagent.py``) a healthy node costs nothing per simulated second, so the
wall time grows with the rollout's own writes, O(N) for the whole rollout, not O(N²).

``benchmarks/virtual_rollout.py`` runs this scenario (the engine alone, on ``everynode.Cluster``
with every component, for profiling and the written-heartbeats comparison); ``everynode bench
plan`` runs ``everynode plan`` itself on the converged cluster of :func:`converged_snapshot`,
since the plan's copy is what a user waits for.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

from everynode.api.intstr import scaled_value
from everynode.api.meta import deep_copy
from everynode.api.pod import is_pod_ready
from everynode.product.cluster import Cluster
from everynode.product.clusterdump import ClusterObjects, read_live

Obj = dict[str, Any]
NS = "default"
NAME = "agent"
HASH_LABEL = "controller-revision-hash"


def daemonset(image: str, *, max_unavailable: int | str = 1) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": NAME}},
            "updateStrategy": {"type": "RollingUpdate",
                               "rollingUpdate": {"maxUnavailable": max_unavailable, "maxSurge": 0}},
            "template": {"metadata": {"labels": {"app": NAME}},
                         "spec": {"containers": [{"name": "agent", "image": image}]}},
        },
    }


def expected_waves(nodes: int, max_unavailable: int | str) -> int:
    """``ceil(N / maxUnavailable)``, the budget resolved as the controller does (percentages round up)."""
    budget = max(1, scaled_value(max_unavailable, nodes, round_up=True))
    return math.ceil(nodes / budget)


@dataclass
class RolloutRun:
    nodes: int
    max_unavailable: int | str
    startup: float
    steps: int  # nodes rolled (all, unless max_steps stopped earlier)
    simulated_seconds: float
    expected_seconds: float
    wall_converge_seconds: float
    wall_rollout_seconds: float
    cpu_rollout_seconds: float
    step_min: float | None
    step_max: float | None
    events_dropped: int
    lease_renewals: int
    heartbeats: str


async def virtual_rollout(nodes: int, *, startup: float = 5.0, max_unavailable: int | str = 1,
                          max_steps: int | None = None, grace: float = 50.0, heartbeats: str = "auto",
                          on_rollout: Callable[[bool], None] | None = None) -> RolloutRun:
    """Run the scenario on the running (virtual-time) loop.  ``max_steps`` stops after that many
    nodes have been rolled; ``on_rollout(True/False)`` is called when the image change is made
    and when the rollout is over (to profile the rollout alone)."""
    wall0 = time.perf_counter()
    cluster = Cluster(nodes=nodes, control_planes=0, pod_startup=startup, virtual_time=True,
                      node_monitor_grace_period=grace)
    cluster.config.heartbeats = heartbeats
    async with cluster:
        loop = asyncio.get_running_loop()
        assert cluster.plane is not None
        ready_at: dict[str, tuple[str, float]] = {}  # uid -> (hash, loop time of first Ready)
        ready_count: dict[str, int] = {}  # hash -> pods of it that have been Ready (O(1) per check)
        deletes: list[float] = []
        changed = asyncio.Event()

        def on_update(old: Obj, new: Obj) -> None:
            md = new["metadata"]
            if (md.get("labels") or {}).get("app") != NAME:
                return
            if md.get("deletionTimestamp") and not (old.get("metadata") or {}).get("deletionTimestamp"):
                deletes.append(loop.time())
            if is_pod_ready(new) and md["uid"] not in ready_at:
                h = md["labels"].get(HASH_LABEL, "")
                ready_at[md["uid"]] = (h, loop.time())
                ready_count[h] = ready_count.get(h, 0) + 1
                changed.set()

        pods = cluster.plane.informers.informer("pods")
        pods.add_handler(lambda p: on_update({}, p), on_update, None)
        await pods.wait_synced()

        async def wait_ready(count: int, exclude: str | None) -> str:
            while True:
                for h, n in ready_count.items():
                    if h != exclude and n >= count:
                        return h
                changed.clear()
                await changed.wait()

        client = cluster.plane.client
        assert client is not None
        await client.create("daemonsets.apps", daemonset("agent:1", max_unavailable=max_unavailable))
        old_hash = await wait_ready(nodes, None)
        wall_converged = time.perf_counter()
        cpu0 = time.process_time()

        deletes.clear()
        t0 = loop.time()
        if on_rollout is not None:
            on_rollout(True)
        await client.patch("daemonsets.apps", NAME, {"spec": {"template": {"spec": {"containers": [
            {"name": "agent", "image": "agent:2"}]}}}}, namespace=NS, patch_type="strategic")
        steps = nodes if max_steps is None else min(max_steps, nodes)
        new_hash = await wait_ready(steps, old_hash)
        if on_rollout is not None:
            on_rollout(False)
        t1 = max(t for h, t in ready_at.values() if h == new_hash)
        wall_done = time.perf_counter()
        cpu = time.process_time() - cpu0
        dropped = sum(getattr(getattr(r, "stats", None), "dropped", 0) for r in cluster.plane.recorders)
        kubelet = cluster.plane.components.get("kubelet")
        renewals = getattr(kubelet, "lease_renewals", 0)
        mode = "modelled" if getattr(kubelet, "modelled", False) else "writes"

    gaps = [b - a for a, b in zip(deletes, deletes[1:], strict=False)]
    waves = expected_waves(nodes, max_unavailable) if steps == nodes else steps
    return RolloutRun(
        nodes=nodes, max_unavailable=max_unavailable, startup=startup, steps=steps,
        simulated_seconds=round(t1 - t0, 6), expected_seconds=waves * startup,
        wall_converge_seconds=wall_converged - wall0, wall_rollout_seconds=wall_done - wall_converged,
        cpu_rollout_seconds=cpu, step_min=round(min(gaps), 6) if gaps else None,
        step_max=round(max(gaps), 6) if gaps else None, events_dropped=dropped, lease_renewals=renewals,
        heartbeats=mode)


async def converged_snapshot(nodes: int, *, startup: float = 5.0,
                             max_unavailable: int | str = 1) -> tuple[ClusterObjects, float]:
    """A cluster of ``nodes`` on which the DaemonSet (image ``agent:1``) runs everywhere, read as
    ``everynode plan --kubeconfig`` reads one (:func:`read_live`): the input of ``bench plan``'s
    real plan.  Returns the snapshot and the wall seconds it took to converge and read."""
    wall0 = time.perf_counter()
    cluster = Cluster(nodes=nodes, control_planes=0, pod_startup=startup, virtual_time=True)
    async with cluster:
        assert cluster.plane is not None and cluster.plane.client is not None
        client = cluster.plane.client
        await client.create("daemonsets.apps", daemonset("agent:1", max_unavailable=max_unavailable))
        while True:
            status = (await client.get("daemonsets.apps", NAME, namespace=NS)).get("status") or {}
            if status.get("numberAvailable") == nodes and status.get("updatedNumberScheduled") == nodes:
                break
            await asyncio.sleep(startup)
        live = await read_live(client)
    # Read as a dump file or an HTTP list is read: objects of their own, not the store's (whose
    # shared sub-trees would make loading them into the plan's copy cheaper than it is for a user).
    snapshot = ClusterObjects(**{f.name: deep_copy(getattr(live, f.name)) for f in fields(live)})
    return snapshot, time.perf_counter() - wall0
