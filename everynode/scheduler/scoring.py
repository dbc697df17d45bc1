"""Scoring: which feasible node, as kube-scheduler's default profile ranks them.

Upstream ``pkg/scheduler/apis/config/v1/default_plugins.go`` enables these score plugins, with
these weights; each scores a node 0–100 (after its NormalizeScore) and the node with the highest
weighted sum wins (``selectHost``):

=================================  ======  ==================================================
TaintToleration                    3       fewer untolerated PreferNoSchedule taints
NodeAffinity                       2       preferred node affinity terms' weights matched
NodeResourcesFit (LeastAllocated)  1       free cpu/memory share, non-zero requests
PodTopologySpread                  2       fewer matching pods in the node's domains
InterPodAffinity                   2       preferred (anti-)affinity, existing pods' terms
NodeResourcesBalancedAllocation    1       cpu and memory shares close to each other
ImageLocality                      1       not scored: simulated nodes hold no images
=================================  ======  ==================================================

The integer arithmetic follows upstream (integer division where Go divides int64s).  A plugin
whose PreScore skips (no preferred terms, a best-effort pod for BalancedAllocation, no spread
constraint) adds nothing to any node.  Ties go to the first node found (upstream picks one of
the tied nodes at random); a constant plugin changes no ranking, so plugins that would give
every node the same score are not computed.

Only a pod with more than one feasible node is scored — never a pinned DaemonSet pod.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Final

from everynode.api.meta import field_of
from everynode.api.podaffinity import (
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SpreadConstraint,
    compile_spread_constraints,
)
from everynode.api.scheduling import NodeMatcher, compile_node_selector_terms, toleration_tolerates_taint
from everynode.api.selectors import LabelSelector
from everynode.scheduler import interpodaffinity, topologyspread

if TYPE_CHECKING:
    from everynode.scheduler.cache import SchedulerCache
    from everynode.scheduler.nodeinfo import NodeInfo
    from everynode.scheduler.podinfo import PodInfo

MAX_NODE_SCORE: Final = 100

WEIGHT_TAINT_TOLERATION: Final = 3
WEIGHT_NODE_AFFINITY: Final = 2
WEIGHT_NODE_RESOURCES_FIT: Final = 1
WEIGHT_POD_TOPOLOGY_SPREAD: Final = 2
WEIGHT_INTER_POD_AFFINITY: Final = 2
WEIGHT_BALANCED_ALLOCATION: Final = 1

DefaultSelector = Callable[["PodInfo"], LabelSelector]


def default_normalize(scores: list[int], *, reverse: bool) -> list[int]:
    """Upstream ``helper.DefaultNormalizeScore``."""
    top = max(scores) if scores else 0
    if top == 0:
        return [MAX_NODE_SCORE] * len(scores) if reverse else scores
    out = [MAX_NODE_SCORE * s // top for s in scores]
    return [MAX_NODE_SCORE - s for s in out] if reverse else out


# -- NodeResourcesFit (LeastAllocated) and BalancedAllocation ---------------------------------------

def _least_requested(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


def least_allocated_score(pod: PodInfo, node: NodeInfo) -> int:
    """NodeResourcesFit's default scoring strategy over cpu and memory (weight 1 each), with the
    non-zero requests of the pod and of the pods already on the node."""
    total = weights = 0
    if node.alloc_milli_cpu:
        total += _least_requested(node.nonzero_milli_cpu + pod.nonzero_milli_cpu, node.alloc_milli_cpu)
        weights += 1
    if node.alloc_memory:
        total += _least_requested(node.nonzero_memory + pod.nonzero_memory, node.alloc_memory)
        weights += 1
    return total // weights if weights else 0


def balanced_allocation_score(pod: PodInfo, node: NodeInfo) -> int:
    """NodeResourcesBalancedAllocation: 100 × (1 − the spread of the cpu and memory shares),
    with actual requests (``useRequested``)."""
    fractions = []
    if node.alloc_milli_cpu:
        fractions.append(min((node.req_milli_cpu + pod.milli_cpu) / node.alloc_milli_cpu, 1.0))
    if node.alloc_memory:
        fractions.append(min((node.req_memory + pod.memory) / node.alloc_memory, 1.0))
    std = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
    return int((1 - std) * MAX_NODE_SCORE)


# -- TaintToleration and NodeAffinity ---------------------------------------------------------------

def _prefer_no_schedule_tolerations(pod: PodInfo) -> list[dict[str, Any]]:
    return [t for t in pod.tolerations if not t.get("effect") or t.get("effect") == "PreferNoSchedule"]


def taint_toleration_raw(tolerations: Sequence[dict[str, Any]], node: NodeInfo) -> int:
    """How many PreferNoSchedule taints of the node the tolerations do not tolerate."""
    n = 0
    for taint in node.taints:
        if taint.get("effect") != "PreferNoSchedule":
            continue
        if not any(toleration_tolerates_taint(t, taint) for t in tolerations):
            n += 1
    return n


def preferred_node_affinity(pod: PodInfo) -> list[tuple[int, NodeMatcher]]:
    """The pod's weighted preferred node affinity terms, compiled (zero weights dropped)."""
    affinity = field_of(pod.spec.get("affinity"), "nodeAffinity") or {}
    out = []
    for term in affinity.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        weight = int(term.get("weight") or 0)
        if weight:
            out.append((weight, compile_node_selector_terms([term.get("preference") or {}])))
    return out


# -- PodTopologySpread ------------------------------------------------------------------------------

def soft_constraints(pod: PodInfo, default_selector: DefaultSelector | None,
                     ) -> tuple[tuple[SpreadConstraint, ...], bool]:
    """(ScheduleAnyway constraints, require all topologies): the pod's own, else the system
    defaults over the pod's Services and controller (none when that selector is empty)."""
    raw = pod.spread_constraints
    if raw:
        return compile_spread_constraints(raw, pod.labels, SCHEDULE_ANYWAY), True
    if default_selector is None:
        return (), False
    selector = default_selector(pod)
    if selector.empty:
        return (), False
    return compile_spread_constraints(SYSTEM_DEFAULT_CONSTRAINTS, pod.labels, SCHEDULE_ANYWAY,
                                      selector=selector), False


# -- selectHost -------------------------------------------------------------------------------------

def node_scores(pod: PodInfo, feasible: list[NodeInfo], cache: SchedulerCache, *,
                default_selector: DefaultSelector | None = None) -> list[int]:
    """Every feasible node's weighted total, in order."""
    n = len(feasible)
    totals = [least_allocated_score(pod, f) * WEIGHT_NODE_RESOURCES_FIT for f in feasible]
    if pod.milli_cpu or pod.memory:  # BalancedAllocation skips best-effort pods
        for i, f in enumerate(feasible):
            totals[i] += balanced_allocation_score(pod, f) * WEIGHT_BALANCED_ALLOCATION
    if any(f.taints for f in feasible):
        tolerations = _prefer_no_schedule_tolerations(pod)
        raw = [taint_toleration_raw(tolerations, f) for f in feasible]
        if any(raw):
            for i, s in enumerate(default_normalize(raw, reverse=True)):
                totals[i] += s * WEIGHT_TAINT_TOLERATION
    preferred = preferred_node_affinity(pod)
    if preferred:
        raw = [sum(w for w, match in preferred if match(f.node)) for f in feasible]
        for i, s in enumerate(default_normalize(raw, reverse=False)):
            totals[i] += s * WEIGHT_NODE_AFFINITY
    constraints, require_all = soft_constraints(pod, default_selector)
    if constraints:
        spread = topologyspread.score_nodes(pod, constraints, feasible, cache,
                                            require_all_topologies=require_all)
        for i, s in enumerate(spread):
            totals[i] += s * WEIGHT_POD_TOPOLOGY_SPREAD
    if pod.has_pod_affinity or cache.affinity_pods:
        topo = interpodaffinity.topology_scores(pod, cache)
        if topo:
            for i, s in enumerate(interpodaffinity.score_nodes(topo, feasible)):
                totals[i] += s * WEIGHT_INTER_POD_AFFINITY
    assert len(totals) == n
    return totals


def select_host(pod: PodInfo, feasible: list[NodeInfo], cache: SchedulerCache, *,
                default_selector: DefaultSelector | None = None) -> NodeInfo:
    """The feasible node with the highest total (the first of equals)."""
    if len(feasible) == 1:
        return feasible[0]
    totals = node_scores(pod, feasible, cache, default_selector=default_selector)
    best = 0
    for i in range(1, len(totals)):
        if totals[i] > totals[best]:
            best = i
    return feasible[best]
