"""`everynode plan -f CHANGE.yaml`: the command line around :func:`everynode.product.plan.plan`.

Reads the cluster from a dump (``--from-dump``) or live through a kubeconfig (GET and LIST only,
the same reader as ``why``), simulates the change in virtual time, prints the answer (``-o
table|json``) and, with ``--trace``, writes every simulated step to a file.  Never writes to the
cluster.  Exit 0 when the plan ran, whatever it found; 1 with one line on stderr when it could
not (unreadable change or dump, unreachable server, a change the API server refuses, a
``--like`` node that does not exist).

``--node-failures`` takes a number (that many nodes running the DaemonSet, drawn with
``--seed``) or a comma-separated list of node names; they fail at times drawn over the rollout's
expected duration.  ``--add-nodes N --like NODE`` adds N copies of NODE as the change is applied.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from everynode.product.collector import own_pace
from everynode.product.connect import fail, kubeconfig_option, run_with_client, stdout_console

if TYPE_CHECKING:
    from everynode.client.base import Client
    from everynode.product.clusterdump import ClusterObjects
    from everynode.product.plan import PlanOptions, PlanResult

OUTPUTS = ("table", "json")


def _failures(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | list[str]:
    if value is None or value == "":
        return 0
    try:
        n = int(value)
    except ValueError:
        names = [v.strip() for v in value.split(",") if v.strip()]
        if not names:
            raise click.BadParameter("expected a number or node names separated by commas") from None
        return names
    if n < 0:
        raise click.BadParameter(f"{n} is negative")
    return n


def run_and_print(objects: ClusterObjects, change_path: Path, options: PlanOptions, *, output: str,
                  trace: Path | None) -> int:
    """Plan, print, write the trace; returns the exit code (the error line printed on failure)."""
    import orjson

    from everynode.product.plan import PlanError, plan, read_change

    try:
        change = read_change(change_path)
        result: PlanResult = plan(objects, change, options)
    except PlanError as e:
        click.echo(str(e), err=True)
        return 1
    if trace is not None:
        try:
            trace.write_bytes(orjson.dumps(result.trace, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n")
        except OSError as e:
            click.echo(f"error: {trace}: cannot write ({e.strerror or e})", err=True)
            return 1
    answer = result.to_json()
    if output == "json":
        sys.stdout.write(orjson.dumps(answer, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        from everynode.product.plan_render import render

        stdout_console().print(render(answer))
    return 0


@click.command("plan")
@click.option("-f", "--filename", "change", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The changed (or new) DaemonSet manifest.")
@click.option("--from-dump", "from_dump", type=click.Path(path_type=Path), default=None,
              help="Read the cluster from a dump (kubectl get nodes,pods,daemonsets,controllerrevisions,events,"
                   "priorityclasses -A -o yaml; a file or a directory) instead of a live cluster.")
@kubeconfig_option
@click.option("--pod-startup", type=click.FloatRange(min=0), default=None,
              help="Simulated seconds from binding to Ready [default: estimated from the DaemonSet's pods].")
@click.option("--node-failures", default=None, callback=_failures, metavar="N|NODE,…",
              help="Nodes that go NotReady during the rollout: a number (drawn with --seed) or names.")
@click.option("--add-nodes", type=click.IntRange(min=0), default=0, help="Add N nodes like --like NODE.")
@click.option("--like", default=None, metavar="NODE", help="The node --add-nodes copies.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed for failures and generated names.")
@click.option("--output", "-o", type=click.Choice(OUTPUTS), default="table", show_default=True)
@click.option("--trace", type=click.Path(path_type=Path, dir_okay=False), default=None, metavar="OUT.json",
              help="Write every simulated step with the per-node state.")
def plan_command(change: Path, from_dump: Path | None, kubeconfig: Path | None, pod_startup: float | None,
                 node_failures: int | list[str], add_nodes: int, like: str | None, seed: int, output: str,
                 trace: Path | None) -> None:
    """What a DaemonSet change will do to the cluster, simulated in virtual time (read-only)."""
    from everynode.product.plan import PlanOptions

    if from_dump is not None and kubeconfig is not None:
        raise click.UsageError("--kubeconfig and --from-dump are mutually exclusive")
    if bool(add_nodes) != (like is not None):
        raise click.UsageError("--add-nodes and --like go together")
    options = PlanOptions(pod_startup=pod_startup, node_failures=node_failures, seed=seed, add_nodes=add_nodes,
                          like=like, trace=trace is not None)
    # Our own process: the collector's pace of `up` and `bench` (collector.py), for the dump's
    # parse and the simulation alike.
    with own_pace():
        if from_dump is not None:
            from everynode.product.clusterdump import DumpError, load_dump

            try:
                objects = load_dump(from_dump)
            except DumpError as e:
                fail(f"error: {e}")
            sys.exit(run_and_print(objects, change, options, output=output, trace=trace))

        async def run(client: Client) -> int:
            from everynode.product.clusterdump import read_live

            objects = await read_live(client)
            # The simulation runs on its own virtual-time loop: in a thread, beside this one.
            return await asyncio.to_thread(run_and_print, objects, change, options, output=output, trace=trace)

        run_with_client(kubeconfig, run)
