"""Timestamp text: ``format_rfc3339`` remembers texts by second; it must always equal a fresh
formatting, whatever the order of the times asked for, and its table stays bounded.
``format_rfc3339_micro`` builds on it and must equal datetime's microsecond text, rounding
included."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from everynode import clock
from everynode.clock import Clock, format_rfc3339, format_rfc3339_micro


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


def fresh_micro(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@pytest.mark.parametrize("ts", [
    0.0, 1e-6, 4e-7, 5e-7, 6e-7, 0.9999994, 0.9999995, 0.9999996, 59.9999999, 86_399.9999996,
    1_700_000_000.0, 1_700_000_000.123456, 1_700_000_000.1234565, 1_700_000_000.9999996,
    1_700_000_000.0000004, 1_700_000_000.5, 4_107_542_399.9999999,
    -0.5, -1.0000004, -86_400.25, -0.9999996,
])
def test_micro_text_equals_datetime(ts: float) -> None:
    assert format_rfc3339_micro(ts) == fresh_micro(ts)


def test_micro_text_equals_datetime_on_many_times() -> None:
    rng = random.Random(7)
    times = [rng.uniform(0, 4_000_000_000) for _ in range(20_000)]
    times += [float(int(t)) + rng.choice([0.0, 1e-6, 5e-7, 0.5, 0.9999995, 0.9999999]) for t in times[:2000]]
    assert [format_rfc3339_micro(t) for t in times] == [fresh_micro(t) for t in times]
    assert Clock().rfc3339_micro(times[0]) == fresh_micro(times[0])
