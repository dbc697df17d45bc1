"""A real HTTPS API server (MemoryStore, TLS, bearer token) on a free loopback port, with short
server timeouts so the slow-client attacks finish in seconds."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from everynode.apiserver import server as api_server
from everynode.apiserver import tls
from everynode.apiserver.service import ApiService
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore

TOKEN = "security-token"


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[tuple[api_server.ApiServerHandle, ssl.SSLContext]]:
    certs = tls.ensure_certs(tmp_path / "pki", hosts=["127.0.0.1"])
    handle = await api_server.serve(ApiService(MemoryStore(), clock=Clock()), host="127.0.0.1", port=0,
                                    certs=certs, token=TOKEN, ready=True, read_header_timeout=1.0,
                                    idle_timeout=1.0, request_timeout=2.0)
    context = ssl.create_default_context(cadata=certs.ca_pem.decode())
    try:
        yield handle, context
    finally:
        await handle.stop()
