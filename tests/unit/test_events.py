"""EventRecorder: the Event's shape, aggregation of repeats into count, fire-and-forget errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from everynode.api import errors
from everynode.client.events import NORMAL, WARNING, EventRecorder, object_reference
from everynode.clock import Clock

Obj = dict[str, Any]


class FakeClock(Clock):
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


class EventSink:
    """Records create/patch calls on events; can be told to fail."""

    def __init__(self) -> None:
        self.events: dict[tuple[str, str], Obj] = {}
        self.calls: list[tuple[str, str]] = []
        self.fail_with: Exception | None = None

    async def create(self, resource: str, obj: Obj, *, namespace: str | None = None, **_: Any) -> Obj:
        assert resource == "events"
        await asyncio.sleep(0)
        self.calls.append(("create", obj["metadata"]["name"]))
        if self.fail_with is not None:
            raise self.fail_with
        key = (namespace, obj["metadata"]["name"])
        if key in self.events:
            raise errors.already_exists("events", "", obj["metadata"]["name"])
        self.events[key] = obj
        return obj

    async def patch(self, resource: str, name: str, patch: Any, *, namespace: str = "", patch_type: str = "merge",
                    **_: Any) -> Obj:
        assert resource == "events" and patch_type == "strategic"
        await asyncio.sleep(0)
        self.calls.append(("patch", name))
        if (namespace, name) not in self.events:
            raise errors.not_found("events", "", name)
        ev = {**self.events[(namespace, name)], **patch}
        self.events[(namespace, name)] = ev
        return ev


POD = {"apiVersion": "v1", "kind": "Pod",
       "metadata": {"name": "web-abc", "namespace": "prod", "uid": "u-1", "resourceVersion": "7"}}
DS = {"apiVersion": "apps/v1", "kind": "DaemonSet",
      "metadata": {"name": "agent", "namespace": "kube-system", "uid": "u-2", "resourceVersion": "9"}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "worker-1", "uid": "u-3", "resourceVersion": "3"}}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def test_event_shape(clock):
    sink = EventSink()
    rec = EventRecorder(sink, component="daemonset-controller", host="cp-1", clock=clock)
    rec.event(DS, NORMAL, "SuccessfulCreate", "Created pod: agent-x2c4v")
    await rec.flush()
    [(ns, name)] = sink.events
    ev = sink.events[(ns, name)]
    assert ns == "kube-system"
    assert name.startswith("agent.") and int(name.split(".", 1)[1], 16) == int(clock.t * 1e9)
    assert ev["involvedObject"] == {"kind": "DaemonSet", "namespace": "kube-system", "name": "agent",
                                    "uid": "u-2", "apiVersion": "apps/v1", "resourceVersion": "9"}
    assert ev["source"] == {"component": "daemonset-controller", "host": "cp-1"}
    assert ev["firstTimestamp"] == ev["lastTimestamp"] == "2023-11-14T22:13:20Z"
    assert (ev["count"], ev["type"], ev["reason"], ev["message"]) == (
        1, "Normal", "SuccessfulCreate", "Created pod: agent-x2c4v")
    assert (ev["reportingComponent"], ev["reportingInstance"]) == ("daemonset-controller", "cp-1")
    assert ev["kind"] == "Event" and ev["apiVersion"] == "v1"
    await rec.close()


async def test_cluster_scoped_object_events_go_to_default_namespace(clock):
    sink = EventSink()
    rec = EventRecorder(sink, component="node-controller", clock=clock)
    rec.event(NODE, NORMAL, "RegisteredNode", "Node worker-1 event: Registered Node worker-1 in Controller")
    await rec.flush()
    [(ns, _name)] = sink.events
    ev = next(iter(sink.events.values()))
    assert ns == "default"
    assert "namespace" not in ev["involvedObject"]
    assert ev["source"] == {"component": "node-controller"}
    await rec.close()


async def test_repeats_are_aggregated_into_count(clock):
    sink = EventSink()
    rec = EventRecorder(sink, component="c", clock=clock)
    rec.event(POD, WARNING, "BackOff", "Back-off restarting failed container")
    clock.t += 10
    rec.event(POD, WARNING, "BackOff", "Back-off restarting failed container")
    clock.t += 10
    rec.event(POD, WARNING, "BackOff", "Back-off restarting failed container")
    await rec.flush()
    assert [c[0] for c in sink.calls] == ["create", "patch", "patch"]
    [ev] = sink.events.values()
    assert ev["count"] == 3
    assert ev["firstTimestamp"] == "2023-11-14T22:13:20Z"
    assert ev["lastTimestamp"] == "2023-11-14T22:13:40Z"
    assert rec.stats.created == 1 and rec.stats.patched == 2
    await rec.close()


@pytest.mark.parametrize("different", [
    {"type": NORMAL},
    {"reason": "Other"},
    {"message": "another message"},
    {"obj": {**POD, "metadata": {**POD["metadata"], "uid": "u-other"}}},
])
async def test_different_events_are_not_aggregated(clock, different):
    sink = EventSink()
    rec = EventRecorder(sink, component="c", clock=clock)
    base = {"obj": POD, "type": WARNING, "reason": "BackOff", "message": "m"}
    rec.event(base["obj"], base["type"], base["reason"], base["message"])
    args = {**base, **different}
    rec.event(args["obj"], args["type"], args["reason"], args["message"])
    await rec.flush()
    assert [c[0] for c in sink.calls] == ["create", "create"]
    assert len(sink.events) == 2
    await rec.close()


async def test_same_instant_events_get_distinct_names(clock):
    sink = EventSink()
    rec = EventRecorder(sink, component="c", clock=clock)
    for i in range(5):
        rec.event(DS, NORMAL, "SuccessfulCreate", f"Created pod: p{i}")
    await rec.flush()
    assert len(sink.events) == 5
    await rec.close()


async def test_deleted_aggregate_is_recreated_with_its_count(clock):
    sink = EventSink()
    rec = EventRecorder(sink, component="c", clock=clock)
    rec.event(POD, WARNING, "BackOff", "m")
    await rec.flush()
    sink.events.clear()  # e.g. the event TTL removed it
    rec.event(POD, WARNING, "BackOff", "m")
    await rec.flush()
    assert [c[0] for c in sink.calls] == ["create", "patch", "create"]
    [ev] = sink.events.values()
    assert ev["count"] == 2
    await rec.close()


async def test_lru_is_bounded(clock):
    sink = EventSink()
    rec = EventRecorder(sink, component="c", clock=clock, cache_size=2)
    for msg in ("a", "b", "c"):
        rec.event(POD, NORMAL, "R", msg)
    rec.event(POD, NORMAL, "R", "a")  # evicted: created anew, not patched
    await rec.flush()
    assert [c[0] for c in sink.calls] == ["create"] * 4
    await rec.close()


async def test_errors_are_swallowed_and_counted(clock):
    sink = EventSink()
    sink.fail_with = errors.internal("etcd is down")
    rec = EventRecorder(sink, component="c", clock=clock)
    rec.event(POD, NORMAL, "R", "m")  # must not raise
    await rec.flush()
    assert rec.stats.failed == 1
    await rec.close()


async def test_full_queue_drops_instead_of_blocking(clock):
    sink = EventSink()
    rec = EventRecorder(sink, component="c", clock=clock, workers=1, max_queued=3)
    for i in range(10):
        rec.event(POD, NORMAL, "R", f"m{i}")
    assert rec.stats.dropped >= 6
    await rec.flush()
    assert len(sink.events) + rec.stats.dropped == 10
    await rec.close()


def test_invalid_type_is_rejected_without_raising(clock):
    rec = EventRecorder(EventSink(), component="c", clock=clock)
    rec.event(POD, "Bogus", "R", "m")
    assert rec.stats.dropped == 0


def test_object_reference_from_reference():
    ref = {"kind": "Pod", "namespace": "a", "name": "b", "uid": "", "fieldPath": "spec.containers{x}"}
    assert object_reference(ref) == {"kind": "Pod", "namespace": "a", "name": "b", "fieldPath": "spec.containers{x}"}



async def test_full_queue_is_logged_once_per_interval(clock, caplog):
    from everynode.client.events import DROP_LOG_INTERVAL

    rec = EventRecorder(EventSink(), component="c", clock=clock, workers=1, max_queued=1)
    with caplog.at_level("WARNING", logger="everynode.client.events"):
        for i in range(3001):  # a burst: 3,000 drops at one instant
            rec.event(POD, NORMAL, "R", f"m{i}")
        assert rec.stats.dropped == 3000
        assert [r.getMessage().split(",")[0] for r in caplog.records] == [
            "event queue full; dropped 1 event(s) so far"]
        clock.t += DROP_LOG_INTERVAL - 1
        rec.event(POD, NORMAL, "R", "later")
        assert len(caplog.records) == 1
        clock.t += 1
        rec.event(POD, NORMAL, "R", "much later")
        assert len(caplog.records) == 2
        assert caplog.records[1].getMessage().startswith("event queue full; dropped 3002 event(s) so far")
    await rec.close()


async def test_written_reasons_write_what_writing_all_would_of_those_reasons(clock):
    """A recorder that writes only some reasons still correlates every event: the ones it writes
    are exactly those (names, counts, spam-filter losses) a recorder writing all would write."""
    def feed(rec: EventRecorder) -> None:
        for i in range(30):  # 30 events about one pod: the spam filter's 25 tokens run out
            rec.event(POD, NORMAL, "Pulled", f"image {i}")
            if i % 10 == 9:
                rec.event(POD, WARNING, "FailedMount", "configmap \"cfg\" not found")
            clock.t += 1

    t0 = clock.t
    everything, some = EventSink(), EventSink()
    rec_all = EventRecorder(everything, component="kubelet", clock=clock)
    feed(rec_all)
    await rec_all.flush()
    clock.t = t0
    rec_some = EventRecorder(some, component="kubelet", clock=clock, written_reasons=frozenset({"FailedMount"}))
    feed(rec_some)
    await rec_some.flush()
    wanted = {k: v for k, v in everything.events.items() if v["reason"] == "FailedMount"}
    assert some.events == wanted and wanted
    assert next(iter(wanted.values()))["count"] == 2  # the third was refused by the spam filter
    # 33 events: 8 refused by the spam filter, 2 FailedMount written (create, count patch), 23 withheld
    assert rec_some.stats.withheld == 23 and rec_some.stats.skipped == rec_all.stats.skipped == 8
    await rec_all.close()
    await rec_some.close()


async def test_recorder_vouches_for_the_types_of_what_it_made(clock):
    """The recorder creates an Event as a typed client's (``Client.create(..., typed=True)``: the
    server skips its search for badly typed values) only when every field it put in is a string,
    as it is for any stored object.  An object with a number for a uid makes an Event the
    recorder cannot vouch for: it goes unvouched, and the server's decoder refuses it as before
    (a 400 the recorder counts as failed).  What is stored is the same either way."""
    from everynode.apiserver.service import ApiService
    from everynode.client.inprocess import InProcessClient
    from everynode.storage.memory import MemoryStore

    vouched: list[bool] = []

    class Recording(InProcessClient):
        async def create(self, resource: str, obj: Obj, **kw: Any) -> Obj:
            vouched.append(kw.get("typed", False))
            return await super().create(resource, obj, **kw)

    service = ApiService(MemoryStore(), clock=clock)
    client = Recording(service)
    await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}})
    vouched.clear()
    rec = EventRecorder(client, component="kubelet", clock=clock)
    rec.event(POD, NORMAL, "Started", "Started container app", host="worker-1",
              field_path="spec.containers{app}")
    odd = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "odd", "namespace": "prod", "uid": 9}}
    rec.event(odd, NORMAL, "Started", "Started container app", host="worker-1")
    await rec.close()
    assert sorted(vouched) == [False, True]  # (each object's events have their worker)
    assert (rec.stats.created, rec.stats.failed) == (1, 1)
    [stored] = (await client.list("events", namespace="prod"))["items"]
    assert stored["involvedObject"]["name"] == "web-abc"

    # The same body, unvouched, on a fresh server: the same object (but for its uid).
    body = {k: v for k, v in stored.items() if k != "metadata"}
    body["metadata"] = {"name": stored["metadata"]["name"], "namespace": "prod"}
    again = InProcessClient(ApiService(MemoryStore(), clock=clock))
    await again.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}})
    plain = await again.create("events", body)
    for obj in (stored, plain):
        obj["metadata"].pop("uid")
        obj["metadata"].pop("resourceVersion")
    assert plain == stored


async def test_an_object_with_a_number_for_a_name_never_raises_into_the_caller(clock):
    """Recording never raises into the controller, whatever the object looks like (compiled, a
    number for a name once failed the recorder's own ``str`` parameters): the Event is made,
    the server refuses it, and the recorder counts the failure."""
    sink = EventSink()
    sink.fail_with = errors.bad_request("json: cannot unmarshal number into Go struct field")
    rec = EventRecorder(sink, component="kubelet", clock=clock)
    odd = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": 5, "namespace": "prod", "uid": "u-9"}}
    rec.event(odd, NORMAL, "Started", "Started container app", host="worker-1")
    await rec.close()
    assert sink.calls == [("create", "5." + sink.calls[0][1].partition(".")[2])]
    assert (rec.stats.created, rec.stats.failed) == (0, 1)


async def test_events_about_one_object_share_its_reference_but_never_change_it(clock):
    """The recorder makes one involvedObject per version and part of an object and hands the same
    dict to each event about it (the store then knows it by identity); an event about another
    part, or another version, gets its own, and none is changed by the events that share it."""
    sink = EventSink()
    rec = EventRecorder(sink, component="kubelet", clock=clock)
    part = "spec.containers{app}"
    rec.event(POD, NORMAL, "Pulled", "pulled", host="worker-1", field_path=part)
    rec.event(POD, NORMAL, "Created", "created", host="worker-1", field_path=part)
    rec.event(POD, NORMAL, "Killing", "whole pod", host="worker-1")
    newer = {**POD, "metadata": {**POD["metadata"], "resourceVersion": "8"}}
    rec.event(newer, NORMAL, "Started", "started", host="worker-1", field_path=part)
    await rec.close()
    by_reason = {e["reason"]: e for e in sink.events.values()}
    pulled, created, killing, started = (by_reason[r] for r in ("Pulled", "Created", "Killing", "Started"))
    assert pulled["involvedObject"] is created["involvedObject"]
    assert pulled["source"] is created["source"] is killing["source"]
    assert pulled["involvedObject"] == {"kind": "Pod", "namespace": "prod", "name": "web-abc", "uid": "u-1",
                                        "apiVersion": "v1", "resourceVersion": "7", "fieldPath": part}
    assert "fieldPath" not in killing["involvedObject"]
    assert started["involvedObject"]["resourceVersion"] == "8"
    assert pulled["involvedObject"]["resourceVersion"] == "7"


@pytest.mark.parametrize("seed", range(5))
async def test_refused_events_are_not_built_yet_everything_written_is_upstreams(seed, clock):
    """An event the spam filter refuses is correlated from its parts and never built
    (EventRecorder.event).  What the recorder writes must still be what upstream's order gives —
    each Event made whole, then aggregated, observed and filtered (``EventCorrelator.correlate``)
    — with small caches, buckets run dry, aggregation, and new correlation keys arriving while an
    object's bucket is empty (their names must be the ones a later repeat patches or creates)."""
    import random

    from everynode.client.events import EventCorrelator
    from everynode.clock import format_rfc3339

    rng = random.Random(seed)
    sink = EventSink()
    rec = EventRecorder(sink, component="kubelet", clock=clock, cache_size=16, max_queued=100_000)
    last_ns = [0]

    def suffix(now: float) -> str:  # the recorder's names: nanoseconds, strictly increasing
        last_ns[0] = max(int(now * 1e9), last_ns[0] + 1)
        return f"{last_ns[0]:x}"

    whole = EventCorrelator(cache_size=16, name_suffix=suffix)
    expected: dict[tuple[str, str], Obj] = {}
    objects = [POD, DS, NODE, {**POD, "metadata": {**POD["metadata"], "name": "web-def", "uid": "u-4"}}]
    refused = 0
    for i in range(1000):
        clock.t += 400.0 if rng.random() < 0.02 else rng.choice([0.0, 0.0, 0.5, 2.0])
        obj, host = rng.choice(objects), rng.choice(["", "node-1"])
        type_, reason = rng.choice([NORMAL] * 5 + [WARNING]), rng.choice(["Pulled", "Created"])
        message = f"message {rng.randrange(14)}"
        if i % 7 == 0:  # a controller's burst about one object: aggregated from the tenth on
            obj, host, type_, reason, message = DS, "", NORMAL, "SuccessfulCreate", f"Created pod: agent-{i}"
        rec.event(obj, type_, reason, message, host=host)
        ref, stamp = object_reference(obj), format_rfc3339(clock.t)
        made = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": f"{ref['name']}.{suffix(clock.t)}", "namespace": ref.get("namespace") or "default"},
                "involvedObject": ref, "reason": reason, "message": message,
                "source": {"component": "kubelet", **({"host": host} if host else {})},
                "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "type": type_,
                "reportingComponent": "kubelet", "reportingInstance": host}
        result = whole.correlate(made, now=clock.t)
        if result.skip:
            refused += 1
            continue
        key = (result.event["metadata"]["namespace"], result.event["metadata"]["name"])
        if result.patch is not None and key in expected:
            expected[key] = {**expected[key], **result.patch}
        else:  # a create, or a patch of an Event never created: created with the count so far
            expected[key] = result.event
    await rec.flush()
    assert refused > 50 and rec.stats.skipped == refused  # the filter ran dry, often
    assert rec.stats.patched > 0  # repeats counted on Events made before
    assert any(ev["message"].startswith("(combined from similar events)") for ev in sink.events.values())
    assert sink.events == expected
