"""Controller expectations (controller_utils.go ControllerExpectations) with a fake clock."""

from __future__ import annotations

import pytest

from everynode.client.expectations import EXPECTATIONS_TIMEOUT, Expectations
from everynode.clock import Clock


class FakeClock(Clock):
    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_no_record_is_satisfied(clock):
    assert Expectations(clock=clock).satisfied("ns/ds")


def test_creations_must_all_be_observed(clock):
    e = Expectations(clock=clock)
    e.set_expectations("ns/ds", 2, 0)
    assert not e.satisfied("ns/ds")
    e.creation_observed("ns/ds")
    assert not e.satisfied("ns/ds")
    e.creation_observed("ns/ds")
    assert e.satisfied("ns/ds")
    e.creation_observed("ns/ds")  # more than expected is harmless
    assert e.satisfied("ns/ds")


def test_deletions_and_adds_both_counted(clock):
    e = Expectations(clock=clock)
    e.set_expectations("k", 1, 1)
    e.creation_observed("k")
    assert not e.satisfied("k")
    e.deletion_observed("k")
    assert e.satisfied("k")


def test_set_replaces_previous_record(clock):
    e = Expectations(clock=clock)
    e.set_expectations("k", 5, 5)
    e.set_expectations("k", 0, 0)
    assert e.satisfied("k")


def test_raise_and_lower(clock):
    e = Expectations(clock=clock)
    e.raise_expectations("k", 1, 0)  # no record: no-op
    assert e.get("k") is None
    e.set_expectations("k", 1, 0)
    e.raise_expectations("k", 2, 1)
    assert (e.get("k").adds, e.get("k").dels) == (3, 1)
    e.lower_expectations("k", 3, 1)
    assert e.satisfied("k")


@pytest.mark.parametrize(("elapsed", "satisfied"), [
    (0.0, False),
    (EXPECTATIONS_TIMEOUT - 1, False),
    (EXPECTATIONS_TIMEOUT, False),  # "older than" 5 minutes: strictly greater
    (EXPECTATIONS_TIMEOUT + 0.001, True),
    (3600.0, True),
])
def test_expectations_time_out(clock, elapsed, satisfied):
    e = Expectations(clock=clock)
    e.set_expectations("k", 3, 0)
    clock.t += elapsed
    assert e.satisfied("k") is satisfied
    assert e.expired("k") is satisfied


def test_raising_does_not_refresh_timestamp(clock):
    e = Expectations(clock=clock)
    e.set_expectations("k", 1, 0)
    clock.t += EXPECTATIONS_TIMEOUT / 2
    e.raise_expectations("k", 1, 0)
    clock.t += EXPECTATIONS_TIMEOUT / 2 + 1
    assert e.satisfied("k")


def test_delete_expectations(clock):
    e = Expectations(clock=clock)
    e.set_expectations("k", 1, 0)
    e.delete_expectations("k")
    assert e.satisfied("k") and "k" not in e
    e.delete_expectations("k")  # idempotent
