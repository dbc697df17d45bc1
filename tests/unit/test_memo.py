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


def test_a_place_whose_look_ups_keep_missing_is_skipped_but_probed():
    """memo.skips_look_up: after UNSHARED_STREAK misses in a row a place is not looked up, but
    for every PROBE_EVERY-th visit; a hit on a probe makes it looked up every time again."""
    from everynode.memo import PROBE_EVERY, UNSHARED_STREAK, record_look_up, skips_look_up

    misses: dict[str, int] = {}
    looked = []
    for visit in range(3 * PROBE_EVERY):
        if not skips_look_up(misses, "ips"):
            looked.append(visit)
            record_look_up(misses, "ips", False, limit=16)
    assert looked[:UNSHARED_STREAK] == list(range(UNSHARED_STREAK))
    assert looked[UNSHARED_STREAK:] == [PROBE_EVERY, 2 * PROBE_EVERY]
    record_look_up(misses, "ips", True, limit=16)  # a probe that hits
    assert not any(skips_look_up(misses, "ips") for _ in range(UNSHARED_STREAK))
    record_look_up(misses, "other", True, limit=16)
    assert "other" not in misses  # a hit at a place without misses records nothing
