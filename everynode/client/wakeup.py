"""A wake-up signal for the loops that sleep until there is work: ``asyncio.Event``'s
``set`` / ``clear`` / ``wait``, compiled.

Why not ``asyncio.Event`` itself: the kubelet simulation's writer and the scheduler's queue
clear it and wait on it every time they run dry — in a virtual rollout several times per pod
replaced — and ``asyncio.Event`` is interpreted Python with a loop check on every wait
(``_LoopBoundMixin._get_loop``): 1.4% of a 2,000-node rollout's wall time (py-spy).  This
class does the same steps in the same order — ``set`` resolves every waiting future (each
waiter's task is then scheduled by the loop, as with an Event), ``wait`` returns at once when
set, and otherwise waits on a fresh future — so runs, virtual ones included, interleave exactly
as before.  It is bound to the running loop of its first wait, like an Event.
"""

from __future__ import annotations

import asyncio


class Wakeup:
    """``asyncio.Event``'s semantics for ``set``, ``clear``, ``is_set`` and ``wait``."""

    __slots__ = ("_set", "_waiters")

    def __init__(self) -> None:
        self._set = False
        self._waiters: list[asyncio.Future[None]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        """Wake every waiter (and let the next ``wait`` return at once until ``clear``)."""
        if self._set:
            return
        self._set = True
        waiters = self._waiters
        if waiters:
            self._waiters = []
            for waiter in waiters:
                if not waiter.done():
                    waiter.set_result(None)

    def clear(self) -> None:
        self._set = False

    async def wait(self) -> None:
        """Return once set (at once if it is)."""
        if self._set:
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            if not waiter.done() or waiter.cancelled():
                self._remove(waiter)

    def _remove(self, waiter: asyncio.Future[None]) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)
