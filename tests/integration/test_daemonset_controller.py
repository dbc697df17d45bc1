"""The DaemonSet controller against the real in-process API (no scheduler, no kubelet).

Like upstream's ``test/integration/daemonset`` tests, the test plays scheduler and kubelet
itself: it binds pods through ``pods/binding`` and marks them Running + Ready through
``pods/status``, and finishes graceful deletions with a zero grace period.  After every step the
incremental status counters are checked against the full upstream-style recount.
"""

from __future__ import annotations

import asyncio

import pytest

from everynode.client.informer import SharedInformerFactory
from everynode.controllers.daemonset.update import UpdateError
from everynode.controllers.garbagecollector import GarbageCollector
from tests.support.ds_cluster import KEY, NS, REV, Env, cond, counters, pinned_node

DS = "daemonsets.apps"


@pytest.fixture
async def env(request):
    e = Env(full_scan=getattr(request, "param", False))
    await e.ctrl.start()
    yield e
    await e.ctrl.stop()


CONTROL_PLANE_TAINT = {"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}


@pytest.mark.parametrize("env", [False, True], indirect=True, ids=["incremental", "full-scan"])
async def test_pods_pinned_to_every_eligible_node_then_ready(env):
    for name in ("n1", "n2"):
        await env.node(name)
    await env.node("cp", labels={"node-role.kubernetes.io/control-plane": ""}, taints=[CONTROL_PLANE_TAINT])
    await env.daemonset()
    status = await env.settle()
    pods = await env.pods()
    assert sorted(pinned_node(p) for p in pods) == ["n1", "n2"]
    ds = await env.get_ds()
    revs = await env.revisions()
    assert len(revs) == 1 and revs[0]["revision"] == 1
    hash_ = revs[0]["metadata"]["labels"]["controller-revision-hash"]
    assert revs[0]["metadata"]["name"] == f"ds-{hash_}"
    for pod in pods:
        md = pod["metadata"]
        assert md["generateName"] == "ds-"
        assert md["labels"] == {"app": "ds", "controller-revision-hash": hash_, "pod-template-generation": "1"}
        assert md["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds",
                                          "uid": ds["metadata"]["uid"], "controller": True,
                                          "blockOwnerDeletion": True}]
        keys = {(t["key"], t["effect"]) for t in pod["spec"]["tolerations"]}
        assert ("node.kubernetes.io/not-ready", "NoExecute") in keys
        assert ("node.kubernetes.io/unschedulable", "NoSchedule") in keys
        assert not pod["spec"].get("nodeName")
    assert counters(status) == (2, 2, 0, 2, 0, 0, 2)
    assert status["observedGeneration"] == 1
    assert cond(status, "Progressing")["reason"] == "RevisionRollingOut"
    await env.run_pods()
    status = await env.settle()
    assert counters(status) == (2, 2, 2, 2, 2, 0, 0)
    assert cond(status, "Progressing")["reason"] == "NewRevisionAvailable"
    assert cond(status, "Available")["status"] == "True"
    assert sorted(m.split(": ")[0] for m in await env.events("SuccessfulCreate")) == ["Created pod", "Created pod"]
    # steady state: no write loop, no further work
    syncs = env.ctrl.syncs
    await env.settle()
    assert env.ctrl.syncs == syncs


async def test_tolerated_control_plane_and_new_nodes(env):
    await env.node("n1")
    await env.daemonset(tolerations=[{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists",
                                      "effect": "NoSchedule"}])
    await env.settle()
    await env.node("cp", taints=[CONTROL_PLANE_TAINT])
    await env.node("n2")
    status = await env.settle()
    assert sorted(pinned_node(p) for p in await env.pods()) == ["cp", "n1", "n2"]
    assert counters(status)[:2] == (3, 3)


async def test_node_relabel_starts_and_stops_pods(env):
    await env.node("n1", labels={"disk": "ssd"})
    await env.node("n2", labels={"disk": "hdd"})
    await env.daemonset(node_selector={"disk": "ssd"})
    await env.settle()
    assert [pinned_node(p) for p in await env.pods()] == ["n1"]
    await env.patch_node("n2", {"metadata": {"labels": {"disk": "ssd"}}})
    await env.settle()
    assert sorted(pinned_node(p) for p in await env.pods()) == ["n1", "n2"]
    await env.run_pods()
    await env.settle()
    await env.patch_node("n1", {"metadata": {"labels": {"disk": "hdd"}}})
    status = await env.settle()
    # the bound pod on n1 is terminating: misscheduled until it is gone
    assert counters(status)[0] == 1 and status["numberMisscheduled"] == 1
    await env.finish_deletions()
    status = await env.settle()
    assert [pinned_node(p) for p in await env.pods()] == ["n2"]
    assert counters(status) == (1, 1, 1, 1, 1, 0, 0)


async def test_taints_noschedule_keeps_noexecute_evicts(env):
    await env.node("n1")
    await env.node("n2")
    await env.daemonset()
    await env.settle()
    await env.run_pods()
    await env.settle()
    await env.patch_node("n1", {"spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}})
    status = await env.settle()
    assert len(await env.pods(include_terminating=False)) == 2
    assert counters(status) == (1, 1, 1, 1, 1, 1, 0)
    await env.patch_node("n2", {"spec": {"taints": [{"key": "dedicated", "value": "x", "effect": "NoExecute"}]}})
    status = await env.settle()
    assert [pinned_node(p) for p in await env.pods(include_terminating=False)] == ["n1"]
    assert status["desiredNumberScheduled"] == 0


async def test_unbound_pod_on_deleted_node_is_deleted_on_next_sync(env):
    await env.node("n1")
    await env.node("n2")
    await env.daemonset()
    await env.settle()
    await env.client.delete("nodes", "n2")
    await env.settle()
    assert len(await env.pods()) == 2  # no node-delete handler: nothing happens yet
    await env.ctrl.sync(KEY)
    status = await env.settle()
    assert [pinned_node(p) for p in await env.pods()] == ["n1"]
    assert counters(status)[:2] == (1, 1)


async def rollout(env, *, max_unavailable_allowed: int, max_pods_per_node: int = 1, rounds: int = 40) -> list[tuple]:
    """Drive a rollout to completion, checking the budget at every step; returns status history."""
    history = []
    for _ in range(rounds):
        status = await env.settle()
        history.append(counters(status))
        ds = await env.get_ds()
        desired = status["desiredNumberScheduled"]
        assert status["numberUnavailable"] <= max_unavailable_allowed or status["updatedNumberScheduled"] == desired
        by_node: dict[str, int] = {}
        for p in await env.pods(include_terminating=False):
            by_node[pinned_node(p)] = by_node.get(pinned_node(p), 0) + 1
        assert max(by_node.values(), default=0) <= max_pods_per_node
        if status["updatedNumberScheduled"] == desired and status["numberAvailable"] == desired and \
                status.get("observedGeneration") == ds["metadata"]["generation"]:
            return history
        await env.finish_deletions()
        status = await env.settle()
        history.append(counters(status))
        assert status["numberUnavailable"] <= max_unavailable_allowed
        await env.run_pods()
    raise AssertionError(f"rollout did not finish: {history}")


async def test_rolling_update_max_unavailable_one(env):
    for i in range(4):
        await env.node(f"n{i}")
    await env.daemonset()
    await env.settle()
    await env.run_pods()
    await env.settle()
    await env.set_image("nginx:2")
    history = await rollout(env, max_unavailable_allowed=1)
    assert len(await env.revisions()) == 2
    new_hash = (await env.revisions())[-1]["metadata"]["labels"]["controller-revision-hash"]
    assert all(p["metadata"]["labels"]["controller-revision-hash"] == new_hash for p in await env.pods())
    assert all(p["spec"]["containers"][0]["image"] == "nginx:2" for p in await env.pods())
    assert max(h[-1] for h in history) == 1
    assert len(await env.events("SuccessfulDelete")) == 4


async def test_rolling_update_percentage(env):
    for i in range(4):
        await env.node(f"n{i}")
    await env.daemonset(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "50%"}})
    await env.settle()
    await env.run_pods()
    await env.settle()
    await env.set_image("nginx:2")
    status = await env.settle()
    assert len([p for p in await env.pods() if p["metadata"].get("deletionTimestamp")]) == 2
    assert status["numberUnavailable"] == 0  # terminating pods still count (oldest pod, still Ready)
    await env.finish_deletions()
    status = await env.settle()
    assert status["numberUnavailable"] == 2
    await rollout(env, max_unavailable_allowed=2)


async def test_rolling_update_max_surge(env):
    for i in range(3):
        await env.node(f"n{i}")
    await env.daemonset(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}})
    await env.settle()
    await env.run_pods()
    await env.settle()
    await env.set_image("nginx:2")
    await env.settle()
    live = await env.pods(include_terminating=False)
    assert len(live) == 4  # one surge pod next to its old pod
    history = await rollout(env, max_unavailable_allowed=0, max_pods_per_node=2)
    assert all(h[4] >= 3 or h[3] == 3 for h in history)  # availability kept throughout
    assert len(await env.pods(include_terminating=False)) == 3


async def test_on_delete_replaces_only_deleted_pods(env):
    await env.node("n1")
    await env.node("n2")
    await env.daemonset(strategy={"type": "OnDelete"})
    await env.settle()
    await env.run_pods()
    await env.settle()
    await env.set_image("nginx:2")
    status = await env.settle()
    assert status["updatedNumberScheduled"] == 0 and status["observedGeneration"] == 2
    assert cond(status, "Progressing")["reason"] == "WaitingForPodDeletion"
    victim = (await env.pods())[0]
    await env.client.delete("pods", victim["metadata"]["name"], namespace=NS, grace_period_seconds=0)
    status = await env.settle()
    images = sorted(p["spec"]["containers"][0]["image"] for p in await env.pods())
    assert images == ["nginx:1", "nginx:2"]
    assert status["updatedNumberScheduled"] == 1


async def test_failed_pods_are_deleted_with_backoff(env):
    await env.node("n1")
    await env.daemonset()
    await env.settle()
    await env.run_pods()
    await env.settle()
    first = (await env.pods())[0]
    await env.set_phase(first, "Failed", ready=False)
    await env.settle()
    await env.finish_deletions()
    await env.settle()
    pods = await env.pods()
    assert len(pods) == 1 and pods[0]["metadata"]["name"] != first["metadata"]["name"]
    assert len(await env.events("FailedDaemonPod")) == 1
    # The replacement fails at once: within the 1 s backoff it is left alone.
    await env.run_pods()
    await env.settle()
    second = (await env.pods())[0]
    await env.set_phase(second, "Failed", ready=False)
    await env.settle()
    assert [p["metadata"]["name"] for p in await env.pods()] == [second["metadata"]["name"]]
    assert len(await env.events("FailedDaemonPod")) == 1
    env.clock.advance(1.5)
    await env.ctrl.sync(KEY)
    await env.settle()
    # terminal pods are deleted at once by the API server; a third pod replaces the second
    assert [p["metadata"]["name"] for p in await env.pods()] != [second["metadata"]["name"]]
    assert len(await env.events("FailedDaemonPod")) == 2
    assert env.ctrl.backoff.get(f"{(await env.get_ds())['metadata']['uid']}/1/n1") == 2


async def test_succeeded_pod_is_deleted(env):
    await env.node("n1")
    await env.daemonset()
    await env.settle()
    await env.run_pods()
    await env.settle()
    await env.set_phase((await env.pods())[0], "Succeeded", ready=False)
    await env.settle()
    assert len(await env.events("SucceededDaemonPod")) == 1


async def test_adopts_orphans_and_releases_relabelled_pods(env):
    await env.node("n1")
    await env.node("n2")
    orphan = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "orphan", "namespace": NS, "labels": {"app": "ds"}},
              "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "nginx:0"}]}}
    await env.client.create("pods", orphan)
    ds = await env.daemonset()
    status = await env.settle()
    pods = {p["metadata"]["name"]: p for p in await env.pods()}
    assert len(pods) == 2
    assert pods["orphan"]["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
    # adopted without the current hash: an old pod, counted but not updated
    assert counters(status)[:2] == (2, 2) and status["updatedNumberScheduled"] == 1
    other = next(n for n in pods if n != "orphan")
    await env.client.patch("pods", other, {"metadata": {"labels": {"app": "gone"}}}, namespace=NS)
    await env.settle()
    released = await env.client.get("pods", other, namespace=NS)
    assert not released["metadata"].get("ownerReferences")
    owned = [p for p in await env.pods() if p["metadata"].get("ownerReferences")]
    assert sorted(pinned_node(p) if p["spec"].get("affinity") else p["spec"]["nodeName"] for p in owned) == ["n1", "n2"]


async def test_history_rollback_and_cleanup(env):
    await env.node("n1")
    await env.daemonset(history_limit=1)
    await env.settle()
    await env.set_image("nginx:2")
    await env.settle()
    await env.set_image("nginx:3")
    await env.settle()
    revs = await env.revisions()
    assert [r["revision"] for r in revs] == [2, 3]  # revision 1 cleaned up (limit 1, unused)
    target = revs[0]
    # kubectl rollout undo: the revision's data as a strategic merge patch
    await env.client.patch(DS, "ds", target["data"], namespace=NS, patch_type="strategic")
    await env.settle()
    revs = await env.revisions()
    assert [(r["metadata"]["name"], r["revision"]) for r in revs] == [
        (revs[0]["metadata"]["name"], 3), (target["metadata"]["name"], 4)]
    ds = await env.get_ds()
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    # the pods follow the rolled-back hash
    await rollout(env, max_unavailable_allowed=1)
    hashes = {p["metadata"]["labels"]["controller-revision-hash"] for p in await env.pods()}
    assert hashes == {target["metadata"]["labels"]["controller-revision-hash"]}


async def test_delete_collection_recreates_pods(env):
    for i in range(3):
        await env.node(f"n{i}")
    await env.daemonset()
    await env.settle()
    before = {p["metadata"]["name"] for p in await env.pods()}
    await env.client.delete_collection("pods", namespace=NS, label_selector="app=ds")
    await env.finish_deletions()
    status = await env.settle()
    after = {p["metadata"]["name"] for p in await env.pods()}
    assert len(after) == 3 and not (before & after)
    assert counters(status)[:2] == (3, 3)


async def test_observed_generation_held_back_while_expectations_pending(env):
    await env.node("n1")
    await env.daemonset()
    await env.settle()
    env.ctrl.expectations.set_expectations(KEY, 1, 0)
    await env.set_image("nginx:2")
    await env.ctrl.wait_idle()
    ds = await env.get_ds()
    assert ds["metadata"]["generation"] == 2 and ds["status"]["observedGeneration"] == 1
    env.ctrl.expectations.delete_expectations(KEY)
    await env.ctrl.sync(KEY)
    assert (await env.get_ds())["status"]["observedGeneration"] == 2


async def test_min_ready_seconds_gates_availability(env):
    await env.node("n1")
    await env.daemonset(min_ready=10)
    await env.settle()
    await env.run_pods()
    status = await env.settle()
    assert status["numberReady"] == 1 and status["numberAvailable"] == 0
    env.clock.advance(11)
    await env.ctrl.sync(KEY)
    status = await env.settle()
    assert status["numberAvailable"] == 1


async def test_stuck_rollout_condition(env):
    env.ctrl.progress_deadline = 60
    await env.node("n1")
    await env.daemonset()
    await env.settle()
    await env.run_pods()
    await env.settle()
    await env.set_image("nginx:2")
    await env.settle()
    await env.finish_deletions()
    status = await env.settle()  # the new pod exists but never becomes ready
    assert cond(status, "Progressing")["status"] == "True"
    env.clock.advance(61)
    await env.ctrl.sync(KEY)
    status = await env.settle()
    progressing = cond(status, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ProgressDeadlineExceeded")
    assert "0 of 1 available" in progressing["message"]


async def test_burst_creates_in_node_name_order_and_evaluates_each_waiting_node_once(env):
    """syncNodes creates at most burstReplicas pods per sync; the nodes waiting for a later
    burst are not evaluated again on every sync (that was O(N² / burst) over a converge), and
    the bursts still go out in node-name order."""
    env.ctrl.burst_replicas = 3
    names = [f"n{i:02d}" for i in range(30)]
    for name in reversed(names):
        await env.node(name)
    bursts: list[list[str]] = []

    async def recording(nodes_needing):
        bursts.append(list(nodes_needing))

    env.ctrl.after_sync_nodes = recording
    evaluations_before = env.ctrl.node_evaluations
    await env.daemonset()
    await env.settle()
    assert sorted(pinned_node(p) for p in await env.pods()) == names
    created = [n for b in bursts for n in b]
    assert created == names  # every node once, in name order
    assert all(len(b) <= 3 for b in bursts)
    # each node: evaluated when the DaemonSet appears, after its create was issued, and after its
    # pod arrived — a small constant, not once per sync (it was 30 + 27 + 24 + … = 165 + 60 here)
    evaluations = env.ctrl.node_evaluations - evaluations_before
    assert len(names) <= evaluations <= 3 * len(names), evaluations


async def test_node_waiting_beyond_the_burst_that_becomes_ineligible_gets_no_pod(env):
    env.ctrl.burst_replicas = 2
    for i in range(6):
        await env.node(f"n{i}")
    tainted = False

    async def taint_the_last_node_after_the_first_burst(nodes_needing):
        nonlocal tainted
        if nodes_needing and not tainted:
            tainted = True
            await env.patch_node("n5", {"spec": {"taints": [{"key": "t", "effect": "NoSchedule"}]}})

    env.ctrl.after_sync_nodes = taint_the_last_node_after_the_first_burst
    await env.daemonset()
    status = await env.settle()
    assert tainted
    assert sorted(pinned_node(p) for p in await env.pods()) == ["n0", "n1", "n2", "n3", "n4"]
    assert status["desiredNumberScheduled"] == 5
    await env.patch_node("n5", {"spec": {"taints": None}})
    await env.settle()
    assert sorted(pinned_node(p) for p in await env.pods()) == [f"n{i}" for i in range(6)]


ROLLING = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 2}}
SURGING = {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 2}}


@pytest.mark.parametrize("seed,strategy", [(1, None), (2, None), (3, None), (4, ROLLING), (5, ROLLING),
                                           (6, SURGING), (7, SURGING), (8, SURGING)])
async def test_incremental_status_equals_full_recount_under_random_changes(env, seed, strategy):
    """Property: after any sequence of node and pod changes, the incrementally maintained
    counters equal upstream's full recount, and the incrementally kept rolling-update plan equals
    the planner run over every node (both checked by ``settle`` after every step)."""
    import random

    rng = random.Random(seed)
    for i in range(6):
        await env.node(f"n{i}", labels={"role": rng.choice(["a", "b"])})
    await env.daemonset(node_selector={"role": "a"}, min_ready=5, strategy=strategy)
    await env.settle()
    names = [f"n{i}" for i in range(6)]
    for step in range(40):
        action = rng.choice(["relabel", "taint", "untaint", "run", "fail", "delete_pod", "finish", "tick",
                             "add_node", "delete_node", "image", "gc"])
        if action == "relabel" and names:
            await env.patch_node(rng.choice(names), {"metadata": {"labels": {"role": rng.choice(["a", "b"])}}})
        elif action == "taint" and names:
            effect = rng.choice(["NoSchedule", "NoExecute", "PreferNoSchedule"])
            await env.patch_node(rng.choice(names), {"spec": {"taints": [{"key": "t", "effect": effect}]}})
        elif action == "untaint" and names:
            await env.patch_node(rng.choice(names), {"spec": {"taints": None}})
        elif action == "run":
            await env.run_pods()
        elif action in ("fail", "delete_pod"):
            pods = await env.pods(include_terminating=False)
            if pods:
                victim = rng.choice(pods)
                if action == "fail":
                    await env.set_phase(victim, "Failed", ready=False)
                else:
                    await env.client.delete("pods", victim["metadata"]["name"], namespace=NS)
        elif action == "finish":
            await env.finish_deletions()
        elif action == "tick":
            env.clock.advance(rng.choice([1, 3, 6]))
            try:
                await env.ctrl.sync(KEY)
            except UpdateError as e:
                assert strategy is SURGING and "not found" in str(e)
        elif action == "add_node":
            name = f"x{step}"
            await env.node(name, labels={"role": "a"})
            names.append(name)
        elif action == "delete_node" and names:
            await env.client.delete("nodes", names.pop(rng.randrange(len(names))))
            try:
                await env.ctrl.sync(KEY)
            except UpdateError as e:  # surge planner with an old pod on a deleted node, as upstream
                assert strategy is SURGING and "not found" in str(e)
        elif action == "gc":
            await env.collect_pods_on_missing_nodes()
        elif action == "image":
            await env.set_image(f"nginx:{step}")
        await env.settle()


async def test_rollback_without_unnecessary_restarts(env):
    """Upstream e2e "should rollback without unnecessary restarts": a rollout to a bad image stalls
    after one node (its new pod never becomes Ready); rolling back replaces that pod only — the
    pods still on the original template keep running (same uid, never deleted)."""
    for i in range(4):
        await env.node(f"n{i}")
    await env.daemonset(image="nginx:1")
    await env.settle()
    await env.kubelet()
    await env.settle()
    original = {pinned_node(p): p["metadata"]["uid"] for p in await env.pods()}
    assert len(original) == 4

    await env.set_image("nginx:bad")
    bad_nodes: set[str] = set()
    for _ in range(10):  # let the rollout go as far as it can
        await env.settle()
        bad_nodes |= {pinned_node(p) for p in await env.pods()
                      if p["spec"]["containers"][0]["image"] == "nginx:bad"}
        await env.kubelet(unready_nodes=bad_nodes)
    assert len(bad_nodes) == 1, "maxUnavailable 1: the rollout stops at the first unready new pod"
    (bad_node,) = bad_nodes

    revisions = sorted(await env.revisions(), key=lambda r: r["revision"])
    await env.client.patch(DS, "ds", revisions[0]["data"], namespace=NS, patch_type="strategic")  # rollout undo
    for _ in range(10):
        await env.settle()
        await env.kubelet()
    await env.settle()
    pods = await env.pods()
    assert sorted(pinned_node(p) for p in pods) == [f"n{i}" for i in range(4)]
    assert all(p["spec"]["containers"][0]["image"] == "nginx:1" for p in pods)
    for p in pods:
        node = pinned_node(p)
        if node != bad_node:
            assert p["metadata"]["uid"] == original[node], f"the pod on {node} was restarted needlessly"
    deleted = await env.events("SuccessfulDelete")
    assert len(deleted) == 2  # the first old pod (rollout) and the bad pod (rollback): nothing else


async def test_unplaced_pod_is_claimed_relabelled_and_released_like_any_pod(env):
    """A pod with the DaemonSet's labels but no nodeName and no node pin (made by hand) is
    outside every node group (``getNodesToDaemonPods``), yet upstream's ``getDaemonPods`` claims
    it on every sync: it is adopted, relabelled by ``dedupCurHistories``, released in the sync
    after its labels stop matching, and so left alone when the DaemonSet is deleted."""
    informers = SharedInformerFactory(env.client)
    gc = GarbageCollector(env.client, informers=informers, clock=env.clock)
    await gc.start()
    try:
        await env.node("n1")
        ds = await env.daemonset()
        await env.settle()
        stray = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "stray", "namespace": NS, "labels": {"app": "ds", "controller-revision-hash": "x"}},
                 "spec": {"containers": [{"name": "c", "image": "nginx:0"}]}}
        await env.client.create("pods", stray)
        await env.settle()
        got = await env.client.get("pods", "stray", namespace=NS)
        assert [(r["uid"], r.get("controller")) for r in got["metadata"]["ownerReferences"]] == \
            [(ds["metadata"]["uid"], True)]

        # A second revision with the current template and a higher number: dedup keeps it and
        # relabels every pod of the DaemonSet to its hash, the unplaced one included.
        (current,) = await env.revisions()
        duplicate = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
                     "metadata": {"name": "ds-duplicate", "namespace": NS,
                                  "labels": {"app": "ds", "controller-revision-hash": "duplicate"}},
                     "data": current["data"], "revision": 7}
        await env.client.create(REV, duplicate)
        await env.settle()
        assert [r["metadata"]["name"] for r in await env.revisions()] == ["ds-duplicate"]
        hashes = {p["metadata"]["name"]: p["metadata"]["labels"]["controller-revision-hash"] for p in await env.pods()}
        assert len(hashes) == 2 and set(hashes.values()) == {"duplicate"}

        # Labels stop matching: released within one sync (no resync period passes: the clock stands still).
        await env.client.patch("pods", "stray", {"metadata": {"labels": {"app": "elsewhere"}}}, namespace=NS)
        await env.settle()
        assert not (await env.client.get("pods", "stray", namespace=NS))["metadata"].get("ownerReferences")

        # Deleting the DaemonSet collects its pods, not the released one.
        await env.client.delete(DS, "ds", namespace=NS)
        for _ in range(500):
            if [p["metadata"]["name"] for p in await env.pods()] == ["stray"]:
                break
            await asyncio.sleep(0.01)
        assert [p["metadata"]["name"] for p in await env.pods()] == ["stray"]
    finally:
        await gc.stop()
        await informers.stop()


async def test_the_revision_pass_is_remembered_until_a_cached_revision_changes(env):
    """A sync whose revision pass wrote nothing is remembered: while the cached revisions and the
    DaemonSet's template stay the very same, later syncs take its answer without claiming again.
    Any change of a revision in the cache is looked at: an orphan is adopted (and the current
    revision renumbered above it), and released once its labels stop matching."""
    await env.node("n1")
    ds = await env.daemonset()
    await env.settle()
    passes, syncs = env.ctrl.revision_passes, env.ctrl.syncs
    for _ in range(3):
        await env.ctrl.sync(KEY)
    assert env.ctrl.syncs == syncs + 3
    assert env.ctrl.revision_passes == passes  # nothing changed: no claim, no constructHistory

    orphan = {"apiVersion": "apps/v1", "kind": "ControllerRevision",
              "metadata": {"name": "ds-orphan", "namespace": NS,
                           "labels": {"app": "ds", "controller-revision-hash": "orphan"}},
              "data": {"spec": {"template": {"$patch": "replace"}}}, "revision": 1}
    await env.client.create(REV, orphan)
    await env.settle()
    assert env.ctrl.revision_passes > passes
    adopted = await env.client.get(REV, "ds-orphan", namespace=NS)
    assert [r["uid"] for r in adopted["metadata"]["ownerReferences"]] == [ds["metadata"]["uid"]]
    assert [(r["metadata"]["name"] == "ds-orphan", r["revision"]) for r in await env.revisions()] == \
        [(True, 1), (False, 2)]

    await env.client.patch(REV, "ds-orphan", {"metadata": {"labels": {"app": "elsewhere"}}}, namespace=NS)
    await env.settle()
    assert not (await env.client.get(REV, "ds-orphan", namespace=NS))["metadata"].get("ownerReferences")
