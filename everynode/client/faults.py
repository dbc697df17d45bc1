"""Fault injection for the in-process client: make a fraction of writes fail like a real cluster does.

Controllers must converge despite optimistic-lock conflicts, transient 500s and timeouts (DESIGN.md
quality bar: "a restarted controller converges without ever ..."), and those faults are rare in a
healthy embedded cluster.  :class:`FaultInjector` produces them on demand, reproducibly (seeded).

The three faults and where they strike:

* ``conflict`` — 409 ``Conflict`` with upstream's optimistic-lock message, *before* the write
  (nothing stored), as a stale resourceVersion would produce;
* ``internal`` — 500 ``InternalError``, before the write;
* ``timeout`` — :class:`asyncio.TimeoutError`, either before the write or *after* it was applied
  (the client never learns the outcome: the case that makes idempotence and expectations matter).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable

from everynode.api import errors
from everynode.api.registry import ResourceType

FAULT_KINDS = ("conflict", "internal", "timeout")
WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "delete_collection", "create_subresource"})


class FaultInjector:
    def __init__(self, rate: float = 0.1, *, seed: int | None = None, kinds: Iterable[str] = FAULT_KINDS,
                 verbs: Iterable[str] = WRITE_VERBS, resources: Iterable[str] | None = None) -> None:
        """``rate``: probability that a matching call fails.  ``resources``: canonical resource names
        to restrict faults to (None: all)."""
        if not 0.0 <= rate <= 1.0:
            raise ValueError("rate must be within [0, 1]")
        self.kinds = tuple(kinds)
        unknown = set(self.kinds) - set(FAULT_KINDS)
        if unknown:
            raise ValueError(f"unknown fault kinds: {sorted(unknown)}")
        self.rate = rate
        self.verbs = frozenset(verbs)
        self.resources = frozenset(resources) if resources is not None else None
        self.enabled = True
        self.injected: Counter[str] = Counter()
        self._rng = random.Random(seed)

    def decide(self, verb: str, rt: ResourceType) -> tuple[str, bool] | None:
        """Whether this call fails: ``(kind, after_write)`` or None."""
        if not self.enabled or verb not in self.verbs or not self.kinds:
            return None
        if self.resources is not None and rt.key not in self.resources:
            return None
        if self._rng.random() >= self.rate:
            return None
        kind = self._rng.choice(self.kinds)
        after = kind == "timeout" and self._rng.random() < 0.5
        self.injected[kind] += 1
        return kind, after

    @staticmethod
    def error(kind: str, rt: ResourceType, name: str) -> BaseException:
        if kind == "conflict":
            return errors.stale(rt.plural, rt.group, name or "")
        if kind == "internal":
            return errors.internal("injected fault")
        return TimeoutError()
