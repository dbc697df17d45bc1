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
from everynode.api.meta import field_of

Obj = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Rolling-update budgets (SurgeCount, UnavailableCount, updatedDesiredNodeCounts)
# ---------------------------------------------------------------------------------------------

class BudgetError(ValueError):
    """An unusable maxSurge / maxUnavailable; the message is upstream's."""


def _rolling(ds: Obj) -> Any:
    """``spec.updateStrategy.rollingUpdate`` of a RollingUpdate DaemonSet (None otherwise)."""
    if update_strategy_type(ds) != ROLLING_UPDATE:
        return None
    return field_of(field_of(field_of(ds, "spec"), "updateStrategy"), "rollingUpdate")


def _surge(rolling: Any, number_to_schedule: int) -> int:
    value = field_of(rolling, "maxSurge")
    if value is None:
        return 0
    return intstr.scaled_value(value, number_to_schedule, round_up=True)


def _unavailable(rolling: Any, number_to_schedule: int) -> int:
    if rolling is None:
        return 0
    value = field_of(rolling, "maxUnavailable")
    if value is None:
        # Go: GetScaledValueFromIntOrPercent(nil, ...) fails; defaulting makes this unreachable.
        raise ValueError("nil value for IntOrString")
    return intstr.scaled_value(value, number_to_schedule, round_up=True)


def surge_count(ds: Obj, number_to_schedule: int) -> int:
    """``SurgeCount``: 0 unless RollingUpdate with a maxSurge; percentages round up."""
    return _surge(_rolling(ds), number_to_schedule)


def unavailable_count(ds: Obj, number_to_schedule: int) -> int:
    """``UnavailableCount``: 0 unless RollingUpdate; percentages round up."""
    return _unavailable(_rolling(ds), number_to_schedule)


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
    rolling = _rolling(ds)
    try:
        max_unavailable = _unavailable(rolling, desired)
    except ValueError as e:
        raise BudgetError(f"invalid value for MaxUnavailable: {e}") from e
    try:
        max_surge = _surge(rolling, desired)
    except ValueError as e:
        raise BudgetError(f"invalid value for MaxSurge: {e}") from e
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        # "DaemonSet is not configured for surge or unavailability, defaulting to accepting unavailability"
        max_unavailable = 1
    return max_surge, max_unavailable
