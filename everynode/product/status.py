"""What `everynode status` draws: the DaemonSets as kubectl lists them, plus a node grid.

Pure functions from plain objects (DaemonSets, Nodes, Pods, ControllerRevisions and "now") to rich
renderables — no client, no clock reads — so one-shot printing, the live ``--watch`` view and the
unit tests all render the same way from fixture dicts.

Choices:

* **The table is the server's printer.**  Cells come from :mod:`everynode.apiserver.tables` (the
  same code that answers ``kubectl get daemonsets``), and headers are the column names upper-cased
  as kubectl's table printer does; only the priority-0 columns are shown, like kubectl without
  ``-o wide``.  So the table cannot drift from what kubectl prints.
* **One cell per node per DaemonSet.**  A cell says what that DaemonSet has on that node, decided
  the way the controller decides it: eligibility from
  :class:`~everynode.controllers.daemonset.placement.Placement` (``NodeShouldRunDaemonPod``),
  "updated" from ``IsPodUpdated`` against the DaemonSet's current revision — the newest
  ControllerRevision it owns (highest ``revision``; ``rollout undo`` renumbers the restored one to
  the top, so this holds after undo too) — or its template generation when no revision is known.
  Each state has its own glyph as well as its own colour, so the grid still reads without colour
  (pipes, ``NO_COLOR``).
* **Large clusters stay readable.**  Cells are grouped by ten and wrap at the console width;
  beyond ``max_cells`` nodes (500) the rest is summarised as counts.  With few nodes
  (``named_limit``) each cell carries its node's name.
* **Why, beside the cell.**  Every cell that is not ready or not there (updated but not ready,
  missing, and old cells the rollout is holding) gets its one-line reason from
  :func:`everynode.product.why.explain` — the same answer `everynode why` gives — under the
  grid, at most ``REASON_LINES`` of them per DaemonSet (the rest counted); ``why=True``
  (``everynode status --why``) adds the whole per-node table of `everynode why`.
* **Rollout line** per DaemonSet in ``kubectl rollout status`` words (``rollout_status.go``,
  ``DaemonSetStatusViewer``), computed from the same status fields kubectl reads.

Cost per frame is O(DaemonSets × nodes + pods): one pass to index pods by owner and node, one
compiled placement per DaemonSet.
"""

from __future__ import annotations

import enum
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from everynode.api.daemonset import ROLLING_UPDATE, update_strategy_type
from everynode.api.meta import metadata_of
from everynode.api.pod import is_pod_ready
from everynode.api.registry import resource
from everynode.apiserver.tables import column_definitions, table_row
from everynode.controllers.daemonset.daemonpods import (
    CONTROLLER_REVISION_HASH_LABEL,
    is_pod_updated,
    target_node_or_none,
    template_generation,
)
from everynode.controllers.daemonset.placement import Placement
from everynode.product.clusterdump import ClusterObjects
from everynode.product.why import Explanation, explain

Obj = Mapping[str, Any]

DAEMONSETS = "daemonsets.apps"
MAX_CELLS = 500
NAMED_LIMIT = 16
GROUP_SIZE = 10
REASON_LINES = 10
_REASON_STATES = frozenset({"updated-not-ready", "missing", "old"})


class CellState(enum.Enum):
    """What one DaemonSet has on one node."""

    UPDATED_READY = "updated-ready"
    UPDATED_NOT_READY = "updated-not-ready"
    OLD = "old"
    MISSING = "missing"
    NOT_ELIGIBLE = "not-eligible"


STATE_ORDER: tuple[CellState, ...] = tuple(CellState)

STYLES: dict[CellState, str] = {
    CellState.UPDATED_READY: "green",
    CellState.UPDATED_NOT_READY: "yellow",
    CellState.OLD: "blue",
    CellState.MISSING: "red",
    CellState.NOT_ELIGIBLE: "dim",
}

GLYPHS: dict[CellState, str] = {
    CellState.UPDATED_READY: "●",
    CellState.UPDATED_NOT_READY: "◐",
    CellState.OLD: "○",
    CellState.MISSING: "✗",
    CellState.NOT_ELIGIBLE: "·",
}

DESCRIPTIONS: dict[CellState, str] = {
    CellState.UPDATED_READY: "updated, ready",
    CellState.UPDATED_NOT_READY: "updated, not ready",
    CellState.OLD: "old revision",
    CellState.MISSING: "missing pod",
    CellState.NOT_ELIGIBLE: "not eligible",
}

ROLLOUT_DONE_STYLE = "green"
ROLLOUT_WAITING_STYLE = "yellow"
ROLLOUT_UNAVAILABLE_STYLE = "dim"

_TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


# ------------------------------------------------------------------------------------------ helpers


def _uid(obj: Obj) -> str:
    return metadata_of(obj).get("uid") or ""


def _controller_uid(obj: Obj, kind: str) -> str | None:
    for ref in metadata_of(obj).get("ownerReferences") or ():
        if ref.get("controller") and ref.get("kind") == kind:
            return ref.get("uid")
    return None


_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[Any, ...]:
    """``worker-2`` before ``worker-10``."""
    return tuple(int(part) if part.isdigit() else part for part in _DIGITS.split(name))


def ds_display_name(ds: Obj, *, all_namespaces: bool) -> str:
    md = metadata_of(ds)
    return f"{md.get('namespace', '')}/{md.get('name', '')}" if all_namespaces else md.get("name", "")


# ------------------------------------------------------------------------------------------ revisions

def current_revision(ds: Obj, revisions: Iterable[Obj]) -> Obj | None:
    """The newest ControllerRevision controlled by ``ds`` (highest ``revision``; ties: the later one)."""
    uid = _uid(ds)
    best: Obj | None = None
    best_number = -1
    for rev in revisions:
        if _controller_uid(rev, "DaemonSet") != uid:
            continue
        number = int(rev.get("revision") or 0)
        if number >= best_number:
            best, best_number = rev, number
    return best


def revision_hash(revision: Obj | None) -> str:
    if revision is None:
        return ""
    labels = metadata_of(revision).get("labels") or {}
    if labels.get(CONTROLLER_REVISION_HASH_LABEL):
        return labels[CONTROLLER_REVISION_HASH_LABEL]
    # The revision's name is "<daemonset>-<hash>".
    return (metadata_of(revision).get("name") or "").rpartition("-")[2]


# ------------------------------------------------------------------------------------------ cells

def cell_state(should_run: bool, pods: Sequence[Obj], *, hash_: str, generation: int | None) -> CellState:
    """One node's cell: the best pod there decides (an updated pod wins over an old one)."""
    if pods:
        updated = [p for p in pods if is_pod_updated(p, hash_, generation)]
        if updated:
            if any(is_pod_ready(p) for p in updated):
                return CellState.UPDATED_READY
            return CellState.UPDATED_NOT_READY
        return CellState.OLD
    return CellState.MISSING if should_run else CellState.NOT_ELIGIBLE


def index_pods(pods: Iterable[Obj]) -> dict[str, dict[str, list[Obj]]]:
    """DaemonSet uid → node name → its live (non-terminal) pods there."""
    index: dict[str, dict[str, list[Obj]]] = {}
    for pod in pods:
        owner = _controller_uid(pod, "DaemonSet")
        if owner is None:
            continue
        if ((pod.get("status") or {}).get("phase") or "") in _TERMINAL_PHASES:
            continue
        node = target_node_or_none(pod)
        if node is None:
            continue
        index.setdefault(owner, {}).setdefault(node, []).append(pod)
    return index


def index_revisions(revisions: Iterable[Obj]) -> dict[str, Obj]:
    """DaemonSet uid → its current (newest) ControllerRevision."""
    best: dict[str, Obj] = {}
    for rev in revisions:
        owner = _controller_uid(rev, "DaemonSet")
        if owner is None:
            continue
        held = best.get(owner)
        if held is None or int(rev.get("revision") or 0) >= int(held.get("revision") or 0):
            best[owner] = rev
    return best


@dataclass
class DaemonSetView:
    """One DaemonSet's grid: the cells in node order and their counts."""

    daemonset: Obj
    revision: Obj | None
    cells: list[tuple[str, CellState]]
    counts: Counter[CellState] = field(default_factory=Counter)
    explanation: Explanation | None = None  # `everynode why` for this DaemonSet, when asked for

    @property
    def revision_number(self) -> int | None:
        return int(self.revision.get("revision") or 0) if self.revision is not None else None


def daemonset_view(ds: Obj, nodes: Sequence[Obj], pods_by_node: Mapping[str, Sequence[Obj]],
                   revision: Obj | None) -> DaemonSetView:
    """Cells for ``nodes`` (already in display order); pods on nodes not listed are ignored."""
    placement = Placement(ds)
    hash_ = revision_hash(revision)
    generation = template_generation(ds)
    cells: list[tuple[str, CellState]] = []
    counts: Counter[CellState] = Counter()
    for node in nodes:
        name = metadata_of(node).get("name") or ""
        should_run, _ = placement.evaluate(node)
        state = cell_state(should_run, pods_by_node.get(name, ()), hash_=hash_, generation=generation)
        cells.append((name, state))
        counts[state] += 1
    return DaemonSetView(ds, revision, cells, counts)


def build_views(daemonsets: Iterable[Obj], nodes: Iterable[Obj], pods: Iterable[Obj],
                revisions: Iterable[Obj], *, explain_at: float | None = None) -> list[DaemonSetView]:
    """The views in display order; with ``explain_at`` (now), each with its `why` explanation."""
    nodes, pods, revisions = list(nodes), list(pods), list(revisions)
    ordered_nodes = sorted(nodes, key=lambda n: natural_key(metadata_of(n).get("name") or ""))
    by_owner = index_pods(pods)
    newest = index_revisions(revisions)
    ordered_ds = sorted(daemonsets, key=lambda d: (metadata_of(d).get("namespace") or "", metadata_of(d).get("name") or ""))
    views = [daemonset_view(ds, ordered_nodes, by_owner.get(_uid(ds), {}), newest.get(_uid(ds)))
             for ds in ordered_ds]
    if explain_at is not None:
        node_dicts, pod_dicts, revision_dicts = [dict(n) for n in nodes], [dict(p) for p in pods], [dict(r) for r in revisions]
        for view in views:
            objects = ClusterObjects(nodes=node_dicts, pods=pod_dicts, daemonsets=[dict(view.daemonset)],
                                     controllerrevisions=revision_dicts)
            view.explanation = explain(dict(view.daemonset), objects, now=explain_at)
    return views


def reason_lines(view: DaemonSetView, *, limit: int = REASON_LINES) -> list[Text]:
    """One line per cell that is not ready or not there: its glyph, node and `why`'s reason."""
    if view.explanation is None:
        return []
    verdicts = {nv.node: nv for nv in view.explanation.nodes}
    wanted = []
    for name, state in view.cells:
        nv = verdicts.get(name)
        if nv is None or state.value not in _REASON_STATES or nv.verdict == "ok":
            continue
        if state is CellState.OLD and not nv.reasons:
            continue  # an old pod the rollout replaces next: nothing to explain
        wanted.append((name, state, nv.line))
    lines = [Text.assemble((GLYPHS[state], STYLES[state]), f" {name}  ", (line, "dim"))
             for name, state, line in wanted[:limit]]
    if len(wanted) > limit:
        lines.append(Text(f"… {len(wanted) - limit:,} more (everynode why "
                          f"{metadata_of(view.daemonset).get('name', '')})", style="dim"))
    return lines


# ------------------------------------------------------------------------------------------ rollout

def rollout_message(ds: Obj) -> tuple[str, bool]:
    """``kubectl rollout status`` for a DaemonSet: ``(message, done)``.

    OnDelete DaemonSets get kubectl's error text (kubectl prints it as an error and stops)."""
    status = ds.get("status") or {}
    name = metadata_of(ds).get("name") or ""
    if update_strategy_type(ds) != ROLLING_UPDATE:
        return "rollout status is only available for RollingUpdate strategy type", True
    generation = int(metadata_of(ds).get("generation") or 0)
    observed = int(status.get("observedGeneration") or 0)
    if generation > observed:
        return "Waiting for daemon set spec update to be observed...", False
    desired = int(status.get("desiredNumberScheduled") or 0)
    updated = int(status.get("updatedNumberScheduled") or 0)
    available = int(status.get("numberAvailable") or 0)
    if updated < desired:
        return (f'Waiting for daemon set "{name}" rollout to finish: '
                f"{updated} out of {desired} new pods have been updated..."), False
    if available < desired:
        return (f'Waiting for daemon set "{name}" rollout to finish: '
                f"{available} of {desired} updated pods are available..."), False
    return f'daemon set "{name}" successfully rolled out', True


# ------------------------------------------------------------------------------------------ renderables

def daemonset_table(daemonsets: Iterable[Obj], *, now: float, all_namespaces: bool = False) -> Table:
    """The DaemonSets as ``kubectl get daemonsets`` prints them (server-side Table cells)."""
    rt = resource(DAEMONSETS)
    columns = [(i, c) for i, c in enumerate(column_definitions(rt.key)) if c.get("priority", 0) == 0]
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold", padding=(0, 3, 0, 0))
    if all_namespaces:
        table.add_column("NAMESPACE", no_wrap=True)
    for _, col in columns:
        numeric = col.get("type") in ("integer", "number")
        table.add_column(str(col["name"]).upper(), justify="left", no_wrap=not numeric)
    ordered = sorted(daemonsets, key=lambda d: (metadata_of(d).get("namespace") or "", metadata_of(d).get("name") or ""))
    for ds in ordered:
        cells = table_row(rt, ds, now=now, include_object="None")["cells"]
        row = [str(cells[i]) for i, _ in columns]
        if all_namespaces:
            row.insert(0, metadata_of(ds).get("namespace") or "")
        table.add_row(*row)
    return table


def legend() -> Text:
    text = Text()
    for i, state in enumerate(STATE_ORDER):
        if i:
            text.append("   ")
        text.append(GLYPHS[state], style=STYLES[state])
        text.append(f" {DESCRIPTIONS[state]}")
    return text


def counts_text(counts: Mapping[CellState, int]) -> Text:
    text = Text()
    first = True
    for state in STATE_ORDER:
        n = counts.get(state, 0)
        if not n:
            continue
        if not first:
            text.append("  ")
        first = False
        text.append(f"{GLYPHS[state]} {n:,}", style=STYLES[state])
    return text


def _compact_cells(cells: Sequence[tuple[str, CellState]]) -> Text:
    text = Text(overflow="fold")
    for i, (_, state) in enumerate(cells):
        if i and i % GROUP_SIZE == 0:
            text.append(" ")
        text.append(GLYPHS[state], style=STYLES[state])
    return text


def node_grid(view: DaemonSetView, *, max_cells: int = MAX_CELLS, named_limit: int = NAMED_LIMIT
              ) -> RenderableType:
    """One DaemonSet's cells: named for small clusters, compact (grouped by ten) otherwise, and
    capped at ``max_cells`` with the remainder summarised as counts."""
    cells = view.cells
    if not cells:
        return Text("no nodes", style="dim")
    if len(cells) <= named_limit:
        items = [Text.assemble((GLYPHS[s], STYLES[s]), " ", name) for name, s in cells]
        return Columns(items, padding=(0, 2))
    shown = cells[:max_cells]
    parts: list[RenderableType] = [_compact_cells(shown)]
    rest = cells[max_cells:]
    if rest:
        remainder: Counter[CellState] = Counter(state for _, state in rest)
        summary = Text(f"… {len(rest):,} more nodes: ", style="dim")
        summary.append_text(counts_text(remainder))
        parts.append(summary)
    return Group(*parts)


def daemonset_section(view: DaemonSetView, *, all_namespaces: bool = False, max_cells: int = MAX_CELLS,
                      named_limit: int = NAMED_LIMIT) -> Group:
    ds = view.daemonset
    header = Text()
    header.append(ds_display_name(ds, all_namespaces=all_namespaces), style="bold")
    if view.revision is not None:
        header.append(f"  revision {view.revision_number} ({revision_hash(view.revision)})", style="dim")
    header.append("  ")
    header.append_text(counts_text(view.counts))
    message, done = rollout_message(ds)
    style = ROLLOUT_DONE_STYLE if done else ROLLOUT_WAITING_STYLE
    if update_strategy_type(ds) != ROLLING_UPDATE:
        style = ROLLOUT_UNAVAILABLE_STYLE
    return Group(header, Text(message, style=style),
                 node_grid(view, max_cells=max_cells, named_limit=named_limit), *reason_lines(view))


def no_resources_text(namespace: str | None) -> Text:
    """kubectl's empty-list message."""
    if namespace is None:
        return Text("No resources found")
    return Text(f"No resources found in {namespace} namespace.")


def render_status(daemonsets: Iterable[Obj], nodes: Iterable[Obj], pods: Iterable[Obj],
                  revisions: Iterable[Obj] = (), *, now: float, namespace: str | None = "default",
                  max_cells: int = MAX_CELLS, named_limit: int = NAMED_LIMIT, reasons: bool = True,
                  why: bool = False) -> Group:
    """The whole status view.  ``namespace=None`` means all namespaces (a NAMESPACE column);
    ``reasons``: the one-line reason under each cell that is not ready or not there; ``why``: the
    per-node table of `everynode why` after each DaemonSet."""
    daemonsets = list(daemonsets)
    if not daemonsets:
        return Group(no_resources_text(namespace))
    all_namespaces = namespace is None
    parts: list[RenderableType] = [daemonset_table(daemonsets, now=now, all_namespaces=all_namespaces), Text("")]
    for view in build_views(daemonsets, nodes, pods, revisions, explain_at=now if reasons or why else None):
        parts.append(daemonset_section(view, all_namespaces=all_namespaces, max_cells=max_cells,
                                       named_limit=named_limit))
        if why and view.explanation is not None:
            from everynode.product.why_render import node_table  # it imports this module

            parts.append(Text(view.explanation.summary.message))
            parts.append(node_table(view.explanation))
        parts.append(Text(""))
    parts.append(legend())
    return Group(*parts)


__all__ = [
    "DESCRIPTIONS",
    "GLYPHS",
    "MAX_CELLS",
    "NAMED_LIMIT",
    "STYLES",
    "CellState",
    "DaemonSetView",
    "build_views",
    "cell_state",
    "current_revision",
    "daemonset_section",
    "daemonset_table",
    "daemonset_view",
    "index_pods",
    "index_revisions",
    "legend",
    "natural_key",
    "node_grid",
    "reason_lines",
    "render_status",
    "revision_hash",
    "rollout_message",
]
