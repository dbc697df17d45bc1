"""The DaemonSet controller's incremental state: the pod index, each DaemonSet's caches, and their
re-derivation for the nodes that changed (controller.py's module docstring, "Incremental sync").

Why a module of its own: these run for every pod event and every dirty node of every sync —
at maxUnavailable 10% of a 5,000-node rollout, ``refresh`` alone was 6.7% of ``plan``'s rollout
and the controller's other handlers as much again — and they are plain functions over typed
classes: the controller's data, apart from its wiring to informers, queue and API.
``refresh`` is the status half of upstream's ``updateDaemonSetStatus`` and the rolling
update's node classification (``rollingUpdate``), each for the dirty nodes only;
``node_pods`` is ``getNodesToDaemonPods`` for one node.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from everynode.api.meta import controller_ref, field_of
from everynode.api.selectors import LabelSelector
from everynode.controllers.daemonset.daemonpods import is_pod_updated, target_node_or_none
from everynode.controllers.daemonset.manage import PendingCreates
from everynode.controllers.daemonset.placement import Placement
from everynode.controllers.daemonset.status import ZERO, NodeStatus, StatusCounts, node_status
from everynode.controllers.daemonset.update import RolloutIndex, classify_node

Obj = dict[str, Any]


def terminal_and_deleted(pod: Obj) -> bool:
    """A pod that has finished and is being deleted: upstream leaves it out of a node's pods."""
    return bool(field_of(pod["metadata"], "deletionTimestamp")) and \
        field_of(pod.get("status"), "phase") in ("Failed", "Succeeded")


# ---------------------------------------------------------------------------------------------
# The pod index: owner uid → target node → pod key → pod
# ---------------------------------------------------------------------------------------------

class PodIndex:
    """Pods with a DaemonSet controller ref, grouped by owner UID and target node.

    A pod without a target node (no ``nodeName``, no ``metadata.name`` pin: made by hand) has no
    node group, but it is indexed all the same, under its owner alone: upstream's
    ``getDaemonPods`` claims every pod of the namespace on every sync, so such a pod is
    released as soon as its labels stop matching and relabelled by ``dedupCurHistories``; only
    the per-node grouping (``getNodesToDaemonPods``) leaves it out."""

    def __init__(self) -> None:
        self.by_owner: dict[str, dict[str, dict[str, Obj]]] = {}
        self.unplaced: dict[str, dict[str, Obj]] = {}
        self._where: dict[str, tuple[str, str | None]] = {}

    @staticmethod
    def location(pod: Obj) -> tuple[str, str | None] | None:
        """(owner uid, target node or None) for a pod controlled by a DaemonSet, else None."""
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "DaemonSet" or not ref.get("uid"):
            return None
        return ref["uid"], target_node_or_none(pod)

    def upsert(self, key: str, pod: Obj) -> tuple[tuple[str, str | None] | None, tuple[str, str | None] | None]:
        old = self._where.get(key)
        new = self.location(pod)
        if old is not None and old != new:
            self._drop(key, old)
        if new is not None:
            uid, node = new
            if node is None:
                self.unplaced.setdefault(uid, {})[key] = pod
            else:
                self.by_owner.setdefault(uid, {}).setdefault(node, {})[key] = pod
            self._where[key] = new
        else:
            self._where.pop(key, None)
        return old, new

    def remove(self, key: str) -> tuple[str, str | None] | None:
        old = self._where.pop(key, None)
        if old is not None:
            self._drop(key, old)
        return old

    def _drop(self, key: str, loc: tuple[str, str | None]) -> None:
        uid, node = loc
        if node is None:
            unplaced = self.unplaced.get(uid)
            if unplaced is not None:
                unplaced.pop(key, None)
                if not unplaced:
                    del self.unplaced[uid]
            return
        nodes = self.by_owner.get(uid)
        if nodes is None:
            return
        pods = nodes.get(node)
        if pods is not None:
            pods.pop(key, None)
            if not pods:
                del nodes[node]
        if not nodes:
            del self.by_owner[uid]

    def nodes(self, uid: str) -> Iterable[str]:
        return self.by_owner.get(uid, {}).keys()

    def on_node(self, uid: str, node: str) -> Iterable[Obj]:
        return self.by_owner.get(uid, {}).get(node, {}).values()

    def placed(self, uid: str) -> Iterator[Obj]:
        """The owner's pods that have a target node (upstream's ``getNodesToDaemonPods``)."""
        for pods in self.by_owner.get(uid, {}).values():
            yield from pods.values()

    def all(self, uid: str) -> Iterator[Obj]:
        """Every pod the owner controls, with or without a target node (``getDaemonPods``)."""
        yield from self.placed(uid)
        yield from self.unplaced.get(uid, {}).values()


# ---------------------------------------------------------------------------------------------
# Per-DaemonSet incremental state
# ---------------------------------------------------------------------------------------------

@dataclass(slots=True)
class DaemonSetState:
    key: str
    uid: str
    generation: int
    placement: Placement
    selector: LabelSelector
    eligibility: dict[str, tuple[bool, bool]] = field(default_factory=dict)
    manage_dirty: set[str] = field(default_factory=set)
    derived_dirty: set[str] = field(default_factory=set)
    attention: set[str] = field(default_factory=set)
    pending_creates: PendingCreates = field(default_factory=PendingCreates)
    claim_dirty: set[str] = field(default_factory=set)
    full_claim: bool = True
    contrib: dict[str, NodeStatus] = field(default_factory=dict)
    counts: StatusCounts = field(default_factory=StatusCounts)
    pending_available: dict[str, float] = field(default_factory=dict)
    old_by_node: dict[str, int] = field(default_factory=dict)
    old_total: int = 0
    rollout: RolloutIndex = field(default_factory=RolloutIndex)
    rollout_pending: dict[str, float] = field(default_factory=dict)
    hash: str | None = None
    last_full: float = 0.0
    full_passes: int = 0
    # The DaemonSet object the two below were read from (the controller's ``_refresh`` reads
    # them again only for another object: a sync refreshes twice, and most syncs of a rollout
    # see the object of the one before).
    read_from: Obj | None = None
    template_generation: int | None = None
    min_ready: int = 0

    def touch(self, node: str) -> None:
        self.manage_dirty.add(node)
        self.derived_dirty.add(node)


# ---------------------------------------------------------------------------------------------
# Reads and re-derivation
# ---------------------------------------------------------------------------------------------

def node_pods(index: PodIndex, state: DaemonSetState, node: str) -> list[Obj]:
    """The claimed pods targeting ``node``, terminal pods with a deletionTimestamp excluded."""
    sel = state.selector
    return [p for p in index.on_node(state.uid, node)
            if sel.matches(field_of(p["metadata"], "labels")) and not terminal_and_deleted(p)]


def claimed_pods(index: PodIndex, state: DaemonSetState) -> list[Obj]:
    """``getDaemonPods``: every claimed pod, with or without a target node."""
    sel = state.selector
    return [p for p in index.all(state.uid) if sel.matches(field_of(p["metadata"], "labels"))]


def refresh(index: PodIndex, state: DaemonSetState, *, hash_: str, generation: int | None, min_ready: int,
            now: float) -> None:
    """Re-derive status contributions and old-pod counts for dirty / time-pending nodes."""
    if state.hash != hash_:
        state.hash = hash_
        everything = set(state.eligibility) | set(index.nodes(state.uid))
        state.derived_dirty |= everything
        state.manage_dirty |= everything
    todo = state.derived_dirty
    state.derived_dirty = set()
    for pending in (state.pending_available, state.rollout_pending):
        for node, at in pending.items():
            if at < now:
                todo.add(node)
    for node in todo:
        pods = node_pods(index, state, node)
        elig = state.eligibility.get(node)
        if elig is None:
            contrib = ZERO
        else:
            contrib = node_status(elig[0], pods, hash_=hash_, generation=generation,
                                  min_ready_seconds=min_ready, now=now)
        previous = state.contrib.get(node)
        if previous is not None:
            state.counts.add(previous, -1)
        if contrib is ZERO or contrib == ZERO:
            state.contrib.pop(node, None)
        else:
            state.contrib[node] = contrib
            state.counts.add(contrib)
        if contrib.available_at is not None:
            state.pending_available[node] = contrib.available_at
        else:
            state.pending_available.pop(node, None)
        old = sum(1 for p in pods if not field_of(p["metadata"], "deletionTimestamp")
                  and not is_pod_updated(p, hash_, generation))
        prev_old = state.old_by_node.get(node, 0)
        if old:
            state.old_by_node[node] = old
        else:
            state.old_by_node.pop(node, None)
        state.old_total += old - prev_old
        rollout = classify_node(pods, should_run=None if elig is None else elig[0], hash_=hash_,
                                generation=generation, min_ready=min_ready, now=now)
        state.rollout.set(node, rollout)
        if rollout.changes_at is not None:
            state.rollout_pending[node] = rollout.changes_at
        else:
            state.rollout_pending.pop(node, None)
