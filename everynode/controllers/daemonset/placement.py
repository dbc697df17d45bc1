"""Which nodes a DaemonSet wants: its pods' tolerations and the node test, compiled once.

Upstream: ``pkg/controller/daemon/util/daemonset_util.go`` (``AddOrUpdateDaemonPodTolerations``)
and ``daemon_controller.go`` (``NodeShouldRunDaemonPod``); reference: daemonset-semantics.md
§1.5.  Pure (no I/O) so the decision table is tested as a table.  One deliberate addition to
upstream's shape: :class:`Placement` is the DaemonSet's scheduling constraints *compiled once*
(the simulated pod's tolerations merged, selector and affinity extracted) so that evaluating a
node costs a few dict lookups.  The controller evaluates every node once per DaemonSet spec
change and then one node per node event, which is what keeps node events O(DaemonSets).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, NamedTuple

from everynode.api.meta import field_of
from everynode.api.node import (
    TAINT_NODE_DISK_PRESSURE,
    TAINT_NODE_MEMORY_PRESSURE,
    TAINT_NODE_NETWORK_UNAVAILABLE,
    TAINT_NODE_NOT_READY,
    TAINT_NODE_PID_PRESSURE,
    TAINT_NODE_UNREACHABLE,
    TAINT_NODE_UNSCHEDULABLE,
)
from everynode.api.scheduling import find_untolerated_taint, node_matches_required_affinity

Obj = dict[str, Any]

_FIT_EFFECTS: Final = ("NoSchedule", "NoExecute")
_CONTINUE_EFFECTS: Final = ("NoExecute",)


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
        spec = ((field_of(ds.get("spec"), "template") or {}).get("spec")) or {}
        self.template_node_name: str = spec.get("nodeName") or ""
        self.tolerations: list[Obj] = with_daemon_tolerations(spec.get("tolerations"),
                                                              host_network=bool(spec.get("hostNetwork")))
        affinity = field_of(spec.get("affinity"), "nodeAffinity") or {}
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
        name = field_of(node.get("metadata"), "name") or ""
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
        taints = field_of(node.get("spec"), "taints") or ()
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


_FITS: Final = NodeFit(True, True)
_FIT_NODE_NAME: Final = NodeFit(False, False, "nodeName")
_FIT_AFFINITY: Final = NodeFit(False, False, "affinity")


def node_should_run_daemon_pod(node: Obj, ds: Obj) -> tuple[bool, bool]:
    """``NodeShouldRunDaemonPod(node, ds) -> (shouldRun, shouldContinueRunning)``."""
    return Placement(ds).evaluate(node)
