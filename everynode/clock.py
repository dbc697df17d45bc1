"""One injected clock for every component, so the same code runs in real or virtual time.

Design choice: components wait with plain asyncio (``asyncio.sleep``, ``loop.call_later``) and
read wall-clock time only through a :class:`Clock`.  In real time the clock is ``time.time``.
In virtual time the event loop itself runs on virtual time (it jumps to the next timer when
nothing is ready, see ``everynode.virtualtime``), and :class:`LoopClock` derives wall
time from the loop's time, so timestamps written into objects move with the virtual clock.
The trade-off: virtual time only works where every waiter uses the loop (no threads, no real
sockets needed for progress) — true for the in-process transport, which is what it is for.
"""

from __future__ import annotations

import asyncio
import math
import time
from datetime import UTC, datetime
from typing import Final

from everynode.compiled import mypyc_attr


@mypyc_attr(allow_interpreted_subclasses=True)
class Clock:
    """Wall-clock time (seconds since the epoch) plus a monotonic reading.  Compiled
    (compiled.py); tests derive fixed and stepped clocks from it."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def rfc3339(self, ts: float | None = None) -> str:
        """``metav1.Time`` text: second precision, UTC, ``Z`` suffix."""
        return format_rfc3339(self.now() if ts is None else ts)

    def rfc3339_micro(self, ts: float | None = None) -> str:
        """``metav1.MicroTime`` text (leases, events.k8s.io): microseconds, ``Z`` suffix."""
        return format_rfc3339_micro(self.now() if ts is None else ts)


RealClock = Clock


class LoopClock(Clock):
    """Wall time derived from the running loop's time (virtual under a virtual-time loop)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, *, epoch: float | None = None):
        self._loop = loop
        self._epoch = time.time() if epoch is None else epoch
        self._t0 = loop.time()

    def now(self) -> float:
        return self._epoch + (self._loop.time() - self._t0)

    def monotonic(self) -> float:
        return self._loop.time()


def format_rfc3339(ts: float) -> str:
    """``metav1.Time`` text of ``ts`` (second precision).  Texts are remembered by second: every
    write stamps at least one timestamp, and strftime was a visible share of a lease renewal or
    an event.  A single remembered second was not enough — one write stamps ``now``, the next a
    deletion deadline 30 s later, a third ``now`` again (1.6% of a virtual rollout's wall time
    went to strftime).  A second not seen yet is formatted from its day's text (strftime once per
    day) and its time of day: a virtual rollout moves to a new second with every step.  The
    tables are bounded: they start afresh after :data:`_FORMATTED_LIMIT` entries.  Reads and
    one-key writes of a dict are atomic under the GIL: safe across threads."""
    second = int(ts)
    text = _formatted.get(second)
    if text is None:
        day, in_day = divmod(second, 86_400)
        date = _days.get(day)
        if date is None:
            if len(_days) >= _FORMATTED_LIMIT:
                _days.clear()
            date = _days[day] = datetime.fromtimestamp(day * 86_400, UTC).strftime("%Y-%m-%dT")
        hours, rest = divmod(in_day, 3600)
        minutes, seconds = divmod(rest, 60)
        if len(_formatted) >= _FORMATTED_LIMIT:
            _formatted.clear()
        text = _formatted[second] = f"{date}{hours:02d}:{minutes:02d}:{seconds:02d}Z"
    return text


def format_rfc3339_micro(ts: float) -> str:
    """``metav1.MicroTime`` text of ``ts``: the remembered second of :func:`format_rfc3339` and
    the microseconds, rounded as ``datetime.fromtimestamp`` rounds them (half to even, a carry
    into the next second).  strftime was a tenth of a lease renewal's instructions (24 K of
    239 K, compiled): every node renews its lease every 10 s."""
    fraction, whole = math.modf(ts)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        micros -= 1_000_000
        whole += 1
    elif micros < 0:
        micros += 1_000_000
        whole -= 1
    return f"{format_rfc3339(whole)[:-1]}.{micros:06d}Z"


_FORMATTED_LIMIT: Final = 4096
_formatted: Final[dict[int, str]] = {}
_days: Final[dict[int, str]] = {}  # day number since the epoch -> "YYYY-MM-DDT"


def parse_rfc3339(text: str) -> float:
    """Parse ``2024-01-02T03:04:05Z`` / with fractions / with an offset into epoch seconds."""
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    return datetime.fromisoformat(text).timestamp()
