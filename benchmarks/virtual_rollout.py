"""A DaemonSet rolling update on N simulated nodes in virtual time: simulated duration against
the arithmetic, and what it costs in wall time.

The engine is ``everynode.product.virtual_rollout`` (also behind ``everynode bench plan``); this
script adds what only a measurement needs: ``--max-steps K`` stops after K nodes have been
rolled (for the per-step cost at sizes whose full rollout would take long), ``--heartbeats
writes`` runs the kubelets at upstream's written pace instead of modelled heartbeats (the
default in virtual time), ``--node-monitor-grace-period`` scales that pace, and ``--profile OUT``
writes a cProfile of the rollout alone (not the converge before it).

Usage::

    python benchmarks/virtual_rollout.py --nodes 5000 [--startup 5] [--max-unavailable 10%]

Prints one JSON object: nodes, steps, startup, simulated_seconds, expected_seconds, per-step
min/max, wall seconds (converge, rollout, per step), events dropped by the recorders, lease
renewals written, cpu seconds, peak RSS.
"""

from __future__ import annotations

import argparse
import cProfile
import dataclasses
import json
import logging
import resource
from typing import Any

from everynode.product.collector import own_pace
from everynode.product.virtual_rollout import virtual_rollout
from everynode.virtualtime import run_virtual


def _int_or_percent(text: str) -> int | str:
    return text if text.endswith("%") else int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--startup", type=float, default=5.0)
    parser.add_argument("--max-unavailable", type=_int_or_percent, default=1)
    parser.add_argument("--max-steps", type=int, default=None,
                        help="stop after this many nodes have been rolled (default: all)")
    parser.add_argument("--heartbeats", choices=("auto", "writes", "modelled"), default="auto")
    parser.add_argument("--node-monitor-grace-period", type=float, default=50.0, dest="grace",
                        help="upstream's 50 s by default; the kubelets' lease (0.8x) and renewal "
                             "(1/5) scale with it, so a longer one means fewer heartbeat writes")
    parser.add_argument("--profile", default=None, help="write a cProfile of the rollout to this file")
    args = parser.parse_args()
    # At thousands of nodes the event recorders' bounded queues overflow during the initial burst
    # (by design: events are best-effort, as upstream's); count the drops instead of logging each.
    logging.getLogger("everynode.client.events").setLevel(logging.ERROR)
    profile = cProfile.Profile() if args.profile else None

    def on_rollout(started: bool) -> None:
        if profile is not None:
            profile.enable() if started else profile.disable()

    with own_pace():  # as `everynode up` / `bench` (this is our own process)
        run = run_virtual(virtual_rollout(args.nodes, startup=args.startup, max_unavailable=args.max_unavailable,
                                          max_steps=args.max_steps, grace=args.grace, heartbeats=args.heartbeats,
                                          on_rollout=on_rollout))
    if profile is not None:
        profile.dump_stats(args.profile)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    result: dict[str, Any] = {"scenario": "virtual-rollout", **dataclasses.asdict(run)}
    result.update(
        wall_converge_seconds=round(run.wall_converge_seconds, 2),
        wall_rollout_seconds=round(run.wall_rollout_seconds, 2),
        cpu_rollout_seconds=round(run.cpu_rollout_seconds, 2),
        wall_per_step_seconds=round(run.wall_rollout_seconds / run.steps, 5),
        cpu_seconds=round(usage.ru_utime + usage.ru_stime, 2),
        peak_rss_mib=round(usage.ru_maxrss / 1024.0, 1),
        node_monitor_grace_period=args.grace)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
