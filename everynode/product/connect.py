"""How the client commands (`everynode node …`, `everynode status`) find and reach an API server,
and how they fail: one line on stderr, exit code 1, never a traceback.

The commands are plain API clients, so they work against the embedded cluster and against any
real cluster alike.  Kubeconfig lookup order: ``--kubeconfig``, then ``$KUBECONFIG`` (which may
list several files, merged as client-go merges them), then ``./.everynode/kubeconfig`` (what
`everynode up` writes by default, so that the commands work from the same directory without any
set-up), then ``~/.kube/config``.

Failures are sorted into the three a user can fix:

* no kubeconfig (or an unreadable one) → ``error: no kubeconfig at … (start one with `everynode up`)``;
* a kubeconfig that points nowhere (refused, unknown host, TLS failure, timeout) →
  ``error: cannot reach the API server at https://…: <reason>``;
* an answer from the server → kubectl's own wording (``cmdutil.StandardErrorMessage``):
  ``Error from server (NotFound): nodes "x" not found``.
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

if TYPE_CHECKING:
    from rich.console import Console

    from everynode.api.errors import ApiError
    from everynode.client.http import HttpClient

# aiohttp, the HTTP client and rich are imported where used: every `everynode` invocation
# imports this module (through cli.py), and those imports cost ~0.5 s without bytecode caches.

DATA_DIR_KUBECONFIG = Path(".everynode") / "kubeconfig"
HOME_KUBECONFIG = Path("~/.kube/config")
HINT = "(start one with `everynode up`)"

_T = TypeVar("_T")


class CliError(Exception):
    """A user-facing failure; its message is printed as is (one line)."""


def kubeconfig_option(fn: Callable[..., object]) -> Callable[..., object]:
    """The ``--kubeconfig`` option every client command takes."""
    return click.option(
        "--kubeconfig", type=click.Path(path_type=Path, dir_okay=False), default=None,
        help="Kubeconfig to use [default: $KUBECONFIG, else ./.everynode/kubeconfig, else ~/.kube/config].",
    )(fn)


def resolve_kubeconfig(option: Path | None) -> Path | None:
    """The kubeconfig path to load; ``None`` means "the files listed in $KUBECONFIG" (merged).

    Raises :class:`CliError` when there is none."""
    if option is not None:
        path = option.expanduser()
        if not path.is_file():
            raise CliError(f"error: no kubeconfig at {path} {HINT}")
        return path
    env = os.environ.get("KUBECONFIG")
    if env:
        listed = [Path(p).expanduser() for p in env.split(os.pathsep) if p]
        if not any(p.is_file() for p in listed):
            raise CliError(f"error: no kubeconfig at {env} {HINT}")
        return None
    if DATA_DIR_KUBECONFIG.is_file():
        return DATA_DIR_KUBECONFIG
    home = HOME_KUBECONFIG.expanduser()
    if home.is_file():
        return home
    raise CliError(f"error: no kubeconfig at {DATA_DIR_KUBECONFIG} or {HOME_KUBECONFIG} {HINT}")


def open_client(option: Path | None) -> HttpClient:
    from everynode.client.http import HttpClient
    from everynode.client.kubeconfig import KubeconfigError

    path = resolve_kubeconfig(option)
    try:
        return HttpClient.from_kubeconfig(path)
    except KubeconfigError as e:
        raise CliError(f"error: {e}") from None
    except ssl.SSLError as e:  # unusable CA or client certificate data
        raise CliError(f"error: invalid TLS material in kubeconfig {path or os.environ.get('KUBECONFIG')}: "
                       f"{e.reason or e}") from None


def transport_reason(exc: BaseException) -> str | None:
    """Why a request never got an answer, in a few words; ``None`` if ``exc`` is not a transport error."""
    import aiohttp

    if isinstance(exc, aiohttp.ClientConnectorCertificateError):
        cert_error = exc.certificate_error
        detail = getattr(cert_error, "verify_message", None) or getattr(cert_error, "reason", None) or cert_error
        return f"TLS certificate verification failed: {detail}"
    if isinstance(exc, aiohttp.ClientConnectorSSLError):
        os_error = exc.os_error
        return f"TLS handshake failed: {getattr(os_error, 'reason', None) or os_error}"
    if isinstance(exc, aiohttp.ClientConnectorError):
        os_error = exc.os_error
        if isinstance(exc, aiohttp.ClientConnectorDNSError) or isinstance(os_error, socket.gaierror):
            return f"unknown host {exc.host}: {os_error.strerror or os_error}"
        if isinstance(os_error, ConnectionRefusedError):
            return "connection refused"
        if isinstance(os_error, TimeoutError):
            return "connection timed out"
        return str(os_error.strerror or os_error)
    if isinstance(exc, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(exc, aiohttp.InvalidURL):
        return f"invalid server URL {exc.url}"
    if isinstance(exc, aiohttp.ClientError):
        return str(exc) or type(exc).__name__
    if isinstance(exc, asyncio.TimeoutError | TimeoutError):
        return "request timed out"
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {exc.reason or exc}"
    if isinstance(exc, OSError):
        return str(exc.strerror or exc)
    return None


def api_error_line(e: ApiError) -> str:
    """kubectl's ``StandardErrorMessage`` for a Status from the server."""
    if e.reason == "Unauthorized":
        return f"error: You must be logged in to the server ({e.message})"
    if e.reason:
        return f"Error from server ({e.reason}): {e.message}"
    return f"Error from server: {e.message}"


def error_line(exc: BaseException, server: str) -> str | None:
    """The one line to print for ``exc``, or ``None`` for an unexpected error (a bug)."""
    from everynode.api.errors import ApiError
    from everynode.client.kubeconfig import KubeconfigError

    if isinstance(exc, CliError):
        return str(exc)
    if isinstance(exc, ApiError):
        return api_error_line(exc)
    if isinstance(exc, KubeconfigError):
        return f"error: {exc}"
    reason = transport_reason(exc)
    if reason is not None:
        return f"error: cannot reach the API server at {server}: {reason}"
    return None


def stdout_console() -> Console:
    """The console for command output.  Piped output gets a wide page: kubectl never truncates
    columns, and neither should a table written to a file."""
    from rich.console import Console

    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 200)
    return console


def fail(line: str) -> NoReturn:
    click.echo(line, err=True)
    sys.exit(1)


def run_with_client(kubeconfig: Path | None, command: Callable[[HttpClient], Awaitable[int]], *,
                    interrupted_code: int = 130) -> NoReturn:
    """Open a client from the kubeconfig, run ``command(client)`` on a fresh event loop, close the
    client, and exit with the command's code — or print the one-line error and exit 1.  Ctrl-C
    that the command does not handle itself exits with ``interrupted_code``, without a traceback."""
    try:
        client = open_client(kubeconfig)
    except CliError as e:
        fail(str(e))

    async def main() -> int:
        try:
            return await command(client)
        finally:
            await client.close()

    try:
        code = run_event_loop(main())
    except KeyboardInterrupt:
        sys.exit(interrupted_code)
    except Exception as e:  # noqa: BLE001 - sorted below; a real bug still shows its traceback
        line = error_line(e, client.server)
        if line is None:
            raise
        fail(line)
    sys.exit(code)


def run_event_loop(coro: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coro`` to completion on a new event loop: uvloop's where it is installed (Linux),
    else asyncio's.  Every CLI command runs through here."""
    try:
        import uvloop  # noqa: PLC0415
    except ImportError:  # pragma: no cover - non-Linux
        return asyncio.run(coro)
    return uvloop.run(coro)
