"""Run the HTTPS API server: ``await serve(service, host=…, port=…, certs=…, token=…)``.

Why a handle object: the owner (``everynode up``, the pytest plugin, tests) needs the bound
port when it asked for port 0, the URL for the kubeconfig, a way to flip readiness once its
controllers run, and a clean stop that ends open watch streams.  aiohttp's ``AppRunner`` with
``handler_cancellation`` cancels a request handler when its client disconnects, so an idle watch
of a vanished ``kubectl get -w`` does not linger until its timeout.  The event loop (uvloop) is
the caller's choice.
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from aiohttp import web

from everynode.apiserver.http import ApiHttp, build_app
from everynode.apiserver.metrics import ApiRequestMetrics
from everynode.apiserver.service import ApiService
from everynode.apiserver.tls import Certs

SHUTDOWN_TIMEOUT = 2.0


class ApiServerHandle:
    """A running API server."""

    def __init__(self, runner: web.AppRunner, handler: ApiHttp, *, host: str, port: int) -> None:
        self._runner = runner
        self._handler = handler
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        host = self.host
        if host in ("0.0.0.0", ""):
            host = "127.0.0.1"
        elif host == "::":
            host = "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"https://{host}:{self.port}"

    @property
    def metrics(self) -> ApiRequestMetrics:
        """Request metrics; other layers may register collectors on ``metrics.registry``."""
        return self._handler.metrics

    def set_ready(self, ready: bool) -> None:
        """Answer ``/readyz`` and ``/livez`` with 200 (True) or 500 (False)."""
        self._handler.ready = ready

    @property
    def ready_check(self) -> Callable[[], bool] | None:
        return self._handler.ready_check

    @ready_check.setter
    def ready_check(self, check: Callable[[], bool] | None) -> None:
        self._handler.ready_check = check

    async def stop(self) -> None:
        await self._runner.cleanup()


async def serve(service: ApiService, *, host: str = "127.0.0.1", port: int = 6443, certs: Certs | None,
                token: str | None, ready: bool = False, ready_check: Callable[[], bool] | None = None,
                metrics: ApiRequestMetrics | None = None) -> ApiServerHandle:
    """Start serving (HTTPS when ``certs`` is given); ``port=0`` picks a free port.

    ``/readyz`` and ``/livez`` answer 500 until ``set_ready(True)`` (or ``ready=True``) and while
    ``ready_check`` returns False."""
    await service.start()
    app, handler = build_app(service, token=token, ready_check=ready_check, metrics=metrics)
    handler.ready = ready
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None,
                           shutdown_timeout=SHUTDOWN_TIMEOUT)
    await runner.setup()
    ssl_context = certs.server_context() if certs is not None else None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(1024)
        sock.setblocking(False)
    except OSError:
        sock.close()
        await runner.cleanup()
        raise
    bound = sock.getsockname()[1]
    handler.server_address = f"{host}:{bound}"
    site = web.SockSite(runner, sock, ssl_context=ssl_context)
    await site.start()
    return ApiServerHandle(runner, handler, host=host, port=bound)
