"""Stored objects live outside CPython's cyclic garbage collector.

Why: the collector exists to find reference cycles, and it finds them by walking every
*tracked* container (dict, list, ...) that has survived since its last pass, and every
container each of those refers to, out of the CPU's caches.  A control plane's containers are
mostly its stored objects: JSON trees, immutable once stored (storage/base.py), which hold no
cycle and can never be part of one.  Every version a write stores — kept by the watch history
and the informers' caches — was walked by the next young pass, and again by the next pass of the
middle generation, and never once found to be garbage (collector.py).  Measured with
``gc.callbacks`` around ``bench converge`` (compiled build, the collector at ``own_pace``):
the passes took 1.4 s of a 20,000-node converge (0.9 s young, 0.5 s middle) and 3.8 s of a
40,000-node one, a fifth of its time and growing faster than the cluster; at 5,000 nodes 7% of
it.  Each pod left about 50 tracked containers, 36 of them its stored versions' dicts and lists.

So the store takes each object out of the collector when it keeps it (``untrack``): every dict
and list in the tree, bottom-up.  CPython does the same for its own dicts and tuples that hold
nothing tracked, and has no Python-level call for it, so this is a small C function (built with
the mypyc modules by ``scripts/compile.py``).  It costs what is new in the object only: a
container that is untracked already — a sub-tree shared from an earlier version (canonical.py)
— is not entered, because an untracked container never has a tracked descendant.  What the
collector then walks is what can hold a cycle: tasks, futures, handlers' records.  The same
build with and without it, one run after the other: the passes took 0.06–0.08 s instead of
0.13–0.15 s of a 5,000-node converge, 0.46–0.49 s instead of 1.15–1.20 s of a 20,000-node one
and 2.15 s instead of 5.96 s of a 65,000-node one (whose converge went from 32.9 to 25.9 s).
In instructions the walk costs about what the passes save (callgrind, 2,000 nodes: 41 million,
1% of the converge): the gain is the cache misses of the passes.

Safety: untracking never frees anything early — the collector counts a reference from an
untracked container as one from outside, so what it refers to lives as long as it does.  A
mistake could only leave a cycle through an untracked container unreclaimed, and a JSON tree has
no cycle; anything else in a tree (an object of a class, a tuple, a non-string key, a nesting
deeper than 128) is left tracked with every container above it.  CPython tracks a dict again
when a container is put in it.

Without the build (no C compiler, ``EVERYNODE_PURE``, an edit since the last build: the same
guard as the compiled modules, compiled.py) ``untrack`` does nothing: the objects are the same,
only walked by the collector as before.
"""

from __future__ import annotations

try:
    from everynode.storage._untrack import untrack
except ImportError:  # not built: the collector keeps walking the stored objects
    def untrack(value: object, /) -> bool:
        """Without the build: nothing is untracked (False, as for a value that stays tracked)."""
        return False

ACTIVE: bool = untrack.__module__ != __name__
