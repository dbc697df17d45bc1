"""Controller expectations: how many creates/deletes a controller is still waiting to *see*.

Upstream: ``pkg/controller/controller_utils.go`` (``ControllerExpectations``).  A controller that
has just issued N creates must not act on its (stale) informer cache until it has observed those
N pods arrive, or it would create them again.  It records "I expect N adds and M deletes" under
the owner's key; informer handlers lower the counters as the events arrive; the sync skips the
manage step until the record is *satisfied*:

* there is no record (first sync, or after ``delete_expectations``), or
* both counters are ≤ 0 (everything observed; more observations than expected are harmless), or
* the record is older than :data:`EXPECTATIONS_TIMEOUT` (5 minutes): an event was lost, act anyway.

Time comes from the injected :class:`~everynode.clock.Clock` (its monotonic reading), so the
timeout follows virtual time in simulations and a fake clock in tests.
"""

from __future__ import annotations

import logging
from typing import Final

from everynode.clock import Clock

log = logging.getLogger(__name__)

EXPECTATIONS_TIMEOUT: Final = 5 * 60.0  # seconds, controller_utils.go ExpectationsTimeout


class Expectation:
    """``ControlleeExpectations``: outstanding adds/deletes and when they were set.  A plain class:
    one is made on every sync that manages (compiled.py; a dataclass's ``__init__`` would run
    interpreted)."""

    def __init__(self, adds: int, dels: int, timestamp: float) -> None:
        self.adds = adds
        self.dels = dels
        self.timestamp = timestamp  # clock.monotonic() when set

    def __repr__(self) -> str:
        return f"Expectation(adds={self.adds}, dels={self.dels}, timestamp={self.timestamp})"

    def fulfilled(self) -> bool:
        return self.adds <= 0 and self.dels <= 0


class Expectations:
    def __init__(self, *, clock: Clock | None = None, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self.clock = clock if clock is not None else Clock()
        self.timeout = timeout
        self._records: dict[str, Expectation] = {}

    def get(self, key: str) -> Expectation | None:
        """The record for ``key`` (read-only view), or None."""
        return self._records.get(key)

    def set_expectations(self, key: str, adds: int, dels: int) -> None:
        """Replace any record for ``key`` with fresh counters, timestamped now."""
        self._records[key] = Expectation(adds, dels, self.clock.monotonic())

    def expect_creations(self, key: str, adds: int) -> None:
        self.set_expectations(key, adds, 0)

    def expect_deletions(self, key: str, dels: int) -> None:
        self.set_expectations(key, 0, dels)

    def raise_expectations(self, key: str, adds: int, dels: int) -> None:
        """Increase an existing record's counters (no-op without a record, as upstream)."""
        rec = self._records.get(key)
        if rec is not None:
            rec.adds += adds
            rec.dels += dels

    def lower_expectations(self, key: str, adds: int, dels: int) -> None:
        """Decrease an existing record's counters (no-op without a record, as upstream)."""
        rec = self._records.get(key)
        if rec is not None:
            rec.adds -= adds
            rec.dels -= dels

    def creation_observed(self, key: str) -> None:
        self.lower_expectations(key, 1, 0)

    def deletion_observed(self, key: str) -> None:
        self.lower_expectations(key, 0, 1)

    def delete_expectations(self, key: str) -> None:
        self._records.pop(key, None)

    def expired(self, key: str) -> bool:
        rec = self._records.get(key)
        return rec is not None and self.clock.monotonic() - rec.timestamp > self.timeout

    def satisfied(self, key: str) -> bool:
        """``SatisfiedExpectations``: True when the controller may act on its cache for ``key``."""
        rec = self._records.get(key)
        if rec is None:
            return True
        if rec.fulfilled():
            return True
        if self.clock.monotonic() - rec.timestamp > self.timeout:
            log.debug("expectations for %s timed out (adds=%d dels=%d); syncing anyway", key, rec.adds, rec.dels)
            return True
        return False

    def __len__(self) -> int:
        return len(self._records)

    def __bool__(self) -> bool:
        return True

    def __contains__(self, key: str) -> bool:
        return key in self._records
