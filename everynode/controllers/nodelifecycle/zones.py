"""Zones: how the node lifecycle controller groups nodes, judges a zone's health and paces
NoExecute tainting in it.

Upstream: ``node_lifecycle_controller.go`` (``ComputeZoneState``, ``setLimiterInZone``,
``handleDisruption``'s states) and ``k8s.io/client-go/util/flowcontrol`` (the token bucket of
``zoneNoExecuteTainter``).  Kept apart because they are the controller's rate policy — pure
arithmetic on counts and a bucket on an injected time — with nothing of informers or writes, so
the table tests pin every threshold without a cluster.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]

EXCLUDE_DISRUPTION_LABEL = "node.kubernetes.io/exclude-disruption"

# Zone states (``ZoneState``).
INITIAL = "Initial"
NORMAL = "Normal"
FULL_DISRUPTION = "FullDisruption"
PARTIAL_DISRUPTION = "PartialDisruption"


def zone_key(node: Obj) -> str:
    """``nodetopology.GetZoneKey``: region and zone (beta labels first), "" when neither is set."""
    labels = node["metadata"].get("labels") or {}
    zone = labels.get("failure-domain.beta.kubernetes.io/zone", labels.get("topology.kubernetes.io/zone", ""))
    region = labels.get("failure-domain.beta.kubernetes.io/region", labels.get("topology.kubernetes.io/region", ""))
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def zone_state(ready_nodes: int, not_ready: int, *, unhealthy_threshold: float = 0.55) -> tuple[int, str]:
    """``ComputeZoneState``: (not-ready count, state) from the counts of a zone's Ready nodes and
    of the others (Ready False, Unknown, or not posted yet); the monitor keeps these counts
    instead of the statuses' list."""
    if ready_nodes == 0 and not_ready > 0:
        return not_ready, FULL_DISRUPTION
    if not_ready > 2 and not_ready / (not_ready + ready_nodes) >= unhealthy_threshold:
        return not_ready, PARTIAL_DISRUPTION
    return not_ready, NORMAL


def zone_rate(state: str, zone_size: int, *, eviction_rate: float = 0.1, secondary_eviction_rate: float = 0.01,
              large_cluster_threshold: int = 50) -> float:
    """``setLimiterInZone``: the tainting rate (nodes per second) for a zone in ``state``."""
    if state == PARTIAL_DISRUPTION:
        return secondary_eviction_rate if zone_size > large_cluster_threshold else 0.0
    return eviction_rate  # normal, and fully disrupted (HealthyQPSFunc)


class TokenBucket:
    """``flowcontrol.NewTokenBucketRateLimiter(qps, burst)`` with non-blocking ``TryAccept``;
    a rate of 0 never accepts (``NewFakeNeverRateLimiter``).  Starts full."""

    def __init__(self, rate: float, *, burst: int = 1, now: float = 0.0) -> None:
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.last = now

    def try_accept(self, now: float) -> bool:
        if self.rate <= 0:
            return False
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self.last) * self.rate)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False

    def swap(self, rate: float, now: float) -> None:
        """``SwapLimiter``: a different rate gets a fresh, full bucket."""
        if rate == self.rate:
            return
        self.rate = rate
        self.tokens = float(self.burst)
        self.last = now


__all__ = [
    "EXCLUDE_DISRUPTION_LABEL",
    "FULL_DISRUPTION",
    "INITIAL",
    "NORMAL",
    "PARTIAL_DISRUPTION",
    "TokenBucket",
    "zone_key",
    "zone_rate",
    "zone_state",
]
