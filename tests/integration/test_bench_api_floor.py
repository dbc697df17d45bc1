"""``bench converge``'s API floors write what a converge writes.

The floor is a yardstick only if it makes the same writes as the cluster it is set against: the
pods as the DaemonSet controller makes them, and — with ``events=True`` — the Events the
scheduler and the kubelets write about each pod, field for field.  A real converge of three
nodes is the reference; names, uids, times and resource versions differ by nature, and the pod's
name is replaced by a placeholder before comparing."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from everynode.apiserver import service as service_module
from everynode.product import bench

Obj = dict[str, Any]

VARYING = ("uid", "resourceVersion", "creationTimestamp", "managedFields")


def _services(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every ApiService the floor makes, kept for inspection."""
    made: list[Any] = []

    real = service_module.ApiService

    def kept(*args: Any, **kwargs: Any) -> Any:  # (a compiled class takes no Python subclass)
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(service_module, "ApiService", kept)
    return made


async def _events(client: Any) -> list[Obj]:
    return (await client.list("events", namespace=bench.DS_NAMESPACE))["items"]


def _shape(event: Obj, pods: dict[str, str]) -> Obj:
    """An Event without what differs between two writes of it (pod names by their node)."""
    ref = dict(event["involvedObject"])
    node = pods[ref["name"]]
    for key in ("uid", "resourceVersion"):
        assert ref.pop(key)
    ref["name"] = "<pod>"
    message = event["message"].replace(event["involvedObject"]["name"], "<pod>")
    md = {k: v for k, v in event["metadata"].items() if k not in VARYING and k != "name"}
    assert event["metadata"]["name"].startswith(event["involvedObject"]["name"] + ".")
    body = {k: v for k, v in event.items() if k not in ("metadata", "involvedObject", "message", "firstTimestamp",
                                                          "lastTimestamp", "eventTime")}
    return {**body, "metadata": md, "involvedObject": ref, "message": message, "node": node,
            "stamped": event["firstTimestamp"] == event["lastTimestamp"] is not None}


def _by_node(events: list[Obj], pods: dict[str, str]) -> list[Obj]:
    shapes = [_shape(e, pods) for e in events if e["involvedObject"].get("kind") == "Pod"]
    return sorted(shapes, key=lambda s: (s["node"], s["reason"]))


def test_the_floor_with_events_writes_what_a_converge_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _services(monkeypatch)

    async def floor() -> tuple[list[Obj], list[Obj], list[Obj]]:
        await bench.api_floor_once(3)
        plain = made[-1]
        await bench.api_floor_once(3, events=True)
        with_events = made[-1]
        from everynode.client.inprocess import InProcessClient

        plain_client, client = InProcessClient(plain), InProcessClient(with_events)
        assert await _events(plain_client) == []
        pods = (await client.list("pods", namespace=bench.DS_NAMESPACE))["items"]
        return pods, await _events(client), (await plain_client.list("pods", namespace=bench.DS_NAMESPACE))["items"]

    async def converge() -> tuple[list[Obj], list[Obj]]:
        plane = await bench._start_plane(3, transport="inprocess")
        try:
            assert plane.client is not None
            await plane.client.create("daemonsets.apps", bench.daemonset_manifest())
            await bench._wait_status(plane, bench._available(3), timeout=60)
            for _ in range(200):  # the kubelets' Started events follow the Ready status
                events = await _events(plane.client)
                if sum(e["reason"] == "Started" for e in events) == 3:
                    break
                await asyncio.sleep(0.02)
            pods = (await plane.client.list("pods", namespace=bench.DS_NAMESPACE))["items"]
            return pods, await _events(plane.client)
        finally:
            await plane.stop()

    floor_pods, floor_events, plain_pods = asyncio.run(floor())
    real_pods, real_events = asyncio.run(converge())

    def nodes(pods: list[Obj]) -> dict[str, str]:
        return {p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods}

    real = _by_node(real_events, nodes(real_pods))
    floor_shapes = _by_node(floor_events, nodes(floor_pods))
    assert [(s["node"], s["reason"]) for s in real] == [
        (f"worker-{i}", reason) for i in (1, 2, 3) for reason in ("Created", "Pulled", "Scheduled", "Started")]
    assert floor_shapes == real
    # the floor without events makes the same pods, and only them
    assert len(plain_pods) == len(floor_pods) == 3
