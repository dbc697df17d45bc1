"""An asyncio event loop on virtual time: when nothing is ready to run, it jumps to the next timer.

Why: the simulation (kubelet start-up delays, 10 s lease heartbeats, 5 min crash-loop back-off,
40 s node grace periods) is made of waits.  Run on a virtual clock, an hour of cluster life
takes as long as the work in it, and the same inputs give the same run (fast tests, and the
planned ``everynode plan``).

How: :class:`VirtualTimeEventLoop` is a ``SelectorEventLoop`` whose ``time()`` is a number it
owns.  asyncio's ``_run_once`` asks the selector to wait for ``timeout`` seconds (the distance to
the earliest timer, 0 when callbacks are ready, None when there is nothing at all); our selector
wrapper polls the real selector without blocking and, if nothing arrived, advances the virtual
clock by ``timeout`` instead of sleeping.  Everything built on the loop's timers follows:
``asyncio.sleep``, ``call_later``/``call_at``, ``wait_for``/``timeout``, queues with timeouts.

Choices and trade-offs:
* A small subclass rather than the ``looptime`` library: that library is built around a pytest
  plugin and patching a running loop; we need a plain runner for the CLI (the planned ``plan``) as
  well as for tests, and the subclass is ~100 lines with no dependency.
* Real work in threads (``run_in_executor``, ``asyncio.to_thread``) freezes virtual time: while
  such a job is in flight the loop really waits for it instead of jumping ahead, so a timer can
  never fire "before" a thread's result that it would have waited for.
* Nothing ready, no timers and no thread in flight: the loop blocks on the real selector, as any
  loop does (only another thread can wake it).  ``freeze()``/``thaw()`` suspend the jumping for
  loops driven from another thread, which the loop cannot see being busy.
* Determinism: the loop's order is a function of the timers and callbacks scheduled, so a run
  that takes time only from the loop (``virtual_clock``) and randomness only from seeded
  sources repeats exactly.  Real sockets break this; the in-process transport needs none.
* Timers due at the same instant run in the order they were scheduled.  asyncio's heap compares
  timers by time alone, so ties come out in whatever order the heap's shape gives — and that
  shape depends on every other timer in it: arming one far-future timer differently (a
  controller's safety-net period) reordered the kubelets' simultaneous start-ups.  In virtual
  time ties are the rule (every node's pod starts S seconds after the same instant), so a
  sequence number breaks them: FIFO, as a real loop's distinct times would order them.  The
  timer heap holds ``(when, sequence, handle)`` entries, so it orders them by comparing tuples
  in C, never by calling a handle's comparison method.
* Compiled (compiled.py), with asyncio's own steps for the loop's hot paths — ``_run_once``
  (3.11's ``BaseEventLoop._run_once``: cancelled timers, the select, due timers, the ready
  callbacks, each run as ``Handle._run`` runs it), ``call_soon``, ``call_at`` and
  ``call_later`` — rather than calling through the interpreted ``asyncio`` code.  A simulated
  cluster is a long chain of small callbacks: at maxUnavailable 1, a 500-node ``plan`` rollout
  scheduled about 47 callbacks, 9 timers and 27 loop turns per pod replaced, and asyncio's
  Python for them (a handle made and run per callback, a comparison method called about ten
  times per timer) was a sixth of the rollout's instructions.  The order of callbacks and the
  clock are exactly as before (the tests above hold, and the golden converge records every
  event of a run); in debug mode the loop takes asyncio's own paths.
"""

from __future__ import annotations

import asyncio
import collections
import contextvars
import heapq
import selectors
from asyncio import format_helpers
from asyncio.base_events import (  # type: ignore[attr-defined]
    _MIN_CANCELLED_TIMER_HANDLES_FRACTION,
    _MIN_SCHEDULED_TIMER_HANDLES,
    MAXIMUM_SELECT_TIMEOUT,
)
from collections.abc import Callable, Coroutine
from typing import Any, Final, TypeVar, TypeVarTuple

from everynode.clock import LoopClock

T = TypeVar("T")
_Ts = TypeVarTuple("_Ts")

# 2023-11-14T22:13:20Z: a fixed, round epoch so that virtual runs write the same timestamps.
DEFAULT_EPOCH: Final = 1_700_000_000.0


# While callbacks are ready (asyncio asks for ``timeout == 0``), the real selector is polled on
# one turn in this many.  Most turns of a simulated cluster have callbacks ready and, in-process,
# no file descriptor to watch but the loop's self-pipe, which ``call_soon_threadsafe`` only writes
# to wake a sleeping loop (its callback is queued directly): each poll was a system call through
# the selectors module for nothing (about 27 per node of a virtual rollout).  A socket's event
# waits at most this many turns of work — no virtual time passes in between, and a turn that
# would wait or jump always polls first — unless the poll cannot find anything: no file
# descriptor is watched but the self-pipe, no signal handler writes to it, and nothing called
# ``call_soon_threadsafe`` (which writes to it) since the last poll.  That is every turn of
# ``plan``'s copy, which serves no socket: at maxUnavailable 1 it jumps about 24 times per pod
# replaced, and each jump polled the selectors module and the kernel for nothing.
POLL_EVERY_BUSY_TURNS: Final = 16


class _Turns:
    """The virtual clock and the loop's own counters, as a compiled record.  The loop extends
    asyncio's interpreted loop class, so each attribute of its own was a dictionary lookup by name
    (about fifteen per turn, a turn per callback chain); here they are fields of one object the
    turn fetches once."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.woken = False  # call_soon_threadsafe wrote to the self-pipe since the last poll
        self.busy_turns = 0  # turns with callbacks ready since the last poll
        # File objects registered through the selector: the loop's own self-pipe is registered
        # before it exists, so this counts the sockets (and pipes) a poll is for.
        self.watched = 0
        self.threads_in_flight = 0
        self.frozen = 0
        self.jumps = 0
        self.timer_seq = 0


class _VirtualSelector(selectors.BaseSelector):
    """Delegates to a real selector (``inner``), but turns a wait into a jump of the loop's
    clock (:meth:`VirtualTimeEventLoop._select`)."""

    def __init__(self, real: selectors.BaseSelector, loop: VirtualTimeEventLoop) -> None:
        self.inner: Any = real  # (Any: a test counts its polls through a stand-in)
        self._loop = loop
        self._turns = loop._turns

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        return self._loop._select(timeout)

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key: selectors.SelectorKey = self.inner.register(fileobj, events, data)
        self._turns.watched += 1
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        key: selectors.SelectorKey = self.inner.unregister(fileobj)
        self._turns.watched -= 1
        return key

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self.inner.modify(fileobj, events, data)

    def close(self) -> None:
        self.inner.close()

    def get_key(self, fileobj: Any) -> selectors.SelectorKey:
        return self.inner.get_key(fileobj)

    def get_map(self) -> Any:
        return self.inner.get_map()


class Handle:
    """A callback on this loop's ready queue: ``asyncio.Handle``'s fields, methods and words, as a
    compiled class.  The loop makes one per callback (about 46 per pod a ``plan`` rollout
    replaces): built natively it costs a few stores, where asyncio's interpreted ``__init__`` (or
    setting its slots one by one from compiled code) cost about 3,000 instructions, and the turn
    reads its fields directly.  Not a subclass of ``asyncio.Handle`` (a compiled class cannot
    extend an interpreted one): what asyncio and its callers use of a handle — ``cancel()``,
    ``cancelled()``, ``get_context()``, ``when()``, the private fields the loop reads, the
    class name in an exception handler's report — is here under the same names."""

    def __init__(self, callback: Any, args: Any, loop: Any, context: Any) -> None:
        self._context: Any = contextvars.copy_context() if context is None else context
        self._loop: Any = loop
        self._callback: Any = callback
        self._args: Any = args  # (a tuple; None once cancelled, as asyncio's)
        self._cancelled = False
        self._repr: str | None = None
        self._source_traceback: Any = None

    def _repr_info(self) -> list[str]:
        info = [type(self).__name__]
        if self._cancelled:
            info.append("cancelled")
        if self._callback is not None:
            info.append(format_helpers._format_callback_source(self._callback, self._args))
        if self._source_traceback:
            frame = self._source_traceback[-1]
            info.append(f"created at {frame[0]}:{frame[1]}")
        return info

    def __repr__(self) -> str:
        if self._repr is not None:
            return self._repr
        return "<" + " ".join(self._repr_info()) + ">"

    def get_context(self) -> Any:
        return self._context

    def cancel(self) -> None:
        if not self._cancelled:
            self._cancelled = True
            if self._loop.get_debug():
                self._repr = repr(self)
            self._callback = None
            self._args = None

    def cancelled(self) -> bool:
        return self._cancelled

    def _run(self) -> None:
        try:
            _call(self._context, self._callback, self._args)
        except (SystemExit, KeyboardInterrupt):
            raise
        except BaseException as exc:  # noqa: BLE001 - Handle._run's own rule
            self._loop._callback_failed(self, exc)


class TimerHandle(Handle):
    """A timer on this loop's heap: ``asyncio.TimerHandle`` as :class:`Handle` is ``Handle``
    (the heap orders ``(when, sequence, handle)`` entries, never handles themselves)."""

    def __init__(self, when: float, callback: Any, args: Any, loop: Any, context: Any) -> None:
        super().__init__(callback, args, loop, context)
        self._when = when
        self._scheduled = False

    def _repr_info(self) -> list[str]:
        info = super()._repr_info()
        info.insert(2 if self._cancelled else 1, f"when={self._when}")
        return info

    def cancel(self) -> None:
        if not self._cancelled:
            self._loop._timer_handle_cancelled(self)
        super().cancel()

    def when(self) -> float:
        return self._when


def _call(context: Any, callback: Any, args: tuple[Any, ...]) -> None:
    """``context.run(callback, *args)``; most callbacks take no argument (a task's step) or one
    (a future's done callback), which are called without building the argument tuple again."""
    count = len(args)
    if count == 0:
        context.run(callback)
    elif count == 1:
        context.run(callback, args[0])
    else:
        context.run(callback, *args)


def _schedule(loop: VirtualTimeEventLoop, when: float, callback: Any, args: tuple[Any, ...], context: Any) -> Any:
    """``call_at``'s steps: a timer on the loop's heap, ordered by time, then by sequence."""
    if loop._closed:
        raise RuntimeError("Event loop is closed")
    if loop._debug:
        loop._check_thread()  # type: ignore[attr-defined]
        loop._check_callback(callback, "call_at")  # type: ignore[attr-defined]
    timer = TimerHandle(when, callback, args, loop, context)
    timer._scheduled = True
    turns = loop._turns
    turns.timer_seq += 1
    heapq.heappush(loop._scheduled, (when, turns.timer_seq, timer))
    return timer


class VirtualTimeEventLoop(asyncio.SelectorEventLoop):
    """A selector event loop whose ``time()`` is virtual and jumps over idle periods.

    ``start`` is the loop's initial ``time()`` (monotonic seconds); ``epoch`` is the wall-clock
    time (seconds since the Unix epoch) that corresponds to ``time() == start`` for
    :meth:`clock`.
    """

    # BaseEventLoop's own state, which typeshed does not declare.  ``_scheduled`` holds
    # ``(when, sequence, handle)`` entries here (module docstring).
    _scheduled: list[Any]
    _task_factory: Any
    _ready: collections.deque[Any]
    _stopping: bool
    _closed: bool
    _debug: bool
    _timer_cancelled_count: int
    _clock_resolution: float
    _selector: Any
    _signal_handlers: dict[int, Any]  # (the Unix loop's: a handler's signal wakes it through the self-pipe)

    def __init__(self, *, start: float = 0.0, epoch: float = DEFAULT_EPOCH) -> None:
        self._turns = _Turns(float(start))
        self._start = float(start)
        self.epoch = float(epoch)
        super().__init__(selectors.DefaultSelector())
        self._selector = _VirtualSelector(self._selector, self)

    def time(self) -> float:
        return self._turns.now

    def _write_to_self(self) -> None:
        """The self-pipe's wake-up (``call_soon_threadsafe``, from any thread), noted so that the
        next turn polls for it (:data:`POLL_EVERY_BUSY_TURNS`)."""
        self._turns.woken = True
        super()._write_to_self()  # type: ignore[misc]

    def call_soon(self, callback: Callable[[*_Ts], object], *args: *_Ts, context: Any = None) -> asyncio.Handle:
        """``BaseEventLoop.call_soon``: a handle on the ready queue."""
        if self._debug:
            return super().call_soon(callback, *args, context=context)
        if self._closed:
            raise RuntimeError("Event loop is closed")
        handle = Handle(callback, args, self, context)
        self._ready.append(handle)
        return handle  # type: ignore[return-value]  # (asyncio.Handle's interface: see Handle)

    def call_later(self, delay: float, callback: Callable[[*_Ts], object], *args: *_Ts,
                   context: Any = None) -> asyncio.TimerHandle:
        """``BaseEventLoop.call_later``: :meth:`call_at` ``delay`` seconds from now (its steps
        called directly: a method call of this interpreted-base class passes the arguments again
        as a tuple and a keyword dict)."""
        if delay is None:
            raise TypeError("delay must not be None")
        return _schedule(self, self._turns.now + delay, callback, args, context)  # (asyncio.TimerHandle's interface: see Handle)

    def call_at(self, when: float, callback: Callable[[*_Ts], object], *args: *_Ts,
                context: Any = None) -> asyncio.TimerHandle:
        """``BaseEventLoop.call_at`` with a FIFO tie-break (see the module docstring)."""
        if when is None:
            raise TypeError("when cannot be None")
        return _schedule(self, when, callback, args, context)  # (asyncio.TimerHandle's interface: see Handle)

    def _timer_handle_cancelled(self, handle: Any) -> None:
        """``BaseEventLoop._timer_handle_cancelled`` (the count that decides when to sweep)."""
        if handle._scheduled:
            self._timer_cancelled_count += 1

    def get_debug(self) -> bool:
        """``BaseEventLoop.get_debug`` (every Future asks its loop when it is made)."""
        return self._debug

    def create_future(self) -> asyncio.Future[Any]:
        """``BaseEventLoop.create_future``."""
        return asyncio.Future(loop=self)

    def create_task(self, coro: Any, *, name: Any = None, context: Any = None) -> asyncio.Task[Any]:
        """``BaseEventLoop.create_task``."""
        if self._closed:
            raise RuntimeError("Event loop is closed")
        if self._task_factory is not None:
            return super().create_task(coro, name=name, context=context)
        task: asyncio.Task[Any] = asyncio.Task(coro, loop=self, name=name, context=context)
        if task._source_traceback:  # type: ignore[attr-defined]
            del task._source_traceback[-1]  # type: ignore[attr-defined]
        return task

    def _advance(self, seconds: float) -> None:
        # Land exactly on the earliest timer when that is what we are jumping to, so that float
        # rounding in ``now + (when - now)`` can never leave it one ulp in the future.
        turns = self._turns
        target = turns.now + seconds
        scheduled = self._scheduled
        if scheduled:
            when: float = scheduled[0][0]
            if abs(when - target) < 1e-6:
                target = max(when, turns.now)
        turns.now = target
        turns.jumps += 1

    def _run_once(self) -> None:
        """One turn: asyncio 3.11's ``BaseEventLoop._run_once`` on this loop's timer heap, with
        the virtual selector's steps and ``Handle._run`` done in place."""
        scheduled = self._scheduled
        turns = self._turns
        # asyncio runs a timer as soon as it is due within the clock's resolution, even when
        # other callbacks are ready and the clock does not jump.  A callback that re-checks
        # ``loop.time() >= deadline`` (the store's watch waits, the bookmark loop) would then see
        # itself early, re-arm, and — with two of them — keep the loop busy forever without time
        # ever advancing.  So the virtual clock reads the due timer's time while it runs.
        if scheduled:
            first: float = scheduled[0][0]
            if turns.now < first < turns.now + self._clock_resolution:
                turns.now = first
        count = len(scheduled)
        if count > _MIN_SCHEDULED_TIMER_HANDLES and \
                self._timer_cancelled_count / count > _MIN_CANCELLED_TIMER_HANDLES_FRACTION:
            kept = []
            for entry in scheduled:
                timer: TimerHandle = entry[2]
                if timer._cancelled:
                    timer._scheduled = False
                else:
                    kept.append(entry)
            heapq.heapify(kept)
            self._scheduled = scheduled = kept
            self._timer_cancelled_count = 0
        else:
            while scheduled:
                first_timer: TimerHandle = scheduled[0][2]
                if not first_timer._cancelled:
                    break
                self._timer_cancelled_count -= 1
                heapq.heappop(scheduled)
                first_timer._scheduled = False
        ready = self._ready
        timeout: float | None = None
        if ready or self._stopping:
            timeout = 0.0
        elif scheduled:
            timeout = min(max(0.0, scheduled[0][0] - turns.now), MAXIMUM_SELECT_TIMEOUT)
        events = self._select(timeout)
        if events:
            self._process_events(events)  # type: ignore[attr-defined]
        end_time = turns.now + self._clock_resolution
        while scheduled:
            entry = scheduled[0]
            if entry[0] >= end_time:
                break
            heapq.heappop(scheduled)
            due: TimerHandle = entry[2]
            due._scheduled = False
            ready.append(due)
        debug = self._debug
        for _ in range(len(ready)):
            item = ready.popleft()
            if isinstance(item, Handle) and not debug:
                handle: Handle = item  # (ours: its fields and _run are native)
                if not handle._cancelled:
                    handle._run()
                continue
            if item._cancelled:  # (asyncio's own handles too: call_soon_threadsafe, readers)
                continue
            if debug:
                self._current_handle = item
                try:
                    item._run()
                finally:
                    self._current_handle = None
            else:
                item._run()

    def _select(self, timeout: float | None) -> list[Any]:
        """The virtual selector's ``select`` (:class:`_VirtualSelector`), in place."""
        turns = self._turns
        if timeout == 0:
            turns.busy_turns += 1
            if turns.busy_turns < POLL_EVERY_BUSY_TURNS:
                return []
        turns.busy_turns = 0
        selector = self._selector
        if turns.woken or turns.watched > 0 or self._signal_handlers:
            turns.woken = False
            events: list[Any] = selector.inner.select(0)
            if events or timeout == 0:
                return events
        elif timeout == 0:
            return []  # (nothing to poll for: see POLL_EVERY_BUSY_TURNS)
        if timeout is None or turns.threads_in_flight or turns.frozen:
            # Nothing to jump to, or real work running in a thread: really wait (time stands still).
            waited: list[Any] = selector.inner.select(None)
            return waited
        self._advance(timeout)
        return []

    def _callback_failed(self, handle: Any, exc: BaseException) -> None:
        """What ``Handle._run`` does with a callback's exception: the loop's exception handler."""
        callback = format_helpers._format_callback_source(handle._callback, handle._args)
        context: dict[str, Any] = {"message": f"Exception in callback {callback}", "exception": exc,
                                   "handle": handle}
        if handle._source_traceback:
            context["source_traceback"] = handle._source_traceback
        self.call_exception_handler(context)

    def freeze(self) -> None:
        """Stop virtual time from jumping (nestable): the loop then waits for real events only.

        For a loop driven from another thread (``everynode.Cluster`` in a plain ``with``): freeze
        while the driving thread is busy between calls, thaw while it waits for a result, so
        virtual time does not race ahead of the driver.  Call through ``call_soon_threadsafe``
        (which also wakes the loop) when calling from another thread."""
        self._turns.frozen += 1

    def thaw(self) -> None:
        if self._turns.frozen > 0:
            self._turns.frozen -= 1

    @property
    def frozen(self) -> bool:
        return self._turns.frozen > 0

    @property
    def jumps(self) -> int:
        """How many times the clock jumped (for diagnostics)."""
        return self._turns.jumps

    def clock(self) -> LoopClock:
        """A :class:`~everynode.clock.LoopClock` reading ``epoch + (time() - start)``."""
        return LoopClock(self, epoch=self.epoch + (self.time() - self._start))

    def run_in_executor(self, executor: Any, func: Callable[[*_Ts], T], *args: *_Ts) -> asyncio.Future[T]:
        fut = super().run_in_executor(executor, func, *args)
        self._turns.threads_in_flight += 1

        def done(_: asyncio.Future[Any]) -> None:
            self._turns.threads_in_flight -= 1

        fut.add_done_callback(done)
        return fut


def virtual_clock(loop: asyncio.AbstractEventLoop | None = None) -> LoopClock:
    """The clock to hand to components running on a virtual loop (the running one by default)."""
    loop = loop or asyncio.get_running_loop()
    if isinstance(loop, VirtualTimeEventLoop):
        return loop.clock()
    return LoopClock(loop)


def new_virtual_loop(*, start: float = 0.0, epoch: float | None = None) -> VirtualTimeEventLoop:
    return VirtualTimeEventLoop(start=start, epoch=DEFAULT_EPOCH if epoch is None else epoch)


def run_virtual(coro: Coroutine[Any, Any, T], *, start: float | None = None) -> T:
    """Run ``coro`` to completion on a fresh virtual-time loop (like ``asyncio.run``).

    ``start`` is the wall-clock time (seconds since the epoch) at which virtual time begins, as
    seen by :func:`virtual_clock`; by default :data:`DEFAULT_EPOCH`, so runs are repeatable.
    Tasks still pending when ``coro`` returns are cancelled, async generators closed.
    """
    loop = new_virtual_loop(epoch=start)
    try:
        asyncio.set_event_loop(loop)
        return loop.run_until_complete(coro)
    finally:
        try:
            _cancel_all_tasks(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.run_until_complete(loop.shutdown_default_executor())
        finally:
            asyncio.set_event_loop(None)
            loop.close()


def _cancel_all_tasks(loop: asyncio.AbstractEventLoop) -> None:
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    if not pending:
        return
    for task in pending:
        task.cancel()
    loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    for task in pending:
        if task.cancelled():
            continue
        if task.exception() is not None:
            loop.call_exception_handler({
                "message": "unhandled exception during run_virtual() shutdown",
                "exception": task.exception(),
                "task": task,
            })
