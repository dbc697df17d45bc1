"""RFC 6902 JSON patch with kube-apiserver's error mapping (handlers/patch.go applyJSPatch)."""

from __future__ import annotations

import copy

import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.patch import apply_json_patch

OBJ = {"metadata": {"name": "x", "labels": {"a": "1"}}, "spec": {"list": [1, 2]}}


@pytest.mark.parametrize("ops, check", [
    ([{"op": "replace", "path": "/metadata/labels/a", "value": "2"}], lambda o: o["metadata"]["labels"]["a"] == "2"),
    ([{"op": "add", "path": "/spec/list/-", "value": 3}], lambda o: o["spec"]["list"] == [1, 2, 3]),
    ([{"op": "remove", "path": "/metadata/labels"}], lambda o: "labels" not in o["metadata"]),
    ([{"op": "test", "path": "/metadata/name", "value": "x"}, {"op": "copy", "from": "/metadata/name",
                                                                "path": "/spec/name"}], lambda o: o["spec"]["name"] == "x"),
])
def test_operations(ops, check):
    before = copy.deepcopy(OBJ)
    assert check(apply_json_patch(OBJ, ops))
    assert OBJ == before


@pytest.mark.parametrize("ops", [
    [{"op": "replace", "path": "/nope/x", "value": 1}],
    [{"op": "test", "path": "/metadata/name", "value": "y"}],
    [{"op": "remove", "path": "/spec/list/9"}],
    [{"op": "frobnicate", "path": "/a"}],
])
def test_failed_operations_are_generic_422(ops):
    with pytest.raises(ApiError) as e:
        apply_json_patch(OBJ, ops)
    assert e.value.code == 422
    assert e.value.status["reason"] == "Invalid"
    assert e.value.message == "the server rejected our request due to an error in our request"


@pytest.mark.parametrize("ops", [{"op": "add"}, "x", [1]])
def test_undecodable_patch_is_400(ops):
    with pytest.raises(ApiError) as e:
        apply_json_patch(OBJ, ops)
    assert e.value.code == 400


def test_too_many_operations_is_413():
    with pytest.raises(ApiError) as e:
        apply_json_patch(OBJ, [{"op": "test", "path": "/metadata/name", "value": "x"}] * 10001)
    assert e.value.code == 413
