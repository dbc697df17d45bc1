"""Failed-pod backoff (§4.5): how often a failed daemon pod on one node may be deleted.

Upstream: ``staging/src/k8s.io/client-go/util/flowcontrol/backoff.go`` (``Backoff`` without
jitter, ``NewBackOff(1s, 15m)`` in ``cmd/kube-controller-manager/app/apps.go``) and
``failedPodsBackoffKey`` in ``daemon_controller.go``.  This is the DaemonSet's defence against
hot-looping with a kubelet that keeps rejecting its pod.

The key is ``<ds uid>/<ds status.observedGeneration>/<node>``: per node (not per pod), and reset
by any spec change (new observedGeneration).  Time is passed in (seconds, from the injected
clock) so the table is testable without waiting.
"""

from __future__ import annotations

from typing import Any, Final

from everynode.api.meta import field_of

INITIAL_DELAY: Final = 1.0
MAX_DELAY: Final = 15 * 60.0
GC_INTERVAL: Final = 60.0  # BackoffGCInterval


def failed_pods_backoff_key(ds: dict[str, Any], node_name: str) -> str:
    uid = field_of(ds.get("metadata"), "uid") or ""
    observed = int(field_of(ds.get("status"), "observedGeneration") or 0)
    return f"{uid}/{observed}/{node_name}"


class _Entry:
    """One key's delay and when it last grew (a plain class, as compiled.py's records are)."""

    def __init__(self, delay: float, last_update: float) -> None:
        self.delay = delay
        self.last_update = last_update


class Backoff:
    """``flowcontrol.Backoff`` (no jitter): per-key exponential delay with expiry at 2 × max."""

    def __init__(self, *, initial: float = INITIAL_DELAY, maximum: float = MAX_DELAY) -> None:
        self.initial = initial
        self.maximum = maximum
        self._entries: dict[str, _Entry] = {}

    def _expired(self, entry: _Entry, now: float) -> bool:
        # "consider stable if it's ok for twice the maxDuration"
        return now - entry.last_update > 2 * self.maximum

    def get(self, key: str) -> float:
        """The current delay (0 if there is no entry)."""
        entry = self._entries.get(key)
        return entry.delay if entry is not None else 0.0

    def next(self, key: str, now: float) -> None:
        """Record an event: start at ``initial`` (new or expired entry), else double up to max."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            self._entries[key] = _Entry(self.initial, now)
        else:
            entry.delay = min(entry.delay * 2, self.maximum)
            entry.last_update = now

    def is_in_backoff_since_update(self, key: str, now: float) -> bool:
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            return False
        return now - entry.last_update < entry.delay

    def reset(self, key: str) -> None:
        self._entries.pop(key, None)

    def gc(self, now: float) -> int:
        """Drop entries not updated for more than 2 × max; returns how many were dropped."""
        doomed = [k for k, e in self._entries.items() if now - e.last_update > 2 * self.maximum]
        for key in doomed:
            del self._entries[key]
        return len(doomed)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries
