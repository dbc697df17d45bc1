"""How `everynode why` prints an :class:`~everynode.product.why.Explanation`: a table, a wide
table, or one node's whole story — rich renderables from the pure explanation, nothing fetched.

Choices:

* **The summary comes first**, one paragraph in the article's terms ("DESIRED 4 of 6 nodes: …"),
  because it answers the question most people ask; the per-node table follows.
* **The table reads at 100 columns.**  NODE, VERDICT, POD and REASON; the reason column takes the
  rest of the width and wraps (node and pod names never do).  Verdicts have a colour *and* a
  word, so the table reads without colour (pipes, ``NO_COLOR``).  Healthy nodes are listed too:
  one row per node, as ``-o json`` has one entry per node.
* **``-o wide``** adds the pod's REVISION and the CODES, and shows every reason (the narrow table
  shows the first and counts the rest).
* **A node's story** (``--node``) is everything the explainer looked at for that node: the node
  (Ready, cordon, taints, labels the DaemonSet asks about), the DaemonSet's pods there with their
  state, the scheduler's last message, the rollout budget and the verdict with every reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from everynode.product.commands_node import format_taint
from everynode.product.status import natural_key
from everynode.product.why import (
    EXCLUDED,
    MISSCHEDULED,
    MISSING,
    OK,
    OUTDATED,
    PENDING,
    UNHEALTHY,
    Explanation,
    NodeVerdict,
    condition,
)

Obj = Mapping[str, Any]

VERDICT_STYLES: Mapping[str, str] = {
    OK: "green",
    EXCLUDED: "dim",
    MISSING: "red",
    PENDING: "yellow",
    UNHEALTHY: "red",
    OUTDATED: "blue",
    MISSCHEDULED: "magenta",
}


def _ordered(nodes: Sequence[NodeVerdict]) -> list[NodeVerdict]:
    return sorted(nodes, key=lambda nv: natural_key(nv.node))


def header(exp: Explanation) -> Text:
    text = Text()
    text.append(f"daemonset {exp.namespace}/{exp.name}", style="bold")
    text.append(f"  update revision {exp.update_revision}  {exp.strategy}", style="dim")
    if exp.budget_text:
        text.append(f" ({exp.budget_text})", style="dim")
    return text


def summary_text(exp: Explanation) -> Text:
    return Text(exp.summary.message)


def counts_text(exp: Explanation) -> Text:
    text = Text()
    first = True
    for verdict, style in VERDICT_STYLES.items():
        n = exp.summary.counts.get(verdict, 0)
        if not n:
            continue
        if not first:
            text.append("  ")
        first = False
        text.append(f"{verdict} {n:,}", style=style)
    return text


def node_table(exp: Explanation, *, wide: bool = False) -> Table:
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 2, 0, 0),
                  expand=False)
    table.add_column("NODE", no_wrap=True)
    table.add_column("VERDICT", no_wrap=True)
    table.add_column("POD", no_wrap=True)
    if wide:
        table.add_column("REVISION", no_wrap=True)
        table.add_column("CODES", no_wrap=True)
    table.add_column("REASON", overflow="fold", ratio=1)
    for nv in _ordered(exp.nodes):
        verdict = Text(nv.verdict, style=VERDICT_STYLES.get(nv.verdict, ""))
        row: list[RenderableType] = [nv.node, verdict, nv.pod or "-"]
        if wide:
            row += [nv.revision or "-", ",".join(nv.codes()) or "-"]
            reason = "\n".join(r.message for r in nv.reasons) or nv.line
        else:
            reason = nv.line
            if len(nv.reasons) > 1:
                reason += f" (+{len(nv.reasons) - 1} more)"
        row.append(reason)
        table.add_row(*row)
    return table


def render(exp: Explanation, *, wide: bool = False) -> Group:
    """``-o table`` / ``-o wide``."""
    return Group(header(exp), summary_text(exp), counts_text(exp), Text(""), node_table(exp, wide=wide))


# ------------------------------------------------------------------------------------------ one node

def _pod_line(pod: Obj) -> str:
    md = pod.get("metadata") or {}
    status = pod.get("status") or {}
    labels = md.get("labels") or {}
    ready = condition(pod, "Ready")
    parts = [f"pod {md.get('name', '')}", f"revision {labels.get('controller-revision-hash', '-')}",
             f"phase {status.get('phase') or 'Pending'}",
             f"node {(pod.get('spec') or {}).get('nodeName') or '(not bound)'}",
             f"Ready {(ready or {}).get('status', '-')}"]
    if md.get("deletionTimestamp"):
        parts.append(f"deleting at {md['deletionTimestamp']}")
    for cs in status.get("containerStatuses") or ():
        state = next(iter(cs.get("state") or {"unknown": {}}))
        detail = ((cs.get("state") or {}).get(state) or {}).get("reason")
        parts.append(f"container {cs.get('name', '')} {state}{'/' + detail if detail else ''} "
                     f"restarts {cs.get('restartCount', 0)}")
    return ", ".join(parts)


def node_story(exp: Explanation, nv: NodeVerdict, node: Obj) -> Group:
    """``--node NODE``: everything the explainer looked at for one node."""
    md = node.get("metadata") or {}
    spec = node.get("spec") or {}
    ready = condition(node, "Ready")
    lines: list[RenderableType] = [header(exp)]
    title = Text()
    title.append(f"node {nv.node}: ", style="bold")
    title.append(nv.verdict, style=VERDICT_STYLES.get(nv.verdict, ""))
    lines.append(title)
    facts = [f"Ready {(ready or {}).get('status', 'unknown')}"
             + (f" since {ready.get('lastTransitionTime')}" if ready and ready.get("lastTransitionTime") else "")]
    if spec.get("unschedulable"):
        facts.append("cordoned (unschedulable; DaemonSet pods tolerate it)")
    taints = spec.get("taints") or []
    facts.append("taints: " + (", ".join(format_taint(t) for t in taints) if taints else "none"))
    lines.append(Text("  node: " + "; ".join(facts)))
    template = ((exp.daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    selector = template.get("nodeSelector") or {}
    if selector:
        labels = md.get("labels") or {}
        shown = ", ".join(f"{k}={labels.get(k, '<absent>')}" for k in selector)
        lines.append(Text(f"  nodeSelector {', '.join(f'{k}={v}' for k, v in selector.items())}; node has {shown}"))
    eligibility = "yes" if nv.should_run else ("no (a running pod may stay)" if nv.should_continue else "no")
    lines.append(Text(f"  should run a pod here: {eligibility}"))
    if nv.pods:
        for pod in nv.pods:
            lines.append(Text("  " + _pod_line(pod)))
    else:
        lines.append(Text("  no pod of this DaemonSet targets this node"))
    if nv.scheduler_message:
        lines.append(Text(f"  scheduler: {nv.scheduler_message}"))
    if exp.budget_text:
        lines.append(Text(f"  rollout budget: {exp.budget_text}"))
    if nv.reasons:
        lines.append(Text("  reasons:", style="bold"))
        for r in nv.reasons:
            line = Text("    ")
            line.append(r.code, style="bold")
            line.append(f": {r.message}")
            lines.append(line)
    else:
        lines.append(Text(f"  {nv.line}"))
    return Group(*lines)


__all__ = ["VERDICT_STYLES", "counts_text", "header", "node_story", "node_table", "render", "summary_text"]
