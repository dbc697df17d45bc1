"""A node's contributions (status counters, rollout record) are values: equal when their fields
are, hashable, and shown field by field — what the controller's incremental sums rely on
(``contrib == ZERO``, ``previous == record``)."""

from __future__ import annotations

import pytest

from everynode.controllers.daemonset.daemonpods import oldest_pod
from everynode.controllers.daemonset.status import ZERO, NodeStatus
from everynode.controllers.daemonset.update import NodeRollout


@pytest.mark.parametrize(("a", "b", "equal"), [
    (NodeStatus(), ZERO, True),
    (NodeStatus(desired=1, current=1), NodeStatus(desired=1, current=1), True),
    (NodeStatus(desired=1), NodeStatus(desired=1, available_at=5.0), False),
    (NodeStatus(ready=1), NodeStatus(available=1), False),
])
def test_node_status_is_a_value(a, b, equal):
    assert (a == b) is equal and (a != b) is not equal
    if equal:
        assert hash(a) == hash(b)
    assert a != (0, 0, 0, 0, 0, 0, None)  # not equal to a tuple of the same fields


@pytest.mark.parametrize(("a", "b", "equal"), [
    (NodeRollout(), NodeRollout(), True),
    (NodeRollout(should_run=True, candidate="p"), NodeRollout(should_run=True, candidate="p"), True),
    (NodeRollout(should_run=True, candidate="p"), NodeRollout(should_run=True, replace="p"), False),
    (NodeRollout(changes_at=1.0), NodeRollout(changes_at=2.0), False),
    (NodeRollout(missing=True), NodeRollout(), False),
])
def test_node_rollout_is_a_value(a, b, equal):
    assert (a == b) is equal
    if equal:
        assert hash(a) == hash(b)
    assert a.empty is (a == NodeRollout())


def test_reprs_name_every_field():
    assert repr(NodeStatus(desired=1, available_at=2.5)) == (
        "NodeStatus(desired=1, current=0, misscheduled=0, ready=0, updated=0, available=0, available_at=2.5)")
    assert repr(NodeRollout(delete_old="p")) == (
        "NodeRollout(should_run=False, unavailable=False, replace=None, candidate=None, surging=False, "
        "available=False, delete_old='p', delete_if_surplus=None, create_now=False, create_candidate=False, "
        "missing=False, changes_at=None)")


def _pod(name: str, created: str, node: str | None = "n1") -> dict:
    spec = {"nodeName": node} if node else {}
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


@pytest.mark.parametrize(("pods", "expected"), [
    ([], None),
    ([_pod("a", "2024-01-01T00:00:05Z")], "a"),
    ([_pod("b", "2024-01-01T00:00:05Z"), _pod("a", "2024-01-01T00:00:01Z")], "a"),
    ([_pod("a", "2024-01-01T00:00:01Z", node=None), _pod("b", "2024-01-01T00:00:09Z")], "b"),  # bound first
    ([_pod("b", "2024-01-01T00:00:01Z"), _pod("a", "2024-01-01T00:00:01Z")], "a"),  # then by name
])
def test_oldest_pod(pods, expected):
    for given in (pods, iter(pods)):  # a list (the short cut for one pod) or any iterable
        found = oldest_pod(given)
        assert (found["metadata"]["name"] if found else None) == expected
