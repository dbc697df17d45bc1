"""Which nodes a DaemonSet wants, what its pods look like, and the small pure rules around them.

Upstream: ``pkg/controller/daemon/util/daemonset_util.go`` (default tolerations, pod template,
node pin, target node, "is updated", surge/unavailable counts) and ``daemon_controller.go``
(``NodeShouldRunDaemonPod``, ``podByCreationTimestampAndPhase``); ``IsPodReady`` /
``IsPodAvailable`` (``pkg/api/v1/pod/util.go``) are :mod:`everynode.api.pod`'s.  Reference: daemonset-semantics.md §1.5, §3, §5.1.

Everything here is pure (no I/O, no clock reads: "now" is an argument) so that the decision
table, the budgets and the orderings are tested as tables.  One deliberate addition to
upstream's shape: :class:`Placement` is the DaemonSet's scheduling constraints *compiled once*
(the simulated pod's tolerations merged, selector and affinity extracted) so that evaluating a
node costs a few dict lookups.  The controller evaluates every node once per DaemonSet spec
change and then one node per node event, which is what keeps node events O(DaemonSets).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from everynode.api import intstr
from everynode.api.daemonset import ROLLING_UPDATE, update_strategy_type
from everynode.api.meta import deep_copy, make_controller_ref
from everynode.api.node import (
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_PID_PRESSURE,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
)

# Pod readiness lives in the api layer (api/pod.py); re-exported here for the callers of this
# module's predicates.
from everynode.api.pod import available_at as available_at
from everynode.api.pod import is_pod_available as is_pod_available
from everynode.api.pod import is_pod_ready as is_pod_ready
from everynode.api.pod import timestamp_seconds
from everynode.api.scheduling import find_untolerated_taint, node_matches_required_affinity

Obj = dict[str, Any]

# staging/src/k8s.io/api/apps/v1/types.go
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"  # DefaultDaemonSetUniqueLabelKey
TEMPLATE_GENERATION_LABEL = "pod-template-generation"  # DaemonSetTemplateGenerationKey
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"  # DeprecatedTemplateGeneration

OBJECT_NAME_FIELD = "metadata.name"  # metav1.ObjectNameField

_FIT_EFFECTS = ("NoSchedule", "NoExecute")
_CONTINUE_EFFECTS = ("NoExecute",)


# ---------------------------------------------------------------------------------------------
# Default tolerations (AddOrUpdateDaemonPodTolerations + v1helper.AddOrUpdateTolerationInPodSpec)
# ---------------------------------------------------------------------------------------------

def default_daemon_tolerations(*, host_network: bool) -> list[Obj]:
    """The tolerations the controller adds to every DaemonSet pod, in upstream's order."""
    tolerations = [
        {"key": TAINT_NODE_NOT_READY, "operator": "Exists", "effect": "NoExecute"},
        {"key": TAINT_NODE_UNREACHABLE, "operator": "Exists", "effect": "NoExecute"},
        {"key": TAINT_NODE_DISK_PRESSURE, "operator": "Exists", "effect": "NoSchedule"},
        {"key": TAINT_NODE_MEMORY_PRESSURE, "operator": "Exists", "effect": "NoSchedule"},
        {"key": TAINT_NODE_PID_PRESSURE, "operator": "Exists", "effect": "NoSchedule"},
        {"key": TAINT_NODE_UNSCHEDULABLE, "operator": "Exists", "effect": "NoSchedule"},
    ]
    if host_network:
        tolerations.append({"key": TAINT_NODE_NETWORK_UNAVAILABLE, "operator": "Exists", "effect": "NoSchedule"})
    return tolerations


def _toleration_identity(t: Mapping[str, Any]) -> tuple[str, str, str, str]:
    # Toleration.MatchToleration: key, operator, value and effect all equal (Go zero value "").
    return (t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or "")


def _semantically_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return _toleration_identity(a) == _toleration_identity(b) and \
        a.get("tolerationSeconds") == b.get("tolerationSeconds")


def add_or_update_toleration(tolerations: list[Obj], toleration: Obj) -> list[Obj]:
    """``AddOrUpdateTolerationInPodSpec`` on a list, returning the new list (inputs untouched).

    A toleration with the same key/operator/value/effect is *replaced in place* by ours unless it
    is already semantically identical (then the list is returned unchanged); otherwise ours is
    appended.  So a user's ``not-ready:NoExecute`` with ``tolerationSeconds: 300`` becomes an
    infinite toleration.
    """
    ident = _toleration_identity(toleration)
    result: list[Obj] = []
    updated = False
    for existing in tolerations:
        if _toleration_identity(existing) == ident:
            if _semantically_equal(existing, toleration):
                return tolerations
            result.append(dict(toleration))
            updated = True
            continue
        result.append(existing)
    if not updated:
        result.append(dict(toleration))
    return result


def with_daemon_tolerations(tolerations: Iterable[Obj] | None, *, host_network: bool) -> list[Obj]:
    merged = list(tolerations or ())
    for tol in default_daemon_tolerations(host_network=host_network):
        merged = add_or_update_toleration(merged, tol)
    return merged


# ---------------------------------------------------------------------------------------------
# Node eligibility (NodeShouldRunDaemonPod), compiled per DaemonSet spec
# ---------------------------------------------------------------------------------------------

class Placement:
    """A DaemonSet's scheduling constraints, compiled: ``evaluate(node)`` is §3.1 / §3.3.

    The simulated pod of upstream (``NewPod``) is the template spec plus the default
    tolerations; only its nodeName, nodeSelector, required node affinity and tolerations matter.
    """

    __slots__ = ("template_node_name", "affinity_spec", "tolerations", "_trivial_affinity")

    def __init__(self, ds: Mapping[str, Any]) -> None:
        spec = (((ds.get("spec") or {}).get("template") or {}).get("spec")) or {}
        self.template_node_name: str = spec.get("nodeName") or ""
        self.tolerations: list[Obj] = with_daemon_tolerations(spec.get("tolerations"),
                                                              host_network=bool(spec.get("hostNetwork")))
        affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
        required = affinity.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.affinity_spec: Obj = {"nodeSelector": spec.get("nodeSelector") or {},
                                   "affinity": {"nodeAffinity": {
                                       "requiredDuringSchedulingIgnoredDuringExecution": required}}
                                   if required is not None else None}
        if self.affinity_spec["affinity"] is None:
            del self.affinity_spec["affinity"]
        self._trivial_affinity = not self.affinity_spec["nodeSelector"] and required is None

    def evaluate(self, node: Mapping[str, Any]) -> tuple[bool, bool]:
        """``(shouldRun, shouldContinueRunning)`` for this node (decision table §3.3)."""
        fit = self.fit(node)
        return fit.should_run, fit.should_continue

    def fit(self, node: Mapping[str, Any]) -> NodeFit:
        """The decision of :meth:`evaluate` with the row that decided it (for ``everynode why``):
        ``failed`` is ``""`` (fits), ``"nodeName"`` (row 1), ``"affinity"`` (row 2: nodeSelector or
        required node affinity) or ``"taint"`` (rows 3-5, ``taint`` the first untolerated one)."""
        name = (node.get("metadata") or {}).get("name") or ""
        # Row 1: the template names another node.
        if self.template_node_name and self.template_node_name != name:
            return _FIT_NODE_NAME
        # Row 2: nodeSelector / required node affinity (parse errors count as "no match").
        if not self._trivial_affinity:
            try:
                fits = node_matches_required_affinity(self.affinity_spec, node)
            except Exception:  # noqa: BLE001 - upstream ignores parse errors here
                fits = False
            if not fits:
                return _FIT_AFFINITY
        taints = (node.get("spec") or {}).get("taints") or ()
        if not taints:
            return _FITS
        # Rows 3-5: taints.  PreferNoSchedule is ignored; tolerationSeconds is irrelevant.
        taint = find_untolerated_taint(taints, self.tolerations, effects=_FIT_EFFECTS)
        if taint is None:
            return _FITS
        return NodeFit(False, find_untolerated_taint(taints, self.tolerations, effects=_CONTINUE_EFFECTS) is None,
                       "taint", taint)


class NodeFit(NamedTuple):
    """One node's ``(shouldRun, shouldContinueRunning)`` and the rule that refused it."""

    should_run: bool
    should_continue: bool
    failed: str = ""  # "", "nodeName", "affinity" or "taint"
    taint: Mapping[str, Any] | None = None


_FITS = NodeFit(True, True)
_FIT_NODE_NAME = NodeFit(False, False, "nodeName")
_FIT_AFFINITY = NodeFit(False, False, "affinity")


def node_should_run_daemon_pod(node: Obj, ds: Obj) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod(node, ds) -> (shouldRun, shouldContinueRunning)``."""
    return Placement(ds).evaluate(node)


# ---------------------------------------------------------------------------------------------
# Pods the controller creates (CreatePodTemplate, ReplaceDaemonSetPodNodeNameNodeAffinity)
# ---------------------------------------------------------------------------------------------

def template_generation(ds: Mapping[str, Any]) -> int | None:
    """``GetTemplateGeneration``: the deprecated annotation as an int; missing/unparsable → None."""
    text = ((ds.get("metadata") or {}).get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if text is None:
        return None
    try:
        return int(text, 10)
    except ValueError:
        return None


def pin_to_node(affinity: Obj | None, node_name: str) -> Obj:
    """The pod's affinity with its *required* node affinity replaced by one ``metadata.name`` term.

    All existing required terms are dropped (safe: the controller already checked the node
    satisfies them); preferred terms and pod (anti-)affinity are kept.  Returns a new dict.
    """
    term = {"matchFields": [{"key": OBJECT_NAME_FIELD, "operator": "In", "values": [node_name]}]}
    result = dict(affinity or {})
    node_affinity = dict(result.get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    required["nodeSelectorTerms"] = [term]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    result["nodeAffinity"] = node_affinity
    return result


def daemon_pod(ds: Obj, template: Obj, node_name: str) -> Obj | None:
    """The pod ``syncNodes`` creates for ``node_name`` from ``template`` (:func:`pod_template_for`):
    ``generateName`` ``<ds>-``, the template's labels, annotations and finalizers, the DaemonSet as
    controller, and the node pin in place of the required node affinity.  None when the template
    has no labels (upstream refuses to create such pods)."""
    md = ds["metadata"]
    tmd = template.get("metadata") or {}
    labels = dict(tmd.get("labels") or {})
    if not labels:
        return None
    metadata: Obj = {"generateName": f"{md['name']}-", "namespace": md.get("namespace") or "",
                     "labels": labels,
                     "ownerReferences": [make_controller_ref(ds, api_version="apps/v1", kind="DaemonSet")]}
    if tmd.get("annotations"):
        metadata["annotations"] = dict(tmd["annotations"])
    if tmd.get("finalizers"):
        metadata["finalizers"] = list(tmd["finalizers"])
    spec = dict(template.get("spec") or {})
    spec["affinity"] = pin_to_node(spec.get("affinity"), node_name)  # the scheduler binds it
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def pod_template_for(ds: Obj, hash_: str) -> Obj:
    """``CreatePodTemplate``: a private copy of the template with the default tolerations and the
    ``pod-template-generation`` / ``controller-revision-hash`` labels."""
    template = deep_copy((ds.get("spec") or {}).get("template") or {})
    spec = template.setdefault("spec", {})
    spec["tolerations"] = with_daemon_tolerations(spec.get("tolerations"), host_network=bool(spec.get("hostNetwork")))
    metadata = template.setdefault("metadata", {})
    labels = metadata.get("labels")
    if labels is None:
        labels = metadata["labels"] = {}
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if hash_:
        labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    return template


class TargetNodeError(ValueError):
    """``GetTargetNodeName`` failed; the message is upstream's."""


def target_node_name(pod: Mapping[str, Any]) -> str:
    """``GetTargetNodeName``: ``spec.nodeName``, else the ``metadata.name`` matchFields pin."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    md = pod.get("metadata") or {}
    ref = f"{md.get('namespace') or ''}/{md.get('name') or ''}"
    required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        raise TargetNodeError(f"no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution for pod {ref}")
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        raise TargetNodeError(f"no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod {ref}")
    for term in terms:
        for req in (term or {}).get("matchFields") or ():
            if req.get("key") == OBJECT_NAME_FIELD and req.get("operator") == "In":
                values = req.get("values") or []
                if len(values) != 1:
                    raise TargetNodeError(f"the matchFields value of '{OBJECT_NAME_FIELD}' is not unique for pod {ref}")
                return values[0]
    raise TargetNodeError(f"no node name found for pod {ref}")


def target_node_or_none(pod: Mapping[str, Any]) -> str | None:
    try:
        return target_node_name(pod)
    except TargetNodeError:
        return None


# ---------------------------------------------------------------------------------------------
# Pod state: updated / ready / available, and "oldest first"
# ---------------------------------------------------------------------------------------------

def pod_hash(pod: Mapping[str, Any]) -> str | None:
    """The revision hash a pod carries (its ``controller-revision-hash`` label), if any."""
    return ((pod.get("metadata") or {}).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)


def is_pod_updated(pod: Mapping[str, Any], hash_: str, generation: int | None) -> bool:
    """``IsPodUpdated``: the pod carries the current hash, or the current template generation."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if hash_ and labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_:
        return True
    return generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(generation)


def oldest_first_key(pod: Obj) -> tuple[bool, float, str]:
    """``podByCreationTimestampAndPhase``: bound before unbound, then creationTimestamp, then name."""
    md = pod.get("metadata") or {}
    ts = md.get("creationTimestamp")
    return (not (pod.get("spec") or {}).get("nodeName"), timestamp_seconds(ts) if ts else -math.inf, md.get("name") or "")


def sort_oldest_first(pods: Iterable[Obj]) -> list[Obj]:
    return sorted(pods, key=oldest_first_key)


def oldest_pod(pods: Iterable[Obj]) -> Obj | None:
    return min(pods, key=oldest_first_key, default=None)


# ---------------------------------------------------------------------------------------------
# Rolling-update budgets (SurgeCount, UnavailableCount, updatedDesiredNodeCounts)
# ---------------------------------------------------------------------------------------------

class BudgetError(ValueError):
    """An unusable maxSurge / maxUnavailable; the message is upstream's."""


def _rolling(ds: Obj) -> Obj | None:
    if update_strategy_type(ds) != ROLLING_UPDATE:
        return None
    return ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")


def surge_count(ds: Obj, number_to_schedule: int) -> int:
    """``SurgeCount``: 0 unless RollingUpdate with a maxSurge; percentages round up."""
    rolling = _rolling(ds)
    if rolling is None or rolling.get("maxSurge") is None:
        return 0
    return intstr.scaled_value(rolling["maxSurge"], number_to_schedule, round_up=True)


def unavailable_count(ds: Obj, number_to_schedule: int) -> int:
    """``UnavailableCount``: 0 unless RollingUpdate; percentages round up."""
    rolling = _rolling(ds)
    if rolling is None:
        return 0
    value = rolling.get("maxUnavailable")
    if value is None:
        # Go: GetScaledValueFromIntOrPercent(nil, ...) fails; defaulting makes this unreachable.
        raise ValueError("nil value for IntOrString")
    return intstr.scaled_value(value, number_to_schedule, round_up=True)


def allows_surge(ds: Obj) -> bool:
    """``AllowsSurge``: maxSurge evaluated against one node is positive."""
    try:
        return surge_count(ds, 1) > 0
    except ValueError:
        return False


def update_budgets(ds: Obj, desired: int) -> tuple[int, int]:
    """``(maxSurge, maxUnavailable)`` for ``desired`` nodes, with upstream's safety net.

    Raises :class:`BudgetError` with ``invalid value for MaxUnavailable: …`` /
    ``invalid value for MaxSurge: …``.
    """
    try:
        max_unavailable = unavailable_count(ds, desired)
    except ValueError as e:
        raise BudgetError(f"invalid value for MaxUnavailable: {e}") from e
    try:
        max_surge = surge_count(ds, desired)
    except ValueError as e:
        raise BudgetError(f"invalid value for MaxSurge: {e}") from e
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        # "DaemonSet is not configured for surge or unavailability, defaulting to accepting unavailability"
        max_unavailable = 1
    return max_surge, max_unavailable
