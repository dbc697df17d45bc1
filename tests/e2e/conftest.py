"""An HTTPS API server in a background thread, and real kubectl pointed at it.

The server runs the real stack (ApiService over MemoryStore, aiohttp, TLS, bearer token) on its
own event loop in a daemon thread, on a free port, with a kubeconfig in a temp dir; one server
serves the whole session, so each test works in its own namespace / with its own node names.
Every kubectl invocation gets its own fresh ``--cache-dir`` (per test and kubectl version), so
cached discovery from another test cannot hide a discovery bug.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from everynode.apiserver import kubeconfig as kubeconfig_writer
from everynode.apiserver import server as api_server
from everynode.apiserver import tls
from everynode.apiserver.service import ApiService
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore

KUBECTL_DIR = Path("/usr/lib/google-cloud-sdk/bin")
TOKEN = "e2e-token-0123456789"


def kubectl_path(version: str) -> Path:
    return KUBECTL_DIR / f"kubectl.{version}"


class ServerThread:
    """The API server on a private event loop in a daemon thread."""

    def __init__(self, data_dir: Path, *, authorization: str = "always-allow") -> None:
        self.data_dir = data_dir
        self.authorization = authorization
        self.kubeconfig = data_dir / "kubeconfig"
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="e2e-apiserver", daemon=True)
        self.service: ApiService | None = None
        self.handle: api_server.ApiServerHandle | None = None
        self.certs: tls.Certs | None = None

    def start(self) -> None:
        self.thread.start()
        self.call(self._start())

    async def _start(self) -> None:
        self.service = ApiService(MemoryStore(), clock=Clock(), authorization=self.authorization)
        self.certs = tls.ensure_certs(self.data_dir / "pki", hosts=["127.0.0.1"])
        self.handle = await api_server.serve(self.service, host="127.0.0.1", port=0, certs=self.certs,
                                             token=TOKEN, ready=True)
        kubeconfig_writer.write_kubeconfig(self.kubeconfig, server=self.handle.url, ca_pem=self.certs.ca_pem,
                                           token=TOKEN)

    def call(self, coro: Coroutine[Any, Any, Any], timeout: float = 30) -> Any:
        future: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    @property
    def url(self) -> str:
        assert self.handle is not None
        return self.handle.url

    def stop(self) -> None:
        if self.handle is not None:
            self.call(self.handle.stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)


@pytest.fixture(scope="session")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    server = ServerThread(tmp_path_factory.mktemp("apiserver"))
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def rbac_apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerThread]:
    """A second server, started with ``--authorization rbac``."""
    server = ServerThread(tmp_path_factory.mktemp("apiserver-rbac"), authorization="rbac")
    server.start()
    yield server
    server.stop()


Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def kubectl_version(request: pytest.FixtureRequest) -> str:
    """The kubectl a test drives by default; parametrize it (indirect) to run a test on several."""
    return getattr(request, "param", "1.33")


@pytest.fixture
def kubectl(apiserver: ServerThread, tmp_path: Path, kubectl_version: str) -> Kubectl:
    """``kubectl(*args, version=<kubectl_version>, input=None, check=True)`` → CompletedProcess (text)."""
    return kubectl_for(apiserver, tmp_path, kubectl_version)


@pytest.fixture
def rbac_kubectl(rbac_apiserver: ServerThread, tmp_path: Path, kubectl_version: str) -> Kubectl:
    """:func:`kubectl` against the ``--authorization rbac`` server."""
    return kubectl_for(rbac_apiserver, tmp_path, kubectl_version)


def kubectl_for(apiserver: ServerThread, tmp_path: Path, kubectl_version: str) -> Kubectl:

    def run(*args: str, version: str | None = None, input: str | None = None, check: bool = True,
            timeout: float = 30) -> subprocess.CompletedProcess[str]:
        version = version or kubectl_version
        binary = kubectl_path(version)
        if not binary.exists():
            if os.environ.get("CI"):  # the machine image has every version: never skip in CI
                pytest.fail(f"{binary} not installed")
            pytest.skip(f"{binary} not installed")
        cache = tmp_path / f"kubectl-cache-{version}"
        cmd = [str(binary), "--kubeconfig", str(apiserver.kubeconfig), "--cache-dir", str(cache), *args]
        env = dict(os.environ, HOME=str(tmp_path))
        result = subprocess.run(cmd, input=input, capture_output=True, text=True, timeout=timeout, env=env)
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({result.returncode}):\n"
                                 f"stdout: {result.stdout}\nstderr: {result.stderr}")
        return result

    return run
