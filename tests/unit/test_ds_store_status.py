"""``store_status`` (storeDaemonSetStatus): what it sends, and that the DaemonSet it is given —
the informer's object, shared with every reader — is never changed, on the first try or on the
retry after a conflict (it builds a new top level and status instead of copying the object)."""

from __future__ import annotations

import copy
from typing import Any

from everynode.api import errors
from everynode.controllers.daemonset.status import StatusCounts, store_status


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
