"""`everynode node add|remove|stop|start|list`: simulated nodes, as thin wrappers over the API.

Every command is one or two API calls any client could make — nothing here talks to the
simulation directly:

* ``add`` creates a Node the way `everynode up` does (:func:`everynode.product.nodes.node_manifest`:
  the contract labels, capacity = allocatable); the kubelet simulation adopts any Node it sees.
* ``remove`` deletes the Node; pod GC then removes its pods, as upstream's does.
* ``stop`` / ``start`` set / remove the ``everynode.io/kubelet: stopped`` annotation with a JSON
  merge patch: the simulated kubelet stops heartbeating, and the node lifecycle controller marks
  the node Unknown and taints it, as for a real kubelet that died.
* ``list`` is ``kubectl get nodes`` plus what matters here: taints and pods per node.

Output lines follow kubectl's (``node/worker-4 created``, ``node "worker-4" deleted``).  Flags
are parsed up front (labels ``k=v``, taints ``key[=value]:Effect`` as ``kubectl taint`` takes
them, capacities as Kubernetes quantities), so a typo is a usage error, not a server round trip.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from everynode.product.connect import kubeconfig_option, run_with_client, stdout_console

if TYPE_CHECKING:
    from rich.table import Table

    from everynode.client.base import Client

# Heavier modules (rich, the API tables, the client) are imported inside the commands, so that
# `everynode --help` and `everynode up` do not pay for them.

KUBELET_ANNOTATION = "everynode.io/kubelet"
KUBELET_STOPPED = "stopped"
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

STATUS_STYLES = {"Ready": "green", "NotReady": "red", "Unknown": "yellow"}


# ------------------------------------------------------------------------------------------ parsing

def parse_label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"invalid label {text!r}: expected key=value")
    return key, value


def parse_taint(text: str) -> dict[str, str]:
    """``key[=value]:Effect`` (``kubectl taint``'s syntax, without the trailing ``-``)."""
    spec, sep, effect = text.rpartition(":")
    if not sep or not spec:
        raise ValueError(f"invalid taint {text!r}: expected key[=value]:Effect")
    if effect not in TAINT_EFFECTS:
        raise ValueError(f"invalid taint effect: {effect}, unsupported taint effect "
                         f"(choose from {', '.join(TAINT_EFFECTS)})")
    key, _, value = spec.partition("=")
    if not key:
        raise ValueError(f"invalid taint {text!r}: the key may not be empty")
    taint = {"key": key, "effect": effect}
    if value:
        taint["value"] = value
    return taint


def _quantity(name: str) -> Any:
    def convert(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is None:
            return None
        from everynode.api.quantity import parse_quantity

        try:
            parse_quantity(value)
        except ValueError as e:
            raise click.BadParameter(f"{value!r}: {e}") from None
        return value

    return convert


def _labels(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    try:
        return dict(parse_label(v) for v in values)
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def _taints(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[dict[str, str]]:
    try:
        return [parse_taint(v) for v in values]
    except ValueError as e:
        raise click.BadParameter(str(e)) from None


def format_taint(taint: dict[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key', '')}{'=' + value if value else ''}:{taint.get('effect', '')}"


# ------------------------------------------------------------------------------------------ list

def count_pods_by_node(pods: list[dict[str, Any]]) -> Counter[str]:
    """Non-terminated pods bound to each node (what counts against the node's ``pods`` capacity)."""
    counts: Counter[str] = Counter()
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if node and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
            counts[node] += 1
    return counts


def node_table(nodes: list[dict[str, Any]], pods_by_node: Counter[str], *, now: float) -> Table:
    """NAME STATUS ROLES TAINTS PODS AGE; STATUS and ROLES as ``kubectl get nodes`` prints them."""
    from rich.table import Table

    from everynode.apiserver.tables import human_duration, node_roles, node_status, parse_time
    from everynode.product.status import natural_key

    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 3, 0, 0))
    for name in ("NAME", "STATUS", "ROLES", "TAINTS", "PODS", "AGE"):
        table.add_column(name, no_wrap=name != "TAINTS")
    for node in sorted(nodes, key=lambda n: natural_key((n.get("metadata") or {}).get("name") or "")):
        md = node.get("metadata") or {}
        name = md.get("name") or ""
        status = node_status(node)
        style = STATUS_STYLES.get(status.split(",")[0], "")
        if (md.get("annotations") or {}).get(KUBELET_ANNOTATION) == KUBELET_STOPPED:
            status += " (kubelet stopped)"
        taints = ",".join(format_taint(t) for t in (node.get("spec") or {}).get("taints") or ()) or "<none>"
        capacity = ((node.get("status") or {}).get("allocatable") or {}).get("pods")
        pods = f"{pods_by_node.get(name, 0)}/{capacity}" if capacity else str(pods_by_node.get(name, 0))
        created = parse_time(md.get("creationTimestamp"))
        age = "<unknown>" if created is None else human_duration(now - created)
        table.add_row(name, f"[{style}]{status}[/]" if style else status,
                      ",".join(node_roles(node)) or "<none>", taints, pods, age)
    return table


# ------------------------------------------------------------------------------------------ commands

@click.group("node")
def node_group() -> None:
    """Add, remove, stop and start simulated nodes; list nodes."""


@node_group.command("add")
@click.argument("name")
@click.option("--label", "labels", multiple=True, callback=_labels, metavar="KEY=VALUE",
              help="A node label (repeatable).")
@click.option("--taint", "taints", multiple=True, callback=_taints, metavar="KEY[=VALUE]:EFFECT",
              help="A taint; EFFECT is NoSchedule, PreferNoSchedule or NoExecute (repeatable).")
@click.option("--cpu", default="4", show_default=True, callback=_quantity("cpu"), help="CPU capacity.")
@click.option("--memory", default="16Gi", show_default=True, callback=_quantity("memory"), help="Memory capacity.")
@click.option("--pods", default="110", show_default=True, callback=_quantity("pods"), help="Pod capacity.")
@click.option("--control-plane", is_flag=True,
              help="A control-plane node (role label and node-role.kubernetes.io/control-plane:NoSchedule taint).")
@kubeconfig_option
def add(name: str, labels: dict[str, str], taints: list[dict[str, str]], cpu: str, memory: str, pods: str,
        control_plane: bool, kubeconfig: Path | None) -> None:
    """Create a simulated node; the kubelet simulation adopts it and makes it Ready."""
    from everynode.product.nodes import node_manifest

    manifest = node_manifest(name, control_plane=control_plane, labels=labels, taints=taints,
                             capacity={"cpu": cpu, "memory": memory, "pods": pods})

    async def run(client: Client) -> int:
        await client.create("nodes", manifest)
        click.echo(f"node/{name} created")
        return 0

    run_with_client(kubeconfig, run)


@node_group.command("remove")
@click.argument("names", nargs=-1, required=True)
@kubeconfig_option
def remove(names: tuple[str, ...], kubeconfig: Path | None) -> None:
    """Delete nodes; their pods are then removed by pod GC."""

    async def run(client: Client) -> int:
        for name in names:
            await client.delete("nodes", name)
            click.echo(f'node "{name}" deleted')
        return 0

    run_with_client(kubeconfig, run)


def _set_kubelet(names: tuple[str, ...], kubeconfig: Path | None, *, stopped: bool) -> None:
    patch = {"metadata": {"annotations": {KUBELET_ANNOTATION: KUBELET_STOPPED if stopped else None}}}
    verb = "stopped" if stopped else "started"

    async def run(client: Client) -> int:
        for name in names:
            await client.patch("nodes", name, patch, patch_type="merge")
            click.echo(f"node/{name} kubelet {verb}")
        return 0

    run_with_client(kubeconfig, run)


@node_group.command("stop")
@click.argument("names", nargs=-1, required=True)
@kubeconfig_option
def stop(names: tuple[str, ...], kubeconfig: Path | None) -> None:
    """Stop nodes' simulated kubelets (annotation everynode.io/kubelet=stopped): they go NotReady."""
    _set_kubelet(names, kubeconfig, stopped=True)


@node_group.command("start")
@click.argument("names", nargs=-1, required=True)
@kubeconfig_option
def start(names: tuple[str, ...], kubeconfig: Path | None) -> None:
    """Start nodes' simulated kubelets again (removes the annotation)."""
    _set_kubelet(names, kubeconfig, stopped=False)


@node_group.command("list")
@kubeconfig_option
def list_nodes(kubeconfig: Path | None) -> None:
    """List nodes: NAME STATUS ROLES TAINTS PODS AGE."""

    async def run(client: Client) -> int:
        nodes = (await client.list("nodes")).get("items") or []
        if not nodes:
            click.echo("No resources found")
            return 0
        pods = (await client.list("pods")).get("items") or []
        from everynode.clock import Clock

        stdout_console().print(
            node_table(nodes, count_pods_by_node(pods), now=Clock().now()))
        return 0

    run_with_client(kubeconfig, run)
