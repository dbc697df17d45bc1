"""The RollingUpdate planner (§5): which old pods to delete and which nodes get a new pod.

Upstream: ``pkg/controller/daemon/update.go`` ``rollingUpdate`` / ``findUpdatedPodsOnNode`` /
``updatedDesiredNodeCounts``.  The planner is a pure function over (DaemonSet, current hash,
node eligibility, pods grouped by target node, now); the controller feeds it from its caches and
hands the plan to ``syncNodes``.  Keeping it pure lets the worked examples of §5.4 be plain
table tests.

**Node order (a deliberate choice).**  Upstream iterates a Go map, so when the budget is smaller
than the candidate list *which* nodes are updated first is random.  We iterate node names in
sorted (lexicographic) order, so a rollout proceeds ``node-a``, ``node-b``, … and is
reproducible run to run and in tests; ``everynode plan`` can therefore predict it.  Counts and
budgets are unaffected by the order: only the choice among equally eligible candidates is.

Both algorithms run only when ``manage`` issued nothing (expectations satisfied), and neither
creates on nodes without pods nor prunes duplicates — that is ``manage``'s job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from everynode.controllers.daemonset.eligibility import (
    is_pod_available,
    is_pod_updated,
    template_generation,
    update_budgets,
)

Obj = dict[str, Any]


class UpdateError(Exception):
    """The rolling update could not be planned (message as upstream's)."""


@dataclass(slots=True)
class RollingUpdatePlan:
    pods_to_delete: list[str] = field(default_factory=list)
    nodes_to_create: list[str] = field(default_factory=list)
    max_surge: int = 0
    max_unavailable: int = 0
    desired: int = 0

    @property
    def empty(self) -> bool:
        return not self.pods_to_delete and not self.nodes_to_create


def find_updated_pods_on_node(pods: Sequence[Obj], hash_: str, generation: int | None
                              ) -> tuple[Obj | None, Obj | None, bool]:
    """``findUpdatedPodsOnNode``: at most one new and one old non-terminating pod, else not ok."""
    new_pod: Obj | None = None
    old_pod: Obj | None = None
    for pod in pods:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new_pod is not None:
                return None, None, False
            new_pod = pod
        else:
            if old_pod is not None:
                return None, None, False
            old_pod = pod
    return new_pod, old_pod, True


def _pod_name(pod: Obj) -> str:
    return pod["metadata"]["name"]


def plan_rolling_update(ds: Obj, *, hash_: str, node_eligibility: Mapping[str, bool],
                        node_to_pods: Mapping[str, Sequence[Obj]], now: float) -> RollingUpdatePlan:
    """Plan one rolling-update step.

    ``node_eligibility`` maps every *existing* node to its ``shouldRun``; ``node_to_pods`` groups
    the DaemonSet's pods (terminal pods with a deletionTimestamp already excluded) by target node,
    and may name nodes that no longer exist.
    """
    desired = 0
    entries: dict[str, Sequence[Obj]] = dict(node_to_pods)
    for name, should_run in node_eligibility.items():
        if should_run:
            desired += 1
            if name not in entries:
                entries[name] = ()
    try:
        max_surge, max_unavailable = update_budgets(ds, desired)
    except ValueError as e:
        raise UpdateError(f"couldn't get unavailable numbers: {e}") from e
    generation = template_generation(ds)
    min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
    plan = RollingUpdatePlan(max_surge=max_surge, max_unavailable=max_unavailable, desired=desired)
    order = sorted(entries)
    if max_surge == 0:
        _plan_without_surge(plan, order, entries, hash_, generation, min_ready, now)
    else:
        _plan_with_surge(plan, order, entries, node_eligibility, hash_, generation, min_ready, now)
    return plan


def _plan_without_surge(plan: RollingUpdatePlan, order: list[str], entries: Mapping[str, Sequence[Obj]],
                        hash_: str, generation: int | None, min_ready: int, now: float) -> None:
    """maxSurge == 0: delete unavailable old pods, plus available old ones within the budget."""
    num_unavailable = 0
    allowed: list[str] = []
    candidates: list[str] = []
    for name in order:
        new_pod, old_pod, ok = find_updated_pods_on_node(entries[name], hash_, generation)
        if not ok:
            num_unavailable += 1  # manage prunes the duplicates; counts as unavailable
            continue
        if (old_pod is None) == (new_pod is None):
            num_unavailable += 1  # nothing there, or both: manage creates / deletes
        elif new_pod is not None:
            if not is_pod_available(new_pod, min_ready, now):
                num_unavailable += 1
        elif not is_pod_available(old_pod, min_ready, now):
            allowed.append(_pod_name(old_pod))  # replaced regardless of the budget
            num_unavailable += 1
        elif num_unavailable >= plan.max_unavailable:
            continue
        else:
            candidates.append(_pod_name(old_pod))
    remaining = max(0, min(plan.max_unavailable - num_unavailable, len(candidates)))
    plan.pods_to_delete = allowed + candidates[:remaining]


def _plan_with_surge(plan: RollingUpdatePlan, order: list[str], entries: Mapping[str, Sequence[Obj]],
                     node_eligibility: Mapping[str, bool], hash_: str, generation: int | None,
                     min_ready: int, now: float) -> None:
    """maxSurge > 0: create new pods next to old ones within the surge budget, then delete old."""
    old_to_delete: list[str] = []
    should_not_run_to_delete: list[str] = []
    candidate_nodes: list[str] = []
    allowed_nodes: list[str] = []
    num_surge = 0
    num_available = 0

    def should_run(name: str) -> bool:
        eligible = node_eligibility.get(name)
        if eligible is None:
            raise UpdateError(f'couldn\'t get node for nodeName "{name}": node "{name}" not found')
        return eligible

    for name in order:
        new_pod, old_pod, ok = find_updated_pods_on_node(entries[name], hash_, generation)
        if not ok:
            num_surge += 1
            continue
        if old_pod is not None:
            if is_pod_available(old_pod, min_ready, now):
                num_available += 1
        elif new_pod is not None and is_pod_available(new_pod, min_ready, now):
            num_available += 1
        if old_pod is None:
            continue  # manage creates where nothing runs
        if new_pod is None:
            if not is_pod_available(old_pod, min_ready, now):
                if not should_run(name):
                    old_to_delete.append(_pod_name(old_pod))
                    continue
                allowed_nodes.append(name)  # replaced regardless of the surge budget
            else:
                if not should_run(name):
                    should_not_run_to_delete.append(_pod_name(old_pod))
                    continue
                if num_surge >= plan.max_surge:
                    continue
                candidate_nodes.append(name)
        else:
            if not is_pod_available(new_pod, min_ready, now):
                num_surge += 1  # waiting for the new pod
                continue
            old_to_delete.append(_pod_name(old_pod))
    # Keep availability when the eligible set moves: only delete pods on nodes that no longer
    # qualify once more pods are available than desired.
    deletable = num_available - plan.desired
    if deletable > 0:
        old_to_delete.extend(should_not_run_to_delete[:deletable])
    remaining = max(0, min(plan.max_surge - num_surge, len(candidate_nodes)))
    plan.nodes_to_create = allowed_nodes + candidate_nodes[:remaining]
    plan.pods_to_delete = old_to_delete
