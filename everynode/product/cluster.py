"""``everynode.Cluster``: the embedded control plane as a Python object, for tests and scripts.

One class, two ways in:

* ``async with Cluster(...) as c`` runs the control plane on the caller's event loop; ``c.client``
  is the async in-process client.
* ``with Cluster(...) as c`` runs it on a private event loop in a background thread (so plain
  synchronous code and pytest can use it); ``c.client`` is a blocking proxy of the same client,
  and ``c.kubeconfig`` points real kubectl or the official Python client at its HTTPS server.

Beyond the client, the few things every test script needs, each in both forms (a result under
``with``, an awaitable under ``async with``, like ``client`` itself): ``apply(source)`` —
server-side apply of YAML text, a file, a dict or a list of dicts, like ``kubectl apply
--server-side`` — and ``wait_for_rollout`` / ``wait_for_ready`` / ``wait_for``, kubectl's
``rollout status`` and ``wait`` rules (``everynode.product.waiting``).  The client's resource
argument takes what kubectl takes (``"DaemonSet"``, ``"daemonsets.apps"``, ``"ds"``).

Time: real by default.  ``virtual_time=True`` runs the loop on a virtual clock that jumps to the
next timer whenever everything is idle (``everynode.virtualtime``), so minutes of simulated pod
start-ups pass in milliseconds; it needs the in-process client, so no HTTPS server is started.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from everynode.client.base import Client
from everynode.clock import Clock
from everynode.product import manifests, waiting
from everynode.product.controlplane import ControlPlane, ControlPlaneConfig
from everynode.product.manifests import Source
from everynode.product.waiting import Condition

T = TypeVar("T")


def _call_thawed(coro: Coroutine[Any, Any, T], loop: asyncio.AbstractEventLoop,
                 timeout: float | None = None) -> T:
    """Run ``coro`` on ``loop`` from another thread and wait for it.

    On a virtual-time loop, time may only move while the calling thread waits here: the loop is
    kept frozen between calls (see ``VirtualTimeEventLoop.freeze``) and thawed for the call."""
    from everynode.virtualtime import VirtualTimeEventLoop

    virtual = loop if isinstance(loop, VirtualTimeEventLoop) else None

    async def thawed() -> T:
        if virtual is None:
            return await coro
        virtual.thaw()
        try:
            return await coro
        finally:
            virtual.freeze()

    return asyncio.run_coroutine_threadsafe(thawed(), loop).result(timeout)


class SyncClient:
    """Blocking proxy of an async client whose loop runs in another thread."""

    def __init__(self, client: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._client = client
        self._loop = loop

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if not callable(attr) or name == "watch":
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            result = attr(*args, **kwargs)
            if asyncio.iscoroutine(result):
                return _call_thawed(result, self._loop)
            return result

        return call


class Cluster:
    def __init__(self, nodes: int = 3, control_planes: int = 1, pod_startup: float = 1.0, *,
                 host: str = "127.0.0.1", port: int = 0, data_dir: str | Path | None = None,
                 in_memory: bool | None = None, disable: tuple[str, ...] | list[str] = (),
                 virtual_time: bool = False, serve_http: bool | None = None,
                 node_monitor_grace_period: float = 50.0, pod_gc_period: float = 20.0,
                 pod_gc_quarantine: float = 40.0, dns_port: int | None = None,
                 authorization: str = "always-allow") -> None:
        self._tmp: str | None = None
        if data_dir is None:
            self._tmp = tempfile.mkdtemp(prefix="everynode-")
            data_dir = self._tmp
            if in_memory is None:
                in_memory = True
        self.virtual_time = virtual_time
        self.config = ControlPlaneConfig(
            nodes=nodes, control_planes=control_planes, host=host, port=port, data_dir=Path(data_dir),
            in_memory=bool(in_memory), pod_startup=pod_startup, disable=frozenset(disable),
            serve_http=(not virtual_time) if serve_http is None else serve_http,
            node_monitor_grace_period=node_monitor_grace_period,
            pod_gc_period=pod_gc_period, pod_gc_quarantine=pod_gc_quarantine, dns_port=dns_port,
            authorization=authorization,
        )
        self.plane: ControlPlane | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._sync_client: SyncClient | None = None

    # -- shared ----------------------------------------------------------------------------
    @property
    def kubeconfig(self) -> Path:
        """Path of the admin kubeconfig (HTTPS server, CA data, bearer token)."""
        return self.config.kubeconfig_path

    @property
    def url(self) -> str | None:
        return self.plane.url if self.plane else None

    @property
    def dns_port(self) -> int | None:
        """The cluster DNS server's port (``dns_port=0`` picks a free one), or None."""
        return self.plane.dns_port if self.plane else None

    @property
    def client(self) -> Any:
        if self.plane is None or self.plane.client is None:
            raise RuntimeError("the cluster is not running")
        if self._thread is not None:
            if self._sync_client is None:
                assert self._loop is not None
                self._sync_client = SyncClient(self.plane.client, self._loop)
            return self._sync_client
        return self.plane.client

    # -- apply and wait (a result under `with`, an awaitable under `async with`) --------------
    def _async_client(self) -> Client:
        if self.plane is None or self.plane.client is None:
            raise RuntimeError("the cluster is not running")
        return self.plane.client

    def _call(self, coro: Coroutine[Any, Any, T]) -> Any:
        if self._loop is not None:
            return self.run(coro)
        return coro

    def apply(self, source: Source) -> Any:
        """Server-side apply (``kubectl apply --server-side --force-conflicts``, field manager
        ``everynode``) of YAML text, a path, a dict or a list of dicts; the objects as stored."""
        return self._call(manifests.apply(self._async_client(), source))

    def wait_for(self, resource: str, name: str, condition: Condition, *, namespace: str = "default",
                 timeout: float = 60.0) -> Any:
        """The object once ``condition(obj)`` is true; ``TimeoutError`` after ``timeout`` seconds
        (simulated seconds in virtual time).  ``namespace`` is ignored for cluster-scoped kinds."""
        return self._call(waiting.wait_for(self._async_client(), resource, name, condition,
                                           namespace=namespace, timeout=timeout))

    def wait_for_rollout(self, daemonset: str, *, namespace: str = "default", timeout: float = 60.0) -> Any:
        """``kubectl rollout status daemonset/NAME``: every desired pod updated and available."""
        return self.wait_for("daemonsets.apps", daemonset, waiting.rolled_out, namespace=namespace, timeout=timeout)

    def wait_for_ready(self, resource: str, name: str, *, namespace: str = "default",
                       timeout: float = 60.0) -> Any:
        """``kubectl wait --for=condition=Ready`` for a Pod or Node; for a DaemonSet every desired
        pod Ready."""
        return self.wait_for(resource, name, waiting.ready, namespace=namespace, timeout=timeout)

    def _clock(self, loop: asyncio.AbstractEventLoop) -> Clock:
        if not self.virtual_time:
            return Clock()
        from everynode.virtualtime import VirtualTimeEventLoop, virtual_clock

        if not isinstance(loop, VirtualTimeEventLoop):
            raise RuntimeError("virtual_time=True needs a virtual-time loop: use a plain `with`, "
                               "or run your coroutine with everynode.virtualtime.run_virtual()")
        return virtual_clock(loop)

    async def start(self) -> Cluster:
        self.plane = ControlPlane(self.config, clock=self._clock(asyncio.get_running_loop()))
        await self.plane.start()
        return self

    async def stop(self) -> None:
        if self.plane is not None:
            await self.plane.stop()
            self.plane = None
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # -- async -----------------------------------------------------------------------------
    async def __aenter__(self) -> Cluster:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- sync ------------------------------------------------------------------------------
    def _new_loop(self) -> asyncio.AbstractEventLoop:
        if self.virtual_time:
            from everynode.virtualtime import new_virtual_loop

            return new_virtual_loop()
        try:
            import uvloop

            return uvloop.new_event_loop()
        except ImportError:  # pragma: no cover
            return asyncio.new_event_loop()

    def run(self, coro: Coroutine[Any, Any, T], *, timeout: float | None = None) -> T:
        """Run a coroutine on the cluster's loop from synchronous code and return its result."""
        if self._loop is None:
            raise RuntimeError("run() is for clusters entered with a plain `with`")
        return _call_thawed(coro, self._loop, timeout)

    def __enter__(self) -> Cluster:
        loop = self._new_loop()
        self._loop = loop
        started = threading.Event()

        def target() -> None:
            asyncio.set_event_loop(loop)
            started.set()
            loop.run_forever()

        self._thread = threading.Thread(target=target, name="everynode-cluster", daemon=True)
        self._thread.start()
        started.wait()
        from everynode.virtualtime import VirtualTimeEventLoop

        if isinstance(loop, VirtualTimeEventLoop):
            loop.call_soon_threadsafe(loop.freeze)
        try:
            self.run(self.start())
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        async def stop_and_cancel_rest() -> None:
            await self.stop()
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in rest:
                t.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        try:
            _call_thawed(stop_and_cancel_rest(), loop, 60)
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            loop.close()
            self._loop = None
            self._thread = None
            self._sync_client = None
