"""`everynode why` reads and never writes: every request the live reader makes is a GET or a
LIST, and the ClusterRole shipped for it (examples/everynode-why-rbac.yaml) grants exactly the
get/list it needs — no more resources, no other verbs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import yaml

from everynode.api import registry
from everynode.apiserver.service import ApiService
from everynode.client.inprocess import InProcessClient
from everynode.clock import Clock
from everynode.product.clusterdump import LIVE_RESOURCES, read_live
from everynode.product.why import explain
from everynode.storage.memory import MemoryStore

RBAC = Path(__file__).resolve().parents[2] / "examples" / "everynode-why-rbac.yaml"


class Recording:
    """A client proxy that records every method called on it."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.calls: list[tuple[str, str]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            self.calls.append((name, str(args[0]) if args else ""))
            return attr(*args, **kwargs)

        return call


def test_live_reading_only_gets_and_lists() -> None:
    async def run() -> Recording:
        client = InProcessClient(ApiService(MemoryStore(), clock=Clock()))
        await client.create("nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
        ds = await client.create("daemonsets.apps", {
            "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {
                "metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
        recording = Recording(client)
        objects = await read_live(recording, namespace="default")  # type: ignore[arg-type]
        exp = explain(ds, objects, now=Clock().now())
        assert [nv.verdict for nv in exp.nodes] == ["missing"]  # no controller runs here
        return recording

    recording = asyncio.run(run())
    assert {name for name, _ in recording.calls} == {"list"}
    assert sorted(r for _, r in recording.calls) == sorted(r for r, _, _, _ in LIVE_RESOURCES)


def test_the_cluster_role_grants_exactly_what_is_read() -> None:
    docs = list(yaml.safe_load_all(RBAC.read_text()))
    (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
    granted = {(group, res, verb) for rule in role["rules"] for group in rule["apiGroups"]
               for res in rule["resources"] for verb in rule["verbs"]}
    needed = {(registry.resource(r).group, registry.resource(r).plural, verb)
              for r, _, _, _ in LIVE_RESOURCES for verb in ("get", "list")}
    assert granted == needed
    (binding,) = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
