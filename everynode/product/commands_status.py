"""`everynode status [--watch]`: the DaemonSets and their node grid, once or live.

One-shot: four lists (DaemonSets, ControllerRevisions, Pods — in the namespace, or all — and
Nodes), one frame printed.  Beside every cell that is not ready or not there the frame shows the
reason `everynode why` gives (computed from the same four lists; events are not read, so a
pending pod's reason comes from the scheduler's filters rather than its last FailedScheduling
event); ``--why`` adds the per-node table of `everynode why` for each DaemonSet.

``--watch``: the same four resources held in informers (one list, then watch streams), and a
frame redrawn whenever an event arrives — never by polling the API.  Frames are throttled to one
per ``--interval`` (default 0.1 s: at most ~10 frames/s; a rollout of thousands of pods produces
thousands of events per second, a terminal needs far fewer frames), and never more than half the
time spent drawing (a 5,000-node frame takes ~0.1 s to build), plus one per second without events
so that ages keep moving.  A terminal gets a rich ``Live`` view redrawn in place; piped
output gets successive frames, at most one per second, each under a time line.  Ctrl-C (SIGINT) or
SIGTERM ends the view with exit code 0.  (Piped output is not redrawn for ages alone: a new frame
only follows a change.)

Rendering lives in :mod:`everynode.product.status` (pure functions); this module only fetches.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from everynode.product.connect import kubeconfig_option, run_with_client, stdout_console

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from everynode.client.base import Client

# rich, the renderer and the client are imported inside the functions: cli.py imports this
# module on every `everynode` invocation.

RESOURCES = ("daemonsets.apps", "controllerrevisions.apps", "pods", "nodes")
IDLE_REDRAW = 1.0  # seconds: redraw without events so that AGE advances
PIPE_MIN_INTERVAL = 1.0  # seconds between frames written to a file or pipe


def _namespace_of(resource: str, namespace: str | None) -> str | None:
    return None if resource == "nodes" else namespace


async def fetch(client: Client, namespace: str | None) -> dict[str, list[dict[str, Any]]]:
    lists = await asyncio.gather(*(client.list(r, namespace=_namespace_of(r, namespace)) for r in RESOURCES))
    return {r: list(lst.get("items") or ()) for r, lst in zip(RESOURCES, lists, strict=True)}


def frame(objects: dict[str, list[dict[str, Any]]], *, namespace: str | None, now: float,
          why: bool = False) -> RenderableType:
    from everynode.product.status import render_status

    return render_status(objects["daemonsets.apps"], objects["nodes"], objects["pods"],
                         objects["controllerrevisions.apps"], now=now, namespace=namespace, why=why)


async def show_once(client: Client, namespace: str | None, console: Console, *, why: bool = False) -> int:
    from everynode.clock import Clock

    console.print(frame(await fetch(client, namespace), namespace=namespace, now=Clock().now(), why=why))
    return 0


async def watch(client: Client, namespace: str | None, console: Console, *, interval: float,
                why: bool = False) -> int:
    from rich.live import Live

    from everynode.client.informer import Informer
    from everynode.clock import Clock

    # A first list surfaces an unreachable server or a refused request as a one-line error;
    # informers would retry forever in silence.
    await client.list("daemonsets.apps", namespace=namespace, limit=1)
    informers = {r: Informer(client, r, namespace=_namespace_of(r, namespace)) for r in RESOURCES}
    changed = asyncio.Event()
    stop = asyncio.Event()

    def mark(*_objs: Any) -> None:
        changed.set()

    for inf in informers.values():
        inf.add_handler(on_add=mark, on_update=mark, on_delete=mark)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    # The informers log lost connections as warnings; in a live view those would tear the frame.
    informer_log = logging.getLogger("everynode.client.informer")
    saved_level = informer_log.level
    informer_log.setLevel(logging.ERROR)
    for inf in informers.values():
        inf.start()
    clock = Clock()
    live_view = console.is_terminal and not console.is_dumb_terminal
    min_interval = interval if live_view else max(interval, PIPE_MIN_INTERVAL)

    def draw() -> RenderableType:
        objects = {r: inf.list() for r, inf in informers.items()}
        return frame(objects, namespace=namespace, now=clock.now(), why=why)

    async def wait_for_change(timeout: float | None) -> None:
        waiters: list[asyncio.Future[Any]] = [asyncio.ensure_future(changed.wait()), asyncio.ensure_future(stop.wait())]
        try:
            await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waiters:
                w.cancel()

    try:
        synced = asyncio.gather(*(inf.wait_synced() for inf in informers.values()))
        stopper = asyncio.ensure_future(stop.wait())
        pending: list[asyncio.Future[Any]] = [synced, stopper]
        await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if stop.is_set():
            synced.cancel()
            return 0
        live = Live(console=console, auto_refresh=False, redirect_stdout=False, redirect_stderr=False) \
            if live_view else None
        with live if live is not None else contextlib.nullcontext():
            while not stop.is_set():
                changed.clear()
                started = time.monotonic()
                view = draw()
                if live is not None:
                    live.update(view, refresh=True)
                else:
                    console.print(f"── {time.strftime('%H:%M:%S')} ──", style="dim")
                    console.print(view)
                # Throttle, then wait for the next event (or the idle redraw).  A frame that took
                # long to build (a large cluster) is followed by a pause at least as long, so the
                # view never takes more than half of a core.
                spent = time.monotonic() - started
                pause = max(min_interval - spent, spent)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait(), pause)
                if stop.is_set():
                    break
                await wait_for_change(IDLE_REDRAW if live_view else None)
        return 0
    finally:
        for inf in informers.values():
            await inf.stop()
        informer_log.setLevel(saved_level)
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.remove_signal_handler(sig)


@click.command("status")
@click.option("--watch", "-w", "watch_mode", is_flag=True, help="Keep the view open, redrawn on every change.")
@click.option("--namespace", "-n", default=None, help="Namespace of the DaemonSets [default: the kubeconfig's].")
@click.option("--all-namespaces", "-A", is_flag=True, help="DaemonSets of all namespaces.")
@click.option("--interval", type=click.FloatRange(min=0.02), default=0.1, show_default=True,
              help="With --watch: minimum seconds between frames.")
@click.option("--why", "why", is_flag=True, help="Also the per-node table of `everynode why` for each DaemonSet.")
@kubeconfig_option
def status(watch_mode: bool, namespace: str | None, all_namespaces: bool, interval: float, why: bool,
           kubeconfig: Path | None) -> None:
    """The DaemonSets (as kubectl lists them), one cell per node for each, and rollout progress;
    beside every cell that is not ready or not there, the reason (as `everynode why` gives it)."""
    if namespace and all_namespaces:
        raise click.UsageError("--namespace and --all-namespaces are mutually exclusive")
    console = stdout_console()

    async def run(client: Client) -> int:
        ns = None if all_namespaces else (namespace or getattr(client, "namespace", None) or "default")
        if watch_mode:
            return await watch(client, ns, console, interval=interval, why=why)
        return await show_once(client, ns, console, why=why)

    run_with_client(kubeconfig, run, interrupted_code=0 if watch_mode else 130)
