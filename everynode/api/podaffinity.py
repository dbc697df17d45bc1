"""Inter-pod affinity terms and topology spread constraints, parsed once per pod version.

Upstream: ``pkg/scheduler/framework/types.go`` (``AffinityTerm``, ``newAffinityTerm``,
``getNamespacesFromPodAffinityTerm``), ``pkg/scheduler/framework/plugins/podtopologyspread/
common.go`` (``filterTopologySpreadConstraints``, ``nodeLabelsMatchSpreadConstraints``) and
``plugins/helper/spread.go`` (``DefaultSelector``).  These are pure predicates over pods, labels
and namespaces; the scheduler's plugins (``everynode/scheduler``) count them over the cluster.

Rules reproduced:
* A term applies to the namespaces it lists, plus every namespace whose labels match its
  ``namespaceSelector`` (``{}`` selects all namespaces); with neither, to the pod's own
  namespace.  A pod matches a term when it is in one of those namespaces and its labels match
  ``labelSelector`` (a missing selector matches nothing, ``{}`` everything).
* ``matchLabelKeys`` / ``mismatchLabelKeys`` add ``key in (value)`` / ``key notin (value)`` for
  every listed key the pod itself carries (kube-apiserver 1.33 merges them into the selector at
  creation; merging again here is idempotent and covers objects created otherwise).
* A term whose selector does not parse matches nothing (upstream refuses the pod while parsing;
  validation stops such pods at the API, so this only guards objects that bypassed it).
* Spread constraints: ``minDomains`` defaults to 1, ``nodeAffinityPolicy`` to Honor,
  ``nodeTaintsPolicy`` to Ignore; ``matchLabelKeys`` merge into the selector as ``key=value``.
* With no constraints of its own, a pod gets the scheduler's system defaults (hostname, maxSkew
  3; zone, maxSkew 5; both ScheduleAnyway) over the selector built from the Services selecting it
  and its controller (ReplicaSet, StatefulSet, ReplicationController); an empty selector means no
  default spreading at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from everynode.api.selectors import (
    EQUALS,
    IN,
    NOT_IN,
    NOTHING,
    LabelSelector,
    Requirement,
    SelectorError,
    label_selector_from_dict,
    new_requirement,
)

__all__ = [
    "DO_NOT_SCHEDULE",
    "HONOR",
    "IGNORE",
    "LABEL_HOSTNAME",
    "LABEL_ZONE",
    "SCHEDULE_ANYWAY",
    "SYSTEM_DEFAULT_CONSTRAINTS",
    "AffinityTerm",
    "PodAffinityTerms",
    "SpreadConstraint",
    "compile_pod_affinity",
    "compile_spread_constraints",
    "default_spread_selector",
    "nodes_labels_have_keys",
    "pod_matches_all_terms",
]

LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

_NO_LABELS: Mapping[str, str] = {}


class AffinityTerm:
    """One parsed ``PodAffinityTerm`` (with its weight when it came from a preferred term)."""

    __slots__ = ("namespaces", "namespace_selector", "selector", "topology_key", "weight", "_key")

    def __init__(self, namespaces: frozenset[str], namespace_selector: LabelSelector,
                 selector: LabelSelector, topology_key: str, weight: int = 0) -> None:
        self.namespaces = namespaces
        self.namespace_selector = namespace_selector  # NOTHING when the term has none
        self.selector = selector
        self.topology_key = topology_key
        self.weight = weight
        self._key = (namespaces, namespace_selector, selector, topology_key)

    @property
    def key(self) -> tuple[Any, ...]:
        """Identity for grouping equal terms of different pods (weight excluded)."""
        return self._key

    def matches(self, namespace: str, labels: Mapping[str, str] | None,
                ns_labels: Mapping[str, str] | None) -> bool:
        """Upstream ``AffinityTerm.Matches``: namespace (listed or selected) and labels."""
        if namespace not in self.namespaces:
            sel = self.namespace_selector
            if sel.matches_nothing or not sel.matches(ns_labels):
                return False
        return self.selector.matches(labels)

    def __repr__(self) -> str:
        return (f"AffinityTerm(ns={sorted(self.namespaces)}, nsSelector={self.namespace_selector!r}, "
                f"selector={self.selector!r}, topologyKey={self.topology_key!r}, weight={self.weight})")


class PodAffinityTerms:
    """The four term lists of a pod's ``podAffinity`` / ``podAntiAffinity``."""

    __slots__ = ("required_affinity", "required_anti", "preferred_affinity", "preferred_anti")

    def __init__(self, required_affinity: tuple[AffinityTerm, ...] = (),
                 required_anti: tuple[AffinityTerm, ...] = (),
                 preferred_affinity: tuple[AffinityTerm, ...] = (),
                 preferred_anti: tuple[AffinityTerm, ...] = ()) -> None:
        self.required_affinity = required_affinity
        self.required_anti = required_anti
        self.preferred_affinity = preferred_affinity
        self.preferred_anti = preferred_anti

    @property
    def empty(self) -> bool:
        return not (self.required_affinity or self.required_anti or self.preferred_affinity
                    or self.preferred_anti)


def _label_key_requirements(pod_labels: Mapping[str, str], keys: Iterable[str] | None,
                            operator: str) -> list[Requirement]:
    """``key <operator> (value)`` for every listed key the pod carries (matchLabelKeys and
    mismatchLabelKeys); an invalid key or value is left out."""
    out = []
    for key in keys or ():
        value = pod_labels.get(key)
        if value is not None:
            try:
                out.append(new_requirement(key, operator, (value,)))
            except SelectorError:
                continue
    return out


def _merge_label_keys(selector: LabelSelector, pod_labels: Mapping[str, str], keys: Iterable[str] | None,
                      operator: str) -> LabelSelector:
    if not keys or selector.matches_nothing:
        return selector
    extra = _label_key_requirements(pod_labels, keys, operator)
    if not extra:
        return selector
    present = set(selector.requirements)
    return selector.add(*(r for r in extra if r not in present))


def _compile_term(raw: Mapping[str, Any], namespace: str, pod_labels: Mapping[str, str],
                  weight: int = 0) -> AffinityTerm:
    try:
        selector = label_selector_from_dict(raw.get("labelSelector"))
    except SelectorError:
        selector = NOTHING
    selector = _merge_label_keys(selector, pod_labels, raw.get("matchLabelKeys"), IN)
    selector = _merge_label_keys(selector, pod_labels, raw.get("mismatchLabelKeys"), NOT_IN)
    raw_ns_selector = raw.get("namespaceSelector")
    namespaces = frozenset(raw.get("namespaces") or ())
    if raw_ns_selector is None:
        ns_selector = NOTHING
        if not namespaces:
            namespaces = frozenset((namespace,))
    else:
        try:
            ns_selector = label_selector_from_dict(raw_ns_selector)
        except SelectorError:
            ns_selector = NOTHING
    return AffinityTerm(namespaces, ns_selector, selector, raw.get("topologyKey") or "", weight)


def _required(block: Mapping[str, Any] | None, namespace: str,
              pod_labels: Mapping[str, str]) -> tuple[AffinityTerm, ...]:
    if not block:
        return ()
    return tuple(_compile_term(t, namespace, pod_labels)
                 for t in block.get("requiredDuringSchedulingIgnoredDuringExecution") or () if t)


def _preferred(block: Mapping[str, Any] | None, namespace: str,
               pod_labels: Mapping[str, str]) -> tuple[AffinityTerm, ...]:
    if not block:
        return ()
    out = []
    for wt in block.get("preferredDuringSchedulingIgnoredDuringExecution") or ():
        if not wt:
            continue
        weight = int(wt.get("weight") or 0)
        if weight == 0:
            continue  # upstream skips zero-weight terms
        out.append(_compile_term(wt.get("podAffinityTerm") or {}, namespace, pod_labels, weight))
    return tuple(out)


def compile_pod_affinity(spec: Mapping[str, Any], namespace: str,
                         pod_labels: Mapping[str, str] | None) -> PodAffinityTerms | None:
    """The pod's inter-pod affinity terms, or None when it has no podAffinity/podAntiAffinity."""
    affinity = spec.get("affinity") or {}
    pa = affinity.get("podAffinity")
    paa = affinity.get("podAntiAffinity")
    if not pa and not paa:
        return None
    labels = pod_labels or _NO_LABELS
    terms = PodAffinityTerms(_required(pa, namespace, labels), _required(paa, namespace, labels),
                             _preferred(pa, namespace, labels), _preferred(paa, namespace, labels))
    return None if terms.empty else terms


def pod_matches_all_terms(terms: Sequence[AffinityTerm], namespace: str, labels: Mapping[str, str] | None,
                          ns_labels: Mapping[str, str] | None) -> bool:
    """Upstream ``podMatchesAllAffinityTerms``: False for no terms."""
    if not terms:
        return False
    for t in terms:
        if not t.matches(namespace, labels, ns_labels):
            return False
    return True


# --------------------------------------------------------------------------------------------
# Topology spread constraints
# --------------------------------------------------------------------------------------------

class SpreadConstraint:
    """One parsed ``topologySpreadConstraint`` (upstream ``topologySpreadConstraint``)."""

    __slots__ = ("max_skew", "topology_key", "selector", "min_domains", "honor_node_affinity",
                 "honor_node_taints")

    def __init__(self, max_skew: int, topology_key: str, selector: LabelSelector, *, min_domains: int = 1,
                 honor_node_affinity: bool = True, honor_node_taints: bool = False) -> None:
        self.max_skew = max_skew
        self.topology_key = topology_key
        self.selector = selector
        self.min_domains = min_domains
        self.honor_node_affinity = honor_node_affinity
        self.honor_node_taints = honor_node_taints

    def __repr__(self) -> str:
        return (f"SpreadConstraint(maxSkew={self.max_skew}, topologyKey={self.topology_key!r}, "
                f"selector={self.selector!r}, minDomains={self.min_domains})")


SYSTEM_DEFAULT_CONSTRAINTS: tuple[Mapping[str, Any], ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)


def compile_spread_constraints(raw: Sequence[Mapping[str, Any]] | None, pod_labels: Mapping[str, str] | None,
                               when: str, *, selector: LabelSelector | None = None,
                               ) -> tuple[SpreadConstraint, ...]:
    """The constraints whose ``whenUnsatisfiable`` equals ``when`` (upstream
    ``filterTopologySpreadConstraints``); ``selector`` replaces each one's (system defaults)."""
    labels = pod_labels or _NO_LABELS
    out = []
    for c in raw or ():
        if (c.get("whenUnsatisfiable") or DO_NOT_SCHEDULE) != when:
            continue
        if selector is not None:
            sel = selector
        else:
            try:
                sel = label_selector_from_dict(c.get("labelSelector"))
            except SelectorError:
                sel = NOTHING
            extra = _label_key_requirements(labels, c.get("matchLabelKeys"), EQUALS)
            if extra:  # upstream mergeLabelSetWithSelector: a nil selector keeps only these
                sel = LabelSelector(extra) if sel.matches_nothing else sel.add(*extra)
        min_domains = c.get("minDomains")
        out.append(SpreadConstraint(
            int(c.get("maxSkew") or 0), c.get("topologyKey") or "", sel,
            min_domains=int(min_domains) if min_domains is not None else 1,
            honor_node_affinity=(c.get("nodeAffinityPolicy") or HONOR) == HONOR,
            honor_node_taints=(c.get("nodeTaintsPolicy") or IGNORE) == HONOR))
    return tuple(out)


def nodes_labels_have_keys(labels: Mapping[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    """Upstream ``nodeLabelsMatchSpreadConstraints``: every constraint's topology key is set."""
    for c in constraints:
        if c.topology_key not in labels:
            return False
    return True


def default_spread_selector(pod_labels: Mapping[str, str] | None,
                            service_selectors: Iterable[Mapping[str, str] | None],
                            owner_selector: LabelSelector | Mapping[str, str] | None) -> LabelSelector:
    """Upstream ``helper.DefaultSelector``: the merged ``spec.selector`` of the Services selecting
    the pod, AND its controller's selector (a ReplicationController's map, or a ReplicaSet's /
    StatefulSet's label selector).  ``service_selectors`` are those of the pod's namespace; the
    ones that select the pod are kept here."""
    labels = pod_labels or _NO_LABELS
    merged: dict[str, str] = {}
    for sel in service_selectors:
        if not sel:
            continue  # a Service without selector selects nothing
        if all(labels.get(k) == v for k, v in sel.items()):
            merged.update(sel)
    if isinstance(owner_selector, Mapping):
        merged.update(owner_selector)
        owner_selector = None
    reqs = []
    for k in sorted(merged):
        try:
            reqs.append(new_requirement(k, EQUALS, (merged[k],)))
        except SelectorError:
            continue
    selector = LabelSelector(reqs)
    if owner_selector is not None and not owner_selector.matches_nothing:
        selector = selector.add(*owner_selector.requirements)
    return selector
