"""Preemption: which lower-priority pods to evict so that a pod that fits nowhere fits somewhere.

Upstream (``pkg/scheduler/framework/preemption``, ``plugins/defaultpreemption``), reproduced:
* Eligibility: ``preemptionPolicy: Never`` never preempts; a pod already nominated to a node
  where a lower-priority pod is still terminating waits for it instead of preempting again.
* Only nodes whose rejection preemption could fix are candidates (ports, resources); a node
  rejected by an unresolvable filter (taint, affinity, cordon, the DaemonSet pin) is counted
  "Preemption is not helpful for scheduling".  For a pinned DaemonSet pod that leaves its node.
* On a candidate node: remove *every* pod of strictly lower priority — from the node's usage
  and from a copy of the attempt's inter-pod affinity / spreading counts, so a pod blocked by
  the anti-affinity of lower-priority pods can preempt them; if the pod still does not
  fit, the node is no candidate.  Otherwise add the removed pods back, most important first
  (higher priority, then older), keeping each one that still leaves room: what is left is the
  minimal set of victims in that order.  Equal or higher priority pods are never victims.
* Among candidate nodes pick (``pickOneNodeForPreemption``, without PodDisruptionBudgets): the
  lowest highest-victim priority, then the lowest sum of victim priorities, then the fewest
  victims, then the latest start among the most important victims, then the node name (upstream
  takes the first; we make it deterministic).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from everynode.scheduler.cycle import CycleState
from everynode.scheduler.filters import (
    PREEMPTION_NO_VICTIMS,
    PREEMPTION_NOT_HELPFUL,
    PREEMPTION_POLICY_NEVER,
    PREEMPTION_TERMINATING_VICTIM,
    Status,
    preemption_message,
    run_filters,
)
from everynode.scheduler.nodeinfo import NodeInfo
from everynode.scheduler.podinfo import PodInfo

_NO_VICTIMS: Final = Status(PREEMPTION_NO_VICTIMS, unresolvable=True)

# Offset that makes every int32 priority positive before summing (as upstream does).
_PRIORITY_OFFSET: Final = 2**31


def eligible_to_preempt(pod: PodInfo, nominated_node: NodeInfo | None) -> str | None:
    """None if the pod may preempt; else the reason (upstream ``PodEligibleToPreemptOthers``)."""
    if pod.preempt_never:
        return PREEMPTION_POLICY_NEVER
    if nominated_node is not None:
        for other in nominated_node.pods.values():
            if other.terminating and other.priority < pod.priority:
                return PREEMPTION_TERMINATING_VICTIM
    return None


def select_victims_on_node(pod: PodInfo, node: NodeInfo,
                           cycle: CycleState | None = None) -> tuple[list[PodInfo], Status | None]:
    """The minimal set of lower-priority pods to evict from ``node`` so ``pod`` fits.

    ``cycle`` is the attempt's PreFilter state (left unchanged: a copy is adjusted).
    Returns ``(victims, None)`` or ``([], status)`` when evicting cannot make room."""
    lower = [p for p in node.pods.values() if p.priority < pod.priority]
    if not lower:
        return [], _NO_VICTIMS
    trial = node.clone_usage()
    trial_cycle = cycle.clone() if cycle is not None else None
    for p in lower:
        trial.remove_pod(p.key)
        if trial_cycle is not None:
            trial_cycle.remove_pod(p, node)
    st = run_filters(pod, trial, trial_cycle)
    if st is not None:
        return [], st
    # Most important first: higher priority, then the one started earlier (creation as proxy).
    lower.sort(key=lambda p: (-p.priority, _start_time(p), p.key))
    victims: list[PodInfo] = []
    for p in lower:
        trial.add_pod(p)
        if trial_cycle is not None:
            trial_cycle.add_pod(p, node)
        if run_filters(pod, trial, trial_cycle) is not None:
            trial.remove_pod(p.key)
            if trial_cycle is not None:
                trial_cycle.remove_pod(p, node)
            victims.append(p)
    return victims, None


def _start_time(p: PodInfo) -> str:
    status = p.pod.get("status") or {}
    return status.get("startTime") or p.creation or ""


@dataclass(slots=True)
class PreemptionResult:
    node: str | None = None
    victims: list[PodInfo] = field(default_factory=list)
    message: str = ""  # the post-filter message when no node was found ("preemption: ...")
    counts: Counter[str] = field(default_factory=Counter)


def pick_node(candidates: dict[str, list[PodInfo]]) -> str:
    def rank(item: tuple[str, list[PodInfo]]) -> tuple[int, int, int, str, str]:
        name, victims = item
        highest = max(v.priority for v in victims)
        total = sum(v.priority + _PRIORITY_OFFSET for v in victims)
        # Latest start among the most important victims is preferred: negate by sorting key.
        earliest_top = min(_start_time(v) for v in victims if v.priority == highest)
        return highest, total, len(victims), _invert(earliest_top), name

    return min(candidates.items(), key=rank)[0]


def _invert(text: str) -> str:
    # Sort RFC 3339 strings descending inside an ascending key.
    return "".join(chr(0x10FFFF - ord(c)) for c in text)


def find_preemption(pod: PodInfo, resolvable: Iterable[NodeInfo], num_all_nodes: int, *,
                    max_candidates: int = 100, cycle: CycleState | None = None) -> PreemptionResult:
    """Dry-run preemption on the nodes whose rejection preemption might fix.

    Every other node counts as "Preemption is not helpful for scheduling".  Stops after
    ``max_candidates`` candidate nodes (upstream's ``minCandidateNodesAbsolute``)."""
    counts: Counter[str] = Counter()
    candidates: dict[str, list[PodInfo]] = {}
    examined = 0
    for node in resolvable:
        examined += 1
        victims, st = select_victims_on_node(pod, node, cycle)
        if st is None:
            candidates[node.name] = victims
            if len(candidates) >= max_candidates:
                break
        else:
            for r in st.reasons:
                counts[r] += 1
    if candidates:
        name = pick_node(candidates)
        return PreemptionResult(node=name, victims=candidates[name])
    if num_all_nodes - examined > 0:
        counts[PREEMPTION_NOT_HELPFUL] += num_all_nodes - examined
    return PreemptionResult(message=preemption_message(num_all_nodes, counts), counts=counts)
