"""Deployments and ReplicaSets through the API service: generation, the status subresource,
the ``scale`` subresource (GET, PUT with optimistic concurrency, merge and JSON patches, 422 for
a negative count) and the Table columns kubectl prints."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.api.registry import resource
from everynode.apiserver import tables
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore

Obj = dict[str, Any]
NS = "default"
DEPLOY = resource("deployments.apps")
RS = resource("replicasets.apps")


@pytest.fixture
def api() -> ApiService:
    return ApiService(MemoryStore(), clock=Clock())


def body(kind: str = "Deployment", replicas: int = 3) -> Obj:
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web", "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}


async def test_generation_moves_with_spec_and_annotations_not_status(api: ApiService) -> None:
    opts = RequestOptions()
    created = await api.create(DEPLOY, NS, body(), opts=opts)
    assert created["metadata"]["generation"] == 1 and created["status"] == {}
    patched, _ = await api.patch(DEPLOY, NS, "web", {"metadata": {"annotations": {"kubernetes.io/change-cause": "x"}}},
                                 "merge", opts=opts)
    assert patched["metadata"]["generation"] == 2  # annotations are handed to the ReplicaSet
    patched, _ = await api.patch(DEPLOY, NS, "web", {"status": {"replicas": 3}, "spec": {"replicas": 9},
                                                     "metadata": {"labels": {"x": "y"},
                                                                  "annotations": {"deployment.kubernetes.io/revision": "1"}}},
                                 "merge", subresource="status", opts=opts)
    assert patched["status"] == {"replicas": 3} and patched["spec"]["replicas"] == 3
    assert "x" not in (patched["metadata"].get("labels") or {})  # status writes keep labels …
    assert patched["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"  # … not annotations
    assert patched["metadata"]["generation"] == 2
    rs = await api.create(RS, NS, body("ReplicaSet"), opts=opts)
    assert rs["status"] == {"replicas": 0} and rs["metadata"]["generation"] == 1


@pytest.mark.parametrize("rt", [DEPLOY, RS], ids=lambda rt: rt.kind)
async def test_scale_subresource(api: ApiService, rt: Any) -> None:
    opts = RequestOptions()
    await api.create(rt, NS, body(rt.kind), opts=opts)
    scale = await api.get(rt, NS, "web", subresource="scale")
    assert scale["kind"] == "Scale" and scale["apiVersion"] == "autoscaling/v1"
    assert scale["spec"] == {"replicas": 3} and scale["status"] == {"replicas": 0, "selector": "app=web"}

    stale = {**scale, "metadata": {**scale["metadata"], "resourceVersion": "1"}, "spec": {"replicas": 4}}
    with pytest.raises(ApiError) as info:
        await api.update(rt, NS, "web", stale, subresource="scale", opts=opts)
    assert info.value.code == 409

    updated, created = await api.update(rt, NS, "web", {**scale, "spec": {"replicas": 4}}, subresource="scale",
                                        opts=opts)
    assert not created and updated["spec"] == {"replicas": 4}
    obj = await api.get(rt, NS, "web")
    assert obj["spec"]["replicas"] == 4 and obj["metadata"]["generation"] == 2

    patched, _ = await api.patch(rt, NS, "web", [{"op": "replace", "path": "/spec/replicas", "value": 2}], "json",
                                 subresource="scale", opts=opts)
    assert patched["spec"] == {"replicas": 2}
    patched, _ = await api.patch(rt, NS, "web", {"spec": {"replicas": 0}}, "merge", subresource="scale", opts=opts)
    assert patched["spec"] == {}  # omitempty, as Go writes a zero

    with pytest.raises(ApiError) as info:
        await api.patch(rt, NS, "web", {"spec": {"replicas": -1}}, "merge", subresource="scale", opts=opts)
    assert info.value.code == 422
    assert info.value.message == \
        'Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0'
    with pytest.raises(ApiError) as info:
        await api.get(rt, NS, "nothere", subresource="scale")
    assert info.value.code == 404


async def test_selector_immutable_and_mismatch_answers(api: ApiService) -> None:
    opts = RequestOptions()
    with pytest.raises(ApiError) as info:
        bad = body()
        bad["spec"]["selector"] = {"matchLabels": {"app": "db"}}
        await api.create(DEPLOY, NS, bad, opts=opts)
    assert info.value.code == 422
    assert "spec.template.metadata.labels: Invalid value" in info.value.message
    assert "`selector` does not match template `labels`" in info.value.message
    await api.create(DEPLOY, NS, body(), opts=opts)
    with pytest.raises(ApiError) as info:
        await api.patch(DEPLOY, NS, "web", {"spec": {"selector": {"matchLabels": {"app": "x"}},
                                                     "template": {"metadata": {"labels": {"app": "x"}}}}},
                        "merge", opts=opts)
    assert info.value.code == 422 and info.value.message.endswith("field is immutable")


def test_table_columns() -> None:
    names = [c["name"] for c in tables.column_definitions("deployments.apps")]
    assert names == ["Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"]
    names = [c["name"] for c in tables.column_definitions("replicasets.apps")]
    assert names == ["Name", "Desired", "Current", "Ready", "Age", "Containers", "Images", "Selector"]
    d = body()
    d["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    d["status"] = {"replicas": 3, "readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}
    now = tables.parse_time("2026-01-01T00:05:00Z")
    assert tables.table_row(DEPLOY, d, now=now)["cells"] == ["web", "2/3", 3, 2, "5m", "nginx", "nginx", "app=web"]
    r = body("ReplicaSet")
    r["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    r["status"] = {"replicas": 3, "readyReplicas": 1}
    assert tables.table_row(RS, r, now=now)["cells"] == ["web", 3, 3, 1, "5m", "nginx", "nginx", "app=web"]
