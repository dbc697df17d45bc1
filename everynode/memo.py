"""Process-wide memo tables with a size bound: the one policy every hot-path memo here follows.

Why one policy, and this one: the memos (validated names, toleration verdicts, managedFields
path elements and trees, parsed timestamps) hold pure answers keyed by everything the answer
depends on, so forgetting an entry only costs its recomputation.  When a table reaches its
bound it is emptied at once rather than evicted entry by entry: no bookkeeping per hit (an LRU
would cost more than most of the answers it keeps), and the popular keys — the few shapes every
DaemonSet pod, Lease and Event share — are back within a few writes.
"""

from __future__ import annotations

from typing import TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(memo: dict[K, V], key: K, value: V, *, limit: int) -> V:
    """Store ``value`` under ``key`` (emptying ``memo`` first when it holds ``limit`` entries)
    and return it."""
    if len(memo) >= limit:
        memo.clear()
    memo[key] = value
    return value
