"""The scheduler's candidate nodes of a pod (upstream NodeAffinity PreFilter): remembered per
affinity object, and always what the terms say."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.scheduler import podinfo
from everynode.scheduler.podinfo import candidate_node_names


def pin(*names: str) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(names)}]}]}}}


def labelled() -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}}}


@pytest.mark.parametrize(("affinity", "expected"), [
    (None, None),
    ({}, None),
    (pin("n1"), frozenset({"n1"})),
    (pin("n1", "n2"), frozenset({"n1", "n2"})),
    (labelled(), None),
    ({"podAntiAffinity": {}}, None),
])
def test_candidates_are_what_the_terms_say_the_first_time_and_when_remembered(affinity, expected) -> None:
    spec = {"containers": [], "affinity": affinity}
    assert candidate_node_names(spec) == expected
    assert candidate_node_names(dict(spec)) == expected  # another version sharing the affinity


def test_the_memo_is_by_identity_not_by_equality() -> None:
    first = {"affinity": pin("n1")}
    assert candidate_node_names(first) == frozenset({"n1"})
    equal = {"affinity": pin("n1")}
    assert candidate_node_names(equal) == frozenset({"n1"})
    assert podinfo._CANDIDATES[id(first["affinity"])][0] is first["affinity"]
    assert podinfo._CANDIDATES[id(equal["affinity"])][0] is equal["affinity"]
    other = {"affinity": pin("n2")}
    assert candidate_node_names(other) == frozenset({"n2"})
