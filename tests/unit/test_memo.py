"""everynode.memo.remember: the bounded memo policy shared by the hot-path memos."""

from __future__ import annotations

import pytest

from everynode.memo import remember


@pytest.mark.parametrize("before,limit,after", [
    ({}, 3, {"k": 1}),
    ({"a": 0, "b": 0}, 3, {"a": 0, "b": 0, "k": 1}),
    ({"a": 0, "b": 0, "c": 0}, 3, {"k": 1}),  # full: emptied first
    ({"k": 0, "b": 0}, 3, {"k": 1, "b": 0}),  # an existing key is replaced
])
def test_remember_stores_and_bounds(before: dict, limit: int, after: dict) -> None:
    memo = dict(before)
    assert remember(memo, "k", 1, limit=limit) == 1
    assert memo == after
    assert len(memo) <= limit
