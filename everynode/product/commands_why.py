"""`everynode why DAEMONSET`: the command line around :func:`everynode.product.why.explain`.

Reads a live cluster through a kubeconfig (GET and LIST only — see
``examples/everynode-why-rbac.yaml``) or a dump (``--from-dump``), explains, prints.  Never
writes.  Exit 0 when it could answer; 1 with one line on stderr when it could not: no such
DaemonSet (kubectl's ``Error from server (NotFound)`` words when asked live), no such node for
``--node``, an unreachable server, an unreadable dump.

Ages ("not Ready for 4m", "terminating for 30s") are measured against now when live, and
against the dump's own moment — its newest timestamp, see :func:`dump_now` — from a dump.

Which DaemonSet: ``NAME`` or ``ds/NAME`` (also ``daemonset/``, ``daemonsets/``,
``daemonsets.apps/``, as kubectl takes them).  Live, the namespace is ``-n`` or the kubeconfig's;
in a dump, without ``-n``, the one DaemonSet of that name (an error names the namespaces when
there are several).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from everynode.product.connect import fail, kubeconfig_option, run_with_client, stdout_console

if TYPE_CHECKING:
    from everynode.client.base import Client
    from everynode.product.clusterdump import ClusterObjects
    from everynode.product.why import Explanation

DS_PREFIXES = ("ds/", "daemonset/", "daemonsets/", "daemonset.apps/", "daemonsets.apps/")
OUTPUTS = ("table", "wide", "json")


def daemonset_name(arg: str) -> str:
    """``NAME`` from ``NAME`` or ``ds/NAME`` (raises click.BadParameter for another kind)."""
    for prefix in DS_PREFIXES:
        if arg.lower().startswith(prefix):
            return arg[len(prefix):]
    if "/" in arg:
        raise click.BadParameter(f"{arg!r} is not a DaemonSet (use NAME or ds/NAME)", param_hint="DAEMONSET")
    return arg


def print_explanation(exp: Explanation, objects: ClusterObjects, *, output: str, node: str | None) -> int:
    """Print the answer; returns the exit code (1 when ``node`` is not a node of the cluster)."""
    import orjson

    from everynode.product.why_render import node_story, render

    if node is not None:
        nv = exp.node(node)
        if nv is None:
            click.echo(f'error: node "{node}" not found', err=True)
            return 1
        if output == "json":
            click.echo(orjson.dumps({**exp.to_json(), "nodes": [nv.to_json()]}, option=orjson.OPT_INDENT_2).decode())
            return 0
        raw = next(n for n in objects.nodes if ((n.get("metadata") or {}).get("name")) == node)
        stdout_console().print(node_story(exp, nv, raw))
        return 0
    if output == "json":
        sys.stdout.write(orjson.dumps(exp.to_json(), option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0
    stdout_console().print(render(exp, wide=output == "wide"))
    return 0


def explain_dump(path: Path, name: str, namespace: str | None) -> tuple[Explanation, ClusterObjects]:
    """Load and explain; raises :class:`ValueError` with the one line to print."""
    from everynode.clock import Clock
    from everynode.product.clusterdump import DumpError, load_dump
    from everynode.product.why import explain

    try:
        objects = load_dump(path)
    except DumpError as e:
        raise ValueError(f"error: {e}") from None
    candidates = [ds for ds in objects.daemonsets if (ds.get("metadata") or {}).get("name") == name
                  and (namespace is None or ((ds.get("metadata") or {}).get("namespace") or "") == namespace)]
    if not candidates:
        where = f' in namespace "{namespace}"' if namespace is not None else ""
        raise ValueError(f'error: daemonset "{name}" not found{where} in dump {path}')
    if len(candidates) > 1:
        spaces = ", ".join(sorted((ds.get("metadata") or {}).get("namespace") or "" for ds in candidates))
        raise ValueError(f'error: daemonset "{name}" exists in namespaces {spaces} of dump {path}: choose one with -n')
    return explain(candidates[0], objects, now=dump_now(objects, Clock().now())), objects


def dump_now(objects: ClusterObjects, now: float) -> float:
    """The "now" a dump is explained at: its own moment (:func:`~everynode.product.clusterdump.dump_time`,
    the newest timestamp in it), never later than ``now`` (a clock ahead of ours must not make
    ages negative), ``now`` when the dump has no timestamp at all."""
    from everynode.product.clusterdump import dump_time

    taken = dump_time(objects)
    return now if taken is None else min(taken, now)


@click.command("why")
@click.argument("daemonset")
@click.option("--namespace", "-n", default=None, help="Namespace of the DaemonSet [default: the kubeconfig's; "
                                                      "in a dump: the only DaemonSet of that name].")
@click.option("--node", default=None, help="Print this node's whole story.")
@click.option("--output", "-o", type=click.Choice(OUTPUTS), default="table", show_default=True,
              help="table, wide (revisions, codes, every reason) or json.")
@click.option("--from-dump", "from_dump", type=click.Path(path_type=Path), default=None,
              help="Read the objects from a dump (kubectl get nodes,pods,daemonsets,controllerrevisions,events,"
                   "priorityclasses -A -o yaml; a file or a directory) instead of a cluster.")
@kubeconfig_option
def why(daemonset: str, namespace: str | None, node: str | None, output: str, from_dump: Path | None,
        kubeconfig: Path | None) -> None:
    """For every node: why the DaemonSet's pod runs there, waits, fails or is not there."""
    name = daemonset_name(daemonset)
    if from_dump is not None and kubeconfig is not None:
        raise click.UsageError("--kubeconfig and --from-dump are mutually exclusive")
    if from_dump is not None:
        try:
            exp, objects = explain_dump(from_dump, name, namespace)
        except ValueError as e:
            fail(str(e))
        sys.exit(print_explanation(exp, objects, output=output, node=node))

    async def run(client: Client) -> int:
        from everynode.clock import Clock
        from everynode.product.clusterdump import read_live
        from everynode.product.why import explain

        ns = namespace or getattr(client, "namespace", None) or "default"
        ds = await client.get("daemonsets.apps", name, namespace=ns)
        objects = await read_live(client, namespace=ns)
        return print_explanation(explain(ds, objects, now=Clock().now()), objects, output=output, node=node)

    run_with_client(kubeconfig, run)
