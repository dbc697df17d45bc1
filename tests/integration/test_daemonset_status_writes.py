"""The DaemonSet controller sends each distinct status once, even while its cache lags its writes.

In virtual time every step of a rollout (pod deleted, pod gone, pod created, bound) happens at
one instant, so several syncs run before the watch event of the controller's own status write
reaches its informer.  Compared with that stale copy, the status looked changed and was sent
again (a 409, a re-read, a third identical request the API server then dropped): six status
requests per rollout step for two distinct statuses.  The controller now compares with the
object its own last write returned while the cache has not moved (``_status_baseline``); this
test records every status request of a small virtual rollout and requires that no request
repeats the status of the request before it, and that the statuses stored are unchanged.
"""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api.registry import ResourceType
from everynode.apiserver.service import ApiService
from everynode.product.virtual_rollout import virtual_rollout
from everynode.virtualtime import run_virtual

Obj = dict[str, Any]


def _status_of(obj: Obj) -> Obj:
    status = dict(obj.get("status") or {})
    status.pop("conditions", None)  # times inside may legitimately move; the counters may not repeat
    return status


def test_rollout_sends_each_daemonset_status_once(monkeypatch: pytest.MonkeyPatch) -> None:
    requests: list[Obj] = []
    stored: list[Obj] = []
    original = ApiService.update
    recording = [False]

    async def update(self: ApiService, rt: ResourceType, namespace: str, name: str, obj: Obj,
                     **kwargs: Any) -> tuple[Obj, bool]:
        result, created = await original(self, rt, namespace, name, obj, **kwargs)
        if recording[0] and rt.key == "daemonsets.apps" and kwargs.get("subresource") == "status":
            requests.append(_status_of(obj))
            stored.append(_status_of(result))
        return result, created

    # (the service is an ordinary class whose methods its compiled callers look up by name)
    monkeypatch.setattr(ApiService, "update", update)

    def on_rollout(started: bool) -> None:
        recording[0] = started

    run = run_virtual(virtual_rollout(6, startup=5.0, max_unavailable=1, on_rollout=on_rollout))
    assert run.steps == 6
    assert requests, "the rollout wrote no DaemonSet status"
    repeats = [i for i in range(1, len(requests)) if requests[i] == requests[i - 1]]
    assert repeats == [], f"status requests {repeats} repeat the one before: {requests}"
    # What was stored is what was asked, and the rollout's two statuses per node are all there:
    # one with the node's new pod unavailable, one with it available (plus the image change's).
    assert stored == requests
    assert len(requests) == 2 * 6 + 1
    assert requests[-1]["updatedNumberScheduled"] == 6 and requests[-1]["numberAvailable"] == 6
