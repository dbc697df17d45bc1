"""Timestamp text: ``format_rfc3339`` keeps the last second's text; it must always equal a fresh
formatting, whatever the order of the times asked for."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from everynode.clock import format_rfc3339


def fresh(ts: float) -> str:
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("times", [
    [1_700_000_000.0, 1_700_000_000.4, 1_700_000_000.999, 1_700_000_001.0, 1_700_000_001.5],
    [1_700_000_005.7, 1_700_000_002.1, 1_700_000_005.2],  # a clock that goes back
    [0.0, 0.5, 59.99, 60.0, 86_399.9, 86_400.0],
])
def test_memo_gives_exactly_a_fresh_formatting(times: list[float]) -> None:
    assert [format_rfc3339(t) for t in times] == [fresh(t) for t in times]
