"""The DaemonSet controller converges and keeps its invariants while 20 % of its writes fail.

Real clusters answer writes with optimistic-lock conflicts (409), transient server errors (500)
and timeouts — including timeouts of writes that *were* applied, which is what makes expectations
and idempotent retries matter.  :class:`~everynode.client.faults.FaultInjector` produces exactly
those on the controller's client (the test harness writes through a clean client), seeded so a run
is reproducible.

The scenario is a scripted rollout with node churn, a failed pod, unready pods, a controller
restart and a rollback to the first image; after every step the same invariants as the property
test are checked (tests/property/test_daemonset_invariants.py documents them: pods per node,
rollout and surge budgets, status = recount), waiting out the controller's rate-limited retries
before each check; at the end the DaemonSet must converge.  The retry backoff is the fast test
limiter (1 ms doubling to 1 s), so the run stays within a few seconds.
"""

from __future__ import annotations

import pytest

from everynode.client.faults import FaultInjector
from tests.support.ds_cluster import Churn, Env

CALM = ("kubelet", frozenset(), True)

SCRIPT = [
    ("image", "v2"),
    CALM,
    ("add_node", "a", None),
    ("kubelet", frozenset({1}), False),  # one node's pods stay unready, deletions linger
    ("taint", 2, "NoExecute"),
    CALM,
    ("relabel", 5, "a"),
    ("fail_pod", 0),
    ("image", "v3"),
    CALM,
    ("remove_node", 3, True),  # pod GC at once: with surge, pods on a vanished node fail syncs (§5.3)
    ("restart",),
    CALM,
    ("untaint", 2),
    ("unready", 1),
    ("taint", 4, "NoSchedule"),
    CALM,
    ("image", "v1"),  # back to the first template: its revision is reused
    CALM,
    CALM,
]

STRATEGIES = {
    "maxUnavailable-2": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}},
    "maxUnavailable-50%": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}},
    "maxSurge-1": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
}


@pytest.mark.parametrize("seed", [7, 11])
@pytest.mark.parametrize("strategy", list(STRATEGIES), ids=list(STRATEGIES))
async def test_converges_and_keeps_invariants_with_20_percent_of_writes_failing(strategy, seed):
    faults = FaultInjector(0.2, seed=seed)
    churn = Churn(Env(faults=faults), strategy=STRATEGIES[strategy], wait_retries=True)
    try:
        await churn.setup(["a", "a", "a", "a", "a", "b"])
        for action in SCRIPT:
            await churn.step(action)
        await churn.converge()
    finally:
        await churn.env.ctrl.stop()
    # The faults did strike, every kind of them.
    assert sum(faults.injected.values()) >= 10, faults.injected
    assert set(faults.injected) == {"conflict", "internal", "timeout"}, faults.injected
    revisions = await churn.env.revisions()
    images = [r["data"]["spec"]["template"]["spec"]["containers"][0]["image"] for r in revisions]
    assert images[-1] == "v1" and sorted(images) == ["v1", "v2", "v3"]
