"""Property test: the DaemonSet controller keeps upstream's invariants under random cluster churn.

Hypothesis draws a small cluster (≤ 8 nodes, labelled ``role=a`` or ``role=b``; the DaemonSet
selects ``role=a``), a RollingUpdate strategy (maxUnavailable as an integer or a percentage, or
maxSurge) and a sequence of steps: node adds / removes / relabels, NoSchedule and NoExecute taints
and their removal, pods failing (``status.phase=Failed`` via ``pods/status``), pods turning
unready or ready, template (image) changes — including back to an earlier image, which reuses a
revision — controller restarts (stop, then a new instance on the same API), and rounds of the
harness playing scheduler + kubelet + pod GC (tests/support/ds_cluster.py), some of which leave
pods unready or leave terminating pods terminating.

Everything runs through the real in-process API.  After every step the controller settles
(``wait_idle``) and these invariants are checked against an independent model of upstream's rules
(daemonset-semantics.md §3, §5, §8, written in ds_cluster.py, not the controller's code):

1. **Pods per node.**  Without surge a node never has more than one pod of the DaemonSet —
   terminating pods included, since a replacement waits until the old pod object is gone
   (terminal pods being deleted aside, §3.4); with maxSurge > 0 at most two running
   (non-terminating, not Failed/Succeeded) pods: one updated and one old.

2. **Rollout budget.**  Let ``U(s)`` be the set of *eligible* nodes (shouldRun) that have no
   available, non-terminating pod in state ``s`` (a node whose only pod is terminating counts as
   unavailable), and ``M`` maxUnavailable resolved against the number of eligible nodes (rounded
   up; 0 with surge).  Let ``s⁻`` be the state right after the step's own writes — before the
   controller reacted — and ``s⁺`` the settled state.  Then::

       |U(s⁺)| ≤ max(M, |U(s⁻)|)

   Why this is upstream's rule exactly: while it settles, the controller is the only writer, so
   nothing *becomes* available; the only controller action that makes an available node
   unavailable is the rolling update deleting an available old pod, and upstream does that only
   while the planner's unavailable count (which includes every node of ``U``) is below ``M``, one
   node per deletion.  Every other action leaves ``|U|`` unchanged or lowers it: unavailable old
   pods are deleted *regardless of the budget* (they are already in ``U(s⁻)``: "nodes that were
   already unavailable for reasons outside the rollout"), failed pods are already unavailable,
   surge pods are created next to an available old pod, an old pod is deleted beside an
   available new one, pods on ineligible nodes do not count.  So the rollout may add
   unavailability only up to ``M`` and never adds any once outside causes alone reach ``M``
   (with surge, ``M = 0``: the controller never lowers availability at all).

   The surge budget is checked the same way: with ``S(s)`` the nodes where a live available old
   pod runs beside a live, not yet available updated pod and ``N`` maxSurge resolved against the
   eligible nodes, ``|S(s⁺)| ≤ max(N, |S(s⁻)|)`` — the controller starts budgeted surge pods only
   while fewer than ``N`` are in flight; nodes whose old pod is unavailable get their new pod
   regardless of the budget, but such a pair is not in ``S``.

3. **Status = recount.**  After settling, the stored status counters equal the independent §8
   recount from the API's nodes and pods, ``observedGeneration == generation``, and the
   controller's incremental counters equal its own full recount (checked by ``Env.settle``).

4. **Convergence.**  Once the steps stop, rounds of "kubelet makes every pod Ready and finishes
   deletions; time passes (failed-pod backoff expires)" lead, within a bounded number of rounds,
   to: every eligible node runs exactly one available pod of the current revision; nodes where
   the DaemonSet may not continue (selector mismatch, NoExecute taint) and vanished nodes have no
   pods; a node with only an untolerated NoSchedule taint keeps at most its one updated pod
   (upstream never removes it: it is what ``numberMisscheduled`` counts, 0 when there is no such
   node); status desired = current = ready = updated = available = #eligible.

Upstream has no node-delete handler (§4.1); after removing a node the test enqueues the DaemonSet
itself, standing in for the resync that pod GC or the periodic resync would bring.  Pod GC of the
vanished node's bound pods happens either at once or at the next kubelet round; in between, with
surge, upstream's rolling update fails its syncs (``couldn't get node for nodeName``) and retries —
the invariants hold all the same.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.ds_cluster import Churn, Env

ROLES = ("a", "b")

STRATEGIES = [
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "30%"}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
    {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "50%"}},
]

index = st.integers(0, 15)
effects = st.sampled_from(["NoSchedule", "NoExecute"])
image = st.tuples(st.just("image"), st.sampled_from(["v1", "v2", "v3"]))
kubelet = st.one_of(st.tuples(st.just("kubelet"), st.frozensets(index, max_size=2), st.booleans()),
                    st.tuples(st.just("kubelet"), st.just(frozenset()), st.just(True)))
# Rollouts and kubelet rounds are drawn more often than the rest: they are what moves a rollout.
step = st.one_of(
    image, kubelet, kubelet, image, kubelet,
    st.tuples(st.just("add_node"), st.sampled_from(ROLES), st.sampled_from([None, None, "NoSchedule", "NoExecute"])),
    st.tuples(st.just("add_node"), st.just("a"), st.just(None)),
    st.tuples(st.just("remove_node"), index, st.booleans()),
    st.tuples(st.just("relabel"), index, st.sampled_from(ROLES)),
    st.tuples(st.just("taint"), index, effects),
    st.tuples(st.just("untaint"), index),
    st.tuples(st.just("fail_pod"), index),
    st.tuples(st.just("unready"), index),
    st.tuples(st.just("ready"), index),
    st.tuples(st.just("restart")),
)

scenario = st.fixed_dictionaries({
    "roles": st.lists(st.sampled_from(["a", "a", "b"]), min_size=1, max_size=6),
    "strategy": st.sampled_from(STRATEGIES),
    "steps": st.lists(step, min_size=8, max_size=24),
})

async def run_scenario(example: dict[str, Any]) -> None:
    churn = Churn(Env(), strategy=example["strategy"])
    try:
        await churn.setup(example["roles"])
        for action in example["steps"]:
            await churn.step(action)
        await churn.converge()
    finally:
        await churn.env.ctrl.stop()


@settings(max_examples=25, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(example=scenario)
def test_daemonset_invariants_hold_under_random_churn(example):
    asyncio.run(run_scenario(example))
