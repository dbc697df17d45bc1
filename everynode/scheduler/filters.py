"""The scheduler's filters and the FailedScheduling message, as kube-scheduler words them.

Each node-local filter is a pure function ``(PodInfo, NodeInfo) -> Status | None`` (None =
passes).  They run in upstream's default-profile order (``pkg/scheduler/apis/config/v1/
default_plugins.go``): NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
NodeResourcesFit, then the two cluster-wide ones, PodTopologySpread and InterPodAffinity, which
also read the attempt's :class:`~everynode.scheduler.cycle.CycleState` (the counts their
PreFilter made; ``cycle=None`` means both were skipped).  The first failing filter decides the
node's reasons (``RunFilterPlugins`` stops there).

A Status carries the reasons shown in the message and whether preemption could help: filters
that no eviction can fix (name, cordon, taints, affinity, a request larger than the whole node)
are *unresolvable* (upstream ``UnschedulableAndUnresolvable``); ports and resources are not.

The message (``framework.FitError.Error``): ``0/N nodes are available: `` + the reasons counted
over nodes, each rendered ``"<count> <reason>"`` and sorted as strings, joined by ``", "``, then
``"."``; then, after a space, the post-filter (preemption) message, which starts with
``preemption: `` and is itself a FitError text (ending in ``.``; v1.33 adds no second dot).
Nodes excluded by the DaemonSet pin (the NodeAffinity pre-filter) are counted as
``node(s) didn't satisfy plugin(s) [NodeAffinity]`` without being evaluated.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any, Final

from everynode.api.node import TAINT_NODE_UNSCHEDULABLE
from everynode.api.scheduling import find_untolerated_taint
from everynode.scheduler import interpodaffinity, topologyspread
from everynode.scheduler.cycle import CycleState
from everynode.scheduler.nodeinfo import NodeInfo
from everynode.scheduler.podinfo import PodInfo

Obj = dict[str, Any]

# Reasons, verbatim from the upstream plugins.
REASON_NODE_NAME: Final = "node(s) didn't match the requested node name"
REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"
REASON_NODE_AFFINITY: Final = "node(s) didn't match Pod's node affinity/selector"
REASON_NODE_PORTS: Final = "node(s) didn't have free ports for the requested pod ports"
REASON_TOO_MANY_PODS: Final = "Too many pods"
REASON_PIN_EXCLUDED: Final = "node(s) didn't satisfy plugin(s) [NodeAffinity]"
REASON_AFFINITY_CONFLICT: Final = "pod affinity terms conflict"
NO_NODES_AVAILABLE: Final = "no nodes available to schedule pods"
REASON_AFFINITY_RULES = interpodaffinity.REASON_AFFINITY_RULES
REASON_ANTI_AFFINITY_RULES = interpodaffinity.REASON_ANTI_AFFINITY_RULES
REASON_EXISTING_ANTI_AFFINITY = interpodaffinity.REASON_EXISTING_ANTI_AFFINITY
REASON_SPREAD_CONSTRAINTS = topologyspread.REASON_CONSTRAINTS
REASON_SPREAD_MISSING_LABEL = topologyspread.REASON_MISSING_LABEL

PREEMPTION_NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
PREEMPTION_NO_VICTIMS: Final = "No preemption victims found for incoming pod"
PREEMPTION_POLICY_NEVER: Final = "not eligible due to preemptionPolicy=Never."
PREEMPTION_TERMINATING_VICTIM: Final = "not eligible due to a terminating pod on the nominated node."
UNSCHEDULABLE_TAINT_KEY = TAINT_NODE_UNSCHEDULABLE  # the old name, kept for callers


class Status:
    """Why a node was rejected.  ``unresolvable``: preemption cannot change the outcome."""

    __slots__ = ("reasons", "unresolvable")

    def __init__(self, *reasons: str, unresolvable: bool = False) -> None:
        self.reasons: tuple[str, ...] = reasons
        self.unresolvable = unresolvable

    def __repr__(self) -> str:
        return f"Status({', '.join(map(repr, self.reasons))}, unresolvable={self.unresolvable})"

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Status) and self.reasons == other.reasons
                and self.unresolvable == other.unresolvable)

    def __hash__(self) -> int:
        return hash((self.reasons, self.unresolvable))


_NODE_NAME: Final = Status(REASON_NODE_NAME, unresolvable=True)
_UNSCHEDULABLE: Final = Status(REASON_UNSCHEDULABLE, unresolvable=True)
_NODE_AFFINITY: Final = Status(REASON_NODE_AFFINITY, unresolvable=True)
_NODE_PORTS: Final = Status(REASON_NODE_PORTS)
PIN_EXCLUDED: Final = Status(REASON_PIN_EXCLUDED, unresolvable=True)
_AFFINITY_RULES: Final = Status(REASON_AFFINITY_RULES, unresolvable=True)
_ANTI_AFFINITY_RULES: Final = Status(REASON_ANTI_AFFINITY_RULES)
_EXISTING_ANTI_AFFINITY: Final = Status(REASON_EXISTING_ANTI_AFFINITY)
_SPREAD: Final = {REASON_SPREAD_CONSTRAINTS: Status(REASON_SPREAD_CONSTRAINTS),
                  REASON_SPREAD_MISSING_LABEL: Status(REASON_SPREAD_MISSING_LABEL, unresolvable=True)}

_UNSCHEDULABLE_TAINT: Final = {"key": TAINT_NODE_UNSCHEDULABLE, "effect": "NoSchedule"}


def node_name_filter(pod: PodInfo, node: NodeInfo) -> Status | None:
    """NodeName: a pod naming a node in ``spec.nodeName`` fits only that node."""
    if pod.node_name and pod.node_name != node.name:
        return _NODE_NAME
    return None


def node_unschedulable_filter(pod: PodInfo, node: NodeInfo) -> Status | None:
    """NodeUnschedulable: a cordoned node, unless the pod tolerates the unschedulable taint."""
    if not node.unschedulable:
        return None
    if find_untolerated_taint([_UNSCHEDULABLE_TAINT], pod.tolerations) is None:
        return None
    return _UNSCHEDULABLE


def taint_toleration_filter(pod: PodInfo, node: NodeInfo) -> Status | None:
    """TaintToleration: the first NoSchedule/NoExecute taint the pod does not tolerate."""
    if not node.taints:
        return None
    taint = find_untolerated_taint(node.taints, pod.tolerations)
    if taint is None:
        return None
    return Status(f"node(s) had untolerated taint {{{taint.get('key', '')}: {taint.get('value', '')}}}",
                  unresolvable=True)


def node_affinity_filter(pod: PodInfo, node: NodeInfo) -> Status | None:
    """NodeAffinity: ``nodeSelector`` and required node affinity (incl. the DaemonSet pin)."""
    spec = pod.spec
    if not spec.get("nodeSelector") and not spec.get("affinity"):
        return None
    if pod.matches_node(node.node):
        return None
    return _NODE_AFFINITY


def node_ports_filter(pod: PodInfo, node: NodeInfo) -> Status | None:
    """NodePorts: a wanted host port (protocol, port) already taken on a conflicting host IP."""
    if pod.host_ports and node.port_conflict(pod.host_ports):
        return _NODE_PORTS
    return None


def node_resources_fit_filter(pod: PodInfo, node: NodeInfo) -> Status | None:
    """NodeResourcesFit: pod count, then cpu, memory and other requested resources."""
    reasons: list[str] = []
    unresolvable = True
    if len(node.pods) + 1 > node.alloc_pods:
        reasons.append(REASON_TOO_MANY_PODS)
        if node.alloc_pods >= 1:
            unresolvable = False
    if pod.milli_cpu or pod.memory or pod.scalar:
        if node.alloc_milli_cpu < pod.milli_cpu + node.req_milli_cpu:
            reasons.append("Insufficient cpu")
            if pod.milli_cpu <= node.alloc_milli_cpu:
                unresolvable = False
        if node.alloc_memory < pod.memory + node.req_memory:
            reasons.append("Insufficient memory")
            if pod.memory <= node.alloc_memory:
                unresolvable = False
        for name, amount in pod.scalar.items():
            alloc = node.alloc_scalar.get(name, 0)
            if alloc < amount + node.req_scalar.get(name, 0):
                reasons.append(f"Insufficient {name}")
                if amount <= alloc:
                    unresolvable = False
    if not reasons:
        return None
    return Status(*reasons, unresolvable=unresolvable)


def pod_topology_spread_filter(pod: PodInfo, node: NodeInfo, cycle: CycleState | None = None) -> Status | None:
    """PodTopologySpread: the pod's DoNotSchedule constraints (counts from ``cycle``)."""
    if cycle is None or cycle.spread is None:
        return None
    reason = topologyspread.spread_filter(cycle.spread, node)
    return None if reason is None else _SPREAD[reason]


def inter_pod_affinity_filter(pod: PodInfo, node: NodeInfo, cycle: CycleState | None = None) -> Status | None:
    """InterPodAffinity: the pod's required (anti-)affinity, then existing pods' anti-affinity."""
    if cycle is None or cycle.affinity is None:
        return None
    state = cycle.affinity
    labels = node.labels
    if state.required_affinity and not interpodaffinity.satisfies_pod_affinity(state, labels):
        return _AFFINITY_RULES
    if not interpodaffinity.satisfies_pod_anti_affinity(state, labels):
        return _ANTI_AFFINITY_RULES
    if not interpodaffinity.satisfies_existing_anti_affinity(state, labels):
        return _EXISTING_ANTI_AFFINITY
    return None


FilterFn = Callable[[PodInfo, NodeInfo], "Status | None"]
ClusterFilterFn = Callable[[PodInfo, NodeInfo, "CycleState | None"], "Status | None"]

FILTERS: Final[tuple[FilterFn, ...]] = (
    node_unschedulable_filter,
    node_name_filter,
    taint_toleration_filter,
    node_affinity_filter,
    node_ports_filter,
    node_resources_fit_filter,
)
"""The node-local filters, in order."""

CLUSTER_FILTERS: Final[tuple[ClusterFilterFn, ...]] = (
    pod_topology_spread_filter,
    inter_pod_affinity_filter,
)
"""The filters that read the attempt's :class:`CycleState`, in order, after :data:`FILTERS`."""


def run_filters(pod: PodInfo, node: NodeInfo, cycle: CycleState | None = None) -> Status | None:
    """All filters in order; the first rejection wins (None: the pod fits the node).

    ``cycle`` is the attempt's PreFilter state (:func:`everynode.scheduler.cycle.prefilter`);
    without it the cluster-wide filters pass."""
    for f in FILTERS:
        st = f(pod, node)
        if st is not None:
            return st
    if cycle is not None:
        for g in CLUSTER_FILTERS:
            st = g(pod, node, cycle)
            if st is not None:
                return st
    return None


def run_filters_with_nominated(pod: PodInfo, node: NodeInfo, cycle: CycleState | None = None) -> Status | None:
    """As upstream's ``RunFilterPluginsWithNominatedPods``: pods nominated to this node with a
    priority at least the pod's own count as already there (they were promised the space),
    in the node's usage and in the cluster-wide counts."""
    if node.nominated:
        extra = [n for k, n in node.nominated.items()
                 if k != pod.key and n.priority >= pod.priority and k not in node.pods]
        if extra:
            trial = node.clone_usage()
            trial_cycle = cycle.clone() if cycle is not None else None
            for n in extra:
                trial.add_pod(n)
                if trial_cycle is not None:
                    trial_cycle.add_pod(n, node)
            st = run_filters(pod, trial, trial_cycle)
            if st is not None:
                return st
    return run_filters(pod, node, cycle)


# -- messages --------------------------------------------------------------------------------------

def reasons_histogram(statuses: Iterable[Status | None]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for st in statuses:
        if st is not None:
            for r in st.reasons:
                counts[r] += 1
    return counts


def format_reasons(counts: Counter[str] | dict[str, int]) -> str:
    """``"1 node(s) ..., 2 node(s) ..."``: ``"<count> <reason>"`` strings sorted, comma-joined."""
    return ", ".join(sorted(f"{n} {reason}" for reason, n in counts.items()))


def fit_error_message(num_all_nodes: int, counts: Counter[str] | dict[str, int], *,
                      prefilter_msg: str = "", postfilter_msg: str = "") -> str:
    """``framework.FitError.Error()``."""
    msg = f"0/{num_all_nodes} nodes are available:"
    if prefilter_msg:
        msg += f" {prefilter_msg}."
    else:
        msg += f" {format_reasons(counts)}."
    if postfilter_msg:
        msg += f" {postfilter_msg}"
    return msg


def preemption_message(num_all_nodes: int, counts: Counter[str] | dict[str, int]) -> str:
    """The preemption post-filter's message when no candidate was found."""
    return "preemption: " + fit_error_message(num_all_nodes, counts)
