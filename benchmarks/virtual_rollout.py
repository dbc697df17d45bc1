"""A DaemonSet rolling update on N simulated nodes in virtual time: simulated duration against
the arithmetic, and what it costs in wall time.

Scenario: ``everynode.Cluster(nodes=N, control_planes=0, virtual_time=True)``, a DaemonSet with
RollingUpdate ``maxUnavailable: 1`` (maxSurge 0) and pod start-up S (5 s), converged; then an
image change.  With maxUnavailable 1 the rollout is node after node — delete the old pod, the
kubelet removes it, the controller creates the new one, the scheduler binds it, S seconds of
start-up, Ready, next node — and every step but the start-up is API work that takes no virtual
time, so the expectation is

    simulated rollout time T = N × (S + L),  L = 0 (per-step latency in virtual time)

(tests/integration/test_virtual_time.py checks the same formula at a smaller N).

Wall-time cost grows as O(N²): the rollout lasts N × S simulated seconds, and every simulated
second carries work proportional to N — each node's kubelet renews its Lease every 10 s (a
real API write, watched by the node lifecycle controller) and reports its status every 5 min.
The rest is O(changes): the health monitor visits only nodes that changed or whose deadline
passed, and the rolling-update planner re-classifies only nodes whose pods changed (upstream
walks all nodes in both).  ``--max-steps K`` stops after K nodes have been rolled, for measuring
the per-step cost at sizes whose full rollout would take hours; the report then extrapolates.

Usage::

    python benchmarks/virtual_rollout.py --nodes 5000 [--startup 5] [--max-steps 20]

Prints one JSON object: nodes, steps, startup, simulated_seconds, expected_seconds,
per-step min/max, wall seconds (converge, rollout, per step), events dropped by the recorders,
cpu seconds, peak RSS.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import resource
import time
from typing import Any

from everynode.api.meta import deep_copy
from everynode.product.cli import GC_THRESHOLDS
from everynode.product.cluster import Cluster
from everynode.virtualtime import run_virtual

Obj = dict[str, Any]
NS = "default"
NAME = "agent"
HASH_LABEL = "controller-revision-hash"


def daemonset(image: str) -> Obj:
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": NAME, "namespace": NS},
        "spec": {
            "selector": {"matchLabels": {"app": NAME}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": NAME}},
                         "spec": {"containers": [{"name": "agent", "image": image}]}},
        },
    }


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


async def scenario(nodes: int, startup: float, max_steps: int | None, *, grace: float = 50.0) -> dict[str, Any]:
    wall0 = time.perf_counter()
    async with Cluster(nodes=nodes, control_planes=0, pod_startup=startup, virtual_time=True,
                       node_monitor_grace_period=grace) as cluster:
        loop = asyncio.get_running_loop()
        assert cluster.plane is not None
        ready_at: dict[str, tuple[str, float]] = {}  # uid -> (hash, loop time of first Ready)
        deletes: list[float] = []
        changed = asyncio.Event()

        def on_update(old: Obj, new: Obj) -> None:
            md = new["metadata"]
            if (md.get("labels") or {}).get("app") != NAME:
                return
            if md.get("deletionTimestamp") and not (old.get("metadata") or {}).get("deletionTimestamp"):
                deletes.append(loop.time())
            if _ready(new) and md["uid"] not in ready_at:
                ready_at[md["uid"]] = (md["labels"].get(HASH_LABEL, ""), loop.time())
                changed.set()

        pods = cluster.plane.informers.informer("pods")
        pods.add_handler(lambda p: on_update({}, p), on_update, None)
        await pods.wait_synced()

        async def wait_ready(count: int, exclude: str | None) -> str:
            while True:
                by_hash: dict[str, int] = {}
                for h, _ in ready_at.values():
                    if h != exclude:
                        by_hash[h] = by_hash.get(h, 0) + 1
                for h, n in by_hash.items():
                    if n >= count:
                        return h
                changed.clear()
                await changed.wait()

        client = cluster.client
        await client.create("daemonsets.apps", daemonset("agent:1"))
        old_hash = await wait_ready(nodes, None)
        wall_converged = time.perf_counter()

        ds = deep_copy(await client.get("daemonsets.apps", NAME, namespace=NS))
        ds["spec"]["template"]["spec"]["containers"][0]["image"] = "agent:2"
        deletes.clear()
        t0 = loop.time()
        await client.update("daemonsets.apps", ds)
        steps = nodes if max_steps is None else min(max_steps, nodes)
        new_hash = await wait_ready(steps, old_hash)
        t1 = max(t for h, t in ready_at.values() if h == new_hash)
        wall_done = time.perf_counter()
        dropped = sum(getattr(getattr(r, "stats", None), "dropped", 0) for r in cluster.plane.recorders)

    gaps = [b - a for a, b in zip(deletes, deletes[1:], strict=False)]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "scenario": "virtual-rollout", "nodes": nodes, "steps": steps, "startup": startup,
        "simulated_seconds": round(t1 - t0, 6), "expected_seconds": steps * startup,
        "step_min": round(min(gaps), 6) if gaps else None, "step_max": round(max(gaps), 6) if gaps else None,
        "wall_converge_seconds": round(wall_converged - wall0, 2),
        "wall_rollout_seconds": round(wall_done - wall_converged, 2),
        "wall_per_step_seconds": round((wall_done - wall_converged) / steps, 4),
        "events_dropped": dropped,
        "cpu_seconds": round(usage.ru_utime + usage.ru_stime, 2),
        "peak_rss_mib": round(usage.ru_maxrss / 1024.0, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--startup", type=float, default=5.0)
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop after this many nodes have been rolled (default: all)")
    parser.add_argument("--node-monitor-grace-period", type=float, default=50.0, dest="grace",
                        help="upstream's 50 s by default; the kubelets' lease (0.8x) and renewal "
                             "(1/5) scale with it, so a longer one means fewer heartbeat writes")
    args = parser.parse_args()
    gc.set_threshold(*GC_THRESHOLDS)  # as `everynode up` / `bench` (this is our own process)
    # At thousands of nodes the event recorders' bounded queues overflow during the initial burst
    # (by design: events are best-effort, as upstream's); count the drops instead of logging each.
    logging.getLogger("everynode.client.events").setLevel(logging.ERROR)
    result = run_virtual(scenario(args.nodes, args.startup, args.max_steps, grace=args.grace))
    result["node_monitor_grace_period"] = args.grace
    print(json.dumps(result))


if __name__ == "__main__":
    main()
