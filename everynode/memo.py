"""Process-wide memo tables with a size bound: the one policy every hot-path memo here follows.

Why one policy, and this one: the memos (validated names, toleration verdicts, managedFields
path elements and trees, parsed timestamps) hold pure answers keyed by everything the answer
depends on, so forgetting an entry only costs its recomputation.  When a table reaches its
bound it is emptied at once rather than evicted entry by entry: no bookkeeping per hit (an LRU
would cost more than most of the answers it keeps), and the popular keys — the few shapes every
DaemonSet pod, Lease and Event share — are back within a few writes.
"""

from __future__ import annotations

from typing import Final, TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(memo: dict[K, V], key: K, value: V, *, limit: int) -> V:
    """Store ``value`` under ``key`` (emptying ``memo`` first when it holds ``limit`` entries)
    and return it."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value
    return value


# A memo place (a schema position, a kind of tree) whose last UNSHARED_STREAK look-ups all missed
# is not looked up any more, but on every PROBE_EVERY-th visit (storage/canonical.py shares its
# places by these numbers too, with a rule of its own for the places it stops walking).
UNSHARED_STREAK: Final = 8
PROBE_EVERY: Final = 64


def skips_look_up(misses: dict[K, int], place: K) -> bool:
    """Whether this visit of ``place`` skips its memo look-up: the last ``UNSHARED_STREAK``
    look-ups there all missed (a pod's IPs, unique to it), and this is not a probe, which looks
    again so that a place that starts repeating is memoised again.  A skipped visit is counted."""
    streak = misses.get(place, 0)
    if streak >= UNSHARED_STREAK and streak % PROBE_EVERY:
        misses[place] = streak + 1
        return True
    return False


def record_look_up(misses: dict[K, int], place: K, hit: bool, *, limit: int) -> None:
    """Count a look-up at ``place`` for :func:`skips_look_up`: a hit ends its streak of misses."""
    if hit:
        if misses.get(place):
            misses[place] = 0
    else:
        remember(misses, place, misses.get(place, 0) + 1, limit=limit)
