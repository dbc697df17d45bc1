"""The Deployment controller: informers, handlers, the queue and ``syncDeployment``.

Upstream: ``pkg/controller/deployment/deployment_controller.go`` (handlers, ``syncDeployment``,
``getReplicaSetsForDeployment``, ``getPodMapForDeployment``), ``sync.go`` (``sync``,
``checkPausedConditions``, ``getNewReplicaSet``, ``scale``, ``scaleReplicaSet``,
``cleanupDeployment``, ``syncDeploymentStatus``, ``isScalingEvent``), ``rolling.go``
(``rolloutRolling``, ``reconcileNewReplicaSet``, ``reconcileOldReplicaSets``), ``recreate.go``
(``rolloutRecreate``, ``oldPodsRunning``) and ``progress.go`` (``syncRolloutStatus``,
``requeueStuckDeployment``).  Decisions come from :mod:`.util`; this module reads the caches and
writes what they decide, in upstream's order:

1. claim the ReplicaSets the selector matches (adopt orphans, release strays; a Deployment
   being deleted only gets its status synced);
2. the Progressing condition says ``DeploymentPaused`` / ``DeploymentResumed`` on a change;
3. paused, or a scaling event (an active ReplicaSet's ``desired-replicas`` annotation differs
   from ``spec.replicas``): scale proportionally, clean up history when paused, sync status;
4. otherwise roll out: RollingUpdate (create the new ReplicaSet ``<name>-<pod-template-hash>``,
   scale it up within ``maxSurge``, then the old ones down within ``maxUnavailable``, unhealthy
   replicas first) or Recreate (old ReplicaSets to 0, wait until no old pod runs, then the new
   one up); once complete, delete old ReplicaSets beyond ``revisionHistoryLimit``;
5. status with the Available and Progressing conditions (``NewReplicaSetCreated``,
   ``FoundNewReplicaSet``, ``ReplicaSetUpdated``, ``NewReplicaSetAvailable``,
   ``ProgressDeadlineExceeded``, ``ReplicaSetCreateError``, ``ReplicaFailure`` from the
   ReplicaSets), and a requeue at the progress deadline of a rollout that made no progress.

Events are upstream's: ``ScalingReplicaSet`` "Scaled up replica set web-… from 0 to 3" from
``deployment-controller``.  The only pod handler is upstream's: a deleted pod of a Recreate
Deployment wakes it (the old pods are gone: the new ReplicaSet may start).
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

from everynode.api.errors import ApiError, is_namespace_terminating
from everynode.api.meta import controller_ref, deep_copy, key_of, make_controller_ref
from everynode.api.selectors import LabelSelector, SelectorError, label_selector_from_dict, selecting
from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.informer import NAMESPACE_INDEX, Informer, SharedInformerFactory, index_by_namespace
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock
from everynode.controllers.daemonset.adoption import Claimer
from everynode.controllers.daemonset.history import compute_hash
from everynode.controllers.deployment import util

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DEPLOYMENTS = "deployments.apps"
REPLICASETS = "replicasets.apps"
PODS = "pods"
COMPONENT = "deployment-controller"


def _log_failure(key: Any, exc: Exception, _retried: bool) -> None:
    log.info("deployment %s: %s", key, exc)


class DeploymentController(ControllerLifecycle):
    def __init__(self, client: Client, *, clock: Clock, informers: SharedInformerFactory,
                 recorder: EventRecorder, workers: int = 2) -> None:
        self.client = client
        self.clock = clock
        self.recorder = recorder
        self.kit = ControllerKit("deployment", informers=informers)
        self.queue = self.kit.queue()
        ns_index = {NAMESPACE_INDEX: index_by_namespace}
        self.d_informer: Informer = self.kit.informer(DEPLOYMENTS, indexers=ns_index)
        self.rs_informer: Informer = self.kit.informer(REPLICASETS, indexers=ns_index)
        self.pod_informer: Informer = self.kit.informer(PODS, indexers=ns_index)
        self.kit.watch(self.d_informer, on_add=self._enqueue, on_update=lambda _old, new: self._enqueue(new),
                       on_delete=self._enqueue)
        self.kit.watch(self.rs_informer, on_add=self._add_rs, on_update=self._update_rs, on_delete=self._delete_rs)
        self.kit.watch(self.pod_informer, on_delete=self._delete_pod)
        self.kit.workers(self.queue, self.sync, count=workers, on_error=_log_failure)
        self.syncs = 0

    # -- handlers -------------------------------------------------------------------------------

    def _enqueue(self, d: Obj) -> None:
        self.queue.add(key_of(d))

    def _resolve(self, namespace: str, ref: dict[str, Any] | None) -> Obj | None:
        if ref is None or ref.get("kind") != "Deployment":
            return None
        d = self.d_informer.get(f"{namespace}/{ref.get('name')}")
        if d is None or d["metadata"].get("uid") != ref.get("uid"):
            return None
        return d

    def _matching(self, rs: Obj) -> list[Obj]:
        """``getDeploymentsForReplicaSet``: Deployments of the namespace selecting the ReplicaSet."""
        md = rs["metadata"]
        return selecting(self.d_informer.by_index(NAMESPACE_INDEX, md.get("namespace") or ""), md.get("labels"),
                         _selector)

    def _add_rs(self, rs: Obj) -> None:
        if rs["metadata"].get("deletionTimestamp"):
            self._delete_rs(rs)
            return
        ref = controller_ref(rs)
        if ref is not None:
            d = self._resolve(rs["metadata"].get("namespace") or "", ref)
            if d is not None:
                self._enqueue(d)
            return
        for d in self._matching(rs):
            self._enqueue(d)

    def _update_rs(self, old: Obj, new: Obj) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        ns = new["metadata"].get("namespace") or ""
        new_ref, old_ref = controller_ref(new), controller_ref(old)
        if new_ref != old_ref and old_ref is not None:
            d = self._resolve(ns, old_ref)
            if d is not None:
                self._enqueue(d)
        if new_ref is not None:
            d = self._resolve(ns, new_ref)
            if d is not None:
                self._enqueue(d)
            return
        if new["metadata"].get("labels") != old["metadata"].get("labels") or new_ref != old_ref:
            for d in self._matching(new):
                self._enqueue(d)

    def _delete_rs(self, rs: Obj) -> None:
        d = self._resolve(rs["metadata"].get("namespace") or "", controller_ref(rs))
        if d is not None:
            self._enqueue(d)

    def _delete_pod(self, pod: Obj) -> None:
        ns = pod["metadata"].get("namespace") or ""
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.rs_informer.get(f"{ns}/{ref.get('name')}")
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return
        d = self._resolve(ns, controller_ref(rs))
        if d is not None and util.strategy_type(d) == util.RECREATE:
            self._enqueue(d)

    # -- syncDeployment -------------------------------------------------------------------------

    async def sync(self, key: str) -> float | None:
        self.syncs += 1
        cached = self.d_informer.get(key)
        if cached is None:
            return None
        d = deep_copy(cached)
        selector = _selector(d)
        if selector is None:
            return None
        if selector.empty:
            self.recorder.event(d, "Warning", "SelectingAll",
                                "This deployment is selecting all pods. A non-empty selector is required.")
            status = util.status_of(d)
            if int(status.get("observedGeneration") or 0) < int(d["metadata"].get("generation") or 0):
                d["status"] = {**status, "observedGeneration": d["metadata"].get("generation")}
                await self._update_status(d)
            return None
        rss = await self._claim_replica_sets(d, selector)
        if d["metadata"].get("deletionTimestamp"):
            new, old = await self._all_replica_sets(d, rss, create=False)
            await self._sync_deployment_status([*old, new], new, d)
            return None
        await self._check_paused_conditions(d)
        if util.spec_of(d).get("paused"):
            await self._sync_scaling(d, rss)
            return None
        if await self._is_scaling_event(d, rss):
            await self._sync_scaling(d, rss)
            return None
        if util.strategy_type(d) == util.RECREATE:
            return await self._rollout_recreate(d, rss)
        return await self._rollout_rolling(d, rss)

    async def _claim_replica_sets(self, d: Obj, selector: LabelSelector) -> list[Obj]:
        """``getReplicaSetsForDeployment``: adopt and release by selector and controllerRef."""
        ns = d["metadata"].get("namespace") or ""
        claimer = Claimer(self.client, d, selector, owner_resource=DEPLOYMENTS, owner_kind="Deployment")
        return await claimer.claim(self.rs_informer.by_index(NAMESPACE_INDEX, ns), resource=REPLICASETS,
                                   kind="ReplicaSet")

    def _pod_map(self, d: Obj, rss: list[Obj]) -> dict[str, list[Obj]]:
        """``getPodMapForDeployment``: the pods of each claimed ReplicaSet, by its uid."""
        uids: dict[str, list[Obj]] = {rs["metadata"].get("uid"): [] for rs in rss}
        pod_map: dict[str, list[Obj]] = uids
        selector = _selector(d)
        for pod in self.pod_informer.by_index(NAMESPACE_INDEX, d["metadata"].get("namespace") or ""):
            if selector is None or not selector.matches(pod["metadata"].get("labels")):
                continue
            ref = controller_ref(pod)
            if ref is not None and ref.get("uid") in pod_map:
                pod_map[ref["uid"]].append(pod)
        return pod_map

    async def _check_paused_conditions(self, d: Obj) -> None:
        if not util.has_progress_deadline(d):
            return
        status = util.status_of(d)
        cond = util.get_condition(status, util.PROGRESSING)
        if cond is not None and cond.get("reason") == util.TIMED_OUT:
            return
        paused_cond = cond is not None and cond.get("reason") == util.PAUSED
        if util.spec_of(d).get("paused") and not paused_cond:
            self._set_condition(d, util.PROGRESSING, "Unknown", util.PAUSED, "Deployment is paused")
        elif not util.spec_of(d).get("paused") and paused_cond:
            self._set_condition(d, util.PROGRESSING, "Unknown", util.RESUMED, "Deployment is resumed")
        else:
            return
        await self._update_status(d)

    async def _is_scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        new, old = await self._all_replica_sets(d, rss, create=False)
        for rs in util.active([*old, new]):
            desired = util.desired_replicas_annotation(rs)
            if desired is not None and desired != util.replicas(d):
                return True
        return False

    # -- new and old ReplicaSets ----------------------------------------------------------------

    async def _all_replica_sets(self, d: Obj, rss: list[Obj], *, create: bool) -> tuple[Obj | None, list[Obj]]:
        """``getAllReplicaSetsAndSyncRevision``."""
        _, old = util.find_old_replica_sets(d, rss)
        new = await self._new_replica_set(d, rss, old, create=create)
        return new, old

    async def _new_replica_set(self, d: Obj, rss: list[Obj], old: list[Obj], *, create: bool) -> Obj | None:
        """``getNewReplicaSet``: the new ReplicaSet with its revision synced, created if asked."""
        existing = util.find_new_replica_set(d, rss)
        new_revision = util.max_revision(old) + 1
        md = d["metadata"]
        if existing is not None:
            rs_ann = dict(util.annotations_of(existing))
            changed = util.new_rs_annotations(d, rs_ann, new_revision, exists=True)
            min_ready = util.spec_of(d).get("minReadySeconds") or 0
            if changed or (util.spec_of(existing).get("minReadySeconds") or 0) != min_ready:
                body = deep_copy(existing)
                body["metadata"]["annotations"] = rs_ann
                if min_ready:
                    body["spec"]["minReadySeconds"] = min_ready
                else:
                    body["spec"].pop("minReadySeconds", None)
                return await self.client.update(REPLICASETS, body)
            needs_update = self._set_revision(d, util.annotations_of(existing).get(util.REVISION, ""))
            if util.has_progress_deadline(d) and util.get_condition(util.status_of(d), util.PROGRESSING) is None:
                self._set_condition(d, util.PROGRESSING, "True", util.FOUND_NEW_RS,
                                    f'Found new replica set "{existing["metadata"]["name"]}"')
                needs_update = True
            if needs_update:
                await self._update_status(d)
            return existing
        if not create:
            return None
        template = deep_copy(util.spec_of(d).get("template") or {})
        collision_count = util.status_of(d).get("collisionCount")
        hash_ = compute_hash(template, collision_count)
        tmd = template.setdefault("metadata", {})
        tmd["labels"] = {**(tmd.get("labels") or {}), util.POD_TEMPLATE_HASH: hash_}
        selector = deep_copy(util.spec_of(d).get("selector") or {})
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), util.POD_TEMPLATE_HASH: hash_}
        rs_ann = {}
        name = f"{md['name']}-{hash_}"
        new_rs: Obj = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": md.get("namespace") or "", "labels": dict(tmd["labels"]),
                         "ownerReferences": [make_controller_ref(d, api_version="apps/v1", kind="Deployment")]},
            "spec": {"replicas": 0, "selector": selector, "template": template},
        }
        if util.spec_of(d).get("minReadySeconds"):
            new_rs["spec"]["minReadySeconds"] = util.spec_of(d)["minReadySeconds"]
        count = util.new_rs_new_replicas(d, [*old, new_rs], new_rs)
        new_rs["spec"]["replicas"] = count
        util.new_rs_annotations(d, rs_ann, new_revision, exists=False)
        new_rs["metadata"]["annotations"] = rs_ann
        already_exists = False
        try:
            created = await self.client.create(REPLICASETS, new_rs, namespace=md.get("namespace") or "")
        except ApiError as e:
            if e.code == 409 and e.reason == "AlreadyExists":
                found = self.rs_informer.get(f"{md.get('namespace')}/{name}")
                if found is None:
                    found = await self.client.get(REPLICASETS, name, namespace=md.get("namespace") or "")
                ref = controller_ref(found)
                if ref is not None and ref.get("uid") == md.get("uid") and \
                        util.equal_ignore_hash(util.spec_of(d).get("template"), util.spec_of(found).get("template")):
                    created, already_exists = found, True
                else:
                    status = dict(util.status_of(d))
                    status["collisionCount"] = int(status.get("collisionCount") or 0) + 1
                    d["status"] = util.ordered_status(status)
                    with contextlib.suppress(ApiError):
                        await self._update_status(d)
                    raise
            elif is_namespace_terminating(e):
                raise
            else:
                msg = f'Failed to create new replica set "{name}": {e.message}'
                if util.has_progress_deadline(d):
                    self._set_condition(d, util.PROGRESSING, "False", util.FAILED_RS_CREATE, msg)
                    with contextlib.suppress(ApiError):
                        await self._update_status(d)
                self.recorder.event(d, "Warning", util.FAILED_RS_CREATE, msg)
                raise
        if not already_exists and count > 0:
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled up replica set {created['metadata']['name']} from 0 to {count}")
        needs_update = self._set_revision(d, str(new_revision))
        if not already_exists and util.has_progress_deadline(d):
            self._set_condition(d, util.PROGRESSING, "True", util.NEW_REPLICA_SET,
                                f'Created new replica set "{created["metadata"]["name"]}"')
            needs_update = True
        if needs_update:
            await self._update_status(d)
        return created

    def _set_condition(self, d: Obj, type_: str, status: str, reason: str, message: str) -> None:
        """``SetDeploymentCondition`` on the local copy's status (a new status dict)."""
        new_status = dict(util.status_of(d))
        util.set_condition(new_status, util.new_condition(type_, status, reason, message, now=self.clock.rfc3339()))
        d["status"] = util.ordered_status(new_status)

    @staticmethod
    def _set_revision(d: Obj, revision: str) -> bool:
        """``SetDeploymentRevision``."""
        ann = d["metadata"].get("annotations") or {}
        if ann.get(util.REVISION) == revision:
            return False
        d["metadata"]["annotations"] = {**ann, util.REVISION: revision}
        return True

    # -- writes ---------------------------------------------------------------------------------

    async def _update_status(self, d: Obj) -> None:
        """``UpdateStatus`` with the local copy; keeps the copy's resourceVersion current."""
        stored = await self.client.update_status(DEPLOYMENTS, d)
        d["metadata"]["resourceVersion"] = stored["metadata"].get("resourceVersion")

    async def _scale(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        """``scaleReplicaSet`` (with ``scaleReplicaSetAndRecordEvent``'s early return)."""
        old_scale = util.replicas(rs)
        desired, maximum = util.replicas(d), util.replicas(d) + util.max_surge(d)
        size_changes = old_scale != new_scale
        if not size_changes and not util.replicas_annotations_need_update(rs, desired, maximum):
            return False, rs
        body = deep_copy(rs)
        body["spec"]["replicas"] = new_scale
        ann = dict(util.annotations_of(rs))
        util.with_replicas_annotations(ann, desired, maximum)
        body["metadata"]["annotations"] = ann
        updated = await self.client.update(REPLICASETS, body)
        if size_changes:
            direction = "up" if old_scale < new_scale else "down"
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled {direction} replica set {rs['metadata']['name']} from {old_scale} to {new_scale}")
        return size_changes, updated

    async def _scale_and_record(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        if util.replicas(rs) == new_scale:
            return False, rs
        return await self._scale(rs, new_scale, d)

    async def _cleanup(self, old: list[Obj], d: Obj) -> None:
        """``cleanupDeployment``: delete the oldest idle ReplicaSets beyond the history limit."""
        if not util.has_revision_history_limit(d):
            return
        alive = [rs for rs in old if not rs["metadata"].get("deletionTimestamp")]
        diff = len(alive) - int(util.spec_of(d)["revisionHistoryLimit"])
        if diff <= 0:
            return
        for rs in util.sorted_by_revision(alive)[:diff]:
            st = util.status_of(rs)
            if int(st.get("replicas") or 0) != 0 or util.replicas(rs) != 0 or \
                    int(rs["metadata"].get("generation") or 0) > int(st.get("observedGeneration") or 0):
                continue
            try:
                await self.client.delete(REPLICASETS, rs["metadata"]["name"],
                                         namespace=rs["metadata"].get("namespace") or "")
            except ApiError as e:
                if e.code != 404:
                    raise

    # -- sync (paused / scaling event) ----------------------------------------------------------

    async def _sync_scaling(self, d: Obj, rss: list[Obj]) -> None:
        """``sync``: proportional scaling, history cleanup when paused, status."""
        new, old = await self._all_replica_sets(d, rss, create=False)
        await self._scale_deployment(d, new, old)
        if util.spec_of(d).get("paused"):
            await self._cleanup(old, d)
        await self._sync_deployment_status([*old, new], new, d)

    async def _scale_deployment(self, d: Obj, new: Obj | None, old: list[Obj]) -> None:
        """``scale``."""
        target = util.find_active_or_latest(new, old)
        if target is not None:
            if util.replicas(target) != util.replicas(d):
                await self._scale_and_record(target, util.replicas(d), d)
            return
        if util.is_saturated(d, new):
            for rs in util.active(old):
                await self._scale_and_record(rs, 0, d)
            return
        if util.is_rolling_update(d):
            for rs, size in util.proportional_sizes(d, new, old):
                await self._scale(rs, size, d)

    async def _sync_deployment_status(self, all_rss: list[Obj | None], new: Obj | None, d: Obj) -> None:
        """``syncDeploymentStatus``."""
        status = util.calculate_status(all_rss, new, d, now=self.clock.rfc3339())
        if status == util.status_of(d):
            return
        d["status"] = status
        await self._update_status(d)

    # -- rollouts -------------------------------------------------------------------------------

    async def _rollout_rolling(self, d: Obj, rss: list[Obj]) -> float | None:
        """``rolloutRolling``."""
        new, old = await self._all_replica_sets(d, rss, create=True)
        assert new is not None
        all_rss: list[Obj | None] = [*old, new]
        # reconcileNewReplicaSet
        if util.replicas(new) != util.replicas(d):
            target = util.replicas(d) if util.replicas(new) > util.replicas(d) \
                else util.new_rs_new_replicas(d, all_rss, new)
            scaled, new = await self._scale_and_record(new, target, d)
            if scaled:
                return await self._sync_rollout_status([*old, new], new, d)
        # reconcileOldReplicaSets
        if await self._reconcile_old(d, [*old, new], util.active(old), new):
            return await self._sync_rollout_status([*old, new], new, d)
        if util.deployment_complete(d, util.status_of(d)):
            await self._cleanup(old, d)
        return await self._sync_rollout_status([*old, new], new, d)

    async def _reconcile_old(self, d: Obj, all_rss: list[Obj | None], old: list[Obj], new: Obj) -> bool:
        if util.replica_count(old) == 0:
            return False
        budget = util.max_scaled_down(d, all_rss, new)
        if budget <= 0:
            return False
        total = 0
        updated: dict[str, Obj] = {}
        for rs, size in util.cleanup_unhealthy_plan(old, budget):
            _, rs_after = await self._scale_and_record(rs, size, d)
            total += util.replicas(rs) - size
            updated[rs["metadata"]["uid"]] = rs_after
        old = [updated.get(rs["metadata"]["uid"], rs) for rs in old]
        for rs, size in util.scale_down_old_plan(d, [*old, new], old):
            await self._scale_and_record(rs, size, d)
            total += util.replicas(rs) - size
        return total > 0

    async def _rollout_recreate(self, d: Obj, rss: list[Obj]) -> float | None:
        """``rolloutRecreate``."""
        pod_map = self._pod_map(d, rss)
        new, old = await self._all_replica_sets(d, rss, create=False)
        scaled_down = False
        current_old: list[Obj] = []
        for rs in old:
            if util.replicas(rs) != 0:
                scaled, rs = await self._scale_and_record(rs, 0, d)
                scaled_down = scaled_down or scaled
            current_old.append(rs)
        old = current_old
        if scaled_down:
            return await self._sync_rollout_status([*old, new], new, d)
        if _old_pods_running(new, old, pod_map):
            return await self._sync_rollout_status([*old, new], new, d)
        if new is None:
            new, old = await self._all_replica_sets(d, rss, create=True)
        assert new is not None
        _, new = await self._scale_and_record(new, util.replicas(d), d)
        if util.deployment_complete(d, util.status_of(d)):
            await self._cleanup(old, d)
        return await self._sync_rollout_status([*old, new], new, d)

    async def _sync_rollout_status(self, all_rss: list[Obj | None], new: Obj | None, d: Obj) -> float | None:
        """``syncRolloutStatus``; returns the stuck-deployment requeue delay."""
        stamp = self.clock.rfc3339()
        status = util.calculate_status(all_rss, new, d, now=stamp)
        if not util.has_progress_deadline(d):
            util.remove_condition(status, util.PROGRESSING)
        current = util.get_condition(util.status_of(d), util.PROGRESSING)
        complete_before = int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0) \
            and current is not None and current.get("reason") == util.NEW_RS_AVAILABLE
        new_name = new["metadata"]["name"] if new is not None else None
        name = d["metadata"]["name"]
        if util.has_progress_deadline(d) and not complete_before:
            if util.deployment_complete(d, status):
                msg = f'ReplicaSet "{new_name}" has successfully progressed.' if new_name \
                    else f'Deployment "{name}" has successfully progressed.'
                util.set_condition(status, util.new_condition(util.PROGRESSING, "True", util.NEW_RS_AVAILABLE,
                                                              msg, now=stamp))
            elif util.deployment_progressing(d, status):
                msg = f'ReplicaSet "{new_name}" is progressing.' if new_name else f'Deployment "{name}" is progressing.'
                cond = util.new_condition(util.PROGRESSING, "True", util.REPLICA_SET_UPDATED, msg, now=stamp)
                if current is not None:
                    if current.get("status") == "True":
                        cond["lastTransitionTime"] = current.get("lastTransitionTime")
                    util.remove_condition(status, util.PROGRESSING)
                util.set_condition(status, cond)
            elif util.deployment_timed_out(d, status, now=self.clock.now()):
                msg = f'ReplicaSet "{new_name}" has timed out progressing.' if new_name \
                    else f'Deployment "{name}" has timed out progressing.'
                util.set_condition(status, util.new_condition(util.PROGRESSING, "False", util.TIMED_OUT, msg,
                                                              now=stamp))
        failure = _replica_failure(all_rss, new)
        if failure is not None:
            util.set_condition(status, failure)
        else:
            util.remove_condition(status, util.REPLICA_FAILURE)
        status = util.ordered_status(status)
        if status == util.status_of(d):
            return util.stuck_recheck(d, status, now=self.clock.now())
        d["status"] = status
        await self._update_status(d)
        return None


def _old_pods_running(new: Obj | None, old: list[Obj], pod_map: dict[str, list[Obj]]) -> bool:
    """``oldPodsRunning``: old ReplicaSets report pods, or a pod of one is not terminal."""
    if util.actual_replica_count(old) > 0:
        return True
    new_uid = new["metadata"].get("uid") if new is not None else None
    for uid, pods in pod_map.items():
        if uid == new_uid:
            continue
        for pod in pods:
            if (pod.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                return True
    return False


def _replica_failure(all_rss: list[Obj | None], new: Obj | None) -> Obj | None:
    """``getReplicaFailures``: the new ReplicaSet's ReplicaFailure condition, else an old one's,
    as a Deployment condition."""
    ordered = [new, *(rs for rs in all_rss if rs is not new)] if new is not None else list(all_rss)
    for rs in ordered:
        if rs is None:
            continue
        for cond in util.status_of(rs).get("conditions") or ():
            if cond.get("type") == util.REPLICA_FAILURE:
                return {"type": util.REPLICA_FAILURE, "status": cond.get("status"),
                        "lastUpdateTime": cond.get("lastTransitionTime"),
                        "lastTransitionTime": cond.get("lastTransitionTime"),
                        "reason": cond.get("reason"), "message": cond.get("message")}
    return None


def _selector(d: Obj) -> LabelSelector | None:
    try:
        return label_selector_from_dict(util.spec_of(d).get("selector"))
    except SelectorError:
        return None
