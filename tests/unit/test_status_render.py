"""`everynode status` rendering, from fixture objects (no cluster)."""

from __future__ import annotations

from typing import Any

import pytest
from rich.console import Console
from rich.style import Style

from everynode.clock import format_rfc3339
from everynode.product.nodes import node_manifest
from everynode.product.status import (
    GLYPHS,
    STYLES,
    CellState,
    build_views,
    cell_state,
    current_revision,
    daemonset_table,
    index_pods,
    legend,
    natural_key,
    node_grid,
    render_status,
    revision_hash,
    rollout_message,
)

NOW = 1_700_000_000.0
UID = "ds-uid-1"


def make_ds(name: str = "agent", *, namespace: str = "default", uid: str = UID, generation: int = 2,
            observed: int = 2, desired: int = 3, current: int = 3, ready: int = 3, updated: int = 3,
            available: int = 3, strategy: str = "RollingUpdate", node_selector: dict[str, str] | None = None,
            tolerations: list[dict[str, Any]] | None = None, age: float = 300) -> dict[str, Any]:
    pod_spec: dict[str, Any] = {"containers": [{"name": "a", "image": "agent:2"}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    if tolerations:
        pod_spec["tolerations"] = tolerations
    return {
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": namespace, "uid": uid, "generation": generation,
                     "creationTimestamp": format_rfc3339(NOW - age)},
        "spec": {"selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
                 "updateStrategy": {"type": strategy}},
        "status": {"observedGeneration": observed, "desiredNumberScheduled": desired,
                   "currentNumberScheduled": current, "numberReady": ready,
                   "updatedNumberScheduled": updated, "numberAvailable": available},
    }


def make_pod(name: str, node: str | None, hash_: str, *, ready: bool = True, uid: str = UID,
             phase: str = "Running", pinned: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "a", "image": "agent"}]}
    if node:
        spec["nodeName"] = node
    if pinned:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [pinned]}]}]}}}
    return {
        "metadata": {"name": name, "namespace": "default", "labels": {"controller-revision-hash": hash_},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                          "uid": uid, "controller": True}]},
        "spec": spec,
        "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def make_rev(hash_: str, number: int, *, uid: str = UID) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision",
            "metadata": {"name": f"agent-{hash_}", "namespace": "default",
                         "labels": {"controller-revision-hash": hash_},
                         "ownerReferences": [{"kind": "DaemonSet", "uid": uid, "controller": True}]},
            "revision": number}


def cluster_nodes(workers: int, *, control_planes: int = 1) -> list[dict[str, Any]]:
    nodes = [node_manifest(f"control-plane-{i}", control_plane=True) for i in range(1, control_planes + 1)]
    nodes += [node_manifest(f"worker-{i}") for i in range(1, workers + 1)]
    for n in nodes:
        n["metadata"]["creationTimestamp"] = format_rfc3339(NOW - 600)
    return nodes


def render(renderable: Any, *, width: int = 120) -> tuple[str, Console]:
    console = Console(record=True, width=width, force_terminal=True, color_system="truecolor")
    console.print(renderable)
    return console.export_text(), console


def glyph_styles(renderable: Any, *, width: int = 120) -> list[tuple[str, Style | None]]:
    """(glyph, style) of every rendered cell glyph, in order."""
    console = Console(width=width, force_terminal=True, color_system="truecolor")
    glyphs = set(GLYPHS.values())
    out = []
    for seg in console.render(renderable):
        for ch in seg.text:
            if ch in glyphs:
                out.append((ch, seg.style))
    return out


def same_colour(style: Style | None, state: CellState) -> bool:
    expected = Style.parse(STYLES[state])
    assert style is not None
    return style.color == expected.color and bool(style.dim) == bool(expected.dim)


# --------------------------------------------------------------------------- cell states

@pytest.mark.parametrize(("should_run", "pods", "expected"), [
    (True, [], CellState.MISSING),
    (False, [], CellState.NOT_ELIGIBLE),
    (True, [make_pod("p", "n", "new")], CellState.UPDATED_READY),
    (True, [make_pod("p", "n", "new", ready=False)], CellState.UPDATED_NOT_READY),
    (True, [make_pod("p", "n", "old")], CellState.OLD),
    (True, [make_pod("p", "n", "old"), make_pod("q", "n", "new", ready=False)], CellState.UPDATED_NOT_READY),
    (True, [make_pod("p", "n", "old"), make_pod("q", "n", "new")], CellState.UPDATED_READY),
    # A pod still running where the DaemonSet no longer should (shown, not hidden).
    (False, [make_pod("p", "n", "old")], CellState.OLD),
])
def test_cell_state(should_run: bool, pods: list[dict[str, Any]], expected: CellState) -> None:
    assert cell_state(should_run, pods, hash_="new", generation=None) is expected


def test_cell_state_falls_back_to_template_generation_without_revision() -> None:
    pod = make_pod("p", "n", "whatever")
    pod["metadata"]["labels"]["pod-template-generation"] = "3"
    assert cell_state(True, [pod], hash_="", generation=3) is CellState.UPDATED_READY
    assert cell_state(True, [pod], hash_="", generation=4) is CellState.OLD


def test_current_revision_is_highest_owned_revision() -> None:
    revs = [make_rev("a", 1), make_rev("c", 3), make_rev("b", 2), make_rev("z", 9, uid="other")]
    ds = make_ds()
    assert revision_hash(current_revision(ds, revs)) == "c"
    assert current_revision(make_ds(uid="nobody"), revs) is None


def test_index_pods_skips_terminal_and_foreign_pods_and_follows_node_pin() -> None:
    pods = [
        make_pod("running", "worker-1", "h"),
        make_pod("failed", "worker-1", "h", phase="Failed"),
        make_pod("pending", None, "h", pinned="worker-2"),
        make_pod("other-owner", "worker-1", "h", uid="someone-else"),
    ]
    index = index_pods(pods)
    assert sorted(index) == sorted([UID, "someone-else"])
    assert [p["metadata"]["name"] for p in index[UID]["worker-1"]] == ["running"]
    assert [p["metadata"]["name"] for p in index[UID]["worker-2"]] == ["pending"]


def test_natural_node_order() -> None:
    names = ["worker-10", "worker-2", "control-plane-1", "worker-1"]
    assert sorted(names, key=natural_key) == ["control-plane-1", "worker-1", "worker-2", "worker-10"]


def test_views_use_eligibility_rules() -> None:
    nodes = cluster_nodes(3)
    nodes[2]["metadata"]["labels"]["disk"] = "ssd"  # worker-2
    plain = make_ds("plain", uid="u-plain")
    selective = make_ds("selective", uid="u-sel", node_selector={"disk": "ssd"})
    tolerant = make_ds("tolerant", uid="u-tol", tolerations=[
        {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}])
    views = {v.daemonset["metadata"]["name"]: v for v in build_views([plain, selective, tolerant], nodes, [], [])}
    states = {name: [s for _, s in v.cells] for name, v in views.items()}
    M, N = CellState.MISSING, CellState.NOT_ELIGIBLE
    # node order: control-plane-1, worker-1, worker-2, worker-3
    assert states["plain"] == [N, M, M, M]
    assert states["selective"] == [N, N, M, N]
    assert states["tolerant"] == [M, M, M, M]


# --------------------------------------------------------------------------- rollout line

@pytest.mark.parametrize(("kwargs", "message", "done"), [
    ({"strategy": "OnDelete"}, "rollout status is only available for RollingUpdate strategy type", True),
    ({"generation": 3, "observed": 2}, "Waiting for daemon set spec update to be observed...", False),
    ({"updated": 1, "desired": 3},
     'Waiting for daemon set "agent" rollout to finish: 1 out of 3 new pods have been updated...', False),
    ({"available": 2, "desired": 3},
     'Waiting for daemon set "agent" rollout to finish: 2 of 3 updated pods are available...', False),
    ({}, 'daemon set "agent" successfully rolled out', True),
    ({"desired": 0, "current": 0, "ready": 0, "updated": 0, "available": 0},
     'daemon set "agent" successfully rolled out', True),
])
def test_rollout_message(kwargs: dict[str, Any], message: str, done: bool) -> None:
    assert rollout_message(make_ds(**kwargs)) == (message, done)


# --------------------------------------------------------------------------- table

def test_daemonset_table_has_kubectl_columns_and_cells() -> None:
    ds = make_ds(desired=4, current=3, ready=2, updated=1, available=2, node_selector={"disk": "ssd"}, age=300)
    text, _ = render(daemonset_table([ds], now=NOW))
    header, row = text.splitlines()[:2]
    assert header.split() == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE",
                              "SELECTOR", "AGE"]
    assert "NODE SELECTOR" in header
    assert row.split() == ["agent", "4", "3", "2", "1", "2", "disk=ssd", "5m"]


def test_daemonset_table_all_namespaces_adds_namespace_column_sorted() -> None:
    dss = [make_ds("b", namespace="kube-system", uid="1"), make_ds("a", namespace="default", uid="2")]
    text, _ = render(daemonset_table(dss, now=NOW, all_namespaces=True))
    lines = text.splitlines()
    assert lines[0].split()[:2] == ["NAMESPACE", "NAME"]
    assert [line.split()[:2] for line in lines[1:3]] == [["default", "a"], ["kube-system", "b"]]


# --------------------------------------------------------------------------- whole view

def rollout_fixture() -> tuple[list[dict[str, Any]], ...]:
    nodes = cluster_nodes(5)
    ds = make_ds(desired=5, current=4, ready=3, updated=2, available=3)
    pods = [
        make_pod("p1", "worker-1", "new"),
        make_pod("p2", "worker-2", "new", ready=False),
        make_pod("p3", "worker-3", "old"),
        make_pod("p4", "worker-4", "old"),
    ]
    revs = [make_rev("old", 1), make_rev("new", 2)]
    return [ds], nodes, pods, revs


def test_render_status_text() -> None:
    dss, nodes, pods, revs = rollout_fixture()
    text, _ = render(render_status(dss, nodes, pods, revs, now=NOW))
    assert "UP-TO-DATE" in text and "NODE SELECTOR" in text
    assert "agent  revision 2 (new)" in text
    # counts: 1 updated+ready, 1 updated not ready, 2 old, 1 missing, 1 not eligible
    assert "● 1  ◐ 1  ○ 2  ✗ 1  · 1" in text
    assert 'Waiting for daemon set "agent" rollout to finish: 2 out of 5 new pods have been updated...' in text
    assert "· control-plane-1" in text and "● worker-1" in text and "◐ worker-2" in text
    assert "○ worker-3" in text and "✗ worker-5" in text
    for words in ("updated, ready", "updated, not ready", "old revision", "missing pod", "not eligible"):
        assert words in text


def test_render_status_colours_cells_by_state() -> None:
    dss, nodes, pods, revs = rollout_fixture()
    views = build_views(dss, nodes, pods, revs)
    cells = glyph_styles(node_grid(views[0]))
    expected = [CellState.NOT_ELIGIBLE, CellState.UPDATED_READY, CellState.UPDATED_NOT_READY, CellState.OLD,
                CellState.OLD, CellState.MISSING]
    assert [g for g, _ in cells] == [GLYPHS[s] for s in expected]
    for (_, style), state in zip(cells, expected, strict=True):
        assert same_colour(style, state), (state, style)


def test_legend_uses_the_exported_styles() -> None:
    cells = glyph_styles(legend())
    assert [g for g, _ in cells] == [GLYPHS[s] for s in CellState]
    for (_, style), state in zip(cells, CellState, strict=True):
        assert same_colour(style, state)


def test_styles_are_distinct() -> None:
    assert len(set(STYLES.values())) == len(CellState)
    assert len(set(GLYPHS.values())) == len(CellState)


def test_large_cluster_grid_is_capped_and_summarised() -> None:
    nodes = cluster_nodes(1199)  # 1,200 nodes
    ds = make_ds(desired=1199)
    pods = [make_pod(f"p{i}", f"worker-{i}", "new") for i in range(1, 1000)]
    text, _ = render(render_status([ds], nodes, pods, [make_rev("new", 1)], now=NOW, max_cells=500))
    assert "… 700 more nodes: ● 500  ✗ 200" in text
    assert "● 999  ✗ 200  · 1" in text  # the header counts every node
    assert all(len(line) <= 120 for line in text.splitlines())
    view = build_views([ds], nodes, pods, [make_rev("new", 1)])[0]
    grid = glyph_styles(node_grid(view, max_cells=500))
    summary_glyphs = 2  # "● 500  ✗ 200"
    assert len(grid) == 500 + summary_glyphs
    # Compact mode: cells grouped by ten (groups separated by a space), no node names.
    grid_text, _ = render(node_grid(view, max_cells=500))
    assert "worker-" not in grid_text
    assert grid_text.splitlines()[0].startswith("·●●●●●●●●● ●●●●●●●●●● ")


def test_no_daemonsets() -> None:
    text, _ = render(render_status([], cluster_nodes(1), [], [], now=NOW, namespace="kube-system"))
    assert text.strip() == "No resources found in kube-system namespace."
    text, _ = render(render_status([], cluster_nodes(1), [], [], now=NOW, namespace=None))
    assert text.strip() == "No resources found"


def test_all_namespaces_view_qualifies_names() -> None:
    dss, nodes, pods, revs = rollout_fixture()
    text, _ = render(render_status(dss, nodes, pods, revs, now=NOW, namespace=None))
    assert "default/agent  revision 2" in text
