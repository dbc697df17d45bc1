"""The namespace controller against the in-process API, on a virtual-time loop: a deleted
namespace turns Terminating, refuses new content with upstream's message, is emptied, and goes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.service import ApiService
from everynode.client.informer import SharedInformerFactory
from everynode.client.inprocess import InProcessClient
from everynode.controllers.garbagecollector import GarbageCollector
from everynode.controllers.namespace import NamespaceController, namespaced_resources, termination_estimate
from everynode.storage.memory import MemoryStore
from everynode.virtualtime import run_virtual, virtual_clock

Obj = dict[str, Any]


async def _scenario() -> None:
    clock = virtual_clock()
    client = InProcessClient(ApiService(MemoryStore(), clock=clock))
    informers = SharedInformerFactory(client)
    controllers = [NamespaceController(client, informers=informers, clock=clock),
                   GarbageCollector(client, informers=informers, clock=clock)]
    for c in controllers:
        await c.start()
    try:
        await client.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}})
        await client.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                           "metadata": {"name": "cfg", "namespace": "doomed"}, "data": {"a": "b"}})
        await client.create("pods", {"apiVersion": "v1", "kind": "Pod",
                                     "metadata": {"name": "p", "namespace": "doomed",
                                                  "finalizers": ["example.com/hold"]},
                                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        await client.create("daemonsets.apps", {
            "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ds", "namespace": "doomed"},
            "spec": {"selector": {"matchLabels": {"app": "x"}},
                     "template": {"metadata": {"labels": {"app": "x"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})

        await client.delete("namespaces", "doomed", propagation_policy="Background")
        ns = await client.get("namespaces", "doomed")
        assert ns["status"]["phase"] == "Terminating"
        assert ns["metadata"].get("deletionTimestamp")

        with pytest.raises(ApiError) as refused:
            await client.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                               "metadata": {"name": "late", "namespace": "doomed"}})
        assert refused.value.code == 403
        assert refused.value.message == ('configmaps "late" is forbidden: unable to create new content in '
                                         'namespace doomed because it is being terminated')

        # Contents go; the held pod keeps the namespace until its finalizer is removed.
        for _ in range(100):
            cms = await client.list("configmaps", namespace="doomed")
            dss = await client.list("daemonsets.apps", namespace="doomed")
            if not cms["items"] and not dss["items"]:
                break
            await asyncio.sleep(0.5)
        assert not cms["items"] and not dss["items"]
        await asyncio.sleep(30)
        pod = await client.get("pods", "p", namespace="doomed")
        assert pod["metadata"].get("deletionTimestamp")
        assert (await client.get("namespaces", "doomed"))["spec"]["finalizers"] == ["kubernetes"]

        await client.patch("pods", "p", {"metadata": {"finalizers": None}}, namespace="doomed")
        for _ in range(200):
            try:
                await client.get("namespaces", "doomed")
            except ApiError as e:
                assert e.code == 404
                break
            await asyncio.sleep(0.5)
        else:
            raise AssertionError("namespace was never finalized")
    finally:
        for c in reversed(controllers):
            await c.stop()
        await informers.stop()


def test_deleting_a_namespace_empties_and_removes_it() -> None:
    run_virtual(_scenario())


def test_events_are_deleted_last() -> None:
    keys = namespaced_resources()
    assert "pods" in keys and "configmaps" in keys and "daemonsets.apps" in keys
    events = [i for i, k in enumerate(keys) if k in ("events", "events.events.k8s.io")]
    assert events and min(events) > max(i for i, k in enumerate(keys) if k not in ("events", "events.events.k8s.io"))


@pytest.mark.parametrize(("pods", "expected"), [
    ([], 0.0),
    ([{"metadata": {"deletionGracePeriodSeconds": 30}, "spec": {"terminationGracePeriodSeconds": 5}}], 30.0),
    ([{"metadata": {}, "spec": {"terminationGracePeriodSeconds": 12}},
      {"metadata": {"deletionGracePeriodSeconds": 0}, "spec": {}}], 12.0),
])
def test_termination_estimate(pods: list[Obj], expected: float) -> None:
    assert termination_estimate(pods) == expected
