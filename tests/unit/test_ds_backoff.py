"""Failed-pod backoff (daemonset-semantics.md §4.5): 1 s doubling to 15 min, expiry at 30 min."""

from __future__ import annotations

import pytest

from everynode.controllers.daemonset.backoff import Backoff, failed_pods_backoff_key


def test_key_is_uid_observed_generation_node():
    ds = {"metadata": {"uid": "abc"}, "status": {"observedGeneration": 4}}
    assert failed_pods_backoff_key(ds, "n1") == "abc/4/n1"
    assert failed_pods_backoff_key({"metadata": {"uid": "abc"}}, "n1") == "abc/0/n1"
    # the controller makes a pass's keys as the key of "" followed by the node's name
    assert failed_pods_backoff_key(ds, "") + "n1" == failed_pods_backoff_key(ds, "n1")


def test_delays_double_up_to_the_maximum():
    b = Backoff()
    now = 1000.0
    delays = []
    for _ in range(12):
        b.next("k", now)
        delays.append(b.get("k"))
        now += b.get("k")  # each next() happens exactly when the previous delay ran out
    assert delays[:5] == [1, 2, 4, 8, 16]
    assert delays[-1] == 900 and max(delays) == 900


@pytest.mark.parametrize("elapsed,in_backoff", [(0.0, True), (0.999, True), (1.0, False), (5.0, False)])
def test_in_backoff_since_update(elapsed, in_backoff):
    b = Backoff()
    b.next("k", 100.0)
    assert b.is_in_backoff_since_update("k", 100.0 + elapsed) is in_backoff


def test_unknown_key_is_not_in_backoff():
    b = Backoff()
    assert not b.is_in_backoff_since_update("k", 0.0)
    assert b.get("k") == 0


def test_expired_entry_restarts_at_initial_delay():
    b = Backoff()
    b.next("k", 0.0)
    b.next("k", 1.0)
    b.next("k", 3.0)
    assert b.get("k") == 4
    b.next("k", 3.0 + 1801)  # idle for more than 2 × 15 min
    assert b.get("k") == 1


def test_expired_entry_is_not_in_backoff_even_with_a_long_delay():
    b = Backoff(initial=4000.0, maximum=900.0)
    b.next("k", 0.0)
    assert b.is_in_backoff_since_update("k", 1799.0)
    assert not b.is_in_backoff_since_update("k", 1801.0)


def test_gc_drops_only_stale_entries():
    b = Backoff()
    b.next("old", 0.0)
    b.next("new", 1000.0)
    assert b.gc(1801.0) == 1
    assert "old" not in b and "new" in b and len(b) == 1
