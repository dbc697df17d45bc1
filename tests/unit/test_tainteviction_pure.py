"""eviction_delay: the taint-manager decision for one pod on one node (upstream
``getMatchingTolerations`` + ``getMinTolerationTime``)."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.client.informer import index_pod_by_node_name
from everynode.controllers.tainteviction import eviction_delay

Obj = dict[str, Any]

UNREACHABLE = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}
USER = {"key": "dedicated", "value": "gpu", "effect": "NoExecute"}
NOSCHED = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def tol(key: str | None, *, seconds: int | None = None, effect: str | None = "NoExecute",
        operator: str = "Exists", value: str | None = None) -> Obj:
    t: Obj = {"operator": operator}
    if key is not None:
        t["key"] = key
    if effect is not None:
        t["effect"] = effect
    if value is not None:
        t["value"] = value
    if seconds is not None:
        t["tolerationSeconds"] = seconds
    return t


@pytest.mark.parametrize(("taints", "tolerations", "expected"), [
    ([], [], None),  # no taints: nothing to do
    ([NOSCHED], [], None),  # NoSchedule never evicts
    ([USER], [], 0.0),  # untolerated: now
    ([USER], [tol("other")], 0.0),
    ([USER], [tol("dedicated", operator="Equal", value="cpu")], 0.0),  # value mismatch
    ([USER], [tol("dedicated", operator="Equal", value="gpu")], None),  # forever
    ([USER], [tol("dedicated", seconds=300)], 300.0),
    ([USER], [tol(None)], None),  # empty key + Exists tolerates everything
    ([USER], [tol("dedicated", effect=None, seconds=60)], 60.0),  # empty effect matches all effects
    ([UNREACHABLE], [tol("node.kubernetes.io/unreachable", seconds=300)], 300.0),
    ([UNREACHABLE, NOT_READY], [tol("node.kubernetes.io/unreachable", seconds=300),
                                tol("node.kubernetes.io/not-ready", seconds=100)], 100.0),  # minimum wins
    ([UNREACHABLE, NOT_READY], [tol("node.kubernetes.io/unreachable", seconds=300)], 0.0),  # one untolerated
    ([UNREACHABLE, NOT_READY], [tol("node.kubernetes.io/unreachable"),
                                tol("node.kubernetes.io/not-ready", seconds=30)], 30.0),  # forever + 30
    ([USER], [tol("dedicated", seconds=0)], 0.0),
    ([USER], [tol("dedicated", seconds=-5)], 0.0),  # negative means now
    # The first matching toleration is the one used, even if a later one is more generous.
    ([USER], [tol("dedicated", seconds=10), tol("dedicated")], 10.0),
])
def test_eviction_delay(taints: list[Obj], tolerations: list[Obj], expected: float | None) -> None:
    assert eviction_delay(taints, tolerations) == expected


@pytest.mark.parametrize(("pod", "expected"), [
    ({"spec": {"nodeName": "n1"}}, ["n1"]),
    ({"spec": {}}, []),
    ({"spec": {"nodeName": ""}}, []),
    ({}, []),
])
def test_node_name_index(pod: Obj, expected: list[str]) -> None:
    assert index_pod_by_node_name(pod) == expected
