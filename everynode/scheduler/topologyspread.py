"""PodTopologySpread: ``DoNotSchedule`` constraints as a filter, ``ScheduleAnyway`` as a score.

Upstream ``pkg/scheduler/framework/plugins/podtopologyspread`` (filtering.go, scoring.go):

* Eligible nodes carry every constraint's topology key and pass the constraint's node inclusion
  policies (``nodeAffinityPolicy: Honor`` — the pod's nodeSelector / required node affinity;
  ``nodeTaintsPolicy: Honor`` — no untolerated NoSchedule/NoExecute taint).  Every eligible
  node's value is a domain (with zero pods too); matching pods are those of the pod's namespace,
  not terminating, whose labels match the constraint's selector.
* Filter: a node without the key fails "node(s) didn't match pod topology spread constraints
  (missing required label)" (unresolvable); otherwise matches in its domain + 1 if the pod
  matches its own selector − the global minimum must not exceed ``maxSkew``, else "node(s)
  didn't match pod topology spread constraints" (resolvable).  The global minimum is 0 while
  there are fewer domains than ``minDomains``.  The minimum is tracked with upstream's two
  "critical paths" so that preemption's pod removals update it in O(1).
* Score (soft constraints, or the system defaults for pods selected by a Service or owned by a
  ReplicaSet/StatefulSet/ReplicationController): per node, the sum over constraints of
  ``matches in its domain × log(domains + 2) + maxSkew − 1``; fewer matches is better, scaled as
  ``100 × (max + min − score) / max``.  With the pod's own constraints, feasible nodes lacking a
  key score 0; with the system defaults a missing zone label is simply not counted.

Cost: O(nodes + pods of the namespace) per attempt — only for pods that carry (or default to)
constraints; a pod without any pays nothing.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from everynode.api.podaffinity import (
    DO_NOT_SCHEDULE,
    LABEL_HOSTNAME,
    SpreadConstraint,
    compile_spread_constraints,
    nodes_labels_have_keys,
)
from everynode.api.scheduling import find_untolerated_taint

if TYPE_CHECKING:
    from everynode.scheduler.cache import SchedulerCache
    from everynode.scheduler.nodeinfo import NodeInfo
    from everynode.scheduler.podinfo import PodInfo

REASON_CONSTRAINTS: Final = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL: Final = REASON_CONSTRAINTS + " (missing required label)"

MAX_NODE_SCORE: Final = 100
_MAX: Final = 2**31 - 1


def node_included(c: SpreadConstraint, pod: PodInfo, info: NodeInfo) -> bool:
    """Upstream ``matchNodeInclusionPolicies``."""
    if c.honor_node_affinity and not pod.matches_node(info.node):
        return False
    if c.honor_node_taints and find_untolerated_taint(info.taints, pod.tolerations) is not None:
        return False
    return True


def pod_counts(c: SpreadConstraint, pod_namespace: str, other: PodInfo) -> bool:
    """Upstream ``countPodsMatchSelector`` for one pod (an empty selector counts nothing)."""
    if other.terminating or other.namespace != pod_namespace or c.selector.empty:
        return False
    return c.selector.matches(other.labels)


class _Domain:
    """One topology value and its matching-pod count."""

    __slots__ = ("count", "value")

    def __init__(self, value: str, count: int) -> None:
        self.value = value
        self.count = count


class CriticalPaths:
    """The two smallest (value, count) domains as upstream keeps them (``criticalPaths``)."""

    __slots__ = ("paths",)

    def __init__(self) -> None:
        self.paths = [_Domain("", _MAX), _Domain("", _MAX)]

    def copy(self) -> CriticalPaths:
        c = CriticalPaths()  # (a compiled class has no bare ``__new__``)
        first, second = self.paths
        c.paths = [_Domain(first.value, first.count), _Domain(second.value, second.count)]
        return c

    @property
    def min(self) -> int:
        return self.paths[0].count

    def update(self, value: str, num: int) -> None:
        p = self.paths
        i = 0 if value == p[0].value else 1 if value == p[1].value else -1
        if i >= 0:
            p[i].count = num
            if p[0].count > p[1].count:
                p[0], p[1] = p[1], p[0]
        elif num < p[0].count:
            p[1] = p[0]
            p[0] = _Domain(value, num)
        elif num < p[1].count:
            p[1] = _Domain(value, num)


class SpreadState:
    """The PreFilter state: per hard constraint, matches per domain and the critical paths."""

    __slots__ = ("pod", "constraints", "counts", "paths")

    def __init__(self, pod: PodInfo, constraints: Sequence[SpreadConstraint]) -> None:
        self.pod = pod
        self.constraints = tuple(constraints)
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        self.paths: list[CriticalPaths] = []

    def clone(self) -> SpreadState:
        c = SpreadState(self.pod, ())  # (a compiled class has no bare ``__new__``)
        c.constraints = self.constraints
        c.counts = [dict(m) for m in self.counts]
        c.paths = [p.copy() for p in self.paths]
        return c

    def update_with_pod(self, other: PodInfo, info: NodeInfo, delta: int) -> None:
        """Upstream ``updateWithPod`` (preemption's RemovePod, nominated pods' AddPod)."""
        pod = self.pod
        if other.namespace != pod.namespace:
            return
        labels = info.labels
        if not nodes_labels_have_keys(labels, self.constraints):
            return
        for i, c in enumerate(self.constraints):
            if not c.selector.matches(other.labels) or not node_included(c, pod, info):
                continue
            value = labels[c.topology_key]
            n = self.counts[i].get(value, 0) + delta
            self.counts[i][value] = n
            self.paths[i].update(value, n)

    def min_match(self, i: int) -> int:
        c = self.constraints[i]
        if len(self.counts[i]) < c.min_domains:
            return 0
        return self.paths[i].min


def hard_constraints(pod: PodInfo) -> tuple[SpreadConstraint, ...]:
    raw = pod.spread_constraints
    if not raw:
        return ()
    return compile_spread_constraints(raw, pod.labels, DO_NOT_SCHEDULE)


def prefilter(pod: PodInfo, cache: SchedulerCache) -> SpreadState | None:
    """Upstream ``calPreFilterState``; None when the pod has no DoNotSchedule constraint."""
    constraints = hard_constraints(pod)
    if not constraints:
        return None
    state = SpreadState(pod, constraints)
    counts = state.counts
    eligible: dict[str, tuple[bool, ...]] = {}
    infos = cache.infos
    for name in cache.live:
        info = infos[name]
        labels = info.labels
        if not nodes_labels_have_keys(labels, constraints):
            continue
        inc = tuple(node_included(c, pod, info) for c in constraints)
        eligible[name] = inc
        for i, c in enumerate(constraints):
            if inc[i]:
                counts[i].setdefault(labels[c.topology_key], 0)
    ns = pod.namespace
    pod_node = cache.pod_node
    for other in (cache.ns_pods.get(ns) or {}).values():
        if other.terminating:
            continue
        name = pod_node[other.key]
        included = eligible.get(name)
        if included is None:
            continue
        labels = infos[name].labels
        for i, c in enumerate(constraints):
            if included[i] and pod_counts(c, ns, other):
                value = labels[c.topology_key]
                counts[i][value] += 1
    for m in counts:
        paths = CriticalPaths()
        for value, n in m.items():
            paths.update(value, n)
        state.paths.append(paths)
    return state


def spread_filter(state: SpreadState, info: NodeInfo) -> str | None:
    """The failing reason for this node, or None.  (Missing label is the unresolvable one.)"""
    labels = info.labels
    pod_labels = state.pod.labels
    for i, c in enumerate(state.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return REASON_MISSING_LABEL
        self_match = 1 if c.selector.matches(pod_labels) else 0
        skew = state.counts[i].get(value, 0) + self_match - state.min_match(i)
        if skew > c.max_skew:
            return REASON_CONSTRAINTS
    return None


# -- scoring ---------------------------------------------------------------------------------------

def score_nodes(pod: PodInfo, constraints: Sequence[SpreadConstraint], feasible: list[NodeInfo],
                cache: SchedulerCache, *, require_all_topologies: bool) -> list[int]:
    """PreScore + Score + NormalizeScore over the feasible nodes."""
    ignored = [require_all_topologies and not nodes_labels_have_keys(f.labels, constraints) for f in feasible]
    counts: list[dict[str, int]] = [{} for _ in constraints]
    for f, skip in zip(feasible, ignored, strict=True):
        if skip:
            continue
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue
            value = f.labels.get(c.topology_key)
            if value is not None:
                counts[i].setdefault(value, 0)
    n_scored = len(feasible) - sum(ignored)
    weights = [math.log((n_scored if c.topology_key == LABEL_HOSTNAME else len(counts[i])) + 2)
               for i, c in enumerate(constraints)]
    per_node: dict[str, list[int]] = {f.name: [0] * len(constraints) for f in feasible}
    # One pass over the namespace's pods: domain counts (all eligible nodes) and, for the
    # hostname key, per-node counts of the feasible nodes.
    ns = pod.namespace
    infos = cache.infos
    pod_node = cache.pod_node
    node_ok: dict[str, tuple[bool, ...] | None] = {}
    for other in (cache.ns_pods.get(ns) or {}).values():
        if other.terminating:
            continue
        name = pod_node[other.key]
        inc = node_ok.get(name, ())
        if inc == ():
            info = infos.get(name)
            if info is None or not cache.is_live(name) or (
                    require_all_topologies and not nodes_labels_have_keys(info.labels, constraints)):
                inc = None
            else:
                inc = tuple(node_included(c, pod, info) for c in constraints)
            node_ok[name] = inc
        if inc is None:
            continue
        labels = infos[name].labels
        for i, c in enumerate(constraints):
            if not inc[i] or not pod_counts(c, ns, other):
                continue
            if c.topology_key == LABEL_HOSTNAME:
                row = per_node.get(name)
                if row is not None and LABEL_HOSTNAME in labels:
                    row[i] += 1
                continue
            value = labels.get(c.topology_key)
            m = counts[i]
            if value is not None and value in m:
                m[value] += 1
    raw: list[int] = []
    for f, skip in zip(feasible, ignored, strict=True):
        if skip:
            raw.append(-1)
            continue
        s = 0.0
        labels = f.labels
        row = per_node[f.name]
        for i, c in enumerate(constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            cnt = row[i] if c.topology_key == LABEL_HOSTNAME else counts[i].get(value, 0)
            s += cnt * weights[i] + (c.max_skew - 1)
        raw.append(_round(s))
    return normalize(raw)


def _round(x: float) -> int:
    """Go's ``math.Round``: half away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def normalize(raw: list[int]) -> list[int]:
    """Upstream NormalizeScore; -1 marks an ignored node (scores 0)."""
    valid = [s for s in raw if s != -1]
    if not valid:
        return [0] * len(raw)
    lo, hi = min(valid), max(valid)
    out = []
    for s in raw:
        if s == -1:
            out.append(0)
        elif hi == 0:
            out.append(MAX_NODE_SCORE)
        else:
            out.append(MAX_NODE_SCORE * (hi + lo - s) // hi)
    return out

