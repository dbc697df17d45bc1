"""Taints/tolerations and required node affinity: may this pod go on (or stay on) this node?

Upstream: ``staging/src/k8s.io/api/core/v1/toleration.go`` (``ToleratesTaint``),
``staging/src/k8s.io/component-helpers/scheduling/corev1/helpers.go``
(``FindMatchingUntoleratedTaint``) and ``.../corev1/nodeaffinity/nodeaffinity.go``
(``GetRequiredNodeAffinity``, ``LazyErrorNodeSelector``).  The DaemonSet controller
(``NodeShouldRunDaemonPod``) and the scheduler's NodeAffinity/TaintToleration filters both use
these, and both ignore affinity parse errors: a term that fails to parse simply never matches.

Speed: the controller evaluates every (node × DaemonSet) pair and the scheduler every pod, so the
pod side is compiled once (:func:`compile_required_affinity`) into a closure that only reads the
node's labels and name; the common shapes (no constraint, nodeSelector only, the DaemonSet pin
``matchFields metadata.name In [node]``) get dedicated closures.  :func:`pinned_node_name` lets
the scheduler look the pinned node up directly instead of scanning all nodes.

Tolerations with the alpha ``Lt``/``Gt`` operators (feature gate
``TaintTolerationComparisonOperators``, off by default) never match, as with the gate off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from everynode.api.meta import field_of
from everynode.api.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    GREATER_THAN,
    IN,
    LESS_THAN,
    NOT_IN,
    LabelSelector,
    SelectorError,
    new_requirement,
)

__all__ = [
    "toleration_tolerates_taint",
    "tolerations_tolerate_taint",
    "find_untolerated_taint",
    "node_selector_requirement_matches",
    "node_selector_terms_match",
    "node_matches_required_affinity",
    "compile_required_affinity",
    "compile_node_selector_terms",
    "pinned_node_name",
    "NodeMatcher",
]

NodeMatcher = Callable[[Mapping[str, Any]], bool]
_NO_LABELS: Final[Mapping[str, str]] = {}


# --------------------------------------------------------------------------------------------
# Taints and tolerations
# --------------------------------------------------------------------------------------------

def toleration_tolerates_taint(tol: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Upstream ``Toleration.ToleratesTaint``.

    An effect on the toleration must equal the taint's; a key must equal the taint's (an empty key
    with ``Exists`` therefore tolerates everything); ``Exists`` ignores the value; ``Equal`` or no
    operator requires equal values (``""`` included).
    """
    effect = tol.get("effect")
    if effect and effect != taint.get("effect"):
        return False
    key = tol.get("key")
    if key and key != taint.get("key"):
        return False
    op = tol.get("operator")
    if not op or op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return op == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Mapping[str, Any]] | None,
                               taint: Mapping[str, Any]) -> bool:
    """True if any toleration tolerates the taint (upstream ``TolerationsTolerateTaint``)."""
    if not tolerations:
        return False
    return any(toleration_tolerates_taint(t, taint) for t in tolerations)


_SCHEDULING_EFFECTS: Final = frozenset(("NoSchedule", "NoExecute"))


def find_untolerated_taint(taints: Iterable[Mapping[str, Any]] | None,
                           tolerations: Sequence[Mapping[str, Any]] | None, *,
                           effects: Iterable[str] | None = _SCHEDULING_EFFECTS,
                           ) -> Mapping[str, Any] | None:
    """The first taint, among those whose effect is in ``effects``, that no toleration tolerates.

    Upstream ``FindMatchingUntoleratedTaint`` with the effect filter the DaemonSet controller and
    the scheduler use (``NoSchedule``/``NoExecute``; ``PreferNoSchedule`` ignored);
    ``effects=None`` considers every taint.
    """
    if not taints:
        return None
    wanted = effects if effects is None or isinstance(effects, frozenset) else frozenset(effects)
    for taint in taints:
        if wanted is not None and taint.get("effect") not in wanted:
            continue
        if not tolerations:
            return taint
        for tol in tolerations:
            if toleration_tolerates_taint(tol, taint):
                break
        else:
            return taint
    return None


# --------------------------------------------------------------------------------------------
# Node selector terms
# --------------------------------------------------------------------------------------------

_LABEL_OPERATORS: Final = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST,
                           "Gt": GREATER_THAN, "Lt": LESS_THAN}

# A compiled term: (label selector or None, field requirements or None).  Field requirements are
# (field, must_equal, value) triples.
_Term = tuple[LabelSelector | None, tuple[tuple[str, bool, str], ...] | None]


class _TermError(Exception):
    pass


def _compile_expressions(reqs: Sequence[Mapping[str, Any]]) -> LabelSelector:
    """Upstream ``nodeSelectorRequirementsAsSelector``; raises _TermError on any invalid entry."""
    out = []
    for req in reqs:
        op_name = req.get("operator")
        op = _LABEL_OPERATORS.get(op_name) if isinstance(op_name, str) else None
        if op is None:
            raise _TermError
        try:
            out.append(new_requirement(req.get("key") or "", op, req.get("values") or ()))
        except SelectorError:
            raise _TermError from None
    return LabelSelector(out)


def _compile_fields(reqs: Sequence[Mapping[str, Any]]) -> tuple[tuple[str, bool, str], ...]:
    """Upstream ``nodeSelectorRequirementsAsFieldSelector``: In/NotIn with exactly one value."""
    out = []
    for req in reqs:
        op = req.get("operator")
        values: Sequence[Any] = req.get("values") or ()
        if op not in ("In", "NotIn") or len(values) != 1:
            raise _TermError
        out.append((req.get("key") or "", op == "In", values[0]))
    return tuple(out)


def _compile_terms(terms: Sequence[Mapping[str, Any]] | None) -> tuple[_Term, ...]:
    """Parse terms leniently: empty terms and terms with any invalid requirement are dropped."""
    compiled: list[_Term] = []
    for term in terms or ():
        if not term:
            continue
        exprs = term.get("matchExpressions") or ()
        flds = term.get("matchFields") or ()
        if not exprs and not flds:
            continue  # an empty term selects nothing
        try:
            compiled.append((_compile_expressions(exprs) if exprs else None,
                             _compile_fields(flds) if flds else None))
        except _TermError:
            continue
    return tuple(compiled)


def _node_name(node: Mapping[str, Any]) -> str:
    return field_of(node.get("metadata"), "name") or ""


def _node_labels(node: Mapping[str, Any]) -> Mapping[str, str]:
    return field_of(node.get("metadata"), "labels") or _NO_LABELS


def _term_matches(term: _Term, labels: Mapping[str, str], name: str) -> bool:
    selector, fields = term
    if selector is not None and not selector.matches(labels):
        return False
    if fields is not None and name:  # matchFields only apply when the node has a name
        for key, must_equal, value in fields:
            actual = name if key == "metadata.name" else ""
            if (actual == value) != must_equal:
                return False
    return True


def _terms_matcher(terms: tuple[_Term, ...]) -> NodeMatcher:
    if not terms:
        return _never
    if len(terms) == 1:
        pinned = _pure_pin(terms[0])
        if pinned is not None:
            # A node without a name skips matchFields, hence matches (upstream extractNodeFields).
            return lambda node: (name := _node_name(node)) == pinned or not name

    def match(node: Mapping[str, Any]) -> bool:
        labels = _node_labels(node)
        name = _node_name(node)
        for term in terms:
            if _term_matches(term, labels, name):
                return True
        return False

    return match


def node_pin_name(affinity: Any) -> str | None:
    """The node name of a DaemonSet pod's node pin, the affinity its controller writes
    (``nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`` with the one term
    ``matchFields: [{key: metadata.name, operator: In, values: [name]}]``: upstream
    ``ReplaceDaemonSetPodNodeNameNodeAffinity`` on a template without node affinity), or None
    for any other affinity.

    Every DaemonSet pod carries one, with its own node's name, and it is the only part of such a
    pod's create that differs from its siblings': the write path recognises it to skip what the
    name cannot change (validation checks the name alone; the type check finds a pin clean).
    managedFields need no such case: a pin's lists are atomic, so its members have one shape
    whatever the name (``apply._shape``)."""
    if type(affinity) is not dict or len(affinity) != 1:
        return None
    node = affinity.get("nodeAffinity")
    if type(node) is not dict or len(node) != 1:
        return None
    required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
    if type(required) is not dict or len(required) != 1:
        return None
    terms = required.get("nodeSelectorTerms")
    if type(terms) is not list or len(terms) != 1 or type(terms[0]) is not dict or len(terms[0]) != 1:
        return None
    fields = terms[0].get("matchFields")
    if type(fields) is not list or len(fields) != 1 or type(fields[0]) is not dict or len(fields[0]) != 3:
        return None
    requirement: dict[str, Any] = fields[0]
    values = requirement.get("values")
    if (requirement.get("key") != "metadata.name" or requirement.get("operator") != "In"
            or type(values) is not list or len(values) != 1 or type(values[0]) is not str):
        return None
    name: str = values[0]
    return name


def _pure_pin(term: _Term) -> str | None:
    """The node name of a term that is exactly ``matchFields: [metadata.name In [x]]``."""
    selector, fields = term
    if selector is None and fields is not None and len(fields) == 1:
        key, must_equal, value = fields[0]
        if key == "metadata.name" and must_equal:
            return value
    return None


def _candidate_name(term: _Term) -> str | None:
    fields = term[1]
    for key, must_equal, value in fields or ():
        if key == "metadata.name" and must_equal:
            return value
    return None


def _never(node: Mapping[str, Any]) -> bool:
    return False


def _always(node: Mapping[str, Any]) -> bool:
    return True


def node_selector_requirement_matches(req: Mapping[str, Any], labels: Mapping[str, str] | None) -> bool:
    """One ``matchExpressions`` entry against node labels; an invalid entry matches nothing."""
    try:
        selector = _compile_expressions((req,))
    except _TermError:
        return False
    return selector.matches(labels)


def compile_node_selector_terms(terms: Sequence[Mapping[str, Any]] | None) -> NodeMatcher:
    """A matcher for a ``nodeSelectorTerms`` list (ORed; an empty list matches nothing)."""
    return _terms_matcher(_compile_terms(terms))


def node_selector_terms_match(terms: Sequence[Mapping[str, Any]] | None, node: Mapping[str, Any]) -> bool:
    """Terms are ORed, requirements inside a term ANDed; empty/unparsable terms never match."""
    return _terms_matcher(_compile_terms(terms))(node)


# --------------------------------------------------------------------------------------------
# Required node affinity of a pod
# --------------------------------------------------------------------------------------------

def _required_terms(pod_spec: Mapping[str, Any]) -> Sequence[Mapping[str, Any]] | None:
    """``requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms``, or None when unset."""
    affinity = pod_spec.get("affinity") or {}
    required = field_of(affinity.get("nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        return None
    return required.get("nodeSelectorTerms") or ()


def compile_required_affinity(pod_spec: Mapping[str, Any]) -> NodeMatcher:
    """Compile upstream ``GetRequiredNodeAffinity(pod)`` into ``matcher(node) -> bool``.

    ``spec.nodeSelector`` (every key present with an equal value) AND, when set, the required
    node affinity terms.  Compile once per pod spec; the matcher allocates nothing per call
    beyond a few dict lookups.
    """
    node_selector = tuple((pod_spec.get("nodeSelector") or {}).items())
    raw_terms = _required_terms(pod_spec)
    terms = None if raw_terms is None else _terms_matcher(_compile_terms(raw_terms))

    if not node_selector:
        return _always if terms is None else terms
    if len(node_selector) == 1:
        (key, value), = node_selector

        def selector_match(node: Mapping[str, Any]) -> bool:
            return _node_labels(node).get(key) == value
    else:
        def selector_match(node: Mapping[str, Any]) -> bool:
            get = _node_labels(node).get
            for k, v in node_selector:
                if get(k) != v:
                    return False
            return True

    if terms is None:
        return selector_match
    if terms is _never:
        return _never
    return lambda node: selector_match(node) and terms(node)


def node_matches_required_affinity(pod_spec: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """nodeSelector AND required node affinity (one-shot; prefer :func:`compile_required_affinity`)."""
    return compile_required_affinity(pod_spec)(node)


def pinned_node_name(pod_spec: Mapping[str, Any]) -> str | None:
    """The only node this pod's required affinity can match, when affinity pins it by name.

    True when every parsable, non-empty term carries a ``matchFields metadata.name In [x]``
    requirement naming the same node — always the case for DaemonSet pods
    (``ReplaceDaemonSetPodNodeNameNodeAffinity``).  The caller still runs the full matcher on
    that node (nodeSelector, other requirements); None means "scan".
    """
    raw_terms = _required_terms(pod_spec)
    if raw_terms is None:
        return None
    names = {_candidate_name(term) for term in _compile_terms(raw_terms)}
    if len(names) == 1:
        return names.pop()
    return None
