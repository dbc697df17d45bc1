"""InterPodAffinity: required pod affinity / anti-affinity as a filter, preferred terms as a score.

Upstream ``pkg/scheduler/framework/plugins/interpodaffinity`` (filtering.go, scoring.go):

* PreFilter counts, per topology pair (key, value): existing pods whose *required
  anti-affinity* matches the incoming pod; existing pods matching *all* of the incoming pod's
  required affinity terms; existing pods matching each of its required anti-affinity terms.  It
  is skipped when the pod has no required terms and no existing term matches it — the case of
  every DaemonSet pod in a cluster without anti-affinity, which then pays one dict length check
  (the existing terms are grouped and counted incrementally by the cache).
* Filter, in upstream's order and words: a node lacking a topology key of a required affinity
  term, or whose domain holds no matching pod, fails "node(s) didn't match pod affinity rules"
  (unresolvable) — unless no pod anywhere matches and the pod matches its own terms (the first
  replica of a self-affine group); a domain holding a pod matched by the pod's anti-affinity
  fails "node(s) didn't match pod anti-affinity rules"; a domain where an existing pod's
  anti-affinity matches this pod fails "node(s) didn't satisfy existing pods anti-affinity
  rules".  Both anti-affinity failures are resolvable: preemption may remove the matching pods.
* Preemption and nominated pods adjust a copy of the counts (``AddPod``/``RemovePod``).
* Score: for every existing pod, the incoming pod's preferred terms that match it (+weight,
  anti: −weight), and its own preferred terms (and required affinity terms, weight
  ``hardPodAffinityWeight`` = 1) that match the incoming pod, credited to the existing pod's
  topology domain; a node scores the sum over its domains, then scores are scaled to 0–100
  between the minimum and the maximum.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Final

from everynode.api.podaffinity import AffinityTerm, pod_matches_all_terms

if TYPE_CHECKING:
    from everynode.scheduler.cache import SchedulerCache
    from everynode.scheduler.nodeinfo import NodeInfo
    from everynode.scheduler.podinfo import PodInfo

REASON_AFFINITY_RULES: Final = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY_RULES: Final = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY: Final = "node(s) didn't satisfy existing pods anti-affinity rules"

HARD_POD_AFFINITY_WEIGHT: Final = 1
MAX_NODE_SCORE: Final = 100

TopologyPair = tuple[str, str]
NamespaceLabels = Callable[[str], "Mapping[str, str] | None"]


def term_namespaces(terms: Iterable[AffinityTerm]) -> frozenset[str] | None:
    """The namespaces whose pods the terms can match (None: any, a namespace selector is set)."""
    out: set[str] = set()
    for t in terms:
        if not t.namespace_selector.matches_nothing:
            return None
        out |= t.namespaces
    return frozenset(out)


def _bump(counts: dict[TopologyPair, int], pair: TopologyPair, delta: int) -> None:
    n = counts.get(pair, 0) + delta
    if n:
        counts[pair] = n
    else:
        counts.pop(pair, None)


class AffinityState:
    """The PreFilter state of one scheduling attempt."""

    __slots__ = ("pod", "required_affinity", "required_anti", "existing_anti", "affinity_counts",
                 "anti_counts", "ns_labels", "ns_labels_of")

    def __init__(self, pod: PodInfo, ns_labels_of: NamespaceLabels) -> None:
        self.pod = pod
        terms = pod.pod_affinity
        self.required_affinity: tuple[AffinityTerm, ...] = terms.required_affinity if terms else ()
        self.required_anti: tuple[AffinityTerm, ...] = terms.required_anti if terms else ()
        self.ns_labels_of = ns_labels_of
        self.ns_labels = ns_labels_of(pod.namespace)
        self.existing_anti: dict[TopologyPair, int] = {}
        self.affinity_counts: dict[TopologyPair, int] = {}
        self.anti_counts: dict[TopologyPair, int] = {}

    @property
    def skip(self) -> bool:
        return not self.existing_anti and not self.required_affinity and not self.required_anti

    def clone(self) -> AffinityState:
        c = AffinityState(self.pod, self.ns_labels_of)  # (a compiled class has no bare ``__new__``)
        c.required_affinity = self.required_affinity
        c.required_anti = self.required_anti
        c.ns_labels = self.ns_labels
        c.existing_anti = dict(self.existing_anti)
        c.affinity_counts = dict(self.affinity_counts)
        c.anti_counts = dict(self.anti_counts)
        return c

    def update_with_pod(self, other: PodInfo, labels: Mapping[str, str], delta: int) -> None:
        """Upstream ``preFilterState.updateWithPod``: ``other`` added to (1) or removed from (-1)
        a node with these labels."""
        pod = self.pod
        terms = other.pod_affinity
        if terms is not None:
            for t in terms.required_anti:
                if t.matches(pod.namespace, pod.labels, self.ns_labels):
                    value = labels.get(t.topology_key)
                    if value is not None:
                        _bump(self.existing_anti, (t.topology_key, value), delta)
        if self.required_affinity or self.required_anti:
            other_ns = self.ns_labels_of(other.namespace)
            if pod_matches_all_terms(self.required_affinity, other.namespace, other.labels, other_ns):
                for t in self.required_affinity:
                    value = labels.get(t.topology_key)
                    if value is not None:
                        _bump(self.affinity_counts, (t.topology_key, value), delta)
            for t in self.required_anti:
                if t.matches(other.namespace, other.labels, other_ns):
                    value = labels.get(t.topology_key)
                    if value is not None:
                        _bump(self.anti_counts, (t.topology_key, value), delta)


def prefilter(pod: PodInfo, cache: SchedulerCache) -> AffinityState | None:
    """The counts for ``pod``, or None when the plugin has nothing to check (upstream Skip)."""
    if not cache.anti_terms and not pod.has_pod_affinity:
        return None
    state = AffinityState(pod, cache.ns_labels.get)
    state.existing_anti = cache.existing_anti_affinity(pod, state.ns_labels)
    if state.required_affinity or state.required_anti:
        ns_of = state.ns_labels_of
        namespaces = term_namespaces(state.required_affinity + state.required_anti)
        affinity, anti = state.required_affinity, state.required_anti
        aff_counts, anti_counts = state.affinity_counts, state.anti_counts
        for other, info in cache.live_pods(namespaces):
            labels = info.labels
            if not labels:
                continue
            other_ns = ns_of(other.namespace)
            if affinity and pod_matches_all_terms(affinity, other.namespace, other.labels, other_ns):
                for t in affinity:
                    value = labels.get(t.topology_key)
                    if value is not None:
                        pair = (t.topology_key, value)
                        aff_counts[pair] = aff_counts.get(pair, 0) + 1
            for t in anti:
                if t.matches(other.namespace, other.labels, other_ns):
                    value = labels.get(t.topology_key)
                    if value is not None:
                        pair = (t.topology_key, value)
                        anti_counts[pair] = anti_counts.get(pair, 0) + 1
    return None if state.skip else state


def satisfies_pod_affinity(state: AffinityState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    counts = state.affinity_counts
    for t in state.required_affinity:
        value = labels.get(t.topology_key)
        if value is None:
            return False  # every topology key of the terms must be on the node
        if counts.get((t.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # The first pod of a group with affinity to itself: nothing matches anywhere yet.
    pod = state.pod
    return not counts and pod_matches_all_terms(state.required_affinity, pod.namespace, pod.labels,
                                                state.ns_labels)


def satisfies_pod_anti_affinity(state: AffinityState, labels: Mapping[str, str]) -> bool:
    counts = state.anti_counts
    if counts:
        for t in state.required_anti:
            value = labels.get(t.topology_key)
            if value is not None and counts.get((t.topology_key, value), 0) > 0:
                return False
    return True


def satisfies_existing_anti_affinity(state: AffinityState, labels: Mapping[str, str]) -> bool:
    counts = state.existing_anti
    if counts:
        if len(counts) <= len(labels):
            for (key, value), n in counts.items():
                if n > 0 and labels.get(key) == value:
                    return False
        else:
            for key, value in labels.items():
                if counts.get((key, value), 0) > 0:
                    return False
    return True


# -- scoring ---------------------------------------------------------------------------------------

def _credit(scores: dict[str, dict[str, int]], term: AffinityTerm, labels: Mapping[str, str],
            amount: int) -> None:
    value = labels.get(term.topology_key)
    if value is None:
        return
    per_key = scores.get(term.topology_key)
    if per_key is None:
        per_key = scores[term.topology_key] = {}
    per_key[value] = per_key.get(value, 0) + amount


def topology_scores(pod: PodInfo, cache: SchedulerCache) -> dict[str, dict[str, int]]:
    """Upstream PreScore: topology key -> value -> credit (empty: the plugin is skipped)."""
    scores: dict[str, dict[str, int]] = {}
    ns_of = cache.ns_labels.get
    terms = pod.pod_affinity
    pref_aff = terms.preferred_affinity if terms else ()
    pref_anti = terms.preferred_anti if terms else ()
    if pref_aff or pref_anti:
        for other, info in cache.live_pods(term_namespaces(pref_aff + pref_anti)):
            labels = info.labels
            if not labels:
                continue
            other_ns = ns_of(other.namespace)
            for t in pref_aff:
                if t.matches(other.namespace, other.labels, other_ns):
                    _credit(scores, t, labels, t.weight)
            for t in pref_anti:
                if t.matches(other.namespace, other.labels, other_ns):
                    _credit(scores, t, labels, -t.weight)
    if cache.affinity_pods:
        ns_labels = ns_of(pod.namespace)
        live = cache.is_live
        for key, other in cache.affinity_pods.items():
            if key == pod.key:
                continue
            node_name = cache.pod_node.get(key)
            if node_name is None or not live(node_name):
                continue
            labels = cache.infos[node_name].labels
            if not labels:
                continue
            ot = other.pod_affinity
            if ot is None:
                continue
            for t in ot.required_affinity:
                if t.matches(pod.namespace, pod.labels, ns_labels):
                    _credit(scores, t, labels, HARD_POD_AFFINITY_WEIGHT)
            for t in ot.preferred_affinity:
                if t.matches(pod.namespace, pod.labels, ns_labels):
                    _credit(scores, t, labels, t.weight)
            for t in ot.preferred_anti:
                if t.matches(pod.namespace, pod.labels, ns_labels):
                    _credit(scores, t, labels, -t.weight)
    return scores


def score_nodes(scores: dict[str, dict[str, int]], nodes: list[NodeInfo]) -> list[int]:
    """Score + NormalizeScore: each node's credit, scaled to 0–100 between min and max."""
    raw = []
    for info in nodes:
        labels = info.labels
        s = 0
        for key, values in scores.items():
            value = labels.get(key)
            if value is not None:
                s += values.get(value, 0)
        raw.append(s)
    lo, hi = min(raw), max(raw)
    diff = hi - lo
    if diff <= 0:
        return [0] * len(raw)
    return [int(MAX_NODE_SCORE * ((s - lo) / diff)) for s in raw]
