"""Both transports through the same scenarios: CRUD, list/pagination, patches, watch, subresources,
and the client-layer machinery (informer, events, leader election) on top of each.

The in-process client calls the ApiService over a MemoryStore; the HTTP client reaches the same
service through the embedded HTTPS server (``everynode.apiserver.server.serve``) with a kubeconfig
written by the server's kubeconfig writer and read by ``everynode.client.kubeconfig``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from pathlib import Path
from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.api.registry import resource
from everynode.apiserver.service import ApiService
from everynode.client import kubeconfig
from everynode.client.events import EventRecorder
from everynode.client.http import HttpClient, _generic_status
from everynode.client.informer import Informer
from everynode.client.inprocess import InProcessClient
from everynode.client.leaderelection import LEASES, LeaderElector
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore

Obj = dict[str, Any]
NS = "it"


HISTORY = 50  # a small watch window, so that "too old resourceVersion" is reachable


async def _service() -> ApiService:
    service = ApiService(MemoryStore(history=HISTORY), clock=Clock())
    await service.start()
    return service


async def _stop(obj: Any) -> None:
    for name in ("stop", "close", "aclose"):
        fn = getattr(obj, name, None)
        if fn is not None:
            result = fn()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                await result
            return


@pytest.fixture(params=["inprocess", "http"])
async def client(request, tmp_path: Path):
    service = await _service()
    server = None
    if request.param == "inprocess":
        c: Any = InProcessClient(service)
    else:
        from everynode.apiserver import kubeconfig as kubeconfig_writer
        from everynode.apiserver import server as http_server
        from everynode.apiserver import tls

        certs = tls.ensure_certs(None, hosts=["127.0.0.1"])
        token = "it-token-0123456789"
        server = await http_server.serve(service, host="127.0.0.1", port=0, certs=certs, token=token)
        path = tmp_path / "kubeconfig"
        kubeconfig_writer.write_kubeconfig(path, server=server.url, ca_pem=certs.ca_pem, token=token)
        c = HttpClient.from_kubeconfig(path)
    try:
        await c.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    except ApiError as exc:
        if exc.code != 409:
            raise
    yield c
    await c.close()
    if server is not None:
        await _stop(server)
    await _stop(service)


def cm(name: str, data: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> Obj:
    md: Obj = {"name": name, "namespace": NS}
    if labels:
        md["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": data or {"k": "v"}}


def pod(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}}


async def test_crud_and_errors(client):
    body = cm("one")
    created = await client.create("configmaps", body)
    assert body == cm("one")  # the caller's dict is untouched
    md = created["metadata"]
    assert md["uid"] and md["resourceVersion"] and md["creationTimestamp"]
    assert created["kind"] == "ConfigMap"

    got = await client.get("configmaps", "one", namespace=NS)
    assert got["metadata"]["uid"] == md["uid"] and got["data"] == {"k": "v"}

    with pytest.raises(ApiError) as exc:
        await client.create("configmaps", cm("one"))
    assert (exc.value.code, exc.value.reason) == (409, "AlreadyExists")

    new = {**got, "data": {"k": "v2"}}
    updated = await client.update("configmaps", new)
    assert updated["data"] == {"k": "v2"}
    assert int(updated["metadata"]["resourceVersion"]) > int(md["resourceVersion"])

    stale = {**got, "data": {"k": "v3"}}  # still carries the old resourceVersion
    with pytest.raises(ApiError) as exc:
        await client.update("configmaps", stale)
    assert (exc.value.code, exc.value.reason) == (409, "Conflict")

    with pytest.raises(ApiError) as exc:
        await client.get("configmaps", "missing", namespace=NS)
    assert (exc.value.code, exc.value.reason) == (404, "NotFound")
    assert exc.value.message == 'configmaps "missing" not found'

    await client.delete("configmaps", "one", namespace=NS)
    with pytest.raises(ApiError) as exc:
        await client.get("configmaps", "one", namespace=NS)
    assert exc.value.code == 404


async def test_dry_run_stores_nothing(client):
    await client.create("configmaps", cm("dry"), dry_run=True)
    with pytest.raises(ApiError) as exc:
        await client.get("configmaps", "dry", namespace=NS)
    assert exc.value.code == 404


async def test_list_selectors_and_pagination(client):
    for i in range(5):
        await client.create("configmaps", cm(f"c{i}", labels={"tier": "a" if i % 2 else "b"}))
    full = await client.list("configmaps", namespace=NS)
    assert full["kind"] == "ConfigMapList"
    assert [o["metadata"]["name"] for o in full["items"]] == [f"c{i}" for i in range(5)]
    sel = await client.list("configmaps", namespace=NS, label_selector="tier=a")
    assert [o["metadata"]["name"] for o in sel["items"]] == ["c1", "c3"]
    names: list[str] = []
    cont = None
    pages = 0
    while True:
        page = await client.list("configmaps", namespace=NS, limit=2, continue_token=cont)
        pages += 1
        names += [o["metadata"]["name"] for o in page["items"]]
        cont = page["metadata"].get("continue")
        if not cont:
            break
    assert names == [f"c{i}" for i in range(5)] and pages == 3
    everywhere = await client.list("configmaps")
    assert {o["metadata"]["name"] for o in everywhere["items"]} >= set(names)


async def test_patches(client):
    await client.create("configmaps", cm("p", {"a": "1"}))
    out = await client.patch("configmaps", "p", {"data": {"b": "2"}}, namespace=NS, patch_type="merge")
    assert out["data"] == {"a": "1", "b": "2"}
    out = await client.patch("configmaps", "p", [{"op": "remove", "path": "/data/a"}], namespace=NS,
                             patch_type="json")
    assert out["data"] == {"b": "2"}
    out = await client.patch("configmaps", "p", {"metadata": {"labels": {"x": "y"}}}, namespace=NS,
                             patch_type="strategic")
    assert out["metadata"]["labels"] == {"x": "y"}
    applied = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "p", "namespace": NS},
               "data": {"c": "3"}}
    out = await client.patch("configmaps", "p", applied, namespace=NS, patch_type="apply",
                             field_manager="it-test", force=True)
    assert out["data"]["c"] == "3"
    with pytest.raises(ApiError) as exc:
        await client.patch("configmaps", "nope", {"data": {}}, namespace=NS)
    assert exc.value.code == 404


async def test_watch_sees_changes_in_order(client):
    listed = await client.list("configmaps", namespace=NS)
    rv = listed["metadata"]["resourceVersion"]
    events: list[tuple[str, str]] = []

    async def consume() -> None:
        stream = client.watch("configmaps", namespace=NS, resource_version=rv, timeout_seconds=30)
        async with contextlib.aclosing(stream):  # closing the stream ends the request
            async for ev in stream:
                if ev["type"] == "BOOKMARK":
                    continue
                events.append((ev["type"], ev["object"]["metadata"]["name"]))
                if ev["type"] == "DELETED":
                    return

    task = asyncio.ensure_future(consume())
    await client.create("configmaps", cm("w"))
    await client.patch("configmaps", "w", {"data": {"k": "v2"}}, namespace=NS)
    await client.delete("configmaps", "w", namespace=NS)
    await asyncio.wait_for(task, 10)
    assert events == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_watch_from_expired_resource_version_raises_410(client):
    first = await client.create("configmaps", cm("old"))
    for i in range(HISTORY + 5):
        await client.patch("configmaps", "old", {"data": {"k": str(i)}}, namespace=NS)
    stream = client.watch("configmaps", namespace=NS, resource_version=first["metadata"]["resourceVersion"])
    with pytest.raises(ApiError) as exc:
        async with contextlib.aclosing(stream):
            async for _ev in stream:
                pass
    assert (exc.value.code, exc.value.reason) == (410, "Expired")


async def test_binding_subresource_and_status(client):
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "it-node"}}
    try:
        await client.create("nodes", node)
    except ApiError as exc:
        if exc.code != 409:
            raise
    await client.create("pods", pod("b"))
    await client.create_subresource("pods", "b", "binding",
                                    {"apiVersion": "v1", "kind": "Binding",
                                     "metadata": {"name": "b", "namespace": NS},
                                     "target": {"apiVersion": "v1", "kind": "Node", "name": "it-node"}},
                                    namespace=NS)
    bound = await client.get("pods", "b", namespace=NS)
    assert bound["spec"]["nodeName"] == "it-node"
    status = {**bound, "status": {**bound.get("status", {}), "phase": "Running"}}
    out = await client.update_status("pods", status)
    assert out["status"]["phase"] == "Running"


async def test_informer_over_transport(client):
    await client.create("configmaps", cm("i0", labels={"app": "x"}))
    inf = Informer(client, "configmaps", namespace=NS, page_size=1,
                   indexers={"app": lambda o: [o["metadata"].get("labels", {}).get("app", "")]})
    seen: list[str] = []
    inf.add_handler(on_add=lambda o: seen.append(o["metadata"]["name"]))
    inf.start()
    try:
        await asyncio.wait_for(inf.wait_synced(), 10)
        assert inf.get(f"{NS}/i0")["kind"] == "ConfigMap"
        await client.create("configmaps", cm("i1", labels={"app": "x"}))

        async def wait() -> None:
            while len(inf.by_index("app", "x")) < 2:
                await asyncio.sleep(0.005)
        await asyncio.wait_for(wait(), 10)
        assert seen == ["i0", "i1"]
    finally:
        await inf.stop()


async def test_events_recorded_and_aggregated(client):
    target = await client.create("configmaps", cm("ev"))
    rec = EventRecorder(client, component="it-controller", clock=Clock())
    rec.event(target, "Normal", "Tested", "hello")
    rec.event(target, "Normal", "Tested", "hello")
    await rec.flush()
    await rec.close()
    assert rec.stats.failed == 0
    events = await client.list("events", namespace=NS)
    mine = [e for e in events["items"] if e["involvedObject"].get("name") == "ev"]
    assert len(mine) == 1 and mine[0]["count"] == 2
    assert mine[0]["source"]["component"] == "it-controller"


async def test_leader_election_over_transport(client):
    a = LeaderElector(client, lease_name="it-lock", namespace=NS, identity="a", lease_duration=3,
                      renew_deadline=2, retry_period=0.1)
    b = LeaderElector(client, lease_name="it-lock", namespace=NS, identity="b", lease_duration=3,
                      renew_deadline=2, retry_period=0.1)
    assert await a.try_acquire_or_renew()
    assert not await b.try_acquire_or_renew()
    lease = await client.get(LEASES, "it-lock", namespace=NS)
    assert lease["spec"]["holderIdentity"] == "a"
    assert await a.release()
    assert await b.try_acquire_or_renew()
    lease = await client.get(LEASES, "it-lock", namespace=NS)
    assert lease["spec"]["holderIdentity"] == "b" and lease["spec"]["leaseTransitions"] == 1


# -- HTTP-only pieces that need no server ------------------------------------------------------------


@pytest.mark.parametrize(("code", "method", "reason", "message"), [
    (409, "POST", "AlreadyExists", "the server reported a conflict (post configmaps x)"),
    (409, "PUT", "Conflict", "the server reported a conflict (put configmaps x)"),
    (404, "GET", "NotFound", "the server could not find the requested resource (get configmaps x)"),
    (502, "GET", "InternalError",
     'an error on the server ("<html>bad gateway</html>") has prevented the request from succeeding (get configmaps x)'),
    (418, "GET", "Unknown",
     "the server responded with the status code 418 but did not return more information (get configmaps x)"),
])
def test_non_status_error_bodies_are_synthesized_like_client_go(code, method, reason, message):
    st = _generic_status(code, method, resource("configmaps"), "x", b"<html>bad gateway</html>", None)
    assert (st["code"], st["reason"], st["message"]) == (code, reason, message)
    assert st["details"]["causes"][0]["reason"] == "UnexpectedServerResponse"


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_kubeconfig_reader_resolves_context(tmp_path: Path):
    ca = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    (tmp_path / "token").write_text("file-token\n")
    cfg = _write(tmp_path / "config", f"""
apiVersion: v1
kind: Config
current-context: one
clusters:
- name: c1
  cluster:
    server: https://127.0.0.1:6443/
    certificate-authority-data: {base64.b64encode(ca).decode()}
- name: c2
  cluster: {{server: "https://10.0.0.1", insecure-skip-tls-verify: true}}
users:
- name: u1
  user: {{token: abc}}
- name: u2
  user: {{tokenFile: token}}
contexts:
- name: one
  context: {{cluster: c1, user: u1, namespace: team}}
- name: two
  context: {{cluster: c2, user: u2}}
""")
    one = kubeconfig.load(cfg)
    assert (one.server, one.ca_data, one.token, one.namespace) == ("https://127.0.0.1:6443", ca, "abc", "team")
    two = kubeconfig.load(cfg, context="two")
    assert two.insecure_skip_tls_verify and two.namespace == "default"
    assert two.bearer_token() == "file-token"
    assert two.token_file == str(tmp_path / "token")
    with pytest.raises(kubeconfig.KubeconfigError, match='context "three" does not exist'):
        kubeconfig.load(cfg, context="three")


def test_kubeconfig_reader_rejects_exec_plugins(tmp_path: Path):
    cfg = _write(tmp_path / "config", """
current-context: x
clusters: [{name: c, cluster: {server: "https://k"}}]
users: [{name: u, user: {exec: {command: aws}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
""")
    with pytest.raises(kubeconfig.KubeconfigError, match="not supported"):
        kubeconfig.load(cfg)


def test_kubeconfig_env_merges_files_first_wins(tmp_path: Path, monkeypatch):
    a = _write(tmp_path / "a", """
current-context: ctx
clusters: [{name: c, cluster: {server: "https://first"}}]
contexts: [{name: ctx, context: {cluster: c}}]
""")
    b = _write(tmp_path / "b", """
current-context: other
clusters: [{name: c, cluster: {server: "https://second"}}]
contexts: [{name: other, context: {cluster: c}}]
""")
    monkeypatch.setenv("KUBECONFIG", f"{a}:{b}")
    access = kubeconfig.load()
    assert access.server == "https://first" and access.context == "ctx"
    assert kubeconfig.load(context="other").server == "https://first"


# -- fault injection (in-process transport) ------------------------------------------------------------


async def test_fault_injection_conflicts_store_nothing():
    from everynode.client.faults import FaultInjector

    service = await _service()
    faults = FaultInjector(rate=1.0, seed=1, kinds=("conflict",))
    c = InProcessClient(service, faults=faults)
    with pytest.raises(ApiError) as exc:
        await c.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "f"}})
    assert (exc.value.code, exc.value.reason) == (409, "Conflict")
    faults.enabled = False
    with pytest.raises(ApiError) as exc:
        await c.get("namespaces", "f")
    assert exc.value.code == 404
    assert faults.injected["conflict"] == 1


async def test_fault_injection_timeouts_may_hide_a_successful_write():
    from everynode.client.faults import FaultInjector

    service = await _service()
    faults = FaultInjector(rate=1.0, seed=7, kinds=("timeout",))
    c = InProcessClient(service, faults=faults)
    for i in range(20):
        with pytest.raises(TimeoutError):
            await c.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"t{i}"}})
    stored = (await c.list("namespaces"))["items"]
    written = [o for o in stored if o["metadata"]["name"].startswith("t")]
    assert 0 < len(written) < 20  # some timed out after the write, some before
    # Reads are never faulted.
    assert (await c.get("namespaces", written[0]["metadata"]["name"]))["kind"] == "Namespace"


async def test_fault_injection_rate_and_resource_filter():
    from everynode.client.faults import FaultInjector

    service = await _service()
    faults = FaultInjector(rate=0.3, seed=3, kinds=("internal",), resources=["configmaps"])
    c = InProcessClient(service, faults=faults)
    await c.create("namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    failures = 0
    for i in range(100):
        try:
            await c.create("configmaps", cm(f"r{i}"))
        except ApiError as exc:
            assert exc.code == 500 and exc.reason == "InternalError"
            failures += 1
    assert 10 < failures < 60
    assert failures == faults.injected["internal"]
