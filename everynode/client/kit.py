"""The controller kit: informers → work queue → workers, with one start / stop / wait_idle.

Upstream has no such object: every controller in ``pkg/controller`` repeats the same wiring —
informers from a shared factory, handlers that enqueue keys, ``WaitForNamedCacheSync``, then
``wait.UntilWithContext(worker)`` per worker, ``queue.ShutDown()`` on the way out.  Here that
wiring is written once, so that every controller, the scheduler and the kubelet
simulation start, stop and report idleness the same way; kopf's low-level kits (the
orchestration under its engines) are the model for a kit that the component *holds* rather
than a base class it inherits: a controller keeps its own constructor (keyword-only options, its
client and clock), its own state and its own ``sync``, and hands the kit only what the kit runs.

What a component gives its kit, in its constructor (the kubelet simulation subscribes when it
starts instead, see :mod:`everynode.kubelet.simulator`):

* :meth:`ControllerKit.informer` — an informer from the shared factory that :meth:`start`
  waits for (``WaitForCacheSync``), and :meth:`ControllerKit.watch` — handlers on it, removed
  again by :meth:`stop` (a stopped component no longer hears events on informers that others
  keep running);
* :meth:`ControllerKit.queue` and :meth:`ControllerKit.workers` — a client-go work queue and
  ``count`` workers running ``sync(key)`` through :func:`~everynode.client.workqueue.run_worker`
  (rate-limited retries, ``max_retries``, ``on_error``);
* :meth:`ControllerKit.loop` — a background coroutine started after the caches synced (a health
  monitor, a periodic pass, a backoff GC, the simulated kubelets' writers), and
  :meth:`ControllerKit.spawn` for tasks made while running (in-flight binds): all cancelled by
  :meth:`stop`; :meth:`ControllerKit.idle_when` — work the component keeps outside a work queue
  (the kubelet simulation's pending writes), which :meth:`wait_idle` also waits out;
* :meth:`ControllerKit.on_synced` and :meth:`ControllerKit.on_stop` — hooks run once the caches
  synced (upstream's "queue every leftover object" steps, or an awaited first pass that
  :meth:`start` returns after, such as the per-namespace controllers' one before the control
  plane reports ready) and after the tasks ended (closing a recorder or an informer factory the
  component owns).

The kit is one-shot, as a controller is: :meth:`start` once, :meth:`stop` once (again is a
no-op); to run again, build a new component.  Everything runs on the one asyncio loop; no
threads.  ``wait_idle`` (tests, benchmarks) waits until every queue is empty and nothing is being
processed for a few polls in a row; delayed re-adds do not count.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from everynode.client.informer import (
    AddHandler,
    DeleteHandler,
    HandlerRegistration,
    IndexFunc,
    Informer,
    SharedInformerFactory,
    UpdateHandler,
)
from everynode.client.workqueue import RateLimiter, WorkQueue, run_worker

log = logging.getLogger(__name__)

SyncFunc = Callable[[Any], Awaitable[float | None]]
ErrorHandler = Callable[[Any, Exception, bool], None]
Hook = Callable[[], None]
AsyncHook = Callable[[], Awaitable[None]]
LoopFunc = Callable[[], Coroutine[Any, Any, None]]

IDLE_POLL = 0.002  # seconds between two looks of wait_idle


@runtime_checkable
class Component(Protocol):
    """What the control plane starts and stops: every controller, the scheduler, the kubelet
    simulation, the DNS server."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Workers:
    """``count`` workers draining ``queue`` through ``sync`` (see :func:`run_worker`)."""

    queue: WorkQueue
    sync: SyncFunc
    count: int = 1
    max_retries: int | None = None
    on_error: ErrorHandler | None = None


@dataclass(frozen=True, slots=True)
class Loop:
    """A background coroutine the kit runs from start to stop."""

    run: LoopFunc
    name: str


class ControllerKit:
    """The informers, queues, workers and tasks of one component; see the module docstring."""

    def __init__(self, name: str, *, informers: SharedInformerFactory, wait_for_sync: bool = True) -> None:
        self.name = name
        self.factory = informers
        self.wait_for_sync = wait_for_sync
        self._informers: list[Informer] = []
        self._registrations: list[HandlerRegistration] = []
        self._queues: list[WorkQueue] = []
        self._workers: list[Workers] = []
        self._loops: list[Loop] = []
        self._on_synced: list[Hook | AsyncHook] = []
        self._on_stop: list[AsyncHook] = []
        self._idle_checks: list[Callable[[], bool]] = []
        self._tasks: set[asyncio.Task[Any]] = set()
        self._started = False
        self._stopped: asyncio.Event | None = None
        self.done = False

    # -- wiring (in the component's constructor) ------------------------------------------------

    def informer(self, resource: str, *, namespace: str | None = None, field_selector: str | None = None,
                 indexers: Mapping[str, IndexFunc] | None = None) -> Informer:
        """The shared informer of ``resource`` (of the objects ``field_selector`` selects, when
        given); :meth:`start` waits until it has synced."""
        inf = self.factory.informer(resource, namespace=namespace, field_selector=field_selector,
                                    indexers=indexers)
        if inf not in self._informers:
            self._informers.append(inf)
        return inf

    def watch(self, informer: Informer, *, on_add: AddHandler | None = None,
              on_update: UpdateHandler | None = None, on_delete: DeleteHandler | None = None) -> HandlerRegistration:
        """Register handlers on ``informer`` (objects already cached go to ``on_add`` at once);
        :meth:`stop` removes them."""
        reg = informer.add_handler(on_add, on_update, on_delete)
        self._registrations.append(reg)
        return reg

    def queue(self, name: str | None = None, *, rate_limiter: RateLimiter | None = None) -> WorkQueue:
        """A work queue that :meth:`stop` shuts down and :meth:`wait_idle` watches."""
        q = WorkQueue(name if name is not None else self.name, rate_limiter=rate_limiter)
        self._queues.append(q)
        return q

    def workers(self, queue: WorkQueue, sync: SyncFunc, *, count: int = 1, max_retries: int | None = None,
                on_error: ErrorHandler | None = None) -> None:
        """Run ``count`` workers on ``queue`` once started."""
        if queue not in self._queues:
            self._queues.append(queue)
        self._workers.append(Workers(queue, sync, count=count, max_retries=max_retries, on_error=on_error))

    def loop(self, run: LoopFunc, *, name: str) -> None:
        """Run ``run()`` as a task from :meth:`start` (after the caches synced) to :meth:`stop`."""
        self._loops.append(Loop(run, name))

    def on_synced(self, hook: Hook | AsyncHook) -> None:
        """Call ``hook()`` once the caches synced, before any worker or loop runs; a coroutine
        hook is awaited (:meth:`start` returns after it)."""
        self._on_synced.append(hook)

    def idle_when(self, check: Callable[[], bool]) -> None:
        """Count the component idle only while ``check()`` is also true (work it keeps outside
        a work queue)."""
        self._idle_checks.append(check)

    def on_stop(self, hook: AsyncHook) -> None:
        """Await ``hook()`` at the end of :meth:`stop` (hooks run last registered first)."""
        self._on_stop.append(hook)

    # -- running -------------------------------------------------------------------------------

    def spawn(self, coro: Coroutine[Any, Any, Any], *, name: str | None = None) -> asyncio.Task[Any]:
        """A task :meth:`stop` cancels if it is still running."""
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    @property
    def queues(self) -> tuple[WorkQueue, ...]:
        """This component's work queues (metrics read them)."""
        return tuple(self._queues)

    @property
    def running(self) -> bool:
        return self._started and not self.done

    async def start(self) -> None:
        """Start the factory's informers (every one not yet running, as client-go's
        ``factory.Start``), wait for this component's (unless ``wait_for_sync`` is off), run the
        ``on_synced`` hooks, then the workers and loops."""
        if self._started:
            raise RuntimeError(f"{self.name}: already started")
        self._started = True
        self._stopped = asyncio.Event()
        self.factory.start()
        if self.wait_for_sync:
            await asyncio.gather(*(inf.wait_synced() for inf in self._informers))
        for hook in self._on_synced:
            done = hook()
            if done is not None:
                await done
        for w in self._workers:
            for i in range(w.count):
                self.spawn(run_worker(w.queue, w.sync, max_retries=w.max_retries, on_error=w.on_error),
                           name=f"{self.name}-worker-{i}")
        for lp in self._loops:
            self.spawn(lp.run(), name=f"{self.name}-{lp.name}")
        log.debug("started %s", self.name)

    async def wait_synced(self) -> None:
        """Wait until this component's informers have synced."""
        await asyncio.gather(*(inf.wait_synced() for inf in self._informers))

    async def stop(self) -> None:
        """Shut the queues down, cancel every task and wait for it, remove the handlers, then
        run the ``on_stop`` hooks.  Idempotent."""
        if self.done:
            return
        self.done = True
        for q in self._queues:
            q.shutdown()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        for reg in self._registrations:
            reg.remove()
        self._registrations.clear()
        for hook in reversed(self._on_stop):
            try:
                await hook()
            except Exception as exc:  # noqa: BLE001 - best effort on the way out
                log.debug("%s: stop hook failed: %s", self.name, exc)
        if self._stopped is not None:
            self._stopped.set()

    async def wait_stopped(self) -> None:
        """Return once :meth:`stop` has run (``everynode controller`` runs until a signal)."""
        if self._stopped is None:
            raise RuntimeError(f"{self.name}: not started")
        await self._stopped.wait()

    def idle(self) -> bool:
        """No key queued (delayed re-adds aside) or being processed, in any queue, and every
        :meth:`idle_when` check true."""
        return all(q.depth == 0 and q.processing == 0 for q in self._queues) and \
            all(check() for check in self._idle_checks)

    async def wait_idle(self, *, timeout: float = 10.0, settle: int = 3) -> None:
        """Wait until :meth:`idle` holds for ``settle`` polls in a row (tests, benchmarks)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        quiet = 0
        while quiet < settle:
            await asyncio.sleep(IDLE_POLL)
            quiet = quiet + 1 if self.idle() else 0
            if loop.time() > deadline:
                raise TimeoutError(f"{self.name} not idle: {', '.join(map(repr, self._queues))}")


class ControllerLifecycle:
    """The lifecycle every kit-based component shows: ``start`` / ``stop`` / ``wait_idle``
    delegated to its :attr:`kit`.  A component that needs more (a heartbeat model to hook
    before start) overrides a method and calls ``super()``."""

    kit: ControllerKit

    async def start(self) -> None:
        await self.kit.start()

    async def stop(self) -> None:
        await self.kit.stop()

    async def wait_idle(self, *, timeout: float = 10.0, settle: int = 3) -> None:
        await self.kit.wait_idle(timeout=timeout, settle=settle)


__all__ = ["Component", "ControllerKit", "ControllerLifecycle", "Loop", "Workers"]
