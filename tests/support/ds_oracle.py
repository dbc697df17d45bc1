"""Upstream's full scan, kept as the test oracle for the DaemonSet controller's incremental state.

The controller keeps, per DaemonSet, status contributions and a rolling-update index that it
updates from events (controller.py's module docstring).  Upstream recomputes both on every sync
from every node and every pod of the namespace.  The functions here do exactly that, from the
controller's informer caches and nothing else of its state (selector, eligibility and grouping
computed afresh), so :meth:`tests.support.ds_cluster.Env.settle` can assert after every step
that the incremental counters and plan equal what upstream's sync would compute.

They live under tests/ on purpose: the product has one algorithm; this is the reference.
"""

from __future__ import annotations

from typing import Any

from everynode.api.meta import controller_ref
from everynode.api.selectors import label_selector_from_dict
from everynode.client.informer import NAMESPACE_INDEX
from everynode.controllers.daemonset.controller import DaemonSetController
from everynode.controllers.daemonset.daemonpods import target_node_or_none, template_generation
from everynode.controllers.daemonset.placement import Placement
from everynode.controllers.daemonset.status import StatusCounts, count_status
from everynode.controllers.daemonset.update import RollingUpdatePlan, UpdateError, plan_rolling_update

Obj = dict[str, Any]


def _terminal_and_deleted(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp")) and \
        (pod.get("status") or {}).get("phase") in ("Failed", "Succeeded")


def _scan(ctrl: DaemonSetController, key: str) -> tuple[Obj, str, dict[str, bool], dict[str, list[Obj]]]:
    """(DaemonSet, current hash, shouldRun per node, claimed pods by target node): upstream's
    ``getNodesToDaemonPods`` and ``nodeShouldRunDaemonPod`` over the caches."""
    ds = ctrl.ds_informer.get(key)
    state = ctrl.state(key)
    if ds is None or state is None or state.hash is None:
        raise KeyError(key)
    selector = label_selector_from_dict((ds.get("spec") or {}).get("selector"))
    placement = Placement(ds)
    uid = ds["metadata"].get("uid")
    eligibility = {n["metadata"]["name"]: placement.evaluate(n)[0] for n in ctrl.node_informer.list()}
    node_to_pods: dict[str, list[Obj]] = {}
    for pod in ctrl.pod_informer.by_index(NAMESPACE_INDEX, ds["metadata"].get("namespace") or ""):
        ref = controller_ref(pod)
        if ref is None or ref.get("uid") != uid or not selector.matches(pod["metadata"].get("labels")) \
                or _terminal_and_deleted(pod):
            continue
        node = target_node_or_none(pod)
        if node is not None:
            node_to_pods.setdefault(node, []).append(pod)
    return ds, state.hash, eligibility, node_to_pods


def full_recount(ctrl: DaemonSetController, key: str) -> StatusCounts:
    """``updateDaemonSetStatus``' counters, recomputed over every node and pod."""
    ds, hash_, eligibility, node_to_pods = _scan(ctrl, key)
    return count_status(eligibility, node_to_pods, hash_=hash_, generation=template_generation(ds),
                        min_ready_seconds=int((ds.get("spec") or {}).get("minReadySeconds") or 0),
                        now=ctrl.clock.now())


def plan_from_scratch(ctrl: DaemonSetController, key: str) -> RollingUpdatePlan | str:
    """Upstream's rolling-update planner over every node (an :class:`UpdateError` as its message)."""
    ds, hash_, eligibility, node_to_pods = _scan(ctrl, key)
    try:
        return plan_rolling_update(ds, hash_=hash_, node_eligibility=eligibility, node_to_pods=node_to_pods,
                                   now=ctrl.clock.now())
    except UpdateError as e:
        return str(e)


def incremental_plan(ctrl: DaemonSetController, key: str) -> RollingUpdatePlan | str:
    """The plan the controller's incremental index gives now (no API calls)."""
    ds = ctrl.ds_informer.get(key)
    state = ctrl.state(key)
    if ds is None or state is None or state.hash is None:
        raise KeyError(key)
    ctrl.incremental_counts(key)  # brings the index up to date
    try:
        return state.rollout.plan(ds)
    except UpdateError as e:
        return str(e)
