"""Property test: `everynode why` agrees with the DaemonSet controller on random clusters.

The same random churn as ``test_daemonset_invariants`` (tests/support/ds_cluster.py: nodes
added, removed, relabelled, tainted; pods failing, turning unready; image changes; controller
restarts; kubelet rounds).  After every step, once the controller has settled, the explainer
reads what a user could read — the API's nodes, pods, revisions, events and the DaemonSet — and:

1. **Same desired set.**  The nodes it says should run a pod are exactly the controller's
   (its eligibility cache) and the independent model's (``Snapshot.eligible``); its update
   revision is the controller's hash; its counts match the stored status (desired, misscheduled).
2. **Verdicts are consistent with the objects**: ``excluded``/``misscheduled`` exactly on nodes
   that should not run a pod (misscheduled iff a pod is there), ``ok`` only where the pod is of
   the current revision and available (model's rules).
3. **Verdicts agree with what the controller then does.**  The controller has settled, so it
   has already done what it would do; whatever the explainer still reports as not done must
   carry the reason the controller is waiting: a ``missing`` node is one where a failed pod
   waits for its backoff or a pod is terminating (a node with nothing on it would have got its
   pod); an ``outdated`` node (RollingUpdate, planner usable) is held by the budget
   (``WaitingForBudget``) or its old pod is terminating; OnDelete never applies here.
4. **After convergence** every node is ``ok`` or ``excluded``, or ``misscheduled`` only where a
   NoSchedule taint lets an updated, available pod stay.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import HealthCheck, given, settings

from everynode.product.clusterdump import ClusterObjects
from everynode.product.why import EXCLUDED, MISSCHEDULED, MISSING, OK, OUTDATED, Explanation, explain
from tests.property.test_daemonset_invariants import scenario
from tests.support.ds_cluster import KEY, NS, REV, Churn, Env, Snapshot


async def explained(env: Env, snap: Snapshot) -> Explanation:
    await env.ctrl.recorder.flush()
    objects = ClusterObjects(
        nodes=list(snap.nodes.values()),
        pods=(await env.client.list("pods", namespace=NS))["items"],
        daemonsets=[snap.ds],
        controllerrevisions=(await env.client.list(REV, namespace=NS))["items"],
        events=(await env.client.list("events", namespace=NS))["items"],
    )
    return explain(snap.ds, objects, now=env.clock.now())


def check(env: Env, snap: Snapshot, exp: Explanation, context: str) -> None:
    state = env.ctrl.state(KEY)
    assert state is not None
    says = {nv.node for nv in exp.nodes if nv.should_run}
    controller = {name for name, (run, _) in state.eligibility.items() if run}
    assert says == controller == set(snap.eligible()), (says, controller, snap.eligible(), context)
    assert exp.update_revision == state.hash, (exp.update_revision, state.hash, context)
    status = snap.ds.get("status") or {}
    assert exp.summary.desired == status.get("desiredNumberScheduled", 0), context
    assert exp.summary.counts.get(MISSCHEDULED, 0) == status.get("numberMisscheduled", 0), context
    assert sum(exp.summary.counts.values()) == len(snap.nodes), context
    groups = snap.by_node()
    rolling = ((snap.ds["spec"].get("updateStrategy") or {}).get("type") or "RollingUpdate") == "RollingUpdate"
    for nv in exp.nodes:
        pods = groups.get(nv.node, [])
        where = f"{nv.node}: {nv.verdict} {nv.reasons} pods {[p['metadata']['name'] for p in pods]}; {context}"
        if not nv.should_run:
            assert nv.verdict == (MISSCHEDULED if pods else EXCLUDED), where
            continue
        assert nv.verdict not in (EXCLUDED, MISSCHEDULED), where
        if nv.verdict == OK:
            pod = next(p for p in pods if p["metadata"]["name"] == nv.pod)
            assert snap.updated(pod) and snap.available(pod), where
        if nv.verdict == MISSING:
            assert pods and {"FailedBackoff", "Terminating"} & set(nv.codes()), where
        if nv.verdict == OUTDATED and rolling and exp.budget is not None:
            assert {"WaitingForBudget", "Terminating"} & set(nv.codes()), where


class ExplainedChurn(Churn):
    async def check_settled(self, before: Snapshot | None = None) -> Snapshot:
        after = await super().check_settled(before)
        check(self.env, after, await explained(self.env, after), f"after steps {self.log}")
        return after


async def run_scenario(example: dict[str, Any]) -> None:
    churn = ExplainedChurn(Env(), strategy=example["strategy"])
    try:
        await churn.setup(example["roles"])
        for action in example["steps"]:
            await churn.step(action)
        await churn.converge()
        snap = await churn.env.snapshot()
        exp = await explained(churn.env, snap)
        for nv in exp.nodes:
            where = f"{nv.node}: {nv.verdict} {nv.reasons}; after steps {churn.log}"
            if nv.verdict == MISSCHEDULED:
                assert nv.should_continue, where
            else:
                assert nv.verdict == (OK if nv.should_run else EXCLUDED), where
    finally:
        await churn.env.ctrl.stop()


@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(example=scenario)
def test_why_agrees_with_the_controller_under_random_churn(example: dict[str, Any]) -> None:
    asyncio.run(run_scenario(example))
