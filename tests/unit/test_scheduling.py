"""Taints/tolerations and required node affinity, as the DaemonSet controller and scheduler see them."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api.scheduling import (
    compile_node_selector_terms,
    compile_required_affinity,
    find_untolerated_taint,
    node_matches_required_affinity,
    node_selector_requirement_matches,
    node_selector_terms_match,
    pinned_node_name,
    toleration_tolerates_taint,
    tolerations_tolerate_taint,
)

# --- tolerations -----------------------------------------------------------------------------

NS = {"key": "k", "value": "v", "effect": "NoSchedule"}
NE = {"key": "k", "value": "v", "effect": "NoExecute"}
NO_VALUE = {"key": "k", "effect": "NoSchedule"}


@pytest.mark.parametrize(
    ("tol", "taint", "expected"),
    [
        ({"key": "k", "operator": "Equal", "value": "v", "effect": "NoSchedule"}, NS, True),
        ({"key": "k", "value": "v", "effect": "NoSchedule"}, NS, True),  # empty operator = Equal
        ({"key": "k", "operator": "Equal", "value": "w", "effect": "NoSchedule"}, NS, False),
        ({"key": "k", "operator": "Equal", "effect": "NoSchedule"}, NO_VALUE, True),  # "" == ""
        ({"key": "k", "operator": "Equal", "value": "", "effect": "NoSchedule"}, NS, False),
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, NS, True),
        ({"key": "k", "operator": "Exists"}, NS, True),  # empty effect matches every effect
        ({"key": "k", "operator": "Exists"}, NE, True),
        ({"key": "k", "operator": "Exists", "effect": "NoExecute"}, NS, False),
        ({"key": "other", "operator": "Exists"}, NS, False),
        ({"operator": "Exists"}, NS, True),  # empty key + Exists: everything
        ({"operator": "Exists"}, NE, True),
        ({"operator": "Exists", "effect": "NoExecute"}, NS, False),
        ({"operator": "Exists", "effect": "NoExecute"}, NE, True),
        ({"operator": "Equal", "value": "v"}, NS, True),  # empty key skips the key check
        ({"operator": "Equal", "value": "x"}, NS, False),
        ({"key": "k", "operator": "Lt", "value": "10"}, {"key": "k", "value": "5", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Gt", "value": "1"}, {"key": "k", "value": "5", "effect": "NoSchedule"}, False),
        ({"key": "k", "operator": "Bogus"}, NS, False),
    ],
)
def test_toleration_tolerates_taint(tol: dict, taint: dict, expected: bool) -> None:
    assert toleration_tolerates_taint(tol, taint) is expected


DS_DEFAULTS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]


def _taint(key: str, effect: str, value: str | None = None) -> dict[str, Any]:
    t = {"key": key, "effect": effect}
    if value is not None:
        t["value"] = value
    return t


@pytest.mark.parametrize(
    ("taints", "tolerations", "effects", "expected_index"),
    [
        (None, None, ("NoSchedule", "NoExecute"), None),
        ([], DS_DEFAULTS, ("NoSchedule", "NoExecute"), None),
        ([_taint("a", "NoSchedule")], None, ("NoSchedule", "NoExecute"), 0),
        ([_taint("a", "NoSchedule")], [], ("NoSchedule", "NoExecute"), 0),
        ([_taint("a", "PreferNoSchedule")], [], ("NoSchedule", "NoExecute"), None),  # ignored
        ([_taint("a", "PreferNoSchedule")], [], None, 0),  # effects=None considers all
        ([_taint("node.kubernetes.io/unschedulable", "NoSchedule")], DS_DEFAULTS, ("NoSchedule", "NoExecute"), None),
        ([_taint("node.kubernetes.io/not-ready", "NoExecute")], DS_DEFAULTS, ("NoSchedule", "NoExecute"), None),
        # the lifecycle controller's NoSchedule twin is not tolerated by default
        ([_taint("node.kubernetes.io/not-ready", "NoSchedule")], DS_DEFAULTS, ("NoSchedule", "NoExecute"), 0),
        ([_taint("node.kubernetes.io/not-ready", "NoSchedule")], DS_DEFAULTS, ("NoExecute",), None),
        ([_taint("a", "NoSchedule"), _taint("b", "NoExecute")], [{"key": "a", "operator": "Exists"}],
         ("NoSchedule", "NoExecute"), 1),
        ([_taint("a", "NoSchedule"), _taint("b", "NoExecute")], [], ("NoExecute",), 1),
        ([_taint("a", "NoSchedule"), _taint("b", "NoExecute")], [{"operator": "Exists"}],
         ("NoSchedule", "NoExecute"), None),
    ],
)
def test_find_untolerated_taint(taints: list | None, tolerations: list | None, effects: tuple | None,
                                expected_index: int | None) -> None:
    found = find_untolerated_taint(taints, tolerations, effects=effects)
    if expected_index is None:
        assert found is None
    else:
        assert found is taints[expected_index]  # type: ignore[index]


def test_default_effects_are_noschedule_and_noexecute() -> None:
    assert find_untolerated_taint([_taint("a", "PreferNoSchedule")], []) is None
    assert find_untolerated_taint([_taint("a", "NoExecute")], []) is not None


def test_tolerations_tolerate_taint() -> None:
    assert tolerations_tolerate_taint(DS_DEFAULTS, _taint("node.kubernetes.io/unreachable", "NoExecute"))
    assert not tolerations_tolerate_taint(None, NS)
    assert not tolerations_tolerate_taint([], NS)


# --- node affinity ---------------------------------------------------------------------------


def _node(name: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels)}}


NODE = {"metadata": {"name": "n1", "labels": {"zone": "a", "gpu": "true", "cores": "8", "word": "x"}}}


@pytest.mark.parametrize(
    ("req", "expected"),
    [
        ({"key": "zone", "operator": "In", "values": ["a", "b"]}, True),
        ({"key": "zone", "operator": "In", "values": ["b"]}, False),
        ({"key": "nope", "operator": "In", "values": ["a"]}, False),
        ({"key": "zone", "operator": "NotIn", "values": ["b"]}, True),
        ({"key": "zone", "operator": "NotIn", "values": ["a"]}, False),
        ({"key": "nope", "operator": "NotIn", "values": ["a"]}, True),
        ({"key": "gpu", "operator": "Exists"}, True),
        ({"key": "nope", "operator": "Exists"}, False),
        ({"key": "nope", "operator": "DoesNotExist"}, True),
        ({"key": "gpu", "operator": "DoesNotExist"}, False),
        ({"key": "cores", "operator": "Gt", "values": ["4"]}, True),
        ({"key": "cores", "operator": "Gt", "values": ["8"]}, False),
        ({"key": "cores", "operator": "Lt", "values": ["16"]}, True),
        ({"key": "cores", "operator": "Lt", "values": ["8"]}, False),
        ({"key": "word", "operator": "Gt", "values": ["1"]}, False),  # label not an integer
        ({"key": "cores", "operator": "Gt", "values": ["four"]}, False),  # value not an integer: invalid
        ({"key": "cores", "operator": "Gt", "values": ["1", "2"]}, False),  # two values: invalid
        ({"key": "nope", "operator": "Gt", "values": ["1"]}, False),
        ({"key": "zone", "operator": "In", "values": []}, False),  # invalid: empty In
        ({"key": "zone", "operator": "Exists", "values": ["a"]}, False),  # invalid: values with Exists
        ({"key": "zone", "operator": "Equals", "values": ["a"]}, False),  # unknown operator
        ({"key": "bad key", "operator": "Exists"}, False),  # invalid label key
    ],
)
def test_node_selector_requirement(req: dict, expected: bool) -> None:
    assert node_selector_requirement_matches(req, NODE["metadata"]["labels"]) is expected


def _in(key: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": "In", "values": list(values)}


def _name(op: str, *values: str) -> dict[str, Any]:
    return {"key": "metadata.name", "operator": op, "values": list(values)}


@pytest.mark.parametrize(
    ("terms", "node", "expected"),
    [
        ([], NODE, False),  # an empty term list matches nothing
        (None, NODE, False),
        ([{}], NODE, False),  # an empty term matches nothing
        ([{"matchExpressions": [], "matchFields": []}], NODE, False),
        ([{"matchExpressions": [_in("zone", "a")]}], NODE, True),
        ([{"matchExpressions": [_in("zone", "b")]}], NODE, False),
        # requirements inside a term are ANDed
        ([{"matchExpressions": [_in("zone", "a"), _in("gpu", "false")]}], NODE, False),
        # terms are ORed
        ([{"matchExpressions": [_in("zone", "b")]}, {"matchExpressions": [_in("gpu", "true")]}], NODE, True),
        # an unparsable term is skipped, the next one may still match
        ([{"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["x"]}]},
          {"matchExpressions": [_in("zone", "a")]}], NODE, True),
        ([{"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["x"]}]}], NODE, False),
        # a term with a valid and an invalid requirement is skipped entirely
        ([{"matchExpressions": [_in("zone", "a"), {"key": "zone", "operator": "Bad"}]}], NODE, False),
        # matchFields: metadata.name In/NotIn with exactly one value
        ([{"matchFields": [_name("In", "n1")]}], NODE, True),
        ([{"matchFields": [_name("In", "n2")]}], NODE, False),
        ([{"matchFields": [_name("NotIn", "n2")]}], NODE, True),
        ([{"matchFields": [_name("NotIn", "n1")]}], NODE, False),
        ([{"matchFields": [_name("In", "n1", "n2")]}], NODE, False),  # two values: invalid
        ([{"matchFields": [_name("In")]}], NODE, False),
        ([{"matchFields": [_name("Exists")]}], NODE, False),  # unsupported operator
        ([{"matchFields": [{"key": "spec.foo", "operator": "In", "values": ["x"]}]}], NODE, False),
        ([{"matchFields": [{"key": "spec.foo", "operator": "NotIn", "values": ["x"]}]}], NODE, True),
        # both parts of a term must hold
        ([{"matchExpressions": [_in("zone", "a")], "matchFields": [_name("In", "n1")]}], NODE, True),
        ([{"matchExpressions": [_in("zone", "b")], "matchFields": [_name("In", "n1")]}], NODE, False),
        ([{"matchExpressions": [_in("zone", "a")], "matchFields": [_name("In", "n2")]}], NODE, False),
        # matchFields are only evaluated when the node has a name
        ([{"matchFields": [_name("In", "n1")]}], {"metadata": {}}, True),
        ([{"matchExpressions": [_in("zone", "a")]}], {"metadata": {"name": "n1"}}, False),  # no labels
    ],
)
def test_node_selector_terms_match(terms: list | None, node: dict, expected: bool) -> None:
    assert node_selector_terms_match(terms, node) is expected
    assert compile_node_selector_terms(terms)(node) is expected


def _spec(node_selector: dict | None = None, terms: list | None = None, *, required: bool = True) -> dict:
    spec: dict[str, Any] = {}
    if node_selector is not None:
        spec["nodeSelector"] = node_selector
    if terms is not None or not required:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                                             {"nodeSelectorTerms": terms} if required else None}}
    return spec


DS_PIN = [{"matchFields": [_name("In", "n1")]}]


@pytest.mark.parametrize(
    ("pod_spec", "node", "expected"),
    [
        ({}, NODE, True),
        ({"nodeSelector": {}}, NODE, True),
        (_spec({"zone": "a"}), NODE, True),
        (_spec({"zone": "b"}), NODE, False),
        (_spec({"zone": "a", "gpu": "true"}), NODE, True),
        (_spec({"zone": "a", "gpu": "false"}), NODE, False),
        (_spec({"missing": ""}), NODE, False),  # a missing key never equals
        (_spec({"zone": "a"}), {"metadata": {"name": "n1"}}, False),
        (_spec(None, []), NODE, False),  # required present with an empty term list: nothing
        (_spec(None, [{}]), NODE, False),
        (_spec(None, None, required=False), NODE, True),  # required: null is no constraint
        ({"affinity": {}}, NODE, True),
        ({"affinity": {"nodeAffinity": {}}}, NODE, True),
        ({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}}}, NODE, False),
        (_spec(None, DS_PIN), NODE, True),
        (_spec(None, DS_PIN), _node("n2", zone="a"), False),
        (_spec({"zone": "a"}, DS_PIN), NODE, True),  # nodeSelector AND affinity
        (_spec({"zone": "b"}, DS_PIN), NODE, False),
        (_spec({"zone": "a"}, []), NODE, False),
        (_spec({"zone": "a"}, [{"matchExpressions": [_in("gpu", "true")]}]), NODE, True),
        (_spec({"zone": "a"}, [{"matchExpressions": [_in("gpu", "false")]}]), NODE, False),
        (_spec(None, [{"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["4"]}]}]), NODE, True),
        (_spec(None, [{"matchExpressions": [{"key": "cores", "operator": "Lt", "values": ["4"]}]}]), NODE, False),
        # preferred affinity is not a requirement
        ({"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 1, "preference": {"matchExpressions": [_in("zone", "z")]}}]}}}, NODE, True),
    ],
)
def test_required_affinity(pod_spec: dict, node: dict, expected: bool) -> None:
    assert node_matches_required_affinity(pod_spec, node) is expected
    assert compile_required_affinity(pod_spec)(node) is expected


def test_compiled_matcher_is_reusable_across_nodes() -> None:
    match = compile_required_affinity(_spec({"role": "edge"}, [{"matchExpressions": [_in("zone", "a", "b")]}]))
    nodes = [_node("n1", role="edge", zone="a"), _node("n2", role="edge", zone="c"),
             _node("n3", role="core", zone="a"), _node("n4", role="edge", zone="b")]
    assert [n["metadata"]["name"] for n in nodes if match(n)] == ["n1", "n4"]


@pytest.mark.parametrize(
    ("pod_spec", "pinned"),
    [
        ({}, None),
        (_spec({"zone": "a"}), None),
        (_spec(None, []), None),
        (_spec(None, DS_PIN), "n1"),
        (_spec({"zone": "a"}, DS_PIN), "n1"),
        (_spec(None, [{"matchExpressions": [_in("zone", "a")], "matchFields": [_name("In", "n7")]}]), "n7"),
        (_spec(None, [{"matchFields": [_name("NotIn", "n1")]}]), None),
        (_spec(None, [{"matchFields": [_name("In", "n1", "n2")]}]), None),  # invalid term
        (_spec(None, [{"matchFields": [_name("In", "n1")]}, {"matchFields": [_name("In", "n2")]}]), None),
        (_spec(None, [{"matchFields": [_name("In", "n1")]}, {"matchFields": [_name("In", "n1")]}]), "n1"),
        (_spec(None, [{"matchFields": [_name("In", "n1")]}, {"matchExpressions": [_in("zone", "a")]}]), None),
        # an invalid term never matches, so the remaining pin still decides
        (_spec(None, [{"matchFields": [_name("In", "n1")]}, {"matchFields": [_name("Exists")]}]), "n1"),
    ],
)
def test_pinned_node_name(pod_spec: dict, pinned: str | None) -> None:
    assert pinned_node_name(pod_spec) == pinned
