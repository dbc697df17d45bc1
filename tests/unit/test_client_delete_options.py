"""The DeleteOptions body both client transports send (everynode.client.base.delete_options)."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.client.base import delete_options

HEAD = {"kind": "DeleteOptions", "apiVersion": "v1"}


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({}, HEAD),
    ({"grace_period_seconds": 0}, {**HEAD, "gracePeriodSeconds": 0}),  # 0 is an option, not "unset"
    ({"grace_period_seconds": 30, "propagation_policy": "Foreground"},
     {**HEAD, "gracePeriodSeconds": 30, "propagationPolicy": "Foreground"}),
    ({"preconditions": {"uid": "u-1", "resourceVersion": "7"}},
     {**HEAD, "preconditions": {"uid": "u-1", "resourceVersion": "7"}}),
    ({"preconditions": {}}, HEAD),
    ({"dry_run": True}, {**HEAD, "dryRun": ["All"]}),
    ({"dry_run": False, "propagation_policy": "Orphan"}, {**HEAD, "propagationPolicy": "Orphan"}),
])
def test_delete_options(kwargs: dict[str, Any], expected: dict[str, Any]) -> None:
    assert delete_options(**kwargs) == expected


def test_delete_options_copies_the_preconditions() -> None:
    pre = {"uid": "u-1"}
    body = delete_options(preconditions=pre)
    pre["uid"] = "changed"
    assert body["preconditions"] == {"uid": "u-1"}
