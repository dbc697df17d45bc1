"""One scheduling attempt's cluster-wide state: what the PreFilter plugins counted for this pod.

Node-local filters (taints, resources, ports…) read one NodeInfo.  Inter-pod affinity and
topology spreading depend on pods elsewhere in the cluster; upstream computes their counts once
per attempt (PreFilter), reads them per node (Filter), and adjusts a copy when preemption removes
victims or nominated pods are added (``PreFilterExtensions.AddPod/RemovePod``).  A pod for which
both plugins skip — no pod affinity, no DoNotSchedule spread constraint, no existing
anti-affinity term matching it — gets no state at all (None), and its filters cost nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from everynode.scheduler import interpodaffinity, topologyspread

if TYPE_CHECKING:
    from everynode.scheduler.cache import SchedulerCache
    from everynode.scheduler.nodeinfo import NodeInfo
    from everynode.scheduler.podinfo import PodInfo


class CycleState:
    __slots__ = ("affinity", "spread")

    def __init__(self, affinity: interpodaffinity.AffinityState | None,
                 spread: topologyspread.SpreadState | None) -> None:
        self.affinity = affinity
        self.spread = spread

    def clone(self) -> CycleState:
        return CycleState(self.affinity.clone() if self.affinity is not None else None,
                          self.spread.clone() if self.spread is not None else None)

    def add_pod(self, other: PodInfo, node: NodeInfo) -> None:
        """``other`` is (as if) on ``node`` now."""
        self._update(other, node, 1)

    def remove_pod(self, other: PodInfo, node: NodeInfo) -> None:
        """``other`` is (as if) gone from ``node``."""
        self._update(other, node, -1)

    def _update(self, other: PodInfo, node: NodeInfo, delta: int) -> None:
        if self.affinity is not None:
            self.affinity.update_with_pod(other, node.labels, delta)
        if self.spread is not None:
            self.spread.update_with_pod(other, node, delta)


def prefilter(pod: PodInfo, cache: SchedulerCache) -> CycleState | None:
    """The cluster-wide state for one attempt, or None when no plugin needs one."""
    affinity = interpodaffinity.prefilter(pod, cache)
    spread = topologyspread.prefilter(pod, cache)
    if affinity is None and spread is None:
        return None
    return CycleState(affinity, spread)
