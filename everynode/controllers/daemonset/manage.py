"""``manage``'s per-node decision (§4.3): create here? which pods to delete?

Upstream: ``daemon_controller.go`` ``podsShouldBeOnNode`` and ``getUnscheduledPodsWithoutNode``.
Factored as a function of one node's inputs so the controller can evaluate only the nodes that
changed (see controller.py) while the full pass evaluates all of them with the same code.

The only side effects are on the failed-pod :class:`~.backoff.Backoff` (advanced when a failed
pod is deleted, as upstream) — events to emit and the requeue delay are *returned*.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import Any, Final

from everynode.api.meta import field_of
from everynode.api.pod import is_pod_available, is_pod_ready
from everynode.controllers.daemonset.backoff import Backoff
from everynode.controllers.daemonset.daemonpods import pod_hash, sort_oldest_first

Obj = dict[str, Any]

FAILED_DAEMON_POD: Final = "FailedDaemonPod"
SUCCEEDED_DAEMON_POD: Final = "SucceededDaemonPod"


class NodeActions:
    """What ``podsShouldBeOnNode`` decides for one node.  A plain class, not a dataclass: compiled,
    its constructor is native (a dataclass's generated ``__init__`` runs interpreted, for every
    node of every sync)."""

    def __init__(self) -> None:
        self.create = False
        self.delete: list[str] = []
        self.events: list[tuple[str, str, str]] = []  # (type, reason, message)
        self.requeue_after: float | None = None
        # False while the node's state can change with time alone (backoff, a surge pair waiting
        # for availability): the controller re-evaluates such nodes on every sync.
        self.steady = True


def _name(pod: Obj) -> str:
    return pod["metadata"]["name"]


def node_actions(node_name: str, should_run: bool, should_continue: bool, pods: Sequence[Obj], *,
                 hash_: str, surge: bool, min_ready_seconds: int, backoff: Backoff, backoff_key: str,
                 now: float) -> NodeActions:
    """``podsShouldBeOnNode`` for one node.

    ``pods`` are the DaemonSet's pods targeting the node, terminal pods with a deletionTimestamp
    excluded (§3.4); "exists" means this list is non-empty (terminating pods included).
    """
    out = NodeActions()
    exists = bool(pods)
    if should_run and not exists:
        out.create = True
        out.steady = False
        return out
    if should_continue:
        running: list[Obj] = []
        for pod in pods:
            md = pod["metadata"]
            if md.get("deletionTimestamp"):
                continue
            phase = field_of(pod.get("status"), "phase")
            if phase == "Failed":
                # The kubelet may keep rejecting the pod: do not hot-loop.
                out.steady = False
                if backoff.is_in_backoff_since_update(backoff_key, now):
                    out.requeue_after = backoff.get(backoff_key)
                    continue
                backoff.next(backoff_key, now)
                out.events.append(("Warning", FAILED_DAEMON_POD,
                                   f"Found failed daemon pod {md.get('namespace') or ''}/{md['name']} on node "
                                   f"{node_name}, will try to kill it"))
                out.delete.append(md["name"])
            elif phase == "Succeeded":
                out.events.append(("Normal", SUCCEEDED_DAEMON_POD,
                                   f"Found succeeded daemon pod {md.get('namespace') or ''}/{md['name']} on node "
                                   f"{node_name}, will try to delete it"))
                out.delete.append(md["name"])
            else:
                running.append(pod)
        if not surge:
            if len(running) > 1:
                # Keep the oldest, delete the rest.
                out.delete.extend(_name(p) for p in sort_oldest_first(running)[1:])
        elif len(running) <= 1:
            if not running and should_run:
                out.create = True  # surge: a replacement may start while the old pod terminates
        else:
            oldest_new: Obj | None = None
            oldest_old: Obj | None = None
            for pod in sort_oldest_first(running):
                if pod_hash(pod) == hash_:
                    if oldest_new is None:
                        oldest_new = pod
                        continue
                elif oldest_old is None:
                    oldest_old = pod
                    continue
                out.delete.append(_name(pod))
            if oldest_new is not None and oldest_old is not None:
                if not is_pod_ready(oldest_old):
                    out.delete.append(_name(oldest_old))
                elif is_pod_available(oldest_new, min_ready_seconds, now):
                    out.delete.append(_name(oldest_old))
                else:
                    out.steady = False  # waiting for the new pod to become available
    elif exists:
        out.delete.extend(_name(p) for p in pods if not field_of(p["metadata"], "deletionTimestamp"))
    if out.create or out.delete or out.requeue_after is not None:
        out.steady = False
    return out


def unscheduled_pods_on_missing_node(pods: Sequence[Obj]) -> list[str]:
    """``getUnscheduledPodsWithoutNode`` for one vanished node: its unbound pods (pod GC cannot
    delete pods that were never scheduled)."""
    return [_name(p) for p in pods if not field_of(p.get("spec"), "nodeName")]


class PendingCreates:
    """Nodes whose last evaluation said "create a pod here" and that nothing has touched since,
    handed out a burst at a time in node-name order.

    Why: ``syncNodes`` creates at most ``burstReplicas`` (250) pods per sync, so while a DaemonSet
    converges onto N nodes most of them wait for a later sync.  Re-evaluating every waiting node
    on every sync (they are "not steady") made converge O(N² / burst): 842,000 evaluations at
    20,000 nodes, 8.5 million at 65,000.  A node that needs a pod and gets no node or pod event
    keeps needing exactly that — ``podsShouldBeOnNode`` with no pods on an eligible node depends
    on nothing that changes with time alone — so its verdict is kept here instead, and an event
    for the node (which marks it dirty) sends it back to full evaluation.  :meth:`take` returns
    the same nodes, in the same order, as the first ``burst`` of a sorted re-evaluation of all of
    them would: a heap of names with lazy removal (an entry whose node has left the set is
    skipped when it surfaces).
    """

    __slots__ = ("_members", "_heap")

    def __init__(self) -> None:
        self._members: set[str] = set()
        self._heap: list[str] = []

    def __len__(self) -> int:
        return len(self._members)

    def __contains__(self, node: object) -> bool:
        return node in self._members

    def add(self, node: str) -> None:
        if node not in self._members:
            self._members.add(node)
            heapq.heappush(self._heap, node)

    def discard(self, node: str) -> None:
        self._members.discard(node)

    def take(self, count: int) -> list[str]:
        """Remove and return the ``count`` smallest node names (fewer when there are fewer)."""
        out: list[str] = []
        heap, members = self._heap, self._members
        while heap and len(out) < count:
            node = heapq.heappop(heap)
            if node in members:  # stale entries (removed, or a duplicate of a re-added node) skip
                members.discard(node)
                out.append(node)
        if len(heap) > 2 * len(members) + 1024:
            self._heap = sorted(members)  # drop the stale entries (a sorted list is a heap)
        return out
