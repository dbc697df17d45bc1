"""The DaemonSet controller: informers, work queue, event handlers and the sync loop (§4).

Upstream: ``pkg/controller/daemon/daemon_controller.go`` (handlers, ``syncDaemonSet``,
``manage``, ``syncNodes``, ``updateDaemonSetStatus``) with ``update.go`` for revisions and the
rolling update.  The pure decisions live in sibling modules (placement, daemonpods, budgets,
manage, update, history, status, backoff, adoption); this module wires them to the API.

Upstream semantics kept exactly: one queue keyed ``namespace/name`` with N workers; the event
handlers of §4.1 (node add → DaemonSets that should run there; node update only when labels or
taints change a DaemonSet's ``(shouldRun, shouldContinueRunning)``; no node-delete handler; pod
handlers with controller refs, orphans, deletion-as-observation and the ``minReadySeconds + 1 s``
requeue; revision handlers); expectations gating ``manage`` and the rolling update (never both
in one sync); ``syncNodes`` with the burst limit, slow-start batches and expectation lowering;
claiming with live-GET-before-adopt; events with component ``daemonset-controller``.

Incremental sync (the design, and how it maps to upstream's full scan)
----------------------------------------------------------------------
Upstream recomputes everything on every sync: list all nodes, list and claim all pods of the
namespace, group them by node, evaluate every node three times (manage, rolling update, status).
That is O(nodes) per sync — and every pod event triggers a sync.  everynode keeps, per
DaemonSet, the *results* of those scans and updates them from the events that change them:

* **Eligibility cache** ``state.eligibility[node] = (shouldRun, shouldContinueRunning)`` — built
  once per DaemonSet spec (generation), then updated by node add/update/delete events: one
  :meth:`~.placement.Placement.evaluate` per DaemonSet per node event, i.e. a node event costs
  O(DaemonSets), never O(nodes).
* **Pod index** ``owner uid → target node → pods`` — maintained by the pod handlers (target node
  from ``spec.nodeName`` or the ``metadata.name`` pin).  Reading "the pods of DS d on node n" is a
  dict lookup; claimed-ness (selector match) and the terminal+deleted exclusion are applied at
  read time exactly as upstream's grouping does.
* **Dirty sets** — every pod or node event marks the affected ``(DaemonSet, node)`` pairs dirty.
  ``manage`` evaluates only dirty nodes plus the *attention* set: nodes whose last evaluation
  was not steady (a create or delete was issued, a failed pod is in backoff, a surge pair waits
  for availability, deletes beyond the burst limit).  A node that was steady and did not change
  would produce no action upstream either, so skipping it is exact.  A node that only needs a
  pod and has not been created for yet (beyond ``burstReplicas``) waits in
  :class:`~.manage.PendingCreates` without being evaluated again until an event touches it:
  converge costs O(N), not O(N² / burst).
* **Status contributions** ``state.contrib[node]`` (one :class:`~.status.NodeStatus` per node)
  with running sums; a sync re-derives only dirty nodes plus nodes whose oldest pod is Ready but
  not yet available (they change with time alone: re-checked once their availability time has
  passed).  The sums are upstream's counters; :meth:`DaemonSetController.full_recount` recomputes
  them the upstream way from the caches and the tests assert the two are equal.
* **Rolling update index** ``state.rollout`` (:class:`~.update.RolloutIndex`): each node's
  contribution to upstream's planner (counts against the budgets, old pods to replace, candidates
  in node order), re-classified with the status contributions for dirty nodes and for nodes
  whose availability changes with time (``minReadySeconds``).  A rollout step therefore costs
  O(changed nodes), not O(nodes); the planner is only consulted when the DaemonSet has at least
  one old (not updated, not terminating) pod — with none, both planners provably do nothing.
* **Claiming** looks only at pods that changed since the last sync (adoption of new orphans,
  release of owned pods whose labels changed); the selector is immutable in apps/v1, so nothing
  else can change what is claimed.  Adoptions and releases update the index at once from the
  PATCH response (guarded against older events), as upstream uses the claimed list at once.

A **full pass** — rebuild of all of the above from the caches — happens on the first sync of a
DaemonSet, whenever its generation (spec) or current revision hash changes, and as a safety net
every ``full_resync_period`` seconds (the DaemonSet is re-queued for it; a period of 0 makes
every sync a full pass).  There is one algorithm: upstream's full scan survives only as the
test oracle (``tests/support/ds_oracle.py``: the recount and the planner over every node from
the caches), which the tests compare with these counters and this index after every step.  So a
steady-state sync costs O(revisions in the namespace + changed nodes/pods), and
the sync cost at 10,000 nodes stays within a small factor of the cost at 1,000.

Node order: ``manage`` and the rolling update walk node names in sorted order (upstream walks Go
maps); see update.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from typing import Any, Final

from everynode.api.daemonset import ROLLING_UPDATE, min_ready_seconds, update_strategy_type
from everynode.api.errors import ApiError, is_namespace_terminating
from everynode.api.meta import controller_ref, field_of, key_of, resource_version
from everynode.api.pod import is_pod_ready
from everynode.api.selectors import LabelSelector, label_selector_from_dict, selecting
from everynode.client.base import Client
from everynode.client.events import EventRecorder
from everynode.client.expectations import Expectations
from everynode.client.informer import NAMESPACE_INDEX, Informer, SharedInformerFactory, index_by_namespace
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.client.workqueue import RateLimiter
from everynode.clock import Clock
from everynode.controllers.daemonset.adoption import Claimer, ClaimError, aggregate_message
from everynode.controllers.daemonset.backoff import GC_INTERVAL, Backoff, failed_pods_backoff_key
from everynode.controllers.daemonset.budgets import allows_surge
from everynode.controllers.daemonset.daemonpods import (
    CONTROLLER_REVISION_HASH_LABEL,
    daemon_pod,
    pod_hash,
    pod_template_for,
    template_generation,
)
from everynode.controllers.daemonset.history import (
    DataCache,
    cleanup_history,
    collision_count,
    construct_history,
    revision_history_limit,
)
from everynode.controllers.daemonset.incremental import (
    DaemonSetState,
    PodIndex,
    claimed_pods,
    node_pods,
    refresh,
)
from everynode.controllers.daemonset.manage import (
    node_actions,
    unscheduled_pods_on_missing_node,
)
from everynode.controllers.daemonset.placement import Placement
from everynode.controllers.daemonset.status import (
    StatusCounts,
    rollout_conditions,
    store_status,
)

log = logging.getLogger(__name__)

Obj = dict[str, Any]

DAEMONSETS: Final = "daemonsets.apps"
PODS: Final = "pods"
NODES: Final = "nodes"
REVISIONS: Final = "controllerrevisions.apps"
COMPONENT: Final = "daemonset-controller"
BURST_REPLICAS: Final = 250
SLOW_START_INITIAL_BATCH_SIZE: Final = 1
FULL_RESYNC_PERIOD: Final = 300.0
SELECTING_ALL: Final = "SelectingAll"
FAILED_SYNC: Final = "FailedSync"  # everynode: a sync error is also an event on the DaemonSet, not only a log line


class SyncError(Exception):
    """A sync failed (the key is requeued with rate limiting); message in upstream's words."""


def _aggregate(errors: list[Exception]) -> SyncError:
    return SyncError(aggregate_message(errors))


def _same_objects(a: list[Obj], b: list[Obj]) -> bool:
    """The same objects in the same order (identity, not equality: a cached object is replaced
    on every change)."""
    if len(a) != len(b):
        return False
    for i, x in enumerate(a):  # (a loop, not all() over a generator: every sync asks this)
        if x is not b[i]:
            return False
    return True


def _selects_all(selector: Any) -> bool:
    """``reflect.DeepEqual(ds.Spec.Selector, &metav1.LabelSelector{})``."""
    return isinstance(selector, dict) and all(v is None for v in selector.values())


class _Joined:
    """The done callback of :func:`_in_tasks`' children: ``asyncio.gather``'s own, without its
    options (no ``return_exceptions``)."""

    def __init__(self, outer: asyncio.Future[list[Exception | None]],
                 children: list[asyncio.Task[Exception | None]]) -> None:
        self.outer = outer
        self.children = children
        self.finished = 0

    def __call__(self, child: asyncio.Future[Exception | None]) -> None:
        self.finished += 1
        outer = self.outer
        if outer.done():
            if not child.cancelled():
                child.exception()  # (retrieved: no "exception was never retrieved" log)
            return
        if child.cancelled():
            outer.set_exception(asyncio.CancelledError())
            return
        exc = child.exception()
        if exc is not None:
            outer.set_exception(exc)
            return
        if self.finished == len(self.children):
            outer.set_result([c.result() for c in self.children])


async def _in_tasks(coros: list[Coroutine[Any, Any, Exception | None]]) -> list[Exception | None]:
    """``await asyncio.gather(*coros)``, step for step: each coroutine runs in a task of its own
    (upstream's goroutine per create or delete), their results come back in order, the first
    exception is raised.  The same tasks, done callbacks and future, so every write and watch
    event happens in the same order as through ``gather`` (the golden converge holds) — but
    compiled, without ``gather``'s interpreted bookkeeping, which at maxUnavailable 1 (two
    batches of one per pod replaced) was about 2% of a virtual rollout.  One difference, on
    shutdown only: cancelled, this raises at once and cancels the tasks, where ``gather``
    waits for them to end."""
    loop = asyncio.get_running_loop()
    children = [loop.create_task(coro) for coro in coros]
    outer: asyncio.Future[list[Exception | None]] = loop.create_future()
    joined = _Joined(outer, children)
    for child in children:
        child.add_done_callback(joined)
    try:
        return await outer
    except asyncio.CancelledError:
        for child in children:
            child.cancel()
        raise


# ---------------------------------------------------------------------------------------------
# The controller
# ---------------------------------------------------------------------------------------------

class DaemonSetController(ControllerLifecycle):
    def __init__(self, client: Client, *, clock: Clock, workers: int = 2,
                 informers: SharedInformerFactory | None = None, recorder: EventRecorder | None = None,
                 burst_replicas: int = BURST_REPLICAS,
                 full_resync_period: float = FULL_RESYNC_PERIOD, progress_deadline: float = 600.0,
                 rate_limiter: RateLimiter | None = None) -> None:
        self.client = client
        self.clock = clock
        self.workers = workers
        self.burst_replicas = burst_replicas
        self.full_resync_period = full_resync_period
        self.progress_deadline = progress_deadline
        own_factory = informers is None
        self.informers = informers if informers is not None else SharedInformerFactory(client)
        own_recorder = recorder is None
        self.recorder = recorder if recorder is not None else EventRecorder(client, component=COMPONENT, clock=clock)
        self.kit = ControllerKit("daemonset", informers=self.informers)
        self.queue = self.kit.queue(rate_limiter=rate_limiter)
        self.expectations = Expectations(clock=clock)
        self.backoff = Backoff()
        self.data_cache = DataCache()
        self.pod_index = PodIndex()
        self._states: dict[str, DaemonSetState] = {}
        self._states_by_uid: dict[str, DaemonSetState] = {}
        self._selectors: dict[str, tuple[Any, LabelSelector | None]] = {}
        self._placements: dict[str, tuple[int, Placement]] = {}
        self._rv_floor: dict[str, int] = {}
        self._last_progress: dict[str, float] = {}  # DaemonSet uid → time of the last rollout progress
        # DaemonSet uid → (resourceVersion the cache had, the object our status write returned):
        # see :meth:`_status_baseline`.
        self._written_status: dict[str, tuple[str, Obj]] = {}
        # DaemonSet uid → (the baseline, the inputs, the recheck) of the last status pass that
        # found nothing to write.  The conditions and the skip rule are a function of the baseline
        # object and these inputs (the counters, the observed generation, the clock, the last
        # progress): given the same again — several syncs of one instant in virtual time, each
        # taking a pod event of the same step — the pass would again write nothing, so it is not
        # computed again (a rollout at maxUnavailable 1 makes six status passes per pod, four of
        # them such repeats).  The same baseline is the same object: in-process, the informer's
        # copy of our write is the object the write answered.
        self._unwritten_status: dict[str, tuple[Obj, tuple[Any, ...], float | None]] = {}
        # DaemonSet uid → the last revision pass that wrote nothing: see :meth:`_construct_history`.
        self._history: dict[str, tuple[tuple[Any, ...], list[Obj], Obj, list[Obj]]] = {}
        # DaemonSet uid → (its template object, template generation, revision hash, the pod
        # template made of them): see :meth:`_pod_template`.
        self._templates: dict[str, tuple[Obj, int | None, str, Obj]] = {}
        # What the syncs did, for diagnostics and tests (this module runs compiled: a test cannot
        # replace a function or method it calls, so it reads these and the hook instead).
        self.syncs = 0
        self.revision_passes = 0  # revision claims + constructHistory actually run (not remembered)
        self.node_evaluations = 0  # nodes manage evaluated (node_actions calls)
        # Awaited after each syncNodes with the nodes it created pods for (tests watch the bursts
        # and act between them); None in production.
        self.after_sync_nodes: Callable[[list[str]], Awaitable[None]] | None = None

        ns_index = {NAMESPACE_INDEX: index_by_namespace}
        self.ds_informer: Informer = self.kit.informer(DAEMONSETS, indexers=ns_index)
        self.pod_informer: Informer = self.kit.informer(PODS, indexers=ns_index)
        self.node_informer: Informer = self.kit.informer(NODES)
        self.rev_informer: Informer = self.kit.informer(REVISIONS, indexers=ns_index)
        self.kit.watch(self.ds_informer, on_add=self._add_ds, on_update=self._update_ds, on_delete=self._delete_ds)
        self.kit.watch(self.pod_informer, on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod)
        self.kit.watch(self.node_informer, on_add=self._add_node, on_update=self._update_node,
                       on_delete=self._delete_node)
        self.kit.watch(self.rev_informer, on_add=self._add_revision, on_update=self._update_revision,
                       on_delete=self._delete_revision)
        self.kit.workers(self.queue, self.sync, count=workers, on_error=self._sync_failed)
        self.kit.loop(self._backoff_gc, name="backoff-gc")
        if own_recorder:
            self.kit.on_stop(self._close_recorder)
        if own_factory:
            self.kit.on_stop(self.informers.stop)

    # ------------------------------------------------------------------------------------------
    # lifecycle
    # ------------------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start informers (if not yet running), wait for their caches, start the workers."""
        await super().start()
        log.info("started daemon sets controller")

    async def _close_recorder(self) -> None:
        with contextlib.suppress(Exception):
            await self.recorder.close()

    async def run_until_stopped(self) -> None:
        await self.start()
        # Stop, then raise what ended the wait (a cancellation): awaited after the handler, not
        # in a ``finally`` (compiled.py).
        ended: BaseException | None = None
        try:
            await self.kit.wait_stopped()
        except BaseException as e:  # noqa: BLE001 - raised again below
            ended = e
        await self.stop()
        if ended is not None:
            raise ended

    def _sync_failed(self, key: Any, exc: Exception, _retried: bool) -> None:
        log.info("%s failed with : %s", key, exc)
        log.debug("sync failure", exc_info=exc)
        # Never silence: the DaemonSet's own events say why it cannot be acted on (the
        # recorder's correlator folds the repeats of a retry loop into one counted event).
        ds = self.ds_informer.get(key) if isinstance(key, str) else None
        if ds is not None:
            self.recorder.event(ds, "Warning", FAILED_SYNC, f"Error syncing DaemonSet: {exc}")

    async def _backoff_gc(self) -> None:
        while True:
            await self.clock.sleep(GC_INTERVAL)
            self.backoff.gc(self.clock.now())

    # ------------------------------------------------------------------------------------------
    # helpers: lookups and enqueueing
    # ------------------------------------------------------------------------------------------

    def enqueue(self, ds: Obj) -> None:
        self.queue.add(key_of(ds))

    def enqueue_after(self, ds: Obj, delay: float) -> None:
        self.queue.add_after(key_of(ds), delay)

    def _resolve(self, namespace: str, ref: Mapping[str, Any]) -> Obj | None:
        """``resolveControllerRef``: the cached DaemonSet named by the ref, if the UID matches."""
        if field_of(ref, "kind") != "DaemonSet":
            return None
        name = field_of(ref, "name")
        ds = self.ds_informer.get(f"{namespace}/{name}" if namespace else str(name))
        if ds is None or field_of(ds["metadata"], "uid") != field_of(ref, "uid"):
            return None
        return ds

    def _selector(self, ds: Obj) -> LabelSelector | None:
        """The DaemonSet's parsed selector (cached per UID and spec), None if empty/invalid."""
        md = ds["metadata"]
        raw = field_of(ds.get("spec"), "selector")
        hit = self._selectors.get(md.get("uid") or "")
        if hit is not None and hit[0] is raw:
            return hit[1]
        try:
            sel: LabelSelector | None = label_selector_from_dict(raw)
        except ValueError:
            sel = None
        if sel is not None and (sel.empty or sel.matches_nothing):
            sel = None
        self._selectors[md.get("uid") or ""] = (raw, sel)
        return sel

    def _matching_daemonsets(self, obj: Obj) -> list[Obj]:
        """``GetPodDaemonSets`` / ``GetHistoryDaemonSets``: DaemonSets of the namespace whose
        selector matches the object's labels (none for an object without labels, as upstream)."""
        md: dict[str, Any] = obj.get("metadata") or {}
        return selecting(self.ds_informer.by_index(NAMESPACE_INDEX, md.get("namespace") or ""), md.get("labels"),
                         self._selector)

    def _placement(self, ds: Obj) -> Placement:
        md = ds["metadata"]
        uid = md.get("uid") or ""
        gen = int(md.get("generation") or 0)
        hit = self._placements.get(uid)
        if hit is not None and hit[0] == gen:
            return hit[1]
        placement = Placement(ds)
        self._placements[uid] = (gen, placement)
        return placement

    def _current_state(self, ds: Obj) -> DaemonSetState | None:
        """The DaemonSet's incremental state if it is current for this spec."""
        state = self._states.get(key_of(ds))
        md = ds["metadata"]
        if state is None or state.uid != md.get("uid") or state.generation != int(md.get("generation") or 0):
            return None
        return state

    # ------------------------------------------------------------------------------------------
    # event handlers: DaemonSets
    # ------------------------------------------------------------------------------------------

    def _add_ds(self, ds: Obj) -> None:
        self.enqueue(ds)

    def _update_ds(self, old: Obj, cur: Obj) -> None:
        if field_of(old["metadata"], "uid") != field_of(cur["metadata"], "uid"):
            self._delete_ds(old)
        self.enqueue(cur)

    def _delete_ds(self, ds: Obj) -> None:
        key = key_of(ds)
        self.expectations.delete_expectations(key)
        uid = field_of(ds["metadata"], "uid") or ""
        self._selectors.pop(uid, None)
        self._placements.pop(uid, None)
        self._last_progress.pop(uid, None)
        self._written_status.pop(uid, None)
        self._unwritten_status.pop(uid, None)
        self._history.pop(uid, None)
        self._templates.pop(uid, None)
        self.data_cache.forget(uid)
        self.queue.add(key)

    # ------------------------------------------------------------------------------------------
    # event handlers: pods (index maintenance + upstream's enqueue/expectation rules)
    # ------------------------------------------------------------------------------------------

    def _index_pod(self, pod: Obj, *, deleted: bool = False) -> None:
        key = key_of(pod)
        floor = self._rv_floor.get(key)
        if floor is not None:
            if not deleted and resource_version(pod) < floor:
                return  # older than what an adoption/release already put in the index
            del self._rv_floor[key]
        if deleted:
            old, new = self.pod_index.remove(key), None
        else:
            old, new = self.pod_index.upsert(key, pod)
        for loc in (old, new):
            if loc is None:
                continue
            state = self._states_by_uid.get(loc[0])
            if state is not None:
                if loc[1] is not None:
                    state.touch(loc[1])
                state.claim_dirty.add(key)

    def _observe_adopted(self, pod: Obj) -> None:
        """Put a pod we just adopted/released into the index at once (upstream uses the claimed
        list directly); older watch events for it are then ignored by the index."""
        self._index_pod(pod)
        self._rv_floor[key_of(pod)] = resource_version(pod)

    def _mark_orphan(self, pod: Obj, daemonsets: list[Obj]) -> None:
        key = key_of(pod)
        for ds in daemonsets:
            state = self._states.get(key_of(ds))
            if state is not None:
                state.claim_dirty.add(key)

    def _add_pod(self, pod: Obj) -> None:
        self._index_pod(pod)
        if field_of(pod["metadata"], "deletionTimestamp"):
            # A pod that shows up already terminating is not a creation observation.
            self._pod_gone(pod)
            return
        ref = controller_ref(pod)
        if ref is not None:
            ds = self._resolve(field_of(pod["metadata"], "namespace") or "", ref)
            if ds is None:
                return
            self.expectations.creation_observed(key_of(ds))
            self.enqueue(ds)
            return
        daemonsets = self._matching_daemonsets(pod)
        if len(daemonsets) > 1:
            log.warning("user error! more than one daemon is selecting pods with labels: %s",
                        field_of(pod["metadata"], "labels"))
        self._mark_orphan(pod, daemonsets)
        for ds in daemonsets:
            self.enqueue(ds)

    def _enqueue_owners(self, old: Obj, cur: Obj) -> tuple[Obj | None, Obj | None, bool]:
        """The shared part of upstream's pod and revision update handlers: if the controller
        reference changed, the old owner is synced too; the current owner (if alive) is enqueued.
        Returns (current controller ref, current owner or None, whether the ref changed)."""
        cur_ref, old_ref = controller_ref(cur), controller_ref(old)
        ref_changed = cur_ref != old_ref
        namespace = field_of(cur["metadata"], "namespace") or ""
        if ref_changed and old_ref is not None:
            previous = self._resolve(namespace, old_ref)
            if previous is not None:
                self.enqueue(previous)
        ds = self._resolve(namespace, cur_ref) if cur_ref is not None else None
        if ds is not None:
            self.enqueue(ds)
        return cur_ref, ds, ref_changed

    def _update_pod(self, old: Obj, cur: Obj) -> None:
        if field_of(old["metadata"], "resourceVersion") == field_of(cur["metadata"], "resourceVersion"):
            return  # periodic resync
        self._index_pod(cur)
        if field_of(cur["metadata"], "deletionTimestamp"):
            # Graceful deletion started: count it as observed and let manage react now.
            self._pod_gone(cur)
            return
        cur_ref, ds, ref_changed = self._enqueue_owners(old, cur)
        if cur_ref is not None:
            if ds is None:
                return
            min_ready = min_ready_seconds(ds)
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(cur):
                # One more second against millisecond skew in AddAfter.
                self.enqueue_after(ds, min_ready + 1)
            return
        daemonsets = self._matching_daemonsets(cur)
        if not daemonsets:
            return
        if ref_changed or (field_of(old["metadata"], "labels") or {}) != (field_of(cur["metadata"], "labels") or {}):
            self._mark_orphan(cur, daemonsets)
            for ds in daemonsets:
                self.enqueue(ds)

    def _delete_pod(self, pod: Obj) -> None:
        self._index_pod(pod, deleted=True)
        self._pod_gone(pod)

    def _pod_gone(self, pod: Obj) -> None:
        ref = controller_ref(pod)
        if ref is None:
            return  # no controller cares about orphans being deleted
        ds = self._resolve(field_of(pod["metadata"], "namespace") or "", ref)
        if ds is None:
            return
        self.expectations.deletion_observed(key_of(ds))
        self.enqueue(ds)

    # ------------------------------------------------------------------------------------------
    # event handlers: nodes (O(DaemonSets) each)
    # ------------------------------------------------------------------------------------------

    def _add_node(self, node: Obj) -> None:
        name = node["metadata"]["name"]
        for ds in self.ds_informer.list():
            state = self._current_state(ds)
            placement = state.placement if state is not None else self._placement(ds)
            result = placement.evaluate(node)
            if state is not None and state.eligibility.get(name) != result:
                state.eligibility[name] = result
                state.touch(name)
            if result[0]:
                self.enqueue(ds)

    def _update_node(self, old: Obj, cur: Obj) -> None:
        # Baseline upstream: only label and taint changes can change what a DaemonSet wants.
        if (field_of(old["metadata"], "labels") or {}) == (field_of(cur["metadata"], "labels") or {}) and \
                (field_of(old.get("spec"), "taints") or []) == (field_of(cur.get("spec"), "taints") or []):
            return
        name = cur["metadata"]["name"]
        for ds in self.ds_informer.list():
            state = self._current_state(ds)
            placement = state.placement if state is not None else self._placement(ds)
            before = state.eligibility.get(name) if state is not None else None
            if before is None:
                before = placement.evaluate(old)
            after = placement.evaluate(cur)
            if state is not None and state.eligibility.get(name) != after:
                state.eligibility[name] = after
                state.touch(name)
            if before != after:
                self.enqueue(ds)

    def _delete_node(self, node: Obj) -> None:
        # Upstream has no node-delete handler: nothing is enqueued.  The caches must still
        # forget the node, so the next sync (for whatever reason) sees it gone, as upstream's
        # node list would.
        name = node["metadata"]["name"]
        for state in self._states.values():
            if state.eligibility.pop(name, None) is not None:
                state.touch(name)

    # ------------------------------------------------------------------------------------------
    # event handlers: ControllerRevisions
    # ------------------------------------------------------------------------------------------

    def _add_revision(self, rev: Obj) -> None:
        if field_of(rev["metadata"], "deletionTimestamp"):
            self._delete_revision(rev)
            return
        ref = controller_ref(rev)
        if ref is not None:
            # Upstream only resolves (and logs) here; the owner's own writes need no sync.
            return
        for ds in self._matching_daemonsets(rev):
            self.enqueue(ds)

    def _update_revision(self, old: Obj, cur: Obj) -> None:
        if field_of(old["metadata"], "resourceVersion") == field_of(cur["metadata"], "resourceVersion"):
            return
        cur_ref, _ds, ref_changed = self._enqueue_owners(old, cur)
        if cur_ref is not None:
            return
        if ref_changed or (field_of(old["metadata"], "labels") or {}) != (field_of(cur["metadata"], "labels") or {}):
            for ds in self._matching_daemonsets(cur):
                self.enqueue(ds)

    def _delete_revision(self, rev: Obj) -> None:
        self.data_cache.forget(field_of(rev["metadata"], "uid") or "")
        ref = controller_ref(rev)
        if ref is None:
            return
        ds = self._resolve(field_of(rev["metadata"], "namespace") or "", ref)
        if ds is not None:
            self.enqueue(ds)

    # ------------------------------------------------------------------------------------------
    # incremental state
    # ------------------------------------------------------------------------------------------

    def _ensure_state(self, ds: Obj, selector: LabelSelector) -> DaemonSetState:
        key = key_of(ds)
        md = ds["metadata"]
        uid = md.get("uid") or ""
        generation = int(md.get("generation") or 0)
        state = self._states.get(key)
        now = self.clock.monotonic()
        if state is not None and state.uid == uid and state.generation == generation \
                and now - state.last_full < self.full_resync_period:
            return state
        if state is not None:
            self._states_by_uid.pop(state.uid, None)
        placement = self._placement(ds)
        new = DaemonSetState(key=key, uid=uid, generation=generation, placement=placement, selector=selector)
        new.eligibility = {n["metadata"]["name"]: placement.evaluate(n) for n in self.node_informer.list()}
        everything = set(new.eligibility) | set(self.pod_index.nodes(uid))
        new.manage_dirty = set(everything)
        new.derived_dirty = set(everything)
        new.full_claim = True
        new.last_full = now
        new.full_passes = (state.full_passes + 1) if state is not None and state.uid == uid else 1
        self._states[key] = new
        self._states_by_uid[uid] = new
        if self.full_resync_period > 0:
            self.queue.add_after(key, self.full_resync_period)
        return new

    def _drop_state(self, key: str) -> None:
        state = self._states.pop(key, None)
        if state is not None:
            self._states_by_uid.pop(state.uid, None)

    def _node_pods(self, state: DaemonSetState, node: str) -> list[Obj]:
        return node_pods(self.pod_index, state, node)

    def _claimed_pods(self, state: DaemonSetState) -> list[Obj]:
        return claimed_pods(self.pod_index, state)

    def _refresh(self, state: DaemonSetState, ds: Obj, hash_: str, now: float) -> None:
        if state.read_from is not ds:
            state.read_from = ds
            state.template_generation = template_generation(ds)
            state.min_ready = min_ready_seconds(ds)
        refresh(self.pod_index, state, hash_=hash_, generation=state.template_generation,
                min_ready=state.min_ready, now=now)

    # ------------------------------------------------------------------------------------------
    # the sync
    # ------------------------------------------------------------------------------------------

    async def sync(self, key: str) -> None:
        """``syncDaemonSet``: one reconciliation of the DaemonSet ``key`` (``namespace/name``)."""
        self.syncs += 1
        ds = self.ds_informer.get(key)
        if ds is None:
            self.expectations.delete_expectations(key)
            self._drop_state(key)
            return
        spec: dict[str, Any] = ds.get("spec") or {}
        if _selects_all(spec.get("selector")):
            self.recorder.event(ds, "Warning", SELECTING_ALL,
                                "This daemon set is selecting all pods. A non-empty selector is required.")
            return
        if field_of(ds["metadata"], "deletionTimestamp"):
            return  # status cannot be computed reliably while dependents are being collected
        selector = self._selector(ds)
        if selector is None:
            raise SyncError(f"invalid selector for daemon set {key!r}")
        state = self._ensure_state(ds, selector)

        # constructHistory (claims revisions, creates/renumbers the current one)
        try:
            cur, old = await self._construct_history(ds, state)
        except Exception as e:
            raise SyncError(f"failed to construct revisions of DaemonSet: {e}") from e
        hash_ = (field_of(cur.get("metadata"), "labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) or ""

        try:
            await self._claim_pods(ds, state)
        except ClaimError as e:
            # Upstream fails manage and the status computation alike (both claim first).
            state.full_claim = True  # retry every candidate on the next sync
            raise SyncError(
                f'couldn\'t get node to daemon pod mapping for daemon set "{ds["metadata"]["name"]}": {e}') from e

        if not self.expectations.satisfied(key):
            # Only refresh status; observedGeneration is not advanced for an unprocessed spec.
            await self._update_status(ds, state, hash_, update_observed_generation=False)
            return

        error: Exception | None = None
        try:
            await self._update_daemonset(ds, state, hash_, old)
        except Exception as e:  # noqa: BLE001 - status is still written, as upstream
            error = e
        try:
            await self._update_status(ds, state, hash_, update_observed_generation=True)
        except Exception as status_error:
            if error is None:
                raise
            log.info("failed to update status of %s: %s", key, status_error)
        if error is not None:
            raise error

    async def _construct_history(self, ds: Obj, state: DaemonSetState) -> tuple[Obj, list[Obj]]:
        """Claim the namespace's revisions, then ``constructHistory``.

        Both are functions of the cached revisions and of the DaemonSet's uid, generation (its
        template), deletion, collision count and selector.  A pass that wrote nothing — no
        adoption or release, no relabel, renumber, dedupe or snapshot — is remembered with those
        inputs, and while every one of them is unchanged (the very same cached revision objects,
        in the same order) the next sync takes its answer instead of walking them again: it
        would reach the same answer and write nothing either.  A rollout syncs its DaemonSet
        several times per pod replaced; this was a quarter of such a sync.  A pass that wrote
        is never remembered, so its writes' echoes in the cache are looked at as before."""
        md = ds["metadata"]
        namespace = md.get("namespace") or ""
        uid = md.get("uid") or ""
        given = self.rev_informer.by_index(NAMESPACE_INDEX, namespace)
        # The template as DataCache knows it: by generation, by resourceVersion for an object
        # that never had one.
        template = md.get("generation") or ("rv", md.get("resourceVersion"))
        inputs = (template, md.get("deletionTimestamp"), collision_count(ds), state.selector)
        remembered = self._history.get(uid)
        if remembered is not None and remembered[0] == inputs and _same_objects(remembered[1], given):
            return remembered[2], list(remembered[3])
        self._history.pop(uid, None)
        self.revision_passes += 1
        claimer = Claimer(self.client, ds, state.selector)
        revisions = await claimer.claim(given, resource=REVISIONS, kind="ControllerRevision")
        cur, old = await construct_history(self.client, ds, revisions, daemon_pods=lambda: self._claimed_pods(state),
                                           cache=self.data_cache)
        known = {id(r) for r in given}
        if len(revisions) == len(old) + 1 and all(id(r) in known for r in (cur, *old)) \
                and all(claimer.classify(r) in ("claimed", "ignore") for r in given):
            # Nothing written: nothing to adopt or release, every revision returned is the cached
            # one (not relabelled, renumbered or snapshotted), and each claimed one is the
            # current or an old one (a second current one would have been deleted).
            self._history[uid] = (inputs, given, cur, list(old))
        return cur, old

    async def _claim_pods(self, ds: Obj, state: DaemonSetState) -> None:
        if state.full_claim:
            namespace = field_of(ds["metadata"], "namespace") or ""
            candidates: list[Obj] = self.pod_informer.by_index(NAMESPACE_INDEX, namespace)
            state.full_claim = False
        else:
            candidates = []
            for key in state.claim_dirty:
                pod = self.pod_informer.get(key)
                if pod is not None:
                    candidates.append(pod)
        state.claim_dirty.clear()
        if not candidates:
            return
        claimer = Claimer(self.client, ds, state.selector)
        await claimer.claim(candidates, resource=PODS, kind="Pod", on_adopted=self._observe_adopted,
                            on_released=self._observe_adopted)

    async def _update_daemonset(self, ds: Obj, state: DaemonSetState, hash_: str, old: list[Obj]) -> None:
        """``updateDaemonSet``: manage, then (if nothing is pending) the rolling update, then
        history cleanup."""
        key = state.key
        await self._manage(ds, state, hash_)
        if self.expectations.satisfied(key):
            if update_strategy_type(ds) == ROLLING_UPDATE:
                await self._rolling_update(ds, state, hash_)
        try:
            await self._cleanup_history(ds, state, old)
        except Exception as e:
            raise SyncError(f"failed to clean up revisions of DaemonSet: {e}") from e

    async def _manage(self, ds: Obj, state: DaemonSetState, hash_: str) -> None:
        nodes = state.manage_dirty | state.attention
        state.manage_dirty = set()
        state.attention = set()
        now = self.clock.now()
        surge = allows_surge(ds)
        min_ready = min_ready_seconds(ds)
        pending = state.pending_creates
        to_delete: list[str] = []
        requeue: float | None = None
        # The failed-pod back-off keys of this pass, ``failed_pods_backoff_key(ds, node)``, share
        # everything before the node's name: made once, not once per node evaluated.
        backoff_prefix = failed_pods_backoff_key(ds, "")
        for node in sorted(nodes):
            pending.discard(node)  # evaluated again now
            pods = self._node_pods(state, node)
            elig = state.eligibility.get(node)
            if elig is None:
                doomed = unscheduled_pods_on_missing_node(pods)
                if doomed:
                    to_delete.extend(doomed)
                    state.attention.add(node)
                continue
            self.node_evaluations += 1
            actions = node_actions(node, elig[0], elig[1], pods, hash_=hash_, surge=surge,
                                   min_ready_seconds=min_ready, backoff=self.backoff,
                                   backoff_key=backoff_prefix + node, now=now)
            for type_, reason, message in actions.events:
                self.recorder.event(ds, type_, reason, message)
            if actions.create:
                pending.add(node)
            to_delete.extend(actions.delete)
            if actions.requeue_after is not None:
                requeue = actions.requeue_after if requeue is None else min(requeue, actions.requeue_after)
            if not actions.steady and (actions.delete or actions.requeue_after is not None or not actions.create):
                state.attention.add(node)  # (a node that only needs a pod waits in ``pending``)
        if requeue is not None:
            self.enqueue_after(ds, requeue)
        # The burst this sync creates: the first nodes in name order of all that need a pod
        # (manage.PendingCreates).  They are re-evaluated on the next sync, as upstream would.
        nodes_needing = pending.take(self.burst_replicas)
        state.attention.update(nodes_needing)
        await self._sync_nodes(ds, state.key, to_delete, nodes_needing, hash_)

    async def _rolling_update(self, ds: Obj, state: DaemonSetState, hash_: str) -> None:
        now = self.clock.now()
        self._refresh(state, ds, hash_, now)
        if state.old_total <= 0:
            return  # no old pod anywhere: both planners would do nothing
        plan = state.rollout.plan(ds)
        for node in plan.nodes_to_create:
            state.attention.add(node)
        if not plan.empty:
            await self._sync_nodes(ds, state.key, plan.pods_to_delete, plan.nodes_to_create, hash_)

    async def _cleanup_history(self, ds: Obj, state: DaemonSetState, old: list[Obj]) -> None:
        """``cleanupHistory``; the live hashes come from the pods grouped by node, terminal
        deleted ones included (``getNodesToDaemonPods(ds, true)``), so an unplaced pod keeps no
        revision alive.  Nothing to delete within the limit: the pods are not even looked at."""
        if len(old) <= revision_history_limit(ds):
            return
        sel = state.selector
        live = {h for p in self.pod_index.placed(state.uid) if sel.matches(field_of(p["metadata"], "labels"))
                and (h := pod_hash(p))}
        await cleanup_history(self.client, ds, old, live)

    # ------------------------------------------------------------------------------------------
    # syncNodes: creates (slow start) and deletes under expectations
    # ------------------------------------------------------------------------------------------

    async def _sync_nodes(self, ds: Obj, key: str, pods_to_delete: list[str], nodes_needing: list[str],
                          hash_: str) -> None:
        create_diff = min(len(nodes_needing), self.burst_replicas)
        delete_diff = min(len(pods_to_delete), self.burst_replicas)
        # Expectations first: the watch events of our writes may arrive before we return.
        self.expectations.set_expectations(key, create_diff, delete_diff)
        errors: list[Exception] = []
        if create_diff:
            template = self._pod_template(ds, hash_)
            batch = min(create_diff, SLOW_START_INITIAL_BATCH_SIZE)
            pos = 0
            while pos < create_diff:
                results = await _in_tasks([self._create_pod(ds, key, template, nodes_needing[i])
                                           for i in range(pos, pos + batch)])
                failed = [e for e in results if e is not None]
                errors.extend(failed)
                skipped = create_diff - (pos + batch)
                if failed and skipped > 0:
                    # Slow start: stop after a failing batch; the rest is retried on a later sync.
                    self.expectations.lower_expectations(key, skipped, 0)
                    break
                pos += batch
                batch = min(2 * batch, create_diff - pos)
        if delete_diff:
            results = await _in_tasks([self._delete_pod_named(ds, key, name)
                                       for name in pods_to_delete[:delete_diff]])
            errors.extend(e for e in results if e is not None)
        if self.after_sync_nodes is not None:
            await self.after_sync_nodes(nodes_needing[:create_diff])
        if errors:
            raise _aggregate(errors)

    def _pod_template(self, ds: Obj, hash_: str) -> Obj:
        """``CreatePodTemplate`` (:func:`pod_template_for`), made once per template: it depends
        on the DaemonSet's template, template generation and revision hash only, and while the
        template is the very stored object it was made from (stored objects are immutable; a
        status write carries the spec over) the result is the same.  A sync at maxUnavailable 1
        creates one pod, and copying the template with its tolerations for it cost as much as
        the rest of the sync's own work.  Nothing changes the template: each pod is a new object
        made from it, copied on its way into the API."""
        uid = field_of(ds["metadata"], "uid") or ""
        source = field_of(ds.get("spec"), "template")
        generation = template_generation(ds)
        made = self._templates.get(uid)
        if made is not None and made[0] is source and made[1] == generation and made[2] == hash_:
            return made[3]
        template = pod_template_for(ds, hash_)
        if type(source) is dict:
            self._templates[uid] = (source, generation, hash_, template)
        return template

    async def _create_pod(self, ds: Obj, key: str, template: Obj, node: str) -> Exception | None:
        pod = daemon_pod(ds, template, node)
        if pod is None:
            self.expectations.creation_observed(key)
            return SyncError("unable to create pods, no labels")
        try:
            created = await self.client.create(PODS, pod, namespace=pod["metadata"]["namespace"])
        except ApiError as e:
            if is_namespace_terminating(e):
                return None  # every later create fails the same way; not an error
            self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {e.message}")
            self.expectations.creation_observed(key)
            return e
        except Exception as e:  # noqa: BLE001 - transport errors count like API errors
            self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {e}")
            self.expectations.creation_observed(key)
            return e
        self.recorder.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")
        return None

    async def _delete_pod_named(self, ds: Obj, key: str, name: str) -> Exception | None:
        try:
            await self.client.delete(PODS, name, namespace=field_of(ds["metadata"], "namespace") or "")
        except ApiError as e:
            self.expectations.deletion_observed(key)
            if e.code == 404:
                return None
            self.recorder.event(ds, "Warning", "FailedDelete", f"Error deleting: {e.message}")
            return SyncError(f"unable to delete pods: {e.message}")
        except Exception as e:  # noqa: BLE001
            self.expectations.deletion_observed(key)
            self.recorder.event(ds, "Warning", "FailedDelete", f"Error deleting: {e}")
            return SyncError(f"unable to delete pods: {e}")
        self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {name}")
        return None

    # ------------------------------------------------------------------------------------------
    # status
    # ------------------------------------------------------------------------------------------

    async def _update_status(self, ds: Obj, state: DaemonSetState, hash_: str, *,
                             update_observed_generation: bool) -> None:
        now = self.clock.now()
        self._refresh(state, ds, hash_, now)
        counts = state.counts.copy()
        ds = self._status_baseline(ds)
        md = ds["metadata"]
        status: dict[str, Any] = ds.get("status") or {}
        observed = int(md.get("generation") or 0) if update_observed_generation \
            else int(status.get("observedGeneration") or 0)
        uid = md.get("uid") or ""
        last_progress = self._last_progress.get(uid)
        inputs = (counts.desired, counts.current, counts.misscheduled, counts.ready, counts.updated,
                  counts.available, observed, update_observed_generation, now, last_progress)
        unwritten = self._unwritten_status.get(uid)
        if unwritten is not None and unwritten[0] is ds and unwritten[1] == inputs:
            recheck = unwritten[2]  # the status this sync would compute was just found written
        else:
            conditions, recheck, self._last_progress[uid] = rollout_conditions(
                ds, counts, observed_generation=observed, now=now, last_progress=last_progress,
                progress_deadline=self.progress_deadline)
            try:
                written = await store_status(self.client, ds, counts,
                                             update_observed_generation=update_observed_generation,
                                             conditions=conditions)
            except ApiError as e:
                raise SyncError(f"error storing status for daemon set {md.get('namespace')}/{md['name']}: {e}") from e
            if written is not None:
                self._written_status[uid] = (self._cached_version(state.key), written)
                self._unwritten_status.pop(uid, None)
            else:
                self._unwritten_status[uid] = (ds, inputs, recheck)
        min_ready = min_ready_seconds(ds)
        if min_ready > 0 and counts.ready != counts.available:
            self.enqueue_after(ds, min_ready)  # last line of defence against clock skew
        if recheck is not None:
            self.enqueue_after(ds, recheck)

    def _cached_version(self, key: str) -> str:
        cached = self.ds_informer.get(key)
        return str((cached or {}).get("metadata", {}).get("resourceVersion") or "")

    def _status_baseline(self, ds: Obj) -> Obj:
        """The DaemonSet the status write compares with: the informer's copy, or the object our
        own last status write returned while the cache has not moved since that write.

        Several syncs can run before the watch event of our own status write reaches the
        informer (in-process, and always in virtual time, where every step of a rollout happens
        at one instant).  Upstream compares with its cache there too: the stale copy differs,
        so it sends the same status again, gets a 409, re-reads and sends it a third time — which
        the API server drops as a no-op.  Comparing with what we last wrote skips those
        requests and nothing else: the distinct statuses written, and so every watch event, are
        the same.  Only resourceVersion equality is used (opaque on a real cluster): any newer
        cached version, ours or anyone's, is the baseline again."""
        uid = field_of(ds["metadata"], "uid") or ""
        entry = self._written_status.get(uid)
        if entry is None:
            return ds
        cached_rv, written = entry
        if cached_rv == str(field_of(ds["metadata"], "resourceVersion") or ""):
            return written
        del self._written_status[uid]
        return ds

    # ------------------------------------------------------------------------------------------
    # introspection (tests, diagnostics)
    # ------------------------------------------------------------------------------------------

    def incremental_counts(self, key: str) -> StatusCounts:
        """The incrementally maintained counters, brought up to date (no API calls)."""
        ds = self.ds_informer.get(key)
        state = self._states.get(key)
        if ds is None or state is None or state.hash is None:
            raise KeyError(key)
        self._refresh(state, ds, state.hash, self.clock.now())
        return state.counts.copy()

    def state(self, key: str) -> DaemonSetState | None:
        return self._states.get(key)
