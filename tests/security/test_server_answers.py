"""Attacks 5 and 6 on a real HTTPS server: slowloris and idle sockets, plain HTTP on the TLS port,
far-future watches, failing JSON patches, /livez/<anything>, and a flood of malformed requests
in the log."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import time
from typing import Any

import pytest

from everynode.apiserver import server as api_server
from tests.security.conftest import TOKEN
from tests.support.raw_https import raw_request


async def request(handle: api_server.ApiServerHandle, context: ssl.SSLContext, method: str, path: str,
                  body: bytes = b"", headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    code, _, payload = await raw_request(handle.port, context, method, path, body=body,
                                         authorization=f"Bearer {TOKEN}".encode(), headers=headers)
    return code, payload


async def _closed_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), seconds) == b""
    except (TimeoutError, ConnectionError, ssl.SSLError):
        return False


async def test_slowloris_partial_headers_are_cut_at_the_read_header_timeout(served: Any) -> None:
    handle, context = served
    sockets = []
    started = time.monotonic()
    for _ in range(40):
        reader, writer = await asyncio.open_connection("127.0.0.1", handle.port, ssl=context,
                                                       server_hostname="127.0.0.1")
        writer.write(b"GET /api HTTP/1.1\r\nHost: x\r\n")  # never finishes its headers
        sockets.append((reader, writer))
    silent = [await asyncio.open_connection("127.0.0.1", handle.port) for _ in range(20)]  # never say hello
    results = await asyncio.gather(*(_closed_within(r, 5) for r, _ in sockets + silent))
    assert all(results), results.count(False)
    assert time.monotonic() - started < 5
    for _, w in sockets + silent:
        w.close()


async def test_idle_keepalive_connections_are_closed(served: Any) -> None:
    handle, context = served
    reader, writer = await asyncio.open_connection("127.0.0.1", handle.port, ssl=context, server_hostname="127.0.0.1")
    writer.write(f"GET /version HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n".encode())
    await reader.readuntil(b"\r\n\r\n")
    started = time.monotonic()
    await asyncio.wait_for(reader.read(), 5)  # returns at EOF: the server closed the idle connection
    assert time.monotonic() - started < 4
    writer.close()


async def test_plain_http_to_the_tls_port_gets_gos_400(served: Any) -> None:
    handle, _ = served
    reader, writer = await asyncio.open_connection("127.0.0.1", handle.port)
    writer.write(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
    data = await asyncio.wait_for(reader.read(), 5)
    assert data == b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
    writer.close()


async def test_watch_at_a_far_future_resource_version_is_504_after_waiting(served: Any) -> None:
    handle, context = served
    started = time.monotonic()
    code, body = await request(handle, context, "GET", "/api/v1/namespaces?watch=1&resourceVersion=999999999")
    waited = time.monotonic() - started
    status = json.loads(body)
    assert code == 504 and status["reason"] == "Timeout"
    assert status["message"].startswith("Timeout: Too large resource version: 999999999, current: ")
    assert status["details"]["causes"][0]["reason"] == "ResourceVersionTooLarge"
    assert 2.5 < waited < 6


async def test_failing_json_patch_is_422_with_its_cause(served: Any) -> None:
    handle, context = served
    patch = json.dumps([{"op": "replace", "path": "/spec/nothing", "value": 1}]).encode()
    code, body = await request(handle, context, "PATCH", "/api/v1/namespaces/default", patch,
                               {"Content-Type": "application/json-patch+json"})
    status = json.loads(body)
    assert code == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"] == [
        {"message": "replace operation does not apply: doc is missing key: /spec/nothing: missing value"}]
    patch = json.dumps([{"op": "test", "path": "/metadata/name", "value": "other"}]).encode()
    code, body = await request(handle, context, "PATCH", "/api/v1/namespaces/default", patch,
                               {"Content-Type": "application/json-patch+json"})
    assert json.loads(body)["details"]["causes"][0]["message"] == "testing value /metadata/name failed: test failed"


async def test_apply_of_a_list_spec_is_400_not_500(served: Any) -> None:
    handle, context = served
    body = b"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: x, namespace: default}\nspec: [1, 2]\n"
    code, data = await request(handle, context, "PATCH",
                               "/apis/apps/v1/namespaces/default/daemonsets/x?fieldManager=t", body,
                               {"Content-Type": "application/apply-patch+yaml"})
    status = json.loads(data)
    assert code == 400 and "AttributeError" not in status["message"]
    assert status["message"].endswith(".spec: expected map, got &{[1 2]}")


@pytest.mark.parametrize("path,code", [("/livez/anything", 404), ("/readyz/x/y", 404), ("/livez/ping", 200),
                                       ("/readyz/etcd", 200), ("/livez", 200), ("/healthz/nope", 404)])
async def test_probe_subpaths(served: Any, path: str, code: int) -> None:
    handle, context = served
    got, _ = await request(handle, context, "GET", path)
    assert got == code


async def test_malformed_requests_are_logged_in_one_short_rate_limited_line(
        served: Any, caplog: pytest.LogCaptureFixture) -> None:
    handle, context = served
    caplog.set_level(logging.DEBUG, logger="aiohttp.server")
    for _ in range(20):
        reader, writer = await asyncio.open_connection("127.0.0.1", handle.port, ssl=context,
                                                       server_hostname="127.0.0.1")
        writer.write(b"GET /\x00\x01 HTTP/1.1\r\nHost: " + b"x" * 60_000 + b"\r\n\r\n")
        await asyncio.wait_for(reader.read(), 5)
        writer.close()
    records = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert 1 <= len(records) <= 2
    text = "\n".join(r.getMessage() for r in records)
    assert len(text) < 400 and all(r.exc_info is None for r in records)


async def test_a_slow_non_watch_request_gets_504(served: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    handle, context = served
    service = handle._handler.service

    async def slow_get(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(10)

    monkeypatch.setattr(service, "get", slow_get)
    started = time.monotonic()
    code, body = await request(handle, context, "GET", "/api/v1/namespaces/default")
    assert code == 504 and time.monotonic() - started < 5
    assert json.loads(body)["message"] == ("Timeout: request did not complete within requested timeout - "
                                           "context deadline exceeded")
