"""The RollingUpdate planner (§5): which old pods to delete and which nodes get a new pod.

Upstream: ``pkg/controller/daemon/update.go`` ``rollingUpdate`` / ``findUpdatedPodsOnNode`` /
``updatedDesiredNodeCounts``.  The planner is a pure function over (DaemonSet, current hash,
node eligibility, pods grouped by target node, now); the controller feeds it from its caches and
hands the plan to ``syncNodes``.  Keeping it pure lets the worked examples of §5.4 be plain
table tests.

**Node order (a deliberate choice).**  Upstream iterates a Go map, so when the budget is smaller
than the candidate list *which* nodes are updated first is random.  We iterate node names in
sorted (lexicographic) order, so a rollout proceeds ``node-a``, ``node-b``, … and is
reproducible run to run and in tests; the planned ``everynode plan`` can therefore predict it.  Counts and
budgets are unaffected by the order: only the choice among equally eligible candidates is.

Both algorithms run only when ``manage`` issued nothing (expectations satisfied), and neither
creates on nodes without pods nor prunes duplicates — that is ``manage``'s job.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from everynode.api.daemonset import min_ready_seconds
from everynode.api.meta import field_of
from everynode.api.pod import available_at, is_pod_available
from everynode.controllers.daemonset.budgets import update_budgets
from everynode.controllers.daemonset.daemonpods import is_pod_updated, template_generation

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
        if field_of(pod.get("metadata"), "deletionTimestamp"):
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


# ---------------------------------------------------------------------------------------------
# One node's part in the plan
# ---------------------------------------------------------------------------------------------

class NodeRollout:
    """What one node contributes to either planner.

    Upstream's loops fold every node into a few counters and lists; the only order-dependent
    step is a shortcut (``numUnavailable >= maxUnavailable`` / ``numSurge >= maxSurge``: stop
    collecting candidates), and it never changes the result — once the counter reaches the
    budget, the remaining budget is zero whatever was collected.  So a node's contribution can
    be computed on its own, and the plan is a fold over the contributions.

    Immutable (``Final``), and a plain class rather than a frozen dataclass for the reason
    :class:`~.status.NodeStatus` gives (its constructor runs for every dirty node of every sync:
    2 µs as a frozen dataclass built from a dict of fields, 50 ns compiled).
    """

    def __init__(self, *, should_run: bool = False, unavailable: bool = False, replace: str | None = None,
                 candidate: str | None = None, surging: bool = False, available: bool = False,
                 delete_old: str | None = None, delete_if_surplus: str | None = None, create_now: bool = False,
                 create_candidate: bool = False, missing: bool = False, changes_at: float | None = None) -> None:
        self.should_run: Final = should_run
        # maxSurge == 0
        self.unavailable: Final = unavailable  # counts against maxUnavailable
        self.replace: Final = replace  # old pod, not available: deleted regardless of the budget
        self.candidate: Final = candidate  # old pod, available: deleted within the budget
        # maxSurge > 0
        self.surging: Final = surging  # counts against maxSurge
        self.available: Final = available  # counts toward numAvailable
        self.delete_old: Final = delete_old  # old pod to delete now (new one available / node dropped)
        self.delete_if_surplus: Final = delete_if_surplus  # old available pod on a node that should not run it
        self.create_now: Final = create_now  # old pod not available: new pod regardless of the budget
        self.create_candidate: Final = create_candidate  # old pod available: new pod within the surge budget
        self.missing: Final = missing  # the surge planner needs shouldRun of a deleted node
        # when time alone (minReadySeconds) changes this record
        self.changes_at: Final = changes_at

    def _fields(self) -> tuple[Any, ...]:
        return (self.should_run, self.unavailable, self.replace, self.candidate, self.surging, self.available,
                self.delete_old, self.delete_if_surplus, self.create_now, self.create_candidate, self.missing,
                self.changes_at)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeRollout):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        names = ("should_run", "unavailable", "replace", "candidate", "surging", "available", "delete_old",
                 "delete_if_surplus", "create_now", "create_candidate", "missing", "changes_at")
        return f"NodeRollout({', '.join(f'{n}={v!r}' for n, v in zip(names, self._fields(), strict=True))})"

    @property
    def empty(self) -> bool:
        return self == _NOTHING


_NOTHING: Final = NodeRollout()


def classify_node(pods: Sequence[Obj], *, should_run: bool | None, hash_: str, generation: int | None,
                  min_ready: int, now: float) -> NodeRollout:
    """One node's contribution to both planners; ``should_run`` is None for a deleted node.

    ``pods`` are the node's claimed pods (terminal pods with a deletionTimestamp excluded).
    A node takes part when it should run the daemon or has pods, as in upstream's loops."""
    if not pods and not should_run:
        return _NOTHING
    new_pod, old_pod, ok = find_updated_pods_on_node(pods, hash_, generation)
    if not ok:
        return NodeRollout(should_run=bool(should_run), unavailable=True, surging=True)
    new_ok = new_pod is not None and is_pod_available(new_pod, min_ready, now)
    old_ok = old_pod is not None and is_pod_available(old_pod, min_ready, now)
    changes_at = None
    if min_ready:
        pending = [at for p, ok_ in ((new_pod, new_ok), (old_pod, old_ok))
                   if p is not None and not ok_ and (at := available_at(p, min_ready)) is not None]
        changes_at = min(pending) if pending else None
    # maxSurge == 0
    unavailable = False
    replace: str | None = None
    candidate: str | None = None
    if (old_pod is None) == (new_pod is None):
        unavailable = True  # nothing there, or both: manage creates / deletes
    elif new_pod is not None:
        unavailable = not new_ok
    else:
        assert old_pod is not None  # exactly one of the two exists
        if not old_ok:
            unavailable = True
            replace = _pod_name(old_pod)
        else:
            candidate = _pod_name(old_pod)
    # maxSurge > 0
    surging = missing = create_now = create_candidate = False
    delete_old: str | None = None
    delete_if_surplus: str | None = None
    if old_pod is not None:
        if new_pod is None:
            if should_run is None:
                missing = True
            elif not old_ok:
                if should_run:
                    create_now = True
                else:
                    delete_old = _pod_name(old_pod)
            elif should_run:
                create_candidate = True
            else:
                delete_if_surplus = _pod_name(old_pod)
        elif new_ok:
            delete_old = _pod_name(old_pod)
        else:
            surging = True  # waiting for the new pod
    return NodeRollout(should_run=bool(should_run), unavailable=unavailable, replace=replace, candidate=candidate,
                       surging=surging, available=old_ok if old_pod is not None else new_ok, delete_old=delete_old,
                       delete_if_surplus=delete_if_surplus, create_now=create_now,
                       create_candidate=create_candidate, missing=missing, changes_at=changes_at)


# ---------------------------------------------------------------------------------------------
# The fold, kept incrementally
# ---------------------------------------------------------------------------------------------

class _SortedNames:
    """Node names in sorted order with a value each: O(log n) lookup, C-speed insert/remove,
    first-k in order — enough for "the first k candidates in node order"."""

    __slots__ = ("_keys", "_values")

    def __init__(self) -> None:
        self._keys: list[str] = []
        self._values: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self._keys)

    def put(self, key: str, value: Any) -> None:
        if key not in self._values:
            insort(self._keys, key)
        self._values[key] = value

    def discard(self, key: str) -> None:
        if self._values.pop(key, _ABSENT) is not _ABSENT:
            del self._keys[bisect_left(self._keys, key)]

    def first(self, k: int) -> list[Any]:
        return [self._values[key] for key in self._keys[:max(0, k)]]

    def all(self) -> list[Any]:
        return self.first(len(self._keys))

    def min_key(self) -> str | None:
        return self._keys[0] if self._keys else None


_ABSENT: Final = object()


class RolloutIndex:
    """The planners' counters and lists over all nodes, updated one node at a time.

    ``plan_rolling_update`` builds one from scratch (upstream's full walk); the controller keeps
    one per DaemonSet and re-classifies only nodes whose pods, eligibility or time-dependent
    availability changed, so a rollout step costs O(changed nodes) instead of O(nodes)."""

    def __init__(self) -> None:
        self.records: dict[str, NodeRollout] = {}
        self.desired = 0
        self.unavailable = 0
        self.surging = 0
        self.available = 0
        self._lists = {name: _SortedNames() for name in _LISTED}
        self._missing = _SortedNames()

    def set(self, node: str, record: NodeRollout) -> None:
        previous = self.records.get(node)
        if previous == record:
            return
        if previous is not None:
            self._account(node, previous, -1)
        if record.empty:
            self.records.pop(node, None)
        else:
            self.records[node] = record
            self._account(node, record, 1)

    def remove(self, node: str) -> None:
        self.set(node, _NOTHING)

    def _account(self, node: str, r: NodeRollout, sign: int) -> None:
        self.desired += sign * r.should_run
        self.unavailable += sign * r.unavailable
        self.surging += sign * r.surging
        self.available += sign * r.available
        # One line per list of _LISTED, each read as an attribute (``getattr`` by name cost more
        # than the rest of the accounting).
        lists = self._lists
        _mark(lists["replace"], node, r.replace, sign)
        _mark(lists["candidate"], node, r.candidate, sign)
        _mark(lists["delete_old"], node, r.delete_old, sign)
        _mark(lists["delete_if_surplus"], node, r.delete_if_surplus, sign)
        _mark(lists["create_now"], node, node if r.create_now else None, sign)
        _mark(lists["create_candidate"], node, node if r.create_candidate else None, sign)
        _mark(self._missing, node, node if r.missing else None, sign)

    def plan(self, ds: Obj) -> RollingUpdatePlan:
        try:
            max_surge, max_unavailable = update_budgets(ds, self.desired)
        except ValueError as e:
            raise UpdateError(f"couldn't get unavailable numbers: {e}") from e
        plan = RollingUpdatePlan(max_surge=max_surge, max_unavailable=max_unavailable, desired=self.desired)
        lists = self._lists
        if max_surge == 0:
            # Unavailable old pods go regardless; available ones as far as the budget allows.
            candidates = lists["candidate"]
            remaining = max(0, min(max_unavailable - self.unavailable, len(candidates)))
            plan.pods_to_delete = lists["replace"].all() + candidates.first(remaining)
            return plan
        missing = self._missing.min_key()
        if missing is not None:
            raise UpdateError(f'couldn\'t get node for nodeName "{missing}": node "{missing}" not found')
        # Keep availability when the eligible set moves: only delete pods on nodes that no longer
        # qualify once more pods are available than desired.
        surplus = self.available - self.desired
        plan.pods_to_delete = lists["delete_old"].all() + (lists["delete_if_surplus"].first(surplus)
                                                           if surplus > 0 else [])
        candidates = lists["create_candidate"]
        remaining = max(0, min(max_surge - self.surging, len(candidates)))
        plan.nodes_to_create = lists["create_now"].all() + candidates.first(remaining)
        return plan


_LISTED: Final = ("replace", "candidate", "delete_old", "delete_if_surplus", "create_now", "create_candidate")


def _mark(names: _SortedNames, node: str, value: str | None, sign: int) -> None:
    """A node's entry in one list: ``value`` (the pod to delete, or the node) put in when the
    record is added (``sign`` 1), taken out when it is withdrawn (-1); nothing when empty."""
    if value:
        if sign > 0:
            names.put(node, value)
        else:
            names.discard(node)


def plan_rolling_update(ds: Obj, *, hash_: str, node_eligibility: Mapping[str, bool],
                        node_to_pods: Mapping[str, Sequence[Obj]], now: float) -> RollingUpdatePlan:
    """Plan one rolling-update step from scratch (upstream's walk over every node).

    ``node_eligibility`` maps every *existing* node to its ``shouldRun``; ``node_to_pods`` groups
    the DaemonSet's pods (terminal pods with a deletionTimestamp already excluded) by target node,
    and may name nodes that no longer exist.
    """
    generation = template_generation(ds)
    min_ready = min_ready_seconds(ds)
    index = RolloutIndex()
    for name in set(node_to_pods) | set(node_eligibility):
        index.set(name, classify_node(node_to_pods.get(name, ()), should_run=node_eligibility.get(name),
                                      hash_=hash_, generation=generation, min_ready=min_ready, now=now))
    return index.plan(ds)
