"""The Deployment controller's pure decisions: budgets, the new and old ReplicaSets, revisions,
annotations, proportions, conditions and status.

Upstream: ``pkg/controller/deployment/util/deployment_util.go`` (``ResolveFenceposts``,
``MaxSurge``, ``MaxUnavailable``, ``NewRSNewReplicas``, ``IsSaturated``, ``FindNewReplicaSet``,
``FindOldReplicaSets``, ``EqualIgnoreHash``, ``SetNewReplicaSetAnnotations``,
``SetReplicasAnnotations``, ``GetProportion``, ``FindActiveOrLatest``, ``DeploymentComplete``,
``DeploymentProgressing``, ``DeploymentTimedOut``, ``SetDeploymentCondition``), ``sync.go``
(``calculateStatus``) and ``pkg/controller/controller_utils.go`` (the ReplicaSet sort orders).

Every function takes JSON-shaped objects and returns values; none does I/O, so each is a table
test (``tests/unit/test_deployment_util.py`` holds upstream's cases).  ReplicaSets handed in are
never mutated: a planned scale is returned as a number, and the controller writes it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from everynode.api.intstr import scaled_value
from everynode.api.pod import timestamp_seconds

Obj = dict[str, Any]

ROLLING_UPDATE = "RollingUpdate"
RECREATE = "Recreate"

POD_TEMPLATE_HASH = "pod-template-hash"  # DefaultDeploymentUniqueLabelKey
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
MAX_REV_HISTORY_LENGTH = 2000

# Annotations a Deployment does not hand down to its ReplicaSets (``annotationsToSkip``).
SKIPPED_ANNOTATIONS = frozenset({LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS,
                                 ROLLBACK_TO})

# Condition types and reasons (``deployment_util.go``), word for word.
PROGRESSING = "Progressing"
AVAILABLE = "Available"
REPLICA_FAILURE = "ReplicaFailure"
REPLICA_SET_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_REPLICA_SET = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"

MAX_INT32 = 2**31 - 1


# -- accessors --------------------------------------------------------------------------------

def spec_of(obj: Obj) -> Obj:
    return obj.get("spec") or {}


def status_of(obj: Obj) -> Obj:
    return obj.get("status") or {}


def replicas(obj: Obj) -> int:
    """``*spec.replicas`` (defaulting sets 1)."""
    value = spec_of(obj).get("replicas")
    return 1 if value is None else int(value)


def strategy_type(d: Obj) -> str:
    return (spec_of(d).get("strategy") or {}).get("type") or ROLLING_UPDATE


def is_rolling_update(d: Obj) -> bool:
    return strategy_type(d) == ROLLING_UPDATE


def annotations_of(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _created(obj: Obj) -> float:
    stamp = (obj.get("metadata") or {}).get("creationTimestamp")
    return timestamp_seconds(stamp) if stamp else 0.0


def has_progress_deadline(d: Obj) -> bool:
    deadline = spec_of(d).get("progressDeadlineSeconds")
    return deadline is not None and int(deadline) != MAX_INT32


def has_revision_history_limit(d: Obj) -> bool:
    limit = spec_of(d).get("revisionHistoryLimit")
    return limit is not None and int(limit) != MAX_INT32


# -- budgets ----------------------------------------------------------------------------------

def resolve_fenceposts(max_surge: Any, max_unavailable: Any, desired: int) -> tuple[int, int]:
    """``ResolveFenceposts``: surge rounds up, unavailability down; both 0 makes unavailability 1."""
    surge = scaled_value(max_surge if max_surge is not None else 0, desired, round_up=True)
    unavailable = scaled_value(max_unavailable if max_unavailable is not None else 0, desired, round_up=False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def _rolling(d: Obj) -> Obj:
    return (spec_of(d).get("strategy") or {}).get("rollingUpdate") or {}


def max_surge(d: Obj) -> int:
    """``MaxSurge``: 0 unless RollingUpdate."""
    if not is_rolling_update(d):
        return 0
    rolling = _rolling(d)
    surge, _ = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), replicas(d))
    return surge


def max_unavailable(d: Obj) -> int:
    """``MaxUnavailable``: 0 unless RollingUpdate with replicas; never more than the replicas."""
    desired = replicas(d)
    if not is_rolling_update(d) or desired == 0:
        return 0
    rolling = _rolling(d)
    _, unavailable = resolve_fenceposts(rolling.get("maxSurge"), rolling.get("maxUnavailable"), desired)
    return min(unavailable, desired)


def min_available(d: Obj) -> int:
    return replicas(d) - max_unavailable(d)


# -- replica set sets -------------------------------------------------------------------------

def active(rss: Iterable[Obj | None]) -> list[Obj]:
    """``FilterActiveReplicaSets``: with replicas to run."""
    return [rs for rs in rss if rs is not None and replicas(rs) > 0]


def replica_count(rss: Iterable[Obj | None]) -> int:
    """``GetReplicaCountForReplicaSets``: the sum of ``spec.replicas``."""
    return sum(replicas(rs) for rs in rss if rs is not None)


def _status_sum(rss: Iterable[Obj | None], name: str) -> int:
    return sum(int(status_of(rs).get(name) or 0) for rs in rss if rs is not None)


def actual_replica_count(rss: Iterable[Obj | None]) -> int:
    return _status_sum(rss, "replicas")


def ready_replica_count(rss: Iterable[Obj | None]) -> int:
    return _status_sum(rss, "readyReplicas")


def available_replica_count(rss: Iterable[Obj | None]) -> int:
    return _status_sum(rss, "availableReplicas")


def by_creation(rs: Obj) -> tuple[float, str]:
    """``ReplicaSetsByCreationTimestamp``: older first, then by name."""
    return _created(rs), (rs.get("metadata") or {}).get("name") or ""


def sorted_by_size_newer(rss: Sequence[Obj]) -> list[Obj]:
    """``ReplicaSetsBySizeNewer``: larger first; of equal size the newer first."""
    return _sorted_by_size(rss, newer_first=True)


def sorted_by_size_older(rss: Sequence[Obj]) -> list[Obj]:
    """``ReplicaSetsBySizeOlder``: larger first; of equal size the older first."""
    return _sorted_by_size(rss, newer_first=False)


def _sorted_by_size(rss: Sequence[Obj], *, newer_first: bool) -> list[Obj]:
    # Two stable sorts: by age (creation time, then name), then by size, larger first.
    by_age = sorted(rss, key=by_creation, reverse=newer_first)
    return sorted(by_age, key=lambda rs: -replicas(rs))


def revision(obj: Obj) -> int:
    """``Revision``: the revision annotation (0 when absent or not a number)."""
    value = annotations_of(obj).get(REVISION)
    if value is None:
        return 0
    try:
        return int(value)
    except ValueError:
        return 0


def max_revision(rss: Iterable[Obj]) -> int:
    return max((revision(rs) for rs in rss), default=0)


def sorted_by_revision(rss: Sequence[Obj]) -> list[Obj]:
    """``ReplicaSetsByRevision``: lower revision first, then by creation."""
    return sorted(rss, key=lambda rs: (revision(rs), *by_creation(rs)))


def without_hash(template: Obj | None) -> Obj:
    """The template with the ``pod-template-hash`` label removed (for ``EqualIgnoreHash``).

    A ``creationTimestamp: null`` is dropped too: Go decodes it to the zero time, which is what an
    absent one is, and ``kubectl rollout undo`` sends the typed template back with it."""
    template = dict(template or {})
    md = {k: v for k, v in (template.get("metadata") or {}).items() if not (k == "creationTimestamp" and v is None)}
    labels = {k: v for k, v in (md.get("labels") or {}).items() if k != POD_TEMPLATE_HASH}
    if labels:
        md["labels"] = labels
    else:
        md.pop("labels", None)
    template["metadata"] = md
    return template


def equal_ignore_hash(a: Obj | None, b: Obj | None) -> bool:
    """``EqualIgnoreHash``: templates equal once the hash label is removed from both."""
    return without_hash(a) == without_hash(b)


def find_new_replica_set(d: Obj, rss: Sequence[Obj]) -> Obj | None:
    """``FindNewReplicaSet``: the oldest ReplicaSet whose template equals the Deployment's."""
    template = spec_of(d).get("template")
    for rs in sorted(rss, key=by_creation):
        if equal_ignore_hash(spec_of(rs).get("template"), template):
            return rs
    return None


def find_old_replica_sets(d: Obj, rss: Sequence[Obj]) -> tuple[list[Obj], list[Obj]]:
    """``FindOldReplicaSets``: (old ones with replicas, every old one)."""
    new = find_new_replica_set(d, rss)
    new_uid = (new.get("metadata") or {}).get("uid") if new is not None else None
    old = [rs for rs in rss if new is None or (rs.get("metadata") or {}).get("uid") != new_uid]
    return [rs for rs in old if replicas(rs) != 0], old


def find_active_or_latest(new: Obj | None, old: Sequence[Obj]) -> Obj | None:
    """``FindActiveOrLatest``: the only active ReplicaSet, or the newest when none is active."""
    if new is None and not old:
        return None
    newest_first = sorted(old, key=by_creation, reverse=True)
    running = active([*newest_first, new])
    if not running:
        return new if new is not None else newest_first[0]
    if len(running) == 1:
        return running[0]
    return None


# -- scaling decisions ------------------------------------------------------------------------

def new_rs_new_replicas(d: Obj, all_rss: Sequence[Obj | None], new: Obj) -> int:
    """``NewRSNewReplicas``: how far the new ReplicaSet may be scaled up now."""
    if strategy_type(d) == RECREATE:
        return replicas(d)
    if strategy_type(d) != ROLLING_UPDATE:
        raise ValueError(f"deployment type {strategy_type(d)} isn't supported")
    surge = scaled_value(_rolling(d).get("maxSurge") or 0, replicas(d), round_up=True)
    current = replica_count(all_rss)
    max_total = replicas(d) + surge
    if current >= max_total:
        return replicas(new)
    scale_up = min(max_total - current, replicas(d) - replicas(new))
    return replicas(new) + scale_up


def is_saturated(d: Obj, rs: Obj | None) -> bool:
    """``IsSaturated``: the ReplicaSet runs and offers every replica the Deployment wants."""
    if rs is None:
        return False
    desired = annotations_of(rs).get(DESIRED_REPLICAS)
    try:
        desired_count = int(desired) if desired is not None else None
    except ValueError:
        return False
    return desired_count == replicas(d) and replicas(rs) == replicas(d) \
        and int(status_of(rs).get("availableReplicas") or 0) == replicas(d)


def max_replicas_annotation(rs: Obj) -> int | None:
    value = annotations_of(rs).get(MAX_REPLICAS)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def desired_replicas_annotation(rs: Obj) -> int | None:
    value = annotations_of(rs).get(DESIRED_REPLICAS)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def replica_set_fraction(rs: Obj, d: Obj) -> int:
    """``getReplicaSetFraction``: the change that keeps this ReplicaSet's share of the total."""
    if replicas(d) == 0:
        return -replicas(rs)
    deployment_replicas = replicas(d) + max_surge(d)
    annotated = max_replicas_annotation(rs)
    if annotated is None:
        annotated = int(status_of(d).get("replicas") or 0)
    if annotated == 0:
        return 0
    return _round_half_away(replicas(rs) * deployment_replicas / annotated) - replicas(rs)


def proportion(rs: Obj | None, d: Obj, to_add: int, added: int) -> int:
    """``GetProportion``: this ReplicaSet's part of ``to_add``, within what is left of it."""
    if rs is None or replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def proportional_sizes(d: Obj, new: Obj | None, old: Sequence[Obj]) -> list[tuple[Obj, int]]:
    """The rolling-update branch of ``scale``: every active ReplicaSet with its new size."""
    rss = active([*old, new])
    allowed = replicas(d) + max_surge(d) if replicas(d) > 0 else 0
    to_add = allowed - replica_count(rss)
    if to_add > 0:
        rss = sorted_by_size_newer(rss)
    elif to_add < 0:
        rss = sorted_by_size_older(rss)
    added = 0
    sizes: list[int] = []
    for rs in rss:
        if to_add != 0:
            part = proportion(rs, d, to_add, added)
            sizes.append(replicas(rs) + part)
            added += part
        else:
            sizes.append(replicas(rs))
    if rss and to_add != 0:
        sizes[0] = max(0, sizes[0] + to_add - added)
    return list(zip(rss, sizes, strict=True))


def cleanup_unhealthy_plan(old: Sequence[Obj], max_cleanup: int) -> list[tuple[Obj, int]]:
    """``cleanupUnhealthyReplicas``: scale down old ReplicaSets' unavailable replicas first
    (oldest first), at most ``max_cleanup`` in all."""
    plan: list[tuple[Obj, int]] = []
    total = 0
    for rs in sorted(old, key=by_creation):
        if total >= max_cleanup:
            break
        want, available = replicas(rs), int(status_of(rs).get("availableReplicas") or 0)
        if want == 0 or want == available:
            continue
        count = min(max_cleanup - total, want - available)
        plan.append((rs, want - count))
        total += count
    return plan


def scale_down_old_plan(d: Obj, all_rss: Sequence[Obj | None], old: Sequence[Obj]) -> list[tuple[Obj, int]]:
    """``scaleDownOldReplicaSetsForRollingUpdate``: take old replicas down while more than
    ``minAvailable`` pods are available (oldest ReplicaSet first)."""
    minimum = min_available(d)
    available = available_replica_count(all_rss)
    if available <= minimum:
        return []
    budget = available - minimum
    plan: list[tuple[Obj, int]] = []
    total = 0
    for rs in sorted(old, key=by_creation):
        if total >= budget:
            break
        if replicas(rs) == 0:
            continue
        count = min(replicas(rs), budget - total)
        plan.append((rs, replicas(rs) - count))
        total += count
    return plan


def max_scaled_down(d: Obj, all_rss: Sequence[Obj | None], new: Obj) -> int:
    """``reconcileOldReplicaSets``: how many old replicas may go in this step at most."""
    new_unavailable = replicas(new) - int(status_of(new).get("availableReplicas") or 0)
    return replica_count(all_rss) - min_available(d) - new_unavailable


# -- annotations ------------------------------------------------------------------------------

def replicas_annotations_need_update(rs: Obj, desired: int, maximum: int) -> bool:
    ann = annotations_of(rs)
    return ann.get(DESIRED_REPLICAS) != str(desired) or ann.get(MAX_REPLICAS) != str(maximum)


def with_replicas_annotations(ann: dict[str, str], desired: int, maximum: int) -> bool:
    """``SetReplicasAnnotations`` on a private annotations dict; True when it changed."""
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
        if ann.get(key) != value:
            ann[key] = value
            changed = True
    return changed


def new_rs_annotations(d: Obj, rs_annotations: dict[str, str], new_revision: int, *, exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations`` on a private annotations dict: the Deployment's
    annotations copied (but the skipped ones), the revision raised to ``new_revision`` (keeping
    the one it had in ``revision-history``: a rollback to this ReplicaSet), and for a ReplicaSet
    about to be created the replica annotations.  True when anything changed."""
    changed = False
    for key, value in annotations_of(d).items():
        if key in SKIPPED_ANNOTATIONS or rs_annotations.get(key) == value:
            continue
        rs_annotations[key] = value
        changed = True
    old_text = rs_annotations.get(REVISION)
    try:
        old_revision = int(old_text) if old_text is not None else 0
    except ValueError:
        return changed
    if old_revision < new_revision:
        rs_annotations[REVISION] = str(new_revision)
        changed = True
        if old_text is not None:
            history = rs_annotations.get(REVISION_HISTORY, "")
            if not history:
                rs_annotations[REVISION_HISTORY] = old_text
            else:
                parts = history.split(",")
                total = len(history) + len(old_text) + 1
                start = 0
                while total > MAX_REV_HISTORY_LENGTH and start < len(parts):
                    total -= len(parts[start]) + 1
                    start += 1
                if total <= MAX_REV_HISTORY_LENGTH:
                    rs_annotations[REVISION_HISTORY] = ",".join([*parts[start:], old_text])
    if not exists and with_replicas_annotations(rs_annotations, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


# -- conditions and status --------------------------------------------------------------------

def get_condition(status: Obj, type_: str) -> Obj | None:
    for cond in status.get("conditions") or ():
        if cond.get("type") == type_:
            return cond
    return None


def new_condition(type_: str, status: str, reason: str, message: str, *, now: str) -> Obj:
    return {"type": type_, "status": status, "lastUpdateTime": now, "lastTransitionTime": now,
            "reason": reason, "message": message}


def set_condition(status: Obj, condition: Obj) -> None:
    """``SetDeploymentCondition``: no change for the same status and reason; the transition time
    kept for the same status; the condition moves to the end."""
    current = get_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"] \
            and current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    status["conditions"] = [*(c for c in status.get("conditions") or () if c.get("type") != condition["type"]),
                            condition]


def remove_condition(status: Obj, type_: str) -> None:
    conditions = [c for c in status.get("conditions") or () if c.get("type") != type_]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)


def calculate_status(all_rss: Sequence[Obj | None], new: Obj | None, d: Obj, *, now: str) -> Obj:
    """``calculateStatus``, with Go's ``omitempty`` (zero counters are left out)."""
    available = available_replica_count(all_rss)
    unavailable = max(0, replica_count(all_rss) - available)
    old = status_of(d)
    status: Obj = {}
    counters = (
        ("observedGeneration", int((d.get("metadata") or {}).get("generation") or 0)),
        ("replicas", actual_replica_count(all_rss)),
        ("updatedReplicas", actual_replica_count([new])),
        ("readyReplicas", ready_replica_count(all_rss)),
        ("availableReplicas", available),
        ("unavailableReplicas", unavailable),
    )
    for name, value in counters:
        if value:
            status[name] = value
    if old.get("conditions"):
        status["conditions"] = [dict(c) for c in old["conditions"]]
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if available >= replicas(d) - max_unavailable(d):
        set_condition(status, new_condition(AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE,
                                             "Deployment has minimum availability.", now=now))
    else:
        set_condition(status, new_condition(AVAILABLE, "False", MINIMUM_REPLICAS_UNAVAILABLE,
                                             "Deployment does not have minimum availability.", now=now))
    return ordered_status(status)


_STATUS_ORDER = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                 "unavailableReplicas", "conditions", "collisionCount")


def ordered_status(status: Obj) -> Obj:
    """Go's field order, so that a stored status reads like upstream's."""
    return {k: status[k] for k in _STATUS_ORDER if k in status}


def deployment_complete(d: Obj, status: Obj) -> bool:
    """``DeploymentComplete``: every replica updated and available, the generation observed."""
    want = replicas(d)
    return int(status.get("updatedReplicas") or 0) == want and int(status.get("replicas") or 0) == want \
        and int(status.get("availableReplicas") or 0) == want \
        and int(status.get("observedGeneration") or 0) >= int((d.get("metadata") or {}).get("generation") or 0)


def deployment_progressing(d: Obj, status: Obj) -> bool:
    """``DeploymentProgressing``: more updated, ready or available pods, or fewer old ones."""
    old = status_of(d)
    old_old = int(old.get("replicas") or 0) - int(old.get("updatedReplicas") or 0)
    new_old = int(status.get("replicas") or 0) - int(status.get("updatedReplicas") or 0)
    return int(status.get("updatedReplicas") or 0) > int(old.get("updatedReplicas") or 0) \
        or new_old < old_old \
        or int(status.get("readyReplicas") or 0) > int(old.get("readyReplicas") or 0) \
        or int(status.get("availableReplicas") or 0) > int(old.get("availableReplicas") or 0)


def deployment_timed_out(d: Obj, status: Obj, *, now: float) -> bool:
    """``DeploymentTimedOut``: no progress since the Progressing condition's last update for
    longer than ``progressDeadlineSeconds``."""
    if not has_progress_deadline(d):
        return False
    cond = get_condition(status, PROGRESSING)
    if cond is None or cond.get("reason") == NEW_RS_AVAILABLE:
        return False
    if cond.get("reason") == TIMED_OUT:
        return True
    last = cond.get("lastUpdateTime")
    if not last:
        return False
    return timestamp_seconds(last) + int(spec_of(d)["progressDeadlineSeconds"]) < now


def stuck_recheck(d: Obj, status: Obj, *, now: float) -> float | None:
    """``requeueStuckDeployment``: seconds until the progress deadline of a rollout that made no
    progress passes (0: at once), or None when there is nothing to check."""
    cond = get_condition(status_of(d), PROGRESSING)
    if not has_progress_deadline(d) or cond is None:
        return None
    if deployment_complete(d, status) or cond.get("reason") == TIMED_OUT:
        return None
    last = cond.get("lastUpdateTime")
    if not last:
        return None
    after = timestamp_seconds(last) + int(spec_of(d)["progressDeadlineSeconds"]) - now
    # Upstream requeues rate-limited under a second; a short delay does the same without spinning.
    return max(after, 0.0) + 0.05 if after < 1 else after
