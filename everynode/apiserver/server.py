"""Run the HTTPS API server: ``await serve(service, host=…, port=…, certs=…, token=…)``.

Why a handle object: the owner (``everynode up``, the pytest plugin, tests) needs the bound
port when it asked for port 0, the URL for the kubeconfig, a way to flip readiness once its
controllers run, and a clean stop that ends open watch streams.  aiohttp's ``AppRunner`` with
``handler_cancellation`` cancels a request handler when its client disconnects, so an idle watch
of a vanished ``kubectl get -w`` does not linger until its timeout.  The event loop (uvloop) is
the caller's choice.

Timeouts, as kube-apiserver's ``http.Server`` sets them (``secure_serving.go``): a client has
32 s (``ReadHeaderTimeout``) from connecting to finish its TLS handshake and request headers, an
idle keep-alive connection is closed after 90 s (``IdleTimeout``), and a non-watch request has 60
s (``--request-timeout``, enforced in ``http.py``); a watch keeps its own lifetime.  aiohttp has
the idle timeout (``keepalive_timeout``) but no header deadline, so connections are accepted
here rather than by aiohttp's site: the accept loop waits for the first bytes under the
deadline, answers plain HTTP sent to the TLS port with Go's 400 ("Client sent an HTTP request
to an HTTPS server.") by peeking at them, hands the socket to the TLS layer and aiohttp with
the handshake under the same deadline, and closes a connection that has not produced one
complete request header by then (40 slowloris sockets stayed open 130 s before).
The request line and each header may be as long as upstream's whole header block (1 MiB;
aiohttp's own limit is 8 KiB, which turned long names and selectors into 400s).
Malformed requests are logged as one short line, at most one per 10 s, with a count: a bad
client cannot fill the log (aiohttp logs each with a traceback and the offending bytes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

from everynode.apiserver.http import ApiHttp, build_app
from everynode.apiserver.metrics import ApiRequestMetrics
from everynode.apiserver.service import ApiService
from everynode.apiserver.tls import Certs

SHUTDOWN_TIMEOUT = 2.0
READ_HEADER_TIMEOUT = 32.0  # secure_serving.go: "just shy of requestTimeoutUpperBound"
IDLE_TIMEOUT = 90.0  # secure_serving.go: matches http.DefaultTransport's keep-alive timeout
MAX_HEADER_BYTES = 1 << 20  # secure_serving.go's MaxHeaderBytes: a 10 000-character name is a 404, not a 400
MALFORMED_LOG_INTERVAL = 10.0
PLAIN_HTTP_ANSWER = b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
TLS_HANDSHAKE_RECORD = 0x16

log = logging.getLogger(__name__)


class MalformedRequestLog(logging.LoggerAdapter):
    """aiohttp's server logger: "Error handling request" (a request that could not be parsed)
    becomes one short, rate-limited line; everything else passes through."""

    def __init__(self, logger: logging.Logger, *, interval: float = MALFORMED_LOG_INTERVAL) -> None:
        super().__init__(logger, {})
        self.interval = interval
        self.suppressed = 0
        self._last = float("-inf")

    def exception(self, msg: object, *args: object, exc_info: Any = True, **kwargs: Any) -> None:
        if not (isinstance(msg, str) and msg.startswith("Error handling request")):
            self.logger.exception(msg, *args, exc_info=exc_info, **kwargs)
            return
        now = time.monotonic()
        if now - self._last < self.interval:
            self.suppressed += 1
            return
        self._last = now
        reason = type(exc_info).__name__ if isinstance(exc_info, BaseException) else "error"
        detail = str(getattr(exc_info, "message", "") or "")[:80] if isinstance(exc_info, BaseException) else ""
        more = f" ({self.suppressed} more since the last report)" if self.suppressed else ""
        self.suppressed = 0
        remote = args[0] if args else "?"
        self.logger.warning("malformed request from %s: %s%s%s", remote, reason,
                            f": {detail}" if detail else "", more)


class ApiServerHandle:
    """A running API server."""

    def __init__(self, runner: web.AppRunner, handler: ApiHttp, *, host: str, port: int,
                 acceptor: asyncio.Task[None] | None = None, sock: socket.socket | None = None) -> None:
        self._runner = runner
        self._handler = handler
        self._acceptor = acceptor
        self._sock = sock
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
        if self._acceptor is not None:
            self._acceptor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._acceptor
        if self._sock is not None:
            self._sock.close()
        await self._runner.cleanup()


async def serve(service: ApiService, *, host: str = "127.0.0.1", port: int = 6443, certs: Certs | None,
                token: str | None, ready: bool = False, ready_check: Callable[[], bool] | None = None,
                metrics: ApiRequestMetrics | None = None, read_header_timeout: float = READ_HEADER_TIMEOUT,
                idle_timeout: float = IDLE_TIMEOUT, request_timeout: float | None = None) -> ApiServerHandle:
    """Start serving (HTTPS when ``certs`` is given); ``port=0`` picks a free port.

    ``/readyz`` and ``/livez`` answer 500 until ``set_ready(True)`` (or ``ready=True``) and while
    ``ready_check`` returns False.  The timeouts default to kube-apiserver's (module docstring)."""
    await service.start()
    app, handler = build_app(service, token=token, ready_check=ready_check, metrics=metrics)
    if request_timeout is not None:
        handler.request_timeout = request_timeout
    handler.ready = ready
    runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=SHUTDOWN_TIMEOUT,
                           keepalive_timeout=idle_timeout, max_line_size=MAX_HEADER_BYTES,
                           max_field_size=MAX_HEADER_BYTES, logger=MalformedRequestLog(logging.getLogger("aiohttp.server")))
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
    server = runner.server
    assert server is not None
    acceptor = asyncio.create_task(_accept(sock, server, ssl_context, read_header_timeout=read_header_timeout),
                                   name="everynode-apiserver-accept")
    return ApiServerHandle(runner, handler, host=host, port=bound, acceptor=acceptor, sock=sock)


async def _accept(sock: socket.socket, server: Any, ssl_context: Any, *, read_header_timeout: float) -> None:
    loop = asyncio.get_running_loop()
    connections: set[asyncio.Task[None]] = set()
    try:
        while True:
            conn, _ = await loop.sock_accept(sock)
            conn.setblocking(False)
            task = asyncio.create_task(_connect(conn, server, ssl_context, read_header_timeout=read_header_timeout))
            connections.add(task)
            task.add_done_callback(connections.discard)
    finally:
        for task in list(connections):
            task.cancel()


async def _readable(conn: socket.socket) -> None:
    loop = asyncio.get_running_loop()
    ready: asyncio.Future[None] = loop.create_future()
    fd = conn.fileno()

    def wake() -> None:
        if not ready.done():
            ready.set_result(None)

    loop.add_reader(fd, wake)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


async def _connect(conn: socket.socket, server: Any, ssl_context: Any, *, read_header_timeout: float) -> None:
    """One accepted connection: header deadline, plain-HTTP-on-TLS answer, hand-over to aiohttp."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + read_header_timeout
    try:
        if ssl_context is not None:
            await asyncio.wait_for(_readable(conn), read_header_timeout)
            first = conn.recv(1, socket.MSG_PEEK)
            if not first:
                conn.close()
                return
            if first[0] != TLS_HANDSHAKE_RECORD:
                # Go's net/http: a first record that is not TLS but looks like HTTP gets a 400.
                if first.isalpha():
                    with contextlib.suppress(OSError):
                        conn.send(PLAIN_HTTP_ANSWER)
                        conn.shutdown(socket.SHUT_WR)
                        conn.recv(65536)  # what the client sent, so that close does not reset
                conn.close()
                return
        remaining = max(0.1, deadline - loop.time())
        transport, protocol = await loop.connect_accepted_socket(
            server, conn, ssl=ssl_context, ssl_handshake_timeout=remaining if ssl_context is not None else None)
    except (TimeoutError, OSError, ConnectionError):
        conn.close()
        return
    except asyncio.CancelledError:
        conn.close()
        raise
    loop.call_at(deadline, _close_without_request, transport, protocol)


def _close_without_request(transport: asyncio.BaseTransport, protocol: Any) -> None:
    """The read-header deadline: a connection that sent no complete request header is closed."""
    if getattr(protocol, "_request_count", 1) == 0 and not transport.is_closing():
        transport.close()
