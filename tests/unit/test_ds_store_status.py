"""``store_status`` (storeDaemonSetStatus): what it sends, and that the DaemonSet it is given —
the informer's object, shared with every reader — is never changed, on the first try or on the
retry after a conflict (it builds a new top level and status instead of copying the object);
and the rule that skips the write."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from everynode.api import errors
from everynode.controllers.daemonset.status import StatusCounts, counters_unchanged, needs_write, store_status


def _ds(generation: int = 2) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default", "generation": generation,
                         "resourceVersion": "7"},
            "spec": {"template": {"spec": {"containers": [{"name": "a", "image": "agent:1"}]}}},
            "status": {"observedGeneration": 1, "desiredNumberScheduled": 1,
                       "conditions": [{"type": "X", "status": "True"}]}}


class _Client:
    def __init__(self, *, conflicts: int, fresh: dict[str, Any]) -> None:
        self.conflicts = conflicts
        self.fresh = fresh
        self.sent: list[dict[str, Any]] = []

    async def update_status(self, resource: str, obj: dict[str, Any]) -> dict[str, Any]:
        self.sent.append(obj)
        if self.conflicts:
            self.conflicts -= 1
            raise errors.stale("daemonsets", "apps", "agent")
        return obj

    async def get(self, resource: str, name: str, *, namespace: str = "") -> dict[str, Any]:
        return self.fresh


async def test_the_status_is_written_and_the_given_daemonset_is_unchanged() -> None:
    ds, fresh = _ds(), _ds(generation=3)
    ds_before, fresh_before = copy.deepcopy(ds), copy.deepcopy(fresh)
    client = _Client(conflicts=1, fresh=fresh)
    counts = StatusCounts(desired=3, current=3, ready=2, updated=3, available=2)
    written = await store_status(client, ds, counts, update_observed_generation=True,  # type: ignore[arg-type]
                                 conditions=[])
    first, retried = client.sent
    assert first["status"] == {"observedGeneration": 2, **counts.as_status()}  # no conditions: removed
    # upstream: the retry writes onto the fresh read, still with the generation it synced
    assert retried["status"]["observedGeneration"] == 2 and written is retried
    assert first["spec"] == ds["spec"] and retried["metadata"] == fresh["metadata"]
    assert ds == ds_before and fresh == fresh_before  # neither object nor what it holds changed


# ---- the skip rule: counters and generation compared field by field --------------------------

_COUNTS = StatusCounts(desired=3, current=3, misscheduled=1, ready=2, updated=3, available=2)


def _skip_reference(status: Any, counts: StatusCounts) -> bool:
    """The rule as written before it was unrolled: every counter of ``as_status`` equal."""
    return all(int((status or {}).get(f) or 0) == v for f, v in counts.as_status().items())


@pytest.mark.parametrize("status", [
    None, {}, _COUNTS.as_status(), {**_COUNTS.as_status(), "observedGeneration": 2},
    *({**_COUNTS.as_status(), field: value + 1} for field, value in _COUNTS.as_status().items()),
    {k: v for k, v in _COUNTS.as_status().items() if k != "numberMisscheduled"},  # absent: 0
    StatusCounts(desired=1).as_status(),
    {k: v for k, v in StatusCounts(desired=1, available=1).as_status().items() if v},  # omitempty
    {**_COUNTS.as_status(), "numberReady": True},  # decoded oddities compare as int() reads them
])
def test_counters_unchanged_is_the_as_status_comparison(status: Any) -> None:
    for counts in (_COUNTS, StatusCounts(desired=1), StatusCounts(desired=1, available=1), StatusCounts()):
        ds = {"metadata": {"generation": 1}, "status": status}
        assert counters_unchanged(ds, counts) is _skip_reference(status, counts)


@pytest.mark.parametrize("status,generation,conditions,expected", [
    ({**_COUNTS.as_status(), "observedGeneration": 2}, 2, None, False),
    ({**_COUNTS.as_status(), "observedGeneration": 1}, 2, None, True),  # a newer generation to observe
    ({**_COUNTS.as_status()}, 0, None, False),  # neither has a generation
    ({**_COUNTS.as_status(), "numberReady": 1, "observedGeneration": 2}, 2, None, True),
    ({**_COUNTS.as_status(), "observedGeneration": 2, "conditions": [{"type": "X"}]}, 2, [{"type": "X"}], False),
    ({**_COUNTS.as_status(), "observedGeneration": 2}, 2, [{"type": "X"}], True),
    ({**_COUNTS.as_status(), "observedGeneration": 2}, 2, [], False),  # none either way
])
def test_needs_write(status: Any, generation: int, conditions: Any, expected: bool) -> None:
    ds = {"metadata": {"generation": generation}, "status": status}
    assert needs_write(ds, _COUNTS, conditions) is expected
