"""Traversal attack: ``..``, ``%2e%2e``, slashes (plain and encoded), NUL, ``%`` and very long
names in URL paths and in bodies, against a server on a SQLite data dir.

Upstream's answers: a name in the path that is not a safe path segment is 400 ``Name parameter
invalid`` (the registry's key function, ``path.IsValidPathSegmentName``); an encoded slash is
decoded into one more path segment (404 for the unknown subresource); any other odd name is
simply not found; a body naming such an object is 422 from validation.  Whatever the answer,
nothing is stored under a bad name and no file appears outside the database."""

from __future__ import annotations

import json
import os
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from everynode.apiserver import server as api_server
from everynode.apiserver import tls
from everynode.apiserver.service import ApiService
from everynode.clock import Clock
from everynode.storage.private import ensure_private_dir
from everynode.storage.sqlite import SqliteStore
from tests.support.raw_https import raw_request

TOKEN = b"Bearer traversal-token"
CMS = "/api/v1/namespaces/default/configmaps"
NOT_FOUND = "the server could not find the requested resource"


@pytest.fixture
async def on_disk(tmp_path: Path) -> AsyncIterator[tuple[api_server.ApiServerHandle, ssl.SSLContext, SqliteStore, Path]]:
    data_dir = tmp_path / "data"
    ensure_private_dir(data_dir)
    certs = tls.ensure_certs(data_dir / "pki", hosts=["127.0.0.1"])
    store = SqliteStore(data_dir / "everynode.db")
    handle = await api_server.serve(ApiService(store, clock=Clock()), host="127.0.0.1", port=0, certs=certs,
                                    token="traversal-token", ready=True)
    try:
        yield handle, ssl.create_default_context(cadata=certs.ca_pem.decode()), store, tmp_path
    finally:
        await handle.stop()
        await store.close()


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# (name as written in the URL, the expected code, the expected message) for GET/PUT/PATCH/DELETE by name
IN_PATH = [
    ("..", 400, """Name parameter invalid: "..": may not be '..'"""),
    (".", 400, """Name parameter invalid: ".": may not be '.'"""),
    ("%2e%2e", 400, """Name parameter invalid: "..": may not be '..'"""),
    ("%2E%2E", 400, """Name parameter invalid: "..": may not be '..'"""),
    ("a%25b", 400, """Name parameter invalid: "a%b": may not contain '%'"""),
    ("a%2Fb", 404, NOT_FOUND),
    ("..%2f..%2fetc", 404, NOT_FOUND),
    ("%2e%2e%2f%2e%2e%2fpwned", 404, NOT_FOUND),
    ("a%00b", 404, 'configmaps "a\x00b" not found'),
    ("..%5c..%5cpwned", 404, 'configmaps "..\\..\\pwned" not found'),
    ("x" * 254, 404, f'configmaps "{"x" * 254}" not found'),
    ("y" * 20_000, 404, f'configmaps "{"y" * 20_000}" not found'),  # longer than aiohttp's 8 KiB default line
]


@pytest.mark.parametrize("method", ["GET", "PUT", "PATCH", "DELETE"])
async def test_bad_names_in_the_path_get_upstreams_answers(on_disk: Any, method: str) -> None:
    handle, context, store, root = on_disk
    before = _files(root)
    for name, code, message in IN_PATH:
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": unquote(name)}}).encode()
        content_type = {"PUT": "application/json", "PATCH": "application/merge-patch+json"}.get(method)
        got, _, payload = await raw_request(handle.port, context, method, f"{CMS}/{name}",
                                            body=body if content_type else b"", authorization=TOKEN,
                                            headers={"Content-Type": content_type} if content_type else None)
        status = json.loads(payload)
        assert (got, status["message"]) == (code, message), (method, name[:40])
        assert status["reason"] == {400: "BadRequest", 404: "NotFound"}[code]
    assert store.list("configmaps", namespace=None).items == []
    assert _files(root) - before <= {"data/everynode.db-wal", "data/everynode.db-shm"}


@pytest.mark.parametrize("name", ["..", ".", "../../../tmp/pwned", "a/b", "/", "a\x00b", "a%b", "a\\b", "x" * 254,
                                  "z" * 100_000])
async def test_bad_names_in_a_body_are_422_and_nothing_is_stored(on_disk: Any, name: str) -> None:
    handle, context, store, root = on_disk
    before = _files(root)
    body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}).encode()
    for method, path, content_type in [("POST", CMS, "application/json"),
                                       ("PATCH", f"{CMS}/ok?fieldManager=t", "application/apply-patch+yaml"),
                                       ("POST", "/api/v1/namespaces", "application/json")]:
        if path == "/api/v1/namespaces":
            body = json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}).encode()
        got, _, payload = await raw_request(handle.port, context, method, path, body=body, authorization=TOKEN,
                                            headers={"Content-Type": content_type})
        assert got in (400, 422), (method, path, got, payload[:200])
    assert store.list("configmaps", namespace=None).items == []
    assert {ns["metadata"]["name"] for ns in store.list("namespaces").items} <= {
        "default", "kube-system", "kube-public", "kube-node-lease"}
    assert _files(root) - before <= {"data/everynode.db-wal", "data/everynode.db-shm"}
    assert not os.path.exists("/tmp/pwned")
