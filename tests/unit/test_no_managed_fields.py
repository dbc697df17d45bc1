"""A server that keeps no managedFields (``ServerContext.managed_fields``, plan's copy): its writes
store none and change nothing else, and server-side apply still merges by its own entries."""

from __future__ import annotations

from typing import Any

from everynode.apiserver.service import ApiService
from everynode.client.inprocess import InProcessClient
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore


class FixedClock(Clock):
    def now(self) -> float:
        return 1_767_225_600.0


def _pod(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}


async def _clients() -> tuple[InProcessClient, InProcessClient]:
    """A client of a server keeping managedFields and one of a server keeping none."""
    out = []
    for keep in (True, False):
        service = ApiService(MemoryStore(), clock=FixedClock(), managed_fields=keep)
        await service.start()
        out.append(InProcessClient(service, user_agent="kubelet/v1.33.0"))
    return out[0], out[1]


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    md = {k: v for k, v in obj["metadata"].items() if k not in ("managedFields", "uid", "creationTimestamp")}
    return {**obj, "metadata": md}


async def test_writes_store_the_same_objects_without_managed_fields() -> None:
    keeping, bare = await _clients()
    for client in (keeping, bare):
        await client.create("pods", _pod("p"), namespace="default")
        pod = await client.get("pods", "p", namespace="default")
        await client.update("pods", {**pod, "metadata": {**pod["metadata"], "labels": {"app": "b"}}})
        await client.patch("pods", "p", {"status": {"phase": "Running", "podIP": "10.0.0.1"}},
                           namespace="default", patch_type="strategic", subresource="status")
    kept = await keeping.get("pods", "p", namespace="default")
    stored = await bare.get("pods", "p", namespace="default")
    assert [e["manager"] for e in kept["metadata"]["managedFields"]] == ["kubelet", "kubelet"]
    assert "managedFields" not in stored["metadata"]
    assert _without_managed_fields(stored) == _without_managed_fields(kept)


async def test_a_bodys_managed_fields_are_not_stored() -> None:
    _, bare = await _clients()
    entry = {"manager": "someone", "operation": "Update", "apiVersion": "v1", "time": "2026-01-01T00:00:00Z",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}}}
    body = _pod("p")
    body["metadata"]["managedFields"] = [entry]
    created = await bare.create("pods", body, namespace="default")
    assert "managedFields" not in created["metadata"]
    updated = await bare.update("pods", {**created, "metadata": {**created["metadata"], "managedFields": [entry],
                                                                 "labels": {"app": "b"}}})
    assert "managedFields" not in updated["metadata"]
    assert updated["metadata"]["labels"] == {"app": "b"}


async def test_server_side_apply_still_merges_by_its_own_entries() -> None:
    _, bare = await _clients()
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"},
              "data": {"a": "1", "b": "2"}}
    await bare.patch("configmaps", "cm", config, namespace="default", patch_type="apply", field_manager="tool")
    # another writer's update keeps the applier's entry (nothing is recorded for it) ...
    cm = await bare.get("configmaps", "cm", namespace="default")
    await bare.update("configmaps", {**cm, "data": {**cm["data"], "c": "3"}})
    cm = await bare.get("configmaps", "cm", namespace="default")
    assert [e["manager"] for e in cm["metadata"]["managedFields"]] == ["tool"]
    # ... so applying without "b" still removes what the applier owned, and keeps the rest
    await bare.patch("configmaps", "cm", {**config, "data": {"a": "1"}}, namespace="default",
                     patch_type="apply", field_manager="tool")
    cm = await bare.get("configmaps", "cm", namespace="default")
    assert cm["data"] == {"a": "1", "c": "3"}
