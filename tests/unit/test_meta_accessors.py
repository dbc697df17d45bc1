"""The object accessors of api/meta.py that compiled hot paths read nested fields with: the same
answers as the plain ``.get`` chains they replace, for objects, mappings, nulls and non-objects."""

from __future__ import annotations

import types
from typing import Any

import pytest

from everynode.api import meta


@pytest.mark.parametrize("obj,expected", [
    ({"a": 1}, 1),
    ({"a": None}, None),
    ({"b": 1}, None),
    ({}, None),
    (types.MappingProxyType({"a": [1]}), [1]),  # any read-only mapping
    (None, None),  # an absent or null field
    ([{"a": 1}], None),  # not an object: nothing in it has fields
    ("a", None),
    (0, None),
])
def test_field_of(obj: Any, expected: Any) -> None:
    assert meta.field_of(obj, "a") == expected


def _ref(uid: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": uid, **extra}


@pytest.mark.parametrize("metadata,expected", [
    ({"ownerReferences": [_ref("1"), _ref("2", controller=True)]}, "2"),
    ({"ownerReferences": [_ref("1", controller=False)]}, None),
    ({"ownerReferences": [_ref("1", controller=True), _ref("2", controller=True)]}, "1"),  # the first
    ({"ownerReferences": []}, None),
    ({"ownerReferences": None}, None),
    ({}, None),
    (None, None),
])
def test_controller_ref_is_the_first_reference_marked_controller(metadata: Any, expected: str | None) -> None:
    ref = meta.controller_ref({"metadata": metadata})
    assert (ref or {}).get("uid") == expected
    assert meta.controller_uid({"metadata": metadata}) == expected


@pytest.mark.parametrize("ds,strategy,min_ready", [
    ({"spec": {"updateStrategy": {"type": "OnDelete"}, "minReadySeconds": 5}}, "OnDelete", 5),
    ({"spec": {"updateStrategy": {"type": "RollingUpdate"}}}, "RollingUpdate", 0),
    ({"spec": {"updateStrategy": {}}}, "RollingUpdate", 0),  # defaulting's value when absent
    ({"spec": {"updateStrategy": None, "minReadySeconds": None}}, "RollingUpdate", 0),
    ({"spec": {}}, "RollingUpdate", 0),
    ({"spec": None}, "RollingUpdate", 0),
    ({}, "RollingUpdate", 0),
])
def test_the_daemonset_accessors_read_through_absent_and_null_fields(ds: Any, strategy: str, min_ready: int) -> None:
    from everynode.api.daemonset import min_ready_seconds, update_strategy_type

    assert update_strategy_type(ds) == strategy
    assert min_ready_seconds(ds) == min_ready
