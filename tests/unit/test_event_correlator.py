"""The event correlator's pieces (client-go tools/record/events_cache.go) as pure functions of
(event, now): the aggregator, the logger, the spam filter, and the three chained."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api.meta import deep_copy
from everynode.client.events import (
    AGGREGATE_MESSAGE_PREFIX,
    EventAggregator,
    EventCorrelator,
    EventLogger,
    SpamFilter,
    aggregate_keys,
    event_key,
    reference_parts,
    spam_key,
)
from everynode.clock import format_rfc3339

Obj = dict[str, Any]
T0 = 1_700_000_000.0

DS_REF = {"kind": "DaemonSet", "namespace": "kube-system", "name": "agent", "uid": "u-ds",
          "apiVersion": "apps/v1", "resourceVersion": "9"}
OTHER_REF = {**DS_REF, "name": "other", "uid": "u-other"}


def ev(message: str, *, ref: Obj = DS_REF, reason: str = "SuccessfulCreate", type: str = "Normal",
       now: float = T0, name: str | None = None) -> Obj:
    """An Event as the recorder makes it before correlation."""
    stamp = format_rfc3339(now)
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name or f"{ref['name']}.{int(now * 1e9):x}", "namespace": ref["namespace"]},
            "involvedObject": ref, "reason": reason, "message": message,
            "source": {"component": "daemonset-controller"}, "firstTimestamp": stamp, "lastTimestamp": stamp,
            "count": 1, "type": type, "reportingComponent": "daemonset-controller", "reportingInstance": ""}


# -- keys ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("change", "same_event", "same_group", "same_spam"), [
    ({"message": "other"}, False, True, True),
    ({"reason": "Other"}, False, False, True),
    ({"type": "Warning"}, False, False, True),
    ({"involvedObject": {**DS_REF, "fieldPath": "spec.containers{c}"}}, False, True, True),
    ({"involvedObject": {**DS_REF, "resourceVersion": "10"}}, True, True, True),
    ({"involvedObject": OTHER_REF}, False, False, False),
    ({"reportingInstance": "cp-2"}, True, False, True),
    ({"source": {"component": "daemonset-controller", "host": "cp-2"}}, False, False, False),
    ({"count": 7, "lastTimestamp": "2030-01-01T00:00:00Z"}, True, True, True),
])
def test_keys(change, same_event, same_group, same_spam):
    a, b = ev("Created pod: p-1"), {**ev("Created pod: p-1"), **change}
    assert (event_key(a) == event_key(b)) is same_event
    assert (aggregate_keys(a)[0] == aggregate_keys(b)[0]) is same_group
    assert (spam_key(a) == spam_key(b)) is same_spam


# -- aggregator ------------------------------------------------------------------------------------

# Steps: (seconds since the previous event, message, reason); expected: "e" = the event itself
# (keyed by its own event key), "A" = an aggregate event (keyed by its group).
SAME_INSTANT = [(0.0, f"Created pod: p-{i}", "SuccessfulCreate") for i in range(12)]


@pytest.mark.parametrize(("steps", "expected"), [
    pytest.param(SAME_INSTANT[:9], "e" * 9, id="nine-distinct-messages-stay-apart"),
    pytest.param(SAME_INSTANT[:10], "e" * 9 + "A", id="tenth-distinct-message-is-aggregated"),
    pytest.param(SAME_INSTANT, "e" * 9 + "AAA", id="further-distinct-messages-stay-aggregated"),
    pytest.param([(0.0, "same", "R")] * 15, "e" * 15, id="repeats-are-not-distinct"),
    pytest.param(SAME_INSTANT[:9] + [(601.0, "Created pod: p-9", "SuccessfulCreate")], "e" * 10,
                 id="over-600s-quiet-starts-afresh"),
    pytest.param(SAME_INSTANT[:9] + [(600.0, "Created pod: p-9", "SuccessfulCreate")], "e" * 9 + "A",
                 id="exactly-600s-is-still-the-same-window"),
    pytest.param([(500.0, f"m{i}", "R") for i in range(10)], "e" * 9 + "A",
                 id="the-window-slides-with-each-event"),
    pytest.param(SAME_INSTANT[:9] + [(601.0 if i == 0 else 0.0, f"n{i}", "SuccessfulCreate") for i in range(10)], "e" * 18 + "A",
                 id="after-a-fresh-start-ten-more-are-needed"),
    pytest.param([(0.0, f"m{i}", "R1" if i % 2 else "R2") for i in range(18)], "e" * 18,
                 id="different-reasons-are-different-groups"),
])
def test_aggregator(steps, expected):
    agg = EventAggregator()
    now, got = T0, ""
    for dt, message, reason in steps:
        now += dt
        event = ev(message, reason=reason, now=now)
        out, key = agg.aggregate(event, now=now)
        if out is event:
            assert key == event_key(event)
            got += "e"
        else:
            assert key == aggregate_keys(event)[0]
            assert out["message"] == AGGREGATE_MESSAGE_PREFIX + message
            got += "A"
    assert got == expected


def test_different_objects_aggregate_independently():
    agg = EventAggregator()
    for i in range(9):
        for ref in (DS_REF, OTHER_REF):
            event = ev(f"m{i}", ref=ref)
            assert agg.aggregate(event, now=T0)[0] is event
    out, _ = agg.aggregate(ev("m9", ref=OTHER_REF), now=T0)
    assert out["involvedObject"] == OTHER_REF and out["message"].startswith(AGGREGATE_MESSAGE_PREFIX)


def test_aggregate_event_shape():
    agg = EventAggregator(name_suffix=lambda now: "ff")
    for i in range(9):
        agg.aggregate(ev(f"Created pod: p-{i}"), now=T0)
    now = T0 + 5
    out, _ = agg.aggregate(ev("Created pod: p-9", now=now), now=now)
    assert out == {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "agent.ff", "namespace": "kube-system"},
        "involvedObject": DS_REF, "reason": "SuccessfulCreate",
        "message": "(combined from similar events): Created pod: p-9",
        "source": {"component": "daemonset-controller"},
        "firstTimestamp": format_rfc3339(now), "lastTimestamp": format_rfc3339(now),
        "count": 1, "type": "Normal",
    }  # no reportingComponent/Instance: upstream's aggregate event does not copy them


def test_default_aggregate_name_is_object_name_and_hex_nanoseconds():
    agg = EventAggregator()
    for i in range(10):
        out, _ = agg.aggregate(ev(f"m{i}"), now=T0)
    assert out["metadata"]["name"] == f"agent.{int(T0 * 1e9):x}"


def test_aggregator_cache_is_bounded():
    agg = EventAggregator(cache_size=1)
    for i in range(9):
        agg.aggregate(ev(f"m{i}"), now=T0)
    agg.aggregate(ev("x", ref=OTHER_REF), now=T0)  # evicts the DaemonSet's group
    event = ev("m9")
    assert agg.aggregate(event, now=T0)[0] is event


# -- logger ----------------------------------------------------------------------------------------


def test_logger_turns_repeats_into_count_patches():
    logger = EventLogger()
    first = ev("m", now=T0, name="agent.1")
    out, patch, seen = logger.observe(first, event_key(first))
    assert out is first and patch is None and (seen.name, seen.count) == ("agent.1", 1)
    later = T0 + 42
    again = ev("m", now=later, name="agent.2")
    out, patch, seen2 = logger.observe(again, event_key(again))
    assert seen2 is seen and seen.count == 2
    assert out["metadata"]["name"] == "agent.1" and out["count"] == 2
    assert out["firstTimestamp"] == format_rfc3339(T0) and out["lastTimestamp"] == format_rfc3339(later)
    assert patch == {"count": 2, "lastTimestamp": format_rfc3339(later), "message": "m"}


# -- spam filter -----------------------------------------------------------------------------------

# Steps: (seconds since the previous event, object); expected: "." written, "x" skipped.
A, B = DS_REF, OTHER_REF


@pytest.mark.parametrize(("steps", "expected"), [
    pytest.param([(0.0, A)] * 26, "." * 25 + "x", id="burst-of-25-then-skip"),
    pytest.param([(0.0, A)] * 25 + [(299.0, A)], "." * 25 + "x", id="no-token-before-300s"),
    pytest.param([(0.0, A)] * 25 + [(300.0, A), (0.0, A)], "." * 25 + ".x", id="one-token-per-300s"),
    pytest.param([(0.0, A)] * 25 + [(100.0, A), (100.0, A), (100.0, A)], "." * 25 + "xx.",
                 id="refused-events-do-not-delay-the-refill"),
    pytest.param([(0.0, A)] * 25 + [(36000.0, A)] + [(0.0, A)] * 25, "." * 25 + "." * 25 + "x",
                 id="refill-is-capped-at-the-burst"),
    pytest.param([(0.0, A)] * 26 + [(0.0, B)] * 26, ("." * 25 + "x") * 2, id="objects-are-independent"),
])
def test_spam_filter(steps, expected):
    spam = SpamFilter()
    now, got = T0, ""
    for dt, ref in steps:
        now += dt
        got += "x" if spam.skip(ev("m", ref=ref), now=now) else "."
    assert got == expected


def test_spam_filter_shares_one_bucket_across_reasons_and_types():
    spam = SpamFilter()
    for i in range(25):
        assert not spam.skip(ev("m", reason=f"R{i}", type="Normal"), now=T0)
    assert spam.skip(ev("m", reason="Different", type="Warning"), now=T0)


def test_spam_filter_forgets_least_recently_used_objects():
    spam = SpamFilter(cache_size=1)
    for _ in range(25):
        spam.skip(ev("m", ref=A), now=T0)
    assert spam.skip(ev("m", ref=A), now=T0)
    assert not spam.skip(ev("m", ref=B), now=T0)  # evicts A's bucket
    assert not spam.skip(ev("m", ref=A), now=T0)  # a fresh, full bucket


# -- the chain -------------------------------------------------------------------------------------


def test_correlator_daemonset_creating_sixty_pods():
    """60 distinct "Created pod" messages at one instant: 9 creates, an aggregate create, 15 count
    patches of the aggregate, then the spam filter's bucket is empty."""
    corr = EventCorrelator()
    actions = []
    for i in range(60):
        result = corr.correlate(ev(f"Created pod: p-{i}", name=f"agent.{i}"), now=T0)
        if result.skip:
            actions.append(("skip",))
        elif result.patch is None:
            actions.append(("create", result.event["metadata"]["name"], result.event["message"]))
        else:
            actions.append(("patch", result.event["metadata"]["name"], result.patch["count"]))
    aggregate_name = actions[9][1]
    assert actions[:9] == [("create", f"agent.{i}", f"Created pod: p-{i}") for i in range(9)]
    assert actions[9] == ("create", aggregate_name, "(combined from similar events): Created pod: p-9")
    assert actions[10:25] == [("patch", aggregate_name, n) for n in range(2, 17)]
    assert actions[25:] == [("skip",)] * 35

    # 300 s later one token is back; the skipped events were still counted (as upstream).
    later = T0 + 300
    result = corr.correlate(ev("Created pod: p-60", now=later), now=later)
    assert not result.skip and result.event["metadata"]["name"] == aggregate_name
    assert result.patch == {"count": 52, "lastTimestamp": format_rfc3339(later),
                            "message": "(combined from similar events): Created pod: p-60"}
    assert corr.correlate(ev("Created pod: p-61", now=later), now=later).skip


def test_correlator_repeat_of_an_early_message_is_still_a_patch():
    corr = EventCorrelator()
    results = [corr.correlate(ev(f"m{i}", name=f"agent.{i}"), now=T0) for i in range(10)]
    aggregate_name = results[9].event["metadata"]["name"]
    result = corr.correlate(ev("m0", name="agent.x"), now=T0)
    # Either m0 is still remembered by its group (a patch of its own event) or it was the one
    # dropped to keep the group at ten (a patch of the aggregate): never a new Event.
    assert result.patch is not None and result.patch["count"] == 2
    assert result.event["metadata"]["name"] in ("agent.0", aggregate_name)


@pytest.mark.parametrize("seed", range(6))
def test_an_unwritten_event_is_correlated_as_a_written_one_would_be(seed):
    """``correlate_unwritten`` (the parts of an event no one will write) leaves the correlator
    as ``correlate`` of the whole Event does: the same refusals, the same groups, counts and
    buckets — with caches small enough that evictions happen, messages enough to aggregate and
    events enough to run the spam filter dry."""
    import random

    rng = random.Random(seed)
    names = iter(range(10**9))
    whole = EventCorrelator(cache_size=8, name_suffix=lambda now: f"{next(names)}")
    parts = EventCorrelator(cache_size=8, name_suffix=lambda now: "unused")
    made_names = iter(range(10**9))
    made = EventCorrelator(cache_size=8, name_suffix=lambda now: f"{next(made_names)}")
    refs = [DS_REF, OTHER_REF, {**DS_REF, "name": "third", "uid": "u-3"}, {**DS_REF, "fieldPath": "spec"}]
    now = T0
    for _ in range(400):
        now += rng.choice([0.0, 1.0, 30.0, 700.0])
        ref, host = rng.choice(refs), rng.choice(["", "node-1"])
        type_, reason = rng.choice(["Normal", "Warning"]), rng.choice(["Pulled", "Created", "Killing"])
        message = f"message {rng.randrange(14)}"
        event = ev(message, ref=ref, reason=reason, type=type_, now=now)
        event["source"] = {"component": "kubelet", **({"host": host} if host else {})}
        event["reportingComponent"], event["reportingInstance"] = "kubelet", host
        result = whole.correlate(deep_copy(event), now=now)
        refused = result.skip
        assert parts.correlate_unwritten("kubelet", host, ref, type_, reason, message, now=now) is refused
        # correlate_made (keys from the parts the recorder made the event of): the same verdict,
        # the same event to write and the same patch
        ref_parts = reference_parts(ref)
        same = made.correlate_made(event, ref_parts, ("kubelet", host, *ref_parts), now=now)
        assert (same.skip, same.event, same.patch) == (result.skip, result.event, result.patch)
    for other in (parts, made):
        assert [(k, g.messages, g.last_seen) for k, g in whole.aggregator._groups._entries.items()] == \
            [(k, g.messages, g.last_seen) for k, g in other.aggregator._groups._entries.items()]
        assert [(k, o.count) for k, o in whole.logger._seen._entries.items()] == \
            [(k, o.count) for k, o in other.logger._seen._entries.items()]
        assert [(k, b.tokens, b.last) for k, b in whole.spam_filter._buckets._entries.items()] == \
            [(k, b.tokens, b.last) for k, b in other.spam_filter._buckets._entries.items()]
