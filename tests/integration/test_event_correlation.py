"""EventRecorder against the real in-process API: what a DaemonSet's "Created pod" burst leaves
in storage once client-go's correlator (aggregate → count → spam filter) has had its say."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.apiserver.service import ApiService
from everynode.client.events import NORMAL, EventRecorder
from everynode.client.inprocess import InProcessClient
from everynode.clock import Clock, format_rfc3339
from everynode.storage.memory import MemoryStore

Obj = dict[str, Any]
NS = "kube-system"
T0 = 1_700_000_000.0
DS = {"apiVersion": "apps/v1", "kind": "DaemonSet",
      "metadata": {"name": "agent", "namespace": NS, "uid": "0d5c7e4e-1111-2222-3333-444455556666",
                   "resourceVersion": "12"}}


class SteppedClock(Clock):
    def __init__(self) -> None:
        self.t = T0

    def now(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t


@pytest.fixture
async def client():
    service = ApiService(MemoryStore(), clock=Clock())
    await service.start()
    client = InProcessClient(service)
    yield client
    await client.close()


async def events_about_agent(client: Any) -> list[Obj]:
    items = (await client.list("events", namespace=NS))["items"]
    return sorted((e for e in items if e["involvedObject"].get("name") == "agent"),
                  key=lambda e: e["metadata"]["name"])


def the_aggregate(events: list[Obj]) -> Obj:
    """The one "(combined from similar events)" Event among ``events``."""
    [combined] = [e for e in events if e["message"].startswith("(combined")]
    return combined


async def test_sixty_created_pod_events_leave_ten_events(client):
    clock = SteppedClock()
    rec = EventRecorder(client, component="daemonset-controller", clock=clock)
    for i in range(60):
        rec.event(DS, NORMAL, "SuccessfulCreate", f"Created pod: agent-p{i}")
    await rec.flush()

    events = await events_about_agent(client)
    assert len(events) == 10
    plain = [e for e in events if not e["message"].startswith("(combined")]
    combined = the_aggregate(events)
    assert sorted(e["message"] for e in plain) == sorted(f"Created pod: agent-p{i}" for i in range(9))
    assert all(e["count"] == 1 for e in plain)
    # 10th message: the aggregate is created; 11th–25th: its count; 26th on: no token left.
    assert combined["message"] == "(combined from similar events): Created pod: agent-p24"
    assert combined["count"] == 16
    assert combined["reason"] == "SuccessfulCreate" and combined["type"] == NORMAL
    assert combined["source"] == {"component": "daemonset-controller"}
    assert combined["involvedObject"]["uid"] == DS["metadata"]["uid"]
    assert (rec.stats.created, rec.stats.patched, rec.stats.skipped, rec.stats.failed) == (10, 15, 35, 0)

    # Five minutes later one token is back: the aggregate's count jumps over the skipped events.
    clock.t += 300
    rec.event(DS, NORMAL, "SuccessfulCreate", "Created pod: agent-p60")
    rec.event(DS, NORMAL, "SuccessfulCreate", "Created pod: agent-p61")  # no token again
    await rec.flush()
    events = await events_about_agent(client)
    assert len(events) == 10
    combined = the_aggregate(events)
    assert combined["count"] == 52
    assert combined["message"] == "(combined from similar events): Created pod: agent-p60"
    assert combined["firstTimestamp"] == format_rfc3339(T0)
    assert combined["lastTimestamp"] == format_rfc3339(T0 + 300)
    assert rec.stats.skipped == 36
    await rec.close()


async def test_deleted_aggregate_is_recreated_with_its_count(client):
    clock = SteppedClock()
    rec = EventRecorder(client, component="daemonset-controller", clock=clock)
    for i in range(11):
        rec.event(DS, NORMAL, "SuccessfulCreate", f"Created pod: agent-p{i}")
    await rec.flush()
    combined = the_aggregate(await events_about_agent(client))
    assert combined["count"] == 2
    await client.delete("events", combined["metadata"]["name"], namespace=NS)  # e.g. the event TTL
    rec.event(DS, NORMAL, "SuccessfulCreate", "Created pod: agent-p11")
    await rec.flush()
    again = the_aggregate(await events_about_agent(client))
    assert again["metadata"]["name"] == combined["metadata"]["name"]
    assert again["count"] == 3 and again["message"].endswith("agent-p11")
    await rec.close()
