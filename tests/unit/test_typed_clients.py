"""A typed client's writes (RequestOptions.typed: plan's copy's components, which upstream are Go
binaries) skip the decoder's type check and change nothing else; everyone else's are checked."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.service import ApiService
from everynode.client.inprocess import InProcessClient
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore


class FixedClock(Clock):
    def now(self) -> float:
        return 1_767_225_600.0


def _pod(name: str, **container: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "registry.example/c:1", **container}]}}


async def _client(*, typed: bool) -> InProcessClient:
    service = ApiService(MemoryStore(), clock=FixedClock())
    await service.start()
    return InProcessClient(service, user_agent="kubelet/v1.33.0", typed=typed)


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    md = {k: v for k, v in obj["metadata"].items() if k not in ("uid", "creationTimestamp")}
    return {**obj, "metadata": md}


async def test_a_typed_clients_writes_store_what_a_checked_clients_do() -> None:
    stored = []
    for typed in (False, True):
        client = await _client(typed=typed)
        await client.create("pods", _pod("p", ports=[{"containerPort": 80}]), namespace="default")
        pod = await client.get("pods", "p", namespace="default")
        await client.update("pods", {**pod, "metadata": {**pod["metadata"], "labels": {"app": "b"}}})
        await client.patch("pods", "p", {"status": {"phase": "Running", "podIP": "10.0.0.1"}},
                           namespace="default", patch_type="strategic", subresource="status")
        stored.append(_comparable(await client.get("pods", "p", namespace="default")))
    assert stored[0] == stored[1]
    assert stored[0]["status"]["phase"] == "Running"


async def test_only_a_typed_clients_bodies_go_unchecked() -> None:
    bad = _pod("p", ports=[{"containerPort": "eighty"}])
    checked = await _client(typed=False)
    with pytest.raises(ApiError) as refused:
        await checked.create("pods", bad, namespace="default")
    assert refused.value.status["code"] == 400 and "cannot unmarshal string" in refused.value.message
    typed = await _client(typed=True)  # a Go client could not have sent it: the decoder does not look,
    with pytest.raises(ApiError) as invalid:  # and validation, which runs for every client, words it
        await typed.create("pods", bad, namespace="default")
    assert invalid.value.status["code"] == 422
    assert invalid.value.message == 'Pod "p" is invalid: spec.containers[0].ports[0].containerPort: Required value'
