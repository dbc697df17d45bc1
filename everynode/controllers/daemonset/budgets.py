"""A rolling update's budgets: how many pods may surge and how many may be unavailable.

Upstream: ``pkg/controller/daemon/util/daemonset_util.go`` (``SurgeCount``, ``UnavailableCount``,
``AllowsSurge``) and ``update.go`` (``updatedDesiredNodeCounts``, with its "accept one
unavailable" safety net); reference: daemonset-semantics.md §5.1.  Pure arithmetic on the
DaemonSet's strategy (defaulting guarantees it is set), tested as tables; errors carry
upstream's messages because they end up in the DaemonSet's events.
"""

from __future__ import annotations

from typing import Any

from everynode.api import intstr
from everynode.api.daemonset import ROLLING_UPDATE, update_strategy_type

Obj = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Rolling-update budgets (SurgeCount, UnavailableCount, updatedDesiredNodeCounts)
# ---------------------------------------------------------------------------------------------

class BudgetError(ValueError):
    """An unusable maxSurge / maxUnavailable; the message is upstream's."""


def _rolling(ds: Obj) -> Obj | None:
    if update_strategy_type(ds) != ROLLING_UPDATE:
        return None
    return ((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate")


def surge_count(ds: Obj, number_to_schedule: int) -> int:
    """``SurgeCount``: 0 unless RollingUpdate with a maxSurge; percentages round up."""
    rolling = _rolling(ds)
    if rolling is None or rolling.get("maxSurge") is None:
        return 0
    return intstr.scaled_value(rolling["maxSurge"], number_to_schedule, round_up=True)


def unavailable_count(ds: Obj, number_to_schedule: int) -> int:
    """``UnavailableCount``: 0 unless RollingUpdate; percentages round up."""
    rolling = _rolling(ds)
    if rolling is None:
        return 0
    value = rolling.get("maxUnavailable")
    if value is None:
        # Go: GetScaledValueFromIntOrPercent(nil, ...) fails; defaulting makes this unreachable.
        raise ValueError("nil value for IntOrString")
    return intstr.scaled_value(value, number_to_schedule, round_up=True)


def allows_surge(ds: Obj) -> bool:
    """``AllowsSurge``: maxSurge evaluated against one node is positive."""
    try:
        return surge_count(ds, 1) > 0
    except ValueError:
        return False


def update_budgets(ds: Obj, desired: int) -> tuple[int, int]:
    """``(maxSurge, maxUnavailable)`` for ``desired`` nodes, with upstream's safety net.

    Raises :class:`BudgetError` with ``invalid value for MaxUnavailable: …`` /
    ``invalid value for MaxSurge: …``.
    """
    try:
        max_unavailable = unavailable_count(ds, desired)
    except ValueError as e:
        raise BudgetError(f"invalid value for MaxUnavailable: {e}") from e
    try:
        max_surge = surge_count(ds, desired)
    except ValueError as e:
        raise BudgetError(f"invalid value for MaxSurge: {e}") from e
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        # "DaemonSet is not configured for surge or unavailability, defaulting to accepting unavailability"
        max_unavailable = 1
    return max_surge, max_unavailable
