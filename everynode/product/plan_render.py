"""How `everynode plan` prints its answer as a table: rich renderables from the JSON-shaped answer.

Rendered from :meth:`PlanResult.to_json` rather than from the result object, so the table and
``-o json`` cannot disagree.  Choices, as for ``why``'s table: the verdict first (complete or not,
how long, against which budget), then what changes (DESIRED before → after, gains, losses), then
the tables that need reading (waves, blocked, pending, preempted), each only when it has rows.
Reads at 100 columns: node lists wrap, codes and node names never do; every state has a word as
well as a colour.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from everynode.product.status import natural_key

Obj = Mapping[str, Any]
NAMED_NODES = 12  # names shown in a one-line list before "and N more"


def seconds_text(s: float) -> str:
    if s < 120:
        return f"{s:g}s"
    m, sec = divmod(int(round(s)), 60)
    if m < 120:
        return f"{m}m{sec:02d}s" if sec else f"{m}m"
    h, m = divmod(m, 60)
    return f"{h}h{m:02d}m"


def names_text(names: Sequence[str], limit: int = NAMED_NODES) -> str:
    ordered = sorted(names, key=natural_key)
    if not ordered:
        return "none"
    if len(ordered) <= limit:
        return ", ".join(ordered)
    return ", ".join(ordered[:limit]) + f" and {len(ordered) - limit} more"


def verdict_text(answer: Obj) -> Text:
    inv = answer["invariants"]
    text = Text()
    if inv["completed"]:
        text.append("COMPLETES", style="bold green")
        text.append(f" in {seconds_text(answer['simulated_seconds'])} simulated")
    else:
        text.append("DOES NOT COMPLETE", style="bold red")
        text.append(f": no progress after {seconds_text(answer['simulated_seconds'])} simulated")
    waves = len(answer["waves"])
    text.append(f" ({waves} wave{'s' if waves != 1 else ''}; maxUnavailable {answer['budget']}"
                f"{', maxSurge ' + str(answer['max_surge']) if answer['max_surge'] else ''}, "
                f"peak unavailable {answer['peak_unavailable']})")
    return text


def header(answer: Obj) -> Group:
    ds = answer["daemonset"]
    title = Text()
    title.append(f"plan: daemonset {ds['namespace']}/{ds['name']}", style="bold")
    title.append(f"  {ds['change']}, update revision {ds['updateRevision']}, {answer['nodes']} nodes", style="dim")
    lines: list[RenderableType] = [title, verdict_text(answer)]
    lines.append(Text(f"DESIRED {answer['desired_before']} → {answer['desired_after']}   "
                      f"gains: {names_text(answer['gains'])}   losses: {names_text(answer['losses'])}"))
    lines.append(Text(f"pod start-up {seconds_text(answer['pod_startup_seconds'])} "
                      f"({answer['pod_startup_source']})", style="dim"))
    if answer.get("added_nodes"):
        lines.append(Text(f"added nodes: {names_text(answer['added_nodes'])}", style="dim"))
    if answer.get("node_failures"):
        failures = ", ".join(f"{f['node']} at {seconds_text(f['at'])}" for f in answer["node_failures"])
        lines.append(Text(f"node failures: {failures}", style="dim"))
    return Group(*lines)


def _table(*columns: str) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for i, col in enumerate(columns):
        last = i == len(columns) - 1
        table.add_column(col, overflow="fold" if last else "ellipsis", no_wrap=not last, ratio=1 if last else None)
    return table


def waves_table(answer: Obj) -> Table:
    table = _table("AT", "NODES", "WHICH")
    for wave in answer["waves"]:
        table.add_row(seconds_text(wave["at"]), str(len(wave["nodes"])), names_text(wave["nodes"], 8))
    return table


def findings_table(rows: Sequence[Obj], style: str) -> Table:
    table = _table("NODE", "CODE", "MESSAGE")
    for row in sorted(rows, key=lambda r: natural_key(r["node"])):
        table.add_row(row["node"], Text(row["code"], style=style), row["message"])
    return table


def preempted_table(answer: Obj) -> Table:
    table = _table("AT", "NODE", "PRIORITY", "POD")
    for v in answer["preempted"]:
        table.add_row(seconds_text(v["at"]), v["node"], str(v["priority"]), v["pod"])
    return table


def invariants_text(answer: Obj) -> Text:
    text = Text("invariants: ")
    labels = {"one_pod_per_node": "one pod per node", "budget_respected": "budget respected",
              "completed": "rollout terminates"}
    for i, (key, label) in enumerate(labels.items()):
        ok = answer["invariants"][key]
        if i:
            text.append("  ")
        text.append(f"{'✓' if ok else '✗'} {label}", style="green" if ok else "red")
    text.append(f"   ({seconds_text(answer['simulated_seconds'])} simulated in {answer['wall_seconds']:g}s)",
                style="dim")
    return text


def render(answer: Obj) -> Group:
    parts: list[RenderableType] = [header(answer)]
    if answer["waves"]:
        parts += [Text(""), Text("waves", style="bold"), waves_table(answer)]
    if answer["blocked"]:
        parts += [Text(""), Text("blocked", style="bold"), findings_table(answer["blocked"], "red")]
    if answer.get("waiting"):
        parts += [Text(f"waiting for budget: {names_text(answer['waiting'])}", style="dim")]
    if answer["pending"]:
        parts += [Text(""), Text("pending", style="bold"), findings_table(answer["pending"], "yellow")]
    if answer["preempted"]:
        parts += [Text(""), Text("preempted", style="bold"), preempted_table(answer)]
    parts += [Text(""), invariants_text(answer)]
    return Group(*parts)
