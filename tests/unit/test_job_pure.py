"""The Job controller's decisions (``pkg/controller/job/job_controller.go`` manageJob's
wantActive, backoff_utils.go's delay, isPodFailed, the completion rule) as table tests."""

from __future__ import annotations

import pytest

from everynode.controllers.job import (
    backoff_delay,
    counts_as_failed,
    is_complete,
    past_backoff_limit_on_failure,
    want_active,
)


@pytest.mark.parametrize(("spec", "succeeded", "active", "want"), [
    ({"completions": 1, "parallelism": 1}, 0, 0, 1),
    ({"completions": 5, "parallelism": 2}, 0, 0, 2),
    ({"completions": 5, "parallelism": 2}, 4, 1, 1),  # never more than the completions left
    ({"completions": 5, "parallelism": 2}, 5, 0, 0),
    ({"parallelism": 3}, 0, 0, 3),  # work queue: parallelism until one succeeds …
    ({"parallelism": 3}, 1, 2, 2),  # … then leave the rest running, start none
    ({"completions": 2, "parallelism": 0}, 0, 0, 0),
])
def test_want_active(spec, succeeded, active, want) -> None:
    assert want_active(spec, succeeded=succeeded, active=active) == want


@pytest.mark.parametrize(("spec", "succeeded", "active", "complete"), [
    ({"completions": 2}, 2, 0, True),
    ({"completions": 2}, 2, 1, False),
    ({"completions": 2}, 1, 0, False),
    ({}, 1, 0, True),
    ({}, 0, 0, False),
])
def test_is_complete(spec, succeeded, active, complete) -> None:
    assert is_complete(spec, succeeded=succeeded, active=active) is complete


@pytest.mark.parametrize(("failures", "delay"), [(0, 0.0), (1, 10.0), (2, 20.0), (3, 40.0), (7, 600.0), (20, 600.0)])
def test_backoff_delay(failures, delay) -> None:
    assert backoff_delay(failures) == delay


@pytest.mark.parametrize(("phase", "deleting", "policy", "failed"), [
    ("Failed", False, None, True),
    ("Running", True, "TerminatingOrFailed", True),  # deleted before it finished
    ("Running", True, "Failed", False),  # only phase Failed counts with podReplacementPolicy Failed
    ("Succeeded", True, "TerminatingOrFailed", False),
    ("Running", False, "TerminatingOrFailed", False),
])
def test_counts_as_failed(phase, deleting, policy, failed) -> None:
    md = {"name": "p", "deletionTimestamp": "T"} if deleting else {"name": "p"}
    assert counts_as_failed({"metadata": md, "status": {"phase": phase}}, {"podReplacementPolicy": policy}) is failed


def _restarting(restarts: int, phase: str = "Running") -> dict:
    return {"metadata": {"name": "p"}, "status": {"phase": phase, "containerStatuses": [{"restartCount": restarts}]}}


@pytest.mark.parametrize(("policy", "limit", "pods", "past"), [
    ("OnFailure", 2, [_restarting(1), _restarting(1)], True),
    ("OnFailure", 3, [_restarting(1), _restarting(1)], False),
    ("OnFailure", 0, [_restarting(1)], True),
    ("OnFailure", 0, [_restarting(0)], False),
    ("OnFailure", 1, [_restarting(5, phase="Failed")], False),  # only running and pending pods count
    ("Never", 1, [_restarting(5)], False),
])
def test_past_backoff_limit_on_failure(policy, limit, pods, past) -> None:
    spec = {"backoffLimit": limit, "template": {"spec": {"restartPolicy": policy}}}
    assert past_backoff_limit_on_failure(spec, pods) is past
