"""Timestamp text: ``format_rfc3339`` remembers texts by second; it must always equal a fresh
formatting, whatever the order of the times asked for, and its table stays bounded."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from everynode import clock
from everynode.clock import format_rfc3339


def fresh(ts: float) -> str:
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("times", [
    [1_700_000_000.0, 1_700_000_000.4, 1_700_000_000.999, 1_700_000_001.0, 1_700_000_001.5],
    [1_700_000_005.7, 1_700_000_002.1, 1_700_000_005.2],  # a clock that goes back
    [0.0, 0.5, 59.99, 60.0, 86_399.9, 86_400.0],
    [951_868_799.0, 951_868_800.0, 951_782_400.0, 4_107_542_399.0, 4_107_542_400.0],  # leap days, 2100
    [-1.0, -86_400.0, -86_401.5, 1_700_000_000.0 + 86_400.0 * 365],  # before the epoch, a year on
])
def test_memo_gives_exactly_a_fresh_formatting(times: list[float]) -> None:
    assert [format_rfc3339(t) for t in times] == [fresh(t) for t in times]


def test_table_is_bounded_and_still_exact_after_it_starts_afresh() -> None:
    times = [1_700_000_000.0 + 30.0 * i for i in range(2 * clock._FORMATTED_LIMIT + 3)]
    assert [format_rfc3339(t) for t in times] == [fresh(t) for t in times]
    assert 0 < len(clock._formatted) <= clock._FORMATTED_LIMIT
    assert [format_rfc3339(t) for t in reversed(times)] == [fresh(t) for t in reversed(times)]
