"""The `everynode` command line (click + rich).

Commands follow DESIGN.md's contract exactly (names, flags, defaults).  Errors a user can cause
— a busy port, an unwritable data dir, a kubeconfig that points nowhere — end in one line on
stderr and exit code 1, never a traceback.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import click

from everynode.version import __version__


def _configure_logging(verbosity: int) -> None:
    level = logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def _run(coro: Coroutine[Any, Any, None]) -> None:
    """Run a long-lived command (``up``, ``bench``) at the collector's pace for our own
    processes (collector.py)."""
    from everynode.product.collector import own_pace  # noqa: PLC0415
    from everynode.product.connect import run_event_loop  # noqa: PLC0415

    with own_pace():
        run_event_loop(coro)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="everynode")
@click.option("-v", "--verbose", count=True, help="More log output (-v info, -vv debug).")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """everynode — the Kubernetes DaemonSet, with an embedded control plane and simulated nodes."""
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose
    _configure_logging(verbose)


@main.command()
@click.option("--nodes", type=click.IntRange(min=0), default=3, show_default=True,
              help="Simulated worker nodes worker-1 … worker-N.")
@click.option("--control-planes", type=click.IntRange(min=0), default=1, show_default=True,
              help="Simulated control-plane nodes control-plane-1 … (tainted NoSchedule).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Listen address.")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=6443, show_default=True,
              help="HTTPS port; 0 picks a free one.")
@click.option("--data-dir", type=click.Path(path_type=Path), default=Path(".everynode"), show_default=True,
              help="SQLite database, TLS material, kubeconfig.")
@click.option("--in-memory", is_flag=True, help="No persistence.")
@click.option("--kubeconfig", type=click.Path(path_type=Path), default=None,
              help="Where the admin kubeconfig is written [default: DATA_DIR/kubeconfig].")
@click.option("--pod-startup", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Simulated seconds from binding to Running + Ready.")
@click.option("--disable", default="", metavar="C,…",
              help="Components not to run: daemonset, scheduler, kubelet, node-lifecycle, pod-gc, garbage-collector, "
                   "endpoints, deployment, replicaset, serviceaccount, root-ca-publisher, clusterrole-aggregation, disruption, job.")
@click.option("--dns-port", type=click.IntRange(min=0, max=65535), default=None,
              help="Serve cluster DNS (cluster.local) on this UDP/TCP port; 0 picks a free one.")
@click.option("--node-monitor-grace-period", type=click.FloatRange(min=1), default=50.0, show_default=True,
              help="Seconds without kubelet heartbeats before a node is marked Unknown.")
@click.option("--authorization", type=click.Choice(["always-allow", "rbac"]), default="always-allow",
              show_default=True,
              help="rbac: every request authorized by RBAC as kube-apiserver does (the admin kubeconfig is in "
                   "system:masters).")
@click.option("--apply", "apply_files", multiple=True, type=click.Path(path_type=Path),
              help="Manifest file(s) to apply (server-side) once the cluster is ready.")
def up(nodes: int, control_planes: int, host: str, port: int, data_dir: Path, in_memory: bool,
       kubeconfig: Path | None, pod_startup: float, disable: str, node_monitor_grace_period: float,
       apply_files: tuple[Path, ...], dns_port: int | None, authorization: str) -> None:
    """Run the embedded cluster in the foreground until Ctrl-C (SIGINT) or SIGTERM."""
    from everynode.product.controlplane import ControlPlaneConfig
    from everynode.product.up import run_up

    config = ControlPlaneConfig(
        nodes=nodes, control_planes=control_planes, host=host, port=port, data_dir=data_dir,
        in_memory=in_memory, kubeconfig=kubeconfig, pod_startup=pod_startup,
        disable=frozenset(c.strip() for c in disable.split(",") if c.strip()),
        node_monitor_grace_period=node_monitor_grace_period, dns_port=dns_port,
        authorization=authorization,
    )
    code = 0

    async def runner() -> None:
        nonlocal code
        code = await run_up(config, apply_files=list(apply_files))

    _run(runner())
    sys.exit(code)


def _int_or_percent(_ctx: click.Context, _param: click.Parameter, value: str) -> int | str:
    from everynode.api.intstr import parse_percent

    if value.endswith("%") and parse_percent(value) is not None:
        return value
    try:
        return int(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is neither an integer nor a percentage") from None


@main.command()
@click.argument("scenario", type=click.Choice(["converge", "rollout", "churn", "sync", "api", "schedule", "plan",
                                                    "why"]))
@click.option("--nodes", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Simulated nodes (for `api`: the number of pods listed).")
@click.option("--transport", type=click.Choice(["inprocess", "http"]), default="inprocess", show_default=True,
              help="How the DaemonSet controller reaches the API.")
@click.option("--max-unavailable", default="1", show_default=True, callback=_int_or_percent,
              help="`plan`: the rollout's maxUnavailable (an integer or a percentage such as 10%).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per result line.")
def bench(scenario: str, nodes: int, transport: str, max_unavailable: int | str, as_json: bool) -> None:
    """Run a benchmark scenario (converge, rollout, churn, sync, api, schedule, plan, why)."""
    import orjson

    from everynode.product.bench import run_scenario

    results: list[dict] = []

    async def runner() -> None:
        results.extend(await run_scenario(scenario, nodes=nodes, transport=transport,
                                          max_unavailable=max_unavailable))

    _run(runner())
    for r in results:
        if as_json:
            click.echo(orjson.dumps(r).decode())
        else:
            click.echo("  ".join(f"{k}={v}" for k, v in r.items()))


@main.command()
def version() -> None:
    """Print the everynode version."""
    click.echo(f"everynode {__version__}")


from everynode.product.commands_node import node_group  # noqa: E402
from everynode.product.commands_plan import plan_command  # noqa: E402
from everynode.product.commands_status import status  # noqa: E402
from everynode.product.commands_why import why  # noqa: E402
from everynode.product.controller_cmd import controller_command  # noqa: E402

main.add_command(node_group)
main.add_command(status)
main.add_command(controller_command)
main.add_command(why)
main.add_command(plan_command)


if __name__ == "__main__":  # pragma: no cover
    main()
