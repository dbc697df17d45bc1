"""Int-or-percent values (``maxUnavailable: 1`` or ``"10%"``) resolved against a total.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/util/intstr/intstr.go``
(``GetScaledValueFromIntOrPercent``) for scaling, and the helpers of
``pkg/apis/apps/validation/validation.go`` (``getPercentValue``, ``getIntOrPercentValue``) plus
``apimachinery/pkg/util/validation`` (``IsValidPercent``) for what counts as a percent.

In JSON an IntOrString is just an ``int`` or a ``str``, so that is what these functions take.
Scaling uses exact integer arithmetic: upstream computes ``ceil/floor(float64(p) * float64(total)
/ 100)``, which gives the same answers for every count a cluster can have (the products stay far
below 2**53), without float surprises.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["is_percent", "parse_percent", "int_or_percent_value", "scaled_value", "IntOrString"]

IntOrString = int | str

_PERCENT_RE: Final = re.compile(r"^[0-9]+%$")
_ATOI_RE: Final = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


def is_percent(value: object) -> bool:
    """True for a string of digits followed by ``%`` (upstream ``IsValidPercent``: ``[0-9]+%``)."""
    return isinstance(value, str) and _PERCENT_RE.fullmatch(value) is not None


def parse_percent(value: object) -> int | None:
    """The number in a valid percent string (``"25%"`` → 25), else None (``getPercentValue``)."""
    if not isinstance(value, str) or not is_percent(value):
        return None
    return int(value[:-1])


def _atoi(text: str) -> int | None:
    """Go ``strconv.Atoi`` on 64-bit: optional sign, ASCII digits, int64 range."""
    if not _ATOI_RE.fullmatch(text):
        return None
    n = int(text)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def _atoi_error(text: str) -> str:
    reason = "value out of range" if _ATOI_RE.fullmatch(text) else "invalid syntax"
    return f'strconv.Atoi: parsing "{text}": {reason}'


def int_or_percent_value(value: object) -> int:  # (anything decoded: other types count as 0)
    """Upstream ``getIntOrPercentValue``: the percent number, else the int (a non-numeric string → 0).

    Used by validation for "is it zero" checks, where ``"0%"`` and ``0`` both count as zero.
    """
    pct = parse_percent(value)
    if pct is not None:
        return pct
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        return _atoi(value) or 0
    return 0


def scaled_value(value: object, total: int, *, round_up: bool) -> int:  # (any decoded value)
    """Upstream ``GetScaledValueFromIntOrPercent``.

    An int is returned as is; ``"P%"`` becomes ``ceil(P*total/100)`` (``round_up``) or
    ``floor(P*total/100)``.  Anything else raises ``ValueError`` with upstream's message, e.g.
    ``invalid value for IntOrString: invalid type: string is not a percentage``.
    """
    if value is None:
        raise ValueError("nil value for IntOrString")
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError("invalid value for IntOrString: invalid type: neither int nor percentage")
    if isinstance(value, int):
        return value
    if not value.endswith("%"):
        raise ValueError("invalid value for IntOrString: invalid type: string is not a percentage")
    digits = value[:-1]
    pct = _atoi(digits)
    if pct is None:
        raise ValueError(f'invalid value for IntOrString: invalid value "{value}": {_atoi_error(digits)}')
    product = pct * total
    return -(-product // 100) if round_up else product // 100
