"""DaemonSet status (§8): the seven counters, the write-skip rule, the write with one retry —
plus an everynode extension: rollout conditions.

Upstream: ``daemon_controller.go`` ``updateDaemonSetStatus`` / ``storeDaemonSetStatus``.

**Counters.**  For each *existing* node: if the DaemonSet should run there it is desired; if it
also has at least one pod (any phase, unbound-but-pinned and terminating included) it is
current, and the *oldest* pod (§4.3 ordering) decides ready / available / updated.  A node with
pods where the DaemonSet should not run is misscheduled.  ``numberUnavailable = desired −
available``.  :func:`node_status` is one node's contribution; :func:`count_status` sums them over
all nodes (the full recount upstream does on every sync).  The controller keeps per-node
contributions and re-sums only what changed; tests check that this equals :func:`count_status`.

**Write rule.**  Skip the write when the seven counters equal the stored ones and
``observedGeneration ≥ generation``; otherwise UpdateStatus, and on failure GET the latest object
and retry once (``StatusUpdateRetries = 1``).  ``observedGeneration`` is only advanced on full
syncs (not while expectations are pending), which is what makes ``kubectl rollout status`` say
"Waiting for daemon set spec update to be observed...".

**Extension: conditions (not upstream).**  Upstream defines ``status.conditions`` for DaemonSets
but never sets any.  everynode sets two, modelled on Deployment's (``type, status, reason,
message, lastTransitionTime``; Deployment's ``lastUpdateTime`` does not exist in the DaemonSetCondition
schema, so the API would drop it — the time of the last progress is kept in the controller's
memory instead, and a restarted controller starts the deadline afresh):

* ``Progressing`` — ``True``/``RevisionRollingOut`` while a rollout moves (the updated, current,
  ready or available count rose, or a new generation was observed); ``True``/``NewRevisionAvailable`` once every desired node runs an available pod
  of the current revision ("complete"); ``False``/``ProgressDeadlineExceeded`` when a rolling
  update made no progress for ``progress_deadline`` seconds (600 s, Deployment's default) —
  "stuck", with the counts in the message to say why.  OnDelete DaemonSets never get stuck:
  their progress waits for users (``True``/``WaitingForPodDeletion``).
* ``Available`` — ``True``/``MinimumPodsAvailable`` when ``numberAvailable ≥ desired −
  maxUnavailable`` (RollingUpdate budget, same rounding as the update), else
  ``False``/``MinimumPodsUnavailable``.

They live beside the counters and never feed them: the seven counters and the skip rule are
exactly upstream's; a condition change alone also causes a write.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from everynode.api.daemonset import ON_DELETE, update_strategy_type
from everynode.api.errors import ApiError
from everynode.api.pod import available_at, is_pod_available, is_pod_ready
from everynode.client.base import Client
from everynode.clock import format_rfc3339
from everynode.controllers.daemonset.budgets import update_budgets
from everynode.controllers.daemonset.daemonpods import is_pod_updated, oldest_pod

Obj = dict[str, Any]

DAEMONSETS: Final = "daemonsets.apps"
STATUS_UPDATE_RETRIES: Final = 1

PROGRESSING: Final = "Progressing"
AVAILABLE: Final = "Available"
REASON_ROLLING_OUT: Final = "RevisionRollingOut"
REASON_COMPLETE: Final = "NewRevisionAvailable"
REASON_STUCK: Final = "ProgressDeadlineExceeded"
REASON_ON_DELETE: Final = "WaitingForPodDeletion"
REASON_MIN_AVAILABLE: Final = "MinimumPodsAvailable"
REASON_MIN_UNAVAILABLE: Final = "MinimumPodsUnavailable"
DEFAULT_PROGRESS_DEADLINE: Final = 600.0

COUNTER_FIELDS: Final = ("desiredNumberScheduled", "currentNumberScheduled", "numberMisscheduled", "numberReady",
                         "updatedNumberScheduled", "numberAvailable", "numberUnavailable")


class NodeStatus:
    """One node's contribution to the counters (each 0 or 1).  Immutable (``Final``: mypy
    refuses an assignment, and compiled, so does the class).

    A plain class rather than a frozen dataclass: compiled by mypyc, its constructor is native,
    where a frozen dataclass's generated ``__init__`` ran interpreted with one
    ``object.__setattr__`` per field — 1.4 µs for every dirty node of every sync (50 ns now)."""

    def __init__(self, *, desired: int = 0, current: int = 0, misscheduled: int = 0, ready: int = 0,
                 updated: int = 0, available: int = 0, available_at: float | None = None) -> None:
        self.desired: Final = desired
        self.current: Final = current
        self.misscheduled: Final = misscheduled
        self.ready: Final = ready
        self.updated: Final = updated
        self.available: Final = available
        # Ready but not yet available: when it becomes available (the controller re-checks then).
        self.available_at: Final = available_at

    def _fields(self) -> tuple[int, int, int, int, int, int, float | None]:
        return (self.desired, self.current, self.misscheduled, self.ready, self.updated, self.available,
                self.available_at)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, NodeStatus):
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return ("NodeStatus(desired={}, current={}, misscheduled={}, ready={}, updated={}, available={}, "
                "available_at={!r})".format(*self._fields()))


ZERO: Final = NodeStatus()


@dataclass(slots=True)
class StatusCounts:
    desired: int = 0
    current: int = 0
    misscheduled: int = 0
    ready: int = 0
    updated: int = 0
    available: int = 0

    @property
    def unavailable(self) -> int:
        return self.desired - self.available

    def add(self, ns: NodeStatus, sign: int = 1) -> None:
        self.desired += sign * ns.desired
        self.current += sign * ns.current
        self.misscheduled += sign * ns.misscheduled
        self.ready += sign * ns.ready
        self.updated += sign * ns.updated
        self.available += sign * ns.available

    def as_status(self) -> dict[str, int]:
        return {
            "desiredNumberScheduled": self.desired,
            "currentNumberScheduled": self.current,
            "numberMisscheduled": self.misscheduled,
            "numberReady": self.ready,
            "updatedNumberScheduled": self.updated,
            "numberAvailable": self.available,
            "numberUnavailable": self.unavailable,
        }

    def copy(self) -> StatusCounts:
        return StatusCounts(self.desired, self.current, self.misscheduled, self.ready, self.updated,
                            self.available)


def node_status(should_run: bool, pods: Sequence[Obj] | Iterable[Obj], *, hash_: str, generation: int | None,
                min_ready_seconds: int, now: float) -> NodeStatus:
    """One node's counters; ``pods`` are the DaemonSet's pods targeting it (terminal+deleted excluded)."""
    oldest = oldest_pod(pods)
    if not should_run:
        return NodeStatus(misscheduled=1) if oldest is not None else ZERO
    if oldest is None:
        return NodeStatus(desired=1)
    ready = is_pod_ready(oldest)
    available = ready and is_pod_available(oldest, min_ready_seconds, now)
    pending: float | None = None
    if ready and not available:
        pending = available_at(oldest, min_ready_seconds)
    return NodeStatus(desired=1, current=1, ready=int(ready), available=int(available),
                      updated=int(is_pod_updated(oldest, hash_, generation)), available_at=pending)


def count_status(node_eligibility: Mapping[str, bool], node_to_pods: Mapping[str, Sequence[Obj]], *,
                 hash_: str, generation: int | None, min_ready_seconds: int, now: float) -> StatusCounts:
    """The full recount (``updateDaemonSetStatus``): the reference the incremental path must equal."""
    counts = StatusCounts()
    for name, should_run in node_eligibility.items():
        counts.add(node_status(should_run, node_to_pods.get(name, ()), hash_=hash_, generation=generation,
                               min_ready_seconds=min_ready_seconds, now=now))
    return counts


_NOTHING: Final[dict[str, Any]] = {}  # (read only)


def _object(value: Any) -> dict[str, Any]:
    """A field's object, or an empty one to read (typed, so that compiled reads of its fields
    are dict lookups rather than method calls by name)."""
    return value if isinstance(value, dict) else _NOTHING


def _count(status: dict[str, Any], field: str) -> int:
    value = status.get(field) or 0
    return value if isinstance(value, int) else int(value)


def counters_unchanged(ds: Obj, counts: StatusCounts) -> bool:
    """Whether the status holds these counters (the fields of :meth:`StatusCounts.as_status`:
    one comparison each, as every sync asks this and mostly hears yes)."""
    status = _object(ds.get("status"))
    return (_count(status, "desiredNumberScheduled") == counts.desired
            and _count(status, "currentNumberScheduled") == counts.current
            and _count(status, "numberMisscheduled") == counts.misscheduled
            and _count(status, "numberReady") == counts.ready
            and _count(status, "updatedNumberScheduled") == counts.updated
            and _count(status, "numberAvailable") == counts.available
            and _count(status, "numberUnavailable") == counts.unavailable)


def needs_write(ds: Obj, counts: StatusCounts, conditions: list[Obj] | None = None) -> bool:
    """Upstream's skip rule (counters equal and observedGeneration ≥ generation), extended by
    "conditions unchanged"."""
    status = _object(ds.get("status"))
    md = _object(ds.get("metadata"))
    if not counters_unchanged(ds, counts):
        return True
    if _count(status, "observedGeneration") < _count(md, "generation"):
        return True
    return conditions is not None and (status.get("conditions") or []) != conditions


def _apply(ds: Obj, counts: StatusCounts, *, observed_generation: int | None,
           conditions: list[Obj] | None) -> Obj:
    """``ds`` with its status written: a new top level and status (the informer's object, and
    what the two share, are never changed; the client copies what it sends)."""
    obj = {**ds}
    status = obj["status"] = dict(ds.get("status") or {})
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    status.update(counts.as_status())
    if conditions is not None:
        if conditions:
            status["conditions"] = conditions
        else:
            status.pop("conditions", None)
    return obj


async def store_status(client: Client, ds: Obj, counts: StatusCounts, *, update_observed_generation: bool,
                       conditions: list[Obj] | None = None) -> Obj | None:
    """``storeDaemonSetStatus``: returns the written object, or None when the write was skipped.

    Raises the update error after the retry, or the GET error if the fresh read fails.
    """
    if not needs_write(ds, counts, conditions):
        return None
    md = ds["metadata"]
    generation = int(md.get("generation") or 0) if update_observed_generation else None
    to_update = _apply(ds, counts, observed_generation=generation, conditions=conditions)
    attempt = 0
    while True:
        try:
            return await client.update_status(DAEMONSETS, to_update)
        except ApiError as update_error:
            if attempt >= STATUS_UPDATE_RETRIES:
                raise update_error
        # The fresh read is awaited outside the handler: compiled, a handler suspended at an
        # await can leave its exception in sys.exc_info() for good (compiled.py).
        attempt += 1
        fresh = await client.get(DAEMONSETS, md["name"], namespace=md.get("namespace") or "")
        to_update = _apply(fresh, counts, observed_generation=generation, conditions=conditions)


# ---------------------------------------------------------------------------------------------
# Extension: rollout conditions
# ---------------------------------------------------------------------------------------------

def _find(conditions: Iterable[Obj], type_: str) -> Obj | None:
    for cond in conditions:
        if cond.get("type") == type_:
            return cond
    return None


_CONDITION_KEYS: Final = ("type", "status", "lastTransitionTime", "reason", "message")


def _condition(type_: str, status: str, reason: str, message: str, *, now: float,
               previous: Obj | None) -> Obj:
    """The condition, keeping the previous one's lastTransitionTime while its status holds (the
    time is only rendered for a transition: most syncs keep both conditions).  When it would be
    the previous one, field for field and in the same order, it is the previous one: the stored
    object's (immutable), which the write-skip rule then compares by identity."""
    if previous is not None and previous.get("status") == status:
        transition = previous.get("lastTransitionTime")
        if transition and previous.get("message") == message and previous.get("reason") == reason \
                and previous.get("type") == type_ and tuple(previous) == _CONDITION_KEYS:
            return previous
    else:
        transition = None
    return {"type": type_, "status": status, "lastTransitionTime": transition or format_rfc3339(now),
            "reason": reason, "message": message}


_SUMMARIES: Final[dict[tuple[int, int, int, int], str]] = {}
_SUMMARIES_LIMIT: Final = 4096


def _summary(counts: StatusCounts) -> str:
    """The counts in the Progressing messages, remembered: a rollout's syncs repeat them (each
    rendering converted five numbers), and a step changes one or two."""
    key = (counts.updated, counts.desired, counts.available, counts.unavailable)
    text = _SUMMARIES.get(key)
    if text is None:
        if len(_SUMMARIES) >= _SUMMARIES_LIMIT:
            _SUMMARIES.clear()
        text = _SUMMARIES[key] = (f"{counts.updated} of {counts.desired} updated, {counts.available} of "
                                  f"{counts.desired} available, {counts.unavailable} unavailable")
    return text


def rollout_conditions(ds: Obj, counts: StatusCounts, *, observed_generation: int, now: float,
                       last_progress: float | None,
                       progress_deadline: float = DEFAULT_PROGRESS_DEADLINE
                       ) -> tuple[list[Obj], float | None, float]:
    """``(conditions, recheck, last_progress)``: the conditions to write, the seconds until the
    progress deadline expires (if one is running) and the updated time of the last progress.

    ``last_progress`` is kept by the caller (in memory): DaemonSetCondition has no
    ``lastUpdateTime`` field, so the API would drop it.  Other condition types already present
    are kept untouched (after ours).
    """
    md = _object(ds.get("metadata"))
    status = _object(ds.get("status"))
    name = md.get("name") or ""
    previous_conditions = status.get("conditions") or []
    generation = _count(md, "generation")
    on_delete = update_strategy_type(ds) == ON_DELETE
    recheck: float | None = None

    prev = _find(previous_conditions, PROGRESSING)
    summary = _summary(counts)
    complete = observed_generation >= generation and counts.updated == counts.desired \
        and counts.available == counts.desired and counts.current == counts.desired
    progressed = (
        last_progress is None
        or prev is None
        or prev.get("reason") not in (REASON_ROLLING_OUT, REASON_STUCK)
        or _count(status, "observedGeneration") < observed_generation
        or counts.updated > _count(status, "updatedNumberScheduled")
        or counts.available > _count(status, "numberAvailable")
        or counts.ready > _count(status, "numberReady")
        or counts.current > _count(status, "currentNumberScheduled")
    )
    if progressed or last_progress is None:
        last_progress = now
    if complete:
        progressing = _condition(PROGRESSING, "True", REASON_COMPLETE,
                                 f'DaemonSet "{name}" has successfully progressed.', now=now, previous=prev)
    elif on_delete:
        progressing = _condition(PROGRESSING, "True", REASON_ON_DELETE,
                                 f'DaemonSet "{name}" uses the OnDelete strategy: {summary}; '
                                 "old pods are replaced when they are deleted.", now=now, previous=prev)
    elif not progressed and ((prev is not None and prev.get("reason") == REASON_STUCK)
                             or now - last_progress > progress_deadline):
        progressing = _condition(PROGRESSING, "False", REASON_STUCK,
                                 f'DaemonSet "{name}" has timed out progressing: {summary}; no progress for '
                                 f"more than {int(progress_deadline)}s.", now=now, previous=prev)
    else:
        progressing = _condition(PROGRESSING, "True", REASON_ROLLING_OUT,
                                 f'DaemonSet "{name}" is progressing: {summary}.', now=now, previous=prev)
        recheck = max(0.0, last_progress + progress_deadline - now) + 1.0

    try:
        _, max_unavailable = update_budgets(ds, counts.desired)
    except ValueError:
        max_unavailable = 0
    if on_delete:
        max_unavailable = 0
    prev_av = _find(previous_conditions, AVAILABLE)
    if counts.available >= counts.desired - max_unavailable:
        available = _condition(AVAILABLE, "True", REASON_MIN_AVAILABLE, "DaemonSet has minimum availability.",
                               now=now, previous=prev_av)
    else:
        available = _condition(AVAILABLE, "False", REASON_MIN_UNAVAILABLE,
                               "DaemonSet does not have minimum availability.", now=now, previous=prev_av)
    others = [c for c in previous_conditions if c.get("type") not in (PROGRESSING, AVAILABLE)]
    return [available, progressing, *others], recheck, last_progress
