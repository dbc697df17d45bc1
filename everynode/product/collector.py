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

* :func:`deferred_passes`: no generation-0 pass until :data:`PLAN_YOUNG_LIMIT` new tracked
  objects have piled up.  For ``plan``: what a rollout in the copy creates and keeps (each
  object's new versions, informer entries) survives its first pass, so each pass only walked
  living objects — and touched the old ones they refer to, out of the CPU's caches: 73 ms per
  pass at 5,000 nodes, 0.5 s (4%) of a rollout at maxUnavailable 1 (seven passes), 0.08 s of
  one at 2,000 nodes.  None of those passes, and no full collection at the rollout's end, found
  a single unreachable object (at 2,000 nodes, maxUnavailable 1 and 10%): the simulation makes
  no cyclic garbage to speak of.  The limit keeps memory bounded if a plan ever does (a pass
  then walks the pile once, as the default pace would have over time).

What the passes walk at all matters more than either: the stored objects, most of a control
plane's containers, are outside the collector since the store untracks them
(storage/untracked.py); the figures below were measured before, when every version was walked.

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

# Net new tracked objects before a generation-0 pass, while a plan's copy runs (a 5,000-node
# rollout at maxUnavailable 1 keeps about 350,000: it never reaches this).
PLAN_YOUNG_LIMIT = 2_000_000


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


@contextlib.contextmanager
def deferred_passes(young_limit: int = PLAN_YOUNG_LIMIT) -> Iterator[None]:
    """Generation-0 passes only after ``young_limit`` net new tracked objects within the block
    (the older generations keep their pace); the caller's thresholds again after it."""
    before = gc.get_threshold()
    if before[0] != 0:  # (0: the caller switched automatic passes off; so they stay)
        gc.set_threshold(max(young_limit, before[0]), before[1], before[2])
    try:
        yield
    finally:
        gc.set_threshold(*before)
