"""RFC 7386 merge patch: the RFC's own test vectors (Appendix A) plus copy-on-write guarantees."""

from __future__ import annotations

import copy

import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.patch import apply_merge_patch

# RFC 7386 Appendix A (targets that are not objects are wrapped: kube patches objects only).
RFC_VECTORS = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ({"a": "foo"}, {"a": {"b": "c"}}, {"a": {"b": "c"}}),
]


@pytest.mark.parametrize("target, patch, expected", RFC_VECTORS)
def test_rfc7386_vectors(target, patch, expected):
    before_t, before_p = copy.deepcopy(target), copy.deepcopy(patch)
    assert apply_merge_patch(target, patch) == expected
    assert target == before_t and patch == before_p


def test_kubectl_label_and_unlabel():
    node = {"metadata": {"name": "n1", "labels": {"a": "1"}}, "spec": {}}
    labelled = apply_merge_patch(node, {"metadata": {"labels": {"foo": "bar"}}})
    assert labelled["metadata"]["labels"] == {"a": "1", "foo": "bar"}
    assert apply_merge_patch(labelled, {"metadata": {"labels": {"foo": None}}})["metadata"]["labels"] == {"a": "1"}


def test_untouched_subtrees_are_shared_not_copied():
    obj = {"spec": {"big": {"x": 1}}, "metadata": {"labels": {}}}
    out = apply_merge_patch(obj, {"metadata": {"labels": {"a": "b"}}})
    assert out["spec"] is obj["spec"]
    assert out["metadata"] is not obj["metadata"]


@pytest.mark.parametrize("patch", [[1], "x", 3])
def test_non_object_patch_is_bad_request(patch):
    with pytest.raises(ApiError) as e:
        apply_merge_patch({}, patch)
    assert e.value.code == 400
