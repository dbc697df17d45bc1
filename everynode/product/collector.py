"""How everynode's own processes pace CPython's cyclic garbage collector.

Why: the collector re-traverses every tracked object each time enough allocations pile up
(generation 0 every 700, a full pass every 100 generation-0 passes).  A control plane holds
millions of long-lived, acyclic dicts, so the default pace spent ~20% of the converge CPU
re-walking them.  Two measures, both only for our own processes (``up``, ``bench``, ``plan``),
never imposed on an embedding program (``everynode.Cluster``) beyond the call that asked for it:

* :data:`GC_THRESHOLDS`: collect ~70× less often.  Young cycles (futures, tracebacks) stay
  bounded; reference counts free everything else at once, as always.
* :func:`frozen_heap`: ``gc.freeze()`` moves every object tracked so far out of the
  collector's passes until the block ends (``gc.unfreeze()``).  For ``plan``: the loaded copy of
  the cluster — its stored objects, informer caches, indexes — lives until the plan ends, so
  walking it again in every full pass is waste.  Measured by instruction count (callgrind, one
  plan of 1,000 nodes at maxUnavailable 1 with the snapshot built first, ``PYTHONHASHSEED=0``):
  the collector's work 910 → 797 million instructions, the whole run 22.86 → 22.75 billion
  (−0.5%); wall-clock runs of the same plan varied by ±15% from one run to the next, more than
  the effect.  The trade-off: a cycle among frozen objects that becomes garbage during the block
  is reclaimed only after it (the copy is dropped at its end anyway); acyclic garbage is freed at
  once as always.

The pace matters more than the freeze: ``everynode plan`` ran at CPython's default pace until
it used :func:`own_pace`.  The same callgrind run at the default pace against
:data:`GC_THRESHOLDS` (both with the freeze): the collector's work 1,564 → 799 million
instructions, the whole run 23.53 → 22.78 billion (−3.2%).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator

GC_THRESHOLDS = (50_000, 20, 100)


@contextlib.contextmanager
def own_pace() -> Iterator[None]:
    """:data:`GC_THRESHOLDS` within the block, the caller's thresholds again after it."""
    before = gc.get_threshold()
    gc.set_threshold(*GC_THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*before)


@contextlib.contextmanager
def frozen_heap() -> Iterator[Callable[[], None]]:
    """Yields ``freeze``: each call takes every object tracked so far out of the collector's
    passes; on leaving the block they are all handed back to it (the oldest generation) —
    unless the process had frozen objects before the block (an embedding program's own
    ``gc.freeze()``), which ``gc.unfreeze()`` cannot tell apart: then they stay frozen."""
    ours = gc.get_freeze_count() == 0
    try:
        yield gc.freeze
    finally:
        if ours:
            gc.unfreeze()
