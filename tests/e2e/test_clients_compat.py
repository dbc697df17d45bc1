"""Compatibility with a second official client (kubernetes_asyncio) and the metrics endpoint,
against a full embedded cluster (everynode.Cluster over HTTPS)."""

from __future__ import annotations

import asyncio
import base64
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from everynode import Cluster

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    with Cluster(nodes=2, pod_startup=0.1) as c:
        yield c


def configmap(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": labels}, "data": {"k": name}}


def test_kubernetes_asyncio_crud_list_paginate_and_resume_a_watch(cluster: Cluster) -> None:
    from kubernetes_asyncio import client, config, watch

    async def main() -> None:
        cfg = client.Configuration()
        await config.load_kube_config(config_file=str(cluster.kubeconfig), client_configuration=cfg)
        async with client.ApiClient(cfg) as api:
            core = client.CoreV1Api(api)
            await core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kasync"}})
            for i in range(5):
                await core.create_namespaced_config_map("kasync", configmap(f"cm-{i}", team="a" if i % 2 else "b"))
            got = await core.read_namespaced_config_map("cm-1", "kasync")
            assert got.data == {"k": "cm-1"}
            selected = await core.list_namespaced_config_map("kasync", label_selector="team=a")
            assert sorted(cm.metadata.name for cm in selected.items) == ["cm-1", "cm-3"]
            page = await core.list_namespaced_config_map("kasync", limit=2)
            names = [cm.metadata.name for cm in page.items]
            while page.metadata._continue:
                page = await core.list_namespaced_config_map("kasync", limit=2, _continue=page.metadata._continue)
                names += [cm.metadata.name for cm in page.items]
            # every namespace also holds the root-CA publisher's kube-root-ca.crt, as on a real cluster
            assert names == [f"cm-{i}" for i in range(5)] + ["kube-root-ca.crt"]
            rv = page.metadata.resource_version
            await core.patch_namespaced_config_map("cm-0", "kasync", {"data": {"k": "changed"}})
            await core.delete_namespaced_config_map("cm-4", "kasync")
            seen = []
            w = watch.Watch()
            # kubernetes_asyncio sends allowWatchBookmarks=True (Python spelling): must be accepted.
            async with w.stream(core.list_namespaced_config_map, "kasync", resource_version=rv,
                                allow_watch_bookmarks=True, timeout_seconds=5) as stream:
                async for event in stream:
                    if event["type"] == "BOOKMARK":
                        continue
                    seen.append((event["type"], event["object"].metadata.name))
                    if len(seen) == 2:
                        break
            assert seen == [("MODIFIED", "cm-0"), ("DELETED", "cm-4")]
            with pytest.raises(client.ApiException) as err:
                await core.read_namespaced_config_map("cm-4", "kasync")
            assert err.value.status == 404

    asyncio.run(main())


def test_metrics_are_prometheus_text_with_api_queue_and_object_figures(cluster: Cluster) -> None:
    kubeconfig = yaml.safe_load(Path(cluster.kubeconfig).read_text())
    token = kubeconfig["users"][0]["user"]["token"]
    ca = Path(cluster.kubeconfig).parent / "ca.pem"
    ca.write_bytes(base64.b64decode(kubeconfig["clusters"][0]["cluster"]["certificate-authority-data"]))
    ctx = ssl.create_default_context(cafile=str(ca))
    cluster.client.list("pods", namespace="default")  # in-process; the HTTPS GET below is counted
    req = urllib.request.Request(f"{cluster.url}/api/v1/namespaces/default/pods",
                                 headers={"Authorization": f"Bearer {token}"})
    urllib.request.urlopen(req, context=ctx).read()
    req = urllib.request.Request(f"{cluster.url}/metrics", headers={"Authorization": f"Bearer {token}"})
    text = urllib.request.urlopen(req, context=ctx).read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    requests = families["apiserver_request"]
    assert any(s.labels.get("resource") == "pods" and s.labels.get("verb") == "LIST" and s.labels.get("code") == "200"
               for s in requests.samples)
    assert "apiserver_request_duration_seconds" in families
    depths = {s.labels["name"] for s in families["workqueue_depth"].samples}
    assert {"daemonset", "garbagecollector", "namespace"} <= depths
    objects = {s.labels["resource"]: s.value for s in families["apiserver_storage_objects"].samples}
    assert objects["nodes"] == 3.0 and objects["namespaces"] >= 4.0
    unauthenticated = urllib.request.Request(f"{cluster.url}/metrics")
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(unauthenticated, context=ctx)
    assert err.value.code == 401
