"""What ``everynode plan`` observes of the simulated rollout: per node, the DaemonSet's pods and
the node's readiness and wish for one; the steps, invariants and preemption victims
(:mod:`everynode.product.plan` says what each is and how the answer uses them).

Why a module of its own: the recorder is fed by the shared informers, one call for every node,
pod and DaemonSet event of the copy — several per pod replaced — and so is compiled with the
write path (compiled.py), which ``plan``'s other code (loading, seeding, the answer) need not be.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from everynode.api.meta import controller_uid, field_of, metadata_of
from everynode.api.node import is_node_ready
from everynode.api.pod import is_pod_available, is_pod_ready
from everynode.controllers.daemonset.daemonpods import pod_hash, target_node_or_none
from everynode.controllers.daemonset.placement import Placement
from everynode.product.waiting import rolled_out

Obj = dict[str, Any]


PodView = tuple[str, str, bool, bool]  # revision hash, phase, Ready, terminating


def _pod_view(pod: Obj) -> PodView:
    md = metadata_of(pod)
    return (pod_hash(pod) or "",
            field_of(pod.get("status"), "phase") or "Pending", is_pod_ready(pod),
            bool(md.get("deletionTimestamp")))


class NodeTrack:
    """What the recorder knows of one node (a plain class: see compiled.py's list and the README's
    rule for records in compiled modules)."""

    __slots__ = ("ready", "wanted", "had_available", "pods", "available_since", "state")

    def __init__(self) -> None:
        self.ready = False
        self.wanted = False
        self.had_available = False  # at the change
        self.pods: dict[str, Obj] = {}  # uid -> pod of the DaemonSet
        self.available_since: dict[str, float] = {}  # hash -> first loop time available
        self.state: Any = None  # the last state written to the trace


class RolloutRecorder:
    """Per-node state of one DaemonSet's rollout, steps, invariants, victims (see the module doc)."""

    def __init__(self, *, loop: asyncio.AbstractEventLoop, now: Callable[[], float], min_ready: int,
                 max_per_node: int,
                 trace: bool) -> None:
        self.loop = loop
        self.now = now  # () -> epoch seconds (the plane's clock)
        self.min_ready = min_ready
        self.max_per_node = max_per_node
        self.tracing = trace
        self.ds_uid: str | None = None
        self.placement: Placement | None = None
        self.nodes: dict[str, NodeTrack] = {}
        self.node_objs: dict[str, Obj] = {}
        self.t0: float | None = None
        self.step_at: float = loop.time()
        self.touched: set[str] = set()
        self.waiting_available: set[str] = set()  # nodes with a Ready pod not yet available
        self.unavailable: set[str] = set()
        self.peak_unavailable = 0
        self.max_pods_seen = 0
        self.one_pod_per_node = True
        self.last_change: float = loop.time()
        self.steps: list[Obj] = []
        self.victims: list[Obj] = []
        self.done = asyncio.Event()
        self.generation = 0

    # -- identity ---------------------------------------------------------------------------
    def track(self, name: str) -> NodeTrack:
        t = self.nodes.get(name)
        if t is None:
            t = self.nodes[name] = NodeTrack()
        return t

    def set_daemonset(self, ds: Obj) -> None:
        self.ds_uid = metadata_of(ds).get("uid")
        self.placement = Placement(ds)
        self.generation = int(metadata_of(ds).get("generation") or 0)
        self._advance()
        for name, node in self.node_objs.items():
            self.track(name).wanted = self.placement.fit(node).should_run
            self._touch(name)

    # -- informer handlers ------------------------------------------------------------------
    def on_node(self, node: Obj) -> None:
        self._advance()
        name = metadata_of(node).get("name") or ""
        self.node_objs[name] = node
        t = self.track(name)
        ready = is_node_ready(node)
        wanted = self.placement.fit(node).should_run if self.placement is not None else False
        if ready != t.ready or wanted != t.wanted:
            t.ready, t.wanted = ready, wanted
            self._touch(name)

    def on_node_delete(self, node: Obj) -> None:
        self._advance()
        name = metadata_of(node).get("name") or ""
        self.node_objs.pop(name, None)
        t = self.nodes.get(name)
        if t is not None:
            t.ready = t.wanted = False
            self._touch(name)

    def on_pod(self, pod: Obj) -> None:
        self._advance()
        if controller_uid(pod) == self.ds_uid and self.ds_uid is not None:
            node = target_node_or_none(pod)
            if node is not None:
                self.track(node).pods[metadata_of(pod).get("uid") or ""] = pod
                self._touch(node)
            return
        if self.t0 is not None:
            self._check_victim(pod)

    def on_pod_update(self, old: Obj, new: Obj) -> None:
        self.on_pod(new)

    def on_pod_delete(self, pod: Obj) -> None:
        self._advance()
        node = target_node_or_none(pod)
        if node is None or self.ds_uid is None or controller_uid(pod) != self.ds_uid:
            return
        t = self.nodes.get(node)
        if t is not None and t.pods.pop(metadata_of(pod).get("uid") or "", None) is not None:
            self._touch(node)

    def on_daemonset(self, ds: Obj) -> None:
        self._advance()
        if metadata_of(ds).get("uid") != self.ds_uid or self.t0 is None:
            return
        status: dict[str, Any] = ds.get("status") or {}
        if int(status.get("observedGeneration") or 0) < self.generation:
            return
        try:
            complete = rolled_out(ds)
        except ValueError:  # OnDelete: done when every wanted node runs an updated pod
            complete = False
        if complete:
            self._close_step()
            self.done.set()

    def _check_victim(self, pod: Obj) -> None:
        for c in field_of(pod.get("status"), "conditions") or ():
            if c.get("type") == "DisruptionTarget" and c.get("reason") == "PreemptionByScheduler":
                key = f"{metadata_of(pod).get('namespace')}/{metadata_of(pod).get('name')}"
                if all(v["pod"] != key for v in self.victims):
                    self.victims.append({"pod": key, "node": field_of(pod.get("spec"), "nodeName") or "",
                                         "priority": int(field_of(pod.get("spec"), "priority") or 0),
                                         "at": round(self.loop.time() - (self.t0 or 0.0), 6)})
                    self._mark_change()
                return

    # -- steps ------------------------------------------------------------------------------
    def _advance(self) -> None:
        """Close the step of an earlier instant before the first change of this one is taken in
        (the step's state is the state at the end of its instant)."""
        now = self.loop.time()
        if now != self.step_at:
            self._close_step()
            self.step_at = now

    def _touch(self, name: str) -> None:
        # (every caller has taken the instant in with ``_advance`` already)
        self.touched.add(name)

    def _mark_change(self) -> None:
        self.last_change = max(self.last_change, self.loop.time())

    def node_state(self, t: NodeTrack) -> Obj:
        return {"ready": t.ready, "wanted": t.wanted,
                "pods": sorted([list(_pod_view(p)) for p in t.pods.values()])}

    def _available(self, t: NodeTrack, now: float) -> bool:
        """Whether one of the node's pods is available and not terminating."""
        return any(not metadata_of(p).get("deletionTimestamp") and is_pod_available(p, self.min_ready, now)
                   for p in t.pods.values())

    def _close_step(self) -> None:
        names = self.touched | self.waiting_available
        if not names:
            return
        self.touched = set()
        now = self.now()
        changed: dict[str, Obj] = {}
        for name in sorted(names):
            t = self.nodes[name]
            state = self.node_state(t)
            if state != t.state:
                t.state = state
                changed[name] = state
            live = [p for p in t.pods.values() if not metadata_of(p).get("deletionTimestamp")]
            self.max_pods_seen = max(self.max_pods_seen, len(live))
            if len(live) > self.max_per_node:
                self.one_pod_per_node = False
            self.waiting_available.discard(name)
            available = False
            for p in live:
                if is_pod_available(p, self.min_ready, now):
                    available = True
                    h = pod_hash(p) or ""
                    t.available_since.setdefault(h, self.step_at)
                elif is_pod_ready(p):
                    self.waiting_available.add(name)
            if self.t0 is not None and t.had_available and t.ready and t.wanted and not available:
                self.unavailable.add(name)
            else:
                self.unavailable.discard(name)
        self.peak_unavailable = max(self.peak_unavailable, len(self.unavailable))
        if changed:
            self.last_change = max(self.last_change, self.step_at)
            if self.tracing and self.t0 is not None:
                self.steps.append({"at": round(self.step_at - self.t0, 6), "nodes": changed,
                                   "unavailable": len(self.unavailable)})

    def start(self) -> Obj:
        """The change is being applied now: the baseline for the budget, the trace's first state."""
        self._close_step()
        now = self.now()
        self.t0 = self.loop.time()
        self.step_at = self.t0
        self.last_change = self.t0
        for t in self.nodes.values():
            t.had_available = t.ready and self._available(t, now)
        return {name: self.node_state(self.nodes[name]) for name in sorted(self.nodes)}

    def catch_up(self) -> None:
        """Close the step of an earlier instant that no event since has closed: the no-progress
        wait counts from the last change, which a step records when it closes (else it would count
        from the change before, and end sooner when nothing else happens, as with modelled
        heartbeats, than when heartbeats are written)."""
        self._advance()

    def finish(self) -> None:
        self._close_step()
