"""Resource quantities (``100m``, ``16Gi``, ``1e3``) as exact fractions.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go`` (``ParseQuantity``,
``CanonicalizeBytes``, ``ScaledValue``) and ``suffix.go``.  Upstream keeps an int64 fast path and
an ``inf.Dec`` slow path; a :class:`fractions.Fraction` holds every value either can, exactly, so
one representation suffices here.  The observable rules are kept:

* the grammar and its three error texts (format, numeric part, suffix);
* parsed values are rounded *away from zero* to nano (10^-9) precision, and binary-suffixed
  values are capped at 2^63-1, as ``ParseQuantity`` does;
* ``milli_value`` / ``int_value`` round away from zero (upstream ``ScaledValue``: "rounded up");
* :func:`format_quantity` / :func:`canonical_quantity` print the canonical form the API server
  returns (``1000m`` → ``1``, ``1536Mi`` stays, ``1.5Gi`` → ``1536Mi``, ``2000`` → ``2k``).

This module does not depend on lightkube's quantity helpers (different rounding and output).
"""

from __future__ import annotations

import functools
import re
from fractions import Fraction
from typing import Any, Final

__all__ = [
    "parse_quantity",
    "milli_value",
    "int_value",
    "format_quantity",
    "canonical_quantity",
    "quantity_format",
    "ERR_FORMAT_WRONG",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
]

ERR_FORMAT_WRONG: Final = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
ERR_NUMERIC: Final = "unable to parse numeric part of quantity"
ERR_SUFFIX: Final = "unable to parse quantity's suffix"

DECIMAL_SI: Final = 'DecimalSI'
BINARY_SI: Final = 'BinarySI'
DECIMAL_EXPONENT: Final = 'DecimalExponent'

# Mirrors the hand-written scanner of parseQuantityString: sign, digits, optional "." digits,
# then suffix letters, an optional exponent sign and digits.  Digits may be absent ("." is 0).
_QUANTITY_RE: Final = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[-+]?[0-9]*)")

_DECIMAL_SUFFIXES: Final = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES: Final = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_BY_EXPONENT: Final = {v: k for k, v in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_EXPONENT: Final = {0: "", **{v: k for k, v in _BINARY_SUFFIXES.items()}}
_EXPONENT_RE: Final = re.compile(r"[+-]?[0-9]+")

_NANO: Final = 10**9
_MAX_BINARY: Final = (1 << 63) - 1
# Guards against inputs like "1e999999999" that would build astronomically large integers; upstream
# stores these lazily in inf.Dec, but nothing in a cluster needs them.
_MAX_DIGITS: Final = 4000

Number = int | Fraction


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) for a suffix; ValueError(ERR_SUFFIX) if unknown."""
    exp = _DECIMAL_SUFFIXES.get(suffix)
    if exp is not None:
        return 10, exp, DECIMAL_SI
    exp = _BINARY_SUFFIXES.get(suffix)
    if exp is not None:
        return 2, exp, BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE" and _EXPONENT_RE.fullmatch(suffix[1:]):
        exp = int(suffix[1:])
        if -(1 << 31) <= exp < (1 << 31):
            return 10, exp, DECIMAL_EXPONENT
    raise ValueError(ERR_SUFFIX)


def _round_away_from_zero(value: Fraction, scale: int) -> Fraction:
    """Round to a multiple of 1/scale, away from zero."""
    scaled = value * scale
    if scaled.denominator == 1:
        return value
    n = -((-abs(scaled.numerator)) // scaled.denominator)  # ceil of |scaled|
    return Fraction(n if value > 0 else -n, scale)


def _parse(text: str) -> tuple[Fraction, str]:
    if not isinstance(text, str) or not text:
        raise ValueError(ERR_FORMAT_WRONG)
    return _parse_cached(text)


@functools.lru_cache(maxsize=4096)
def _parse_cached(text: str) -> tuple[Fraction, str]:
    """Quantities repeat endlessly (every node's "4", "16Gi", every pod's requests): parse each
    distinct string once.  Fractions are immutable, so sharing the result is safe; errors are
    not cached (lru_cache does not cache exceptions)."""
    m = _QUANTITY_RE.fullmatch(text)
    if m is None:
        raise ValueError(ERR_FORMAT_WRONG)
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3) or "", m.group(4)
    base, exponent, fmt = _interpret_suffix(suffix)
    digits = (whole + frac).lstrip("0")
    if not digits:
        return Fraction(0), fmt
    if len(digits) > _MAX_DIGITS or (base == 10 and abs(exponent) > _MAX_DIGITS):
        raise ValueError(ERR_NUMERIC)
    mantissa = Fraction(int(whole + frac), 10 ** len(frac))
    if base == 10:
        value = mantissa * 10**exponent if exponent >= 0 else mantissa / 10**-exponent
    else:
        value = mantissa * (1 << exponent)
    value = _round_away_from_zero(value, _NANO)
    if fmt == BINARY_SI and value > _MAX_BINARY:
        value = Fraction(_MAX_BINARY)
    return (-value if sign == "-" else value), fmt


def parse_quantity(text: str) -> Fraction:
    """Parse a quantity string into its exact value; ValueError with upstream's message if invalid."""
    return _parse(text)[0]


def parse_quantity_value(value: Any) -> Fraction | None:
    """Upstream ``resource.ParseQuantity`` semantics (value only); ``None`` if malformed."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        value = str(value)
    if not isinstance(value, str):
        return None
    try:
        return parse_quantity(value)
    except ValueError:
        return None


def quantity_format(text: str) -> str:
    """The format the suffix implies: ``DecimalSI``, ``BinarySI`` or ``DecimalExponent``."""
    return _parse(text)[1]


def _value_of(value: str | Number) -> Fraction:
    if isinstance(value, str):
        return parse_quantity(value)
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
        raise ValueError(ERR_FORMAT_WRONG)
    return Fraction(value)


def _scaled_away_from_zero(value: Fraction, multiplier: int) -> int:
    scaled = value * multiplier
    n = -((-abs(scaled.numerator)) // scaled.denominator)
    return n if scaled >= 0 else -n


def milli_value(value: str | Number) -> int:
    """The value in thousandths, rounded away from zero (upstream ``MilliValue``): ``"0.1"`` → 100."""
    return _scaled_away_from_zero(_value_of(value), 1000)


def int_value(value: str | Number) -> int:
    """The value as an integer, rounded away from zero (upstream ``Value``): ``"100m"`` → 1."""
    return _scaled_away_from_zero(_value_of(value), 1)


def _decimal_mantissa(value: Fraction) -> tuple[int, int]:
    """(mantissa, exponent) with integer mantissa, exponent a multiple of 3, no removable 1000s.

    Upstream ``AsCanonicalBytes``: strip trailing decimal zeros, then push the exponent down to a
    multiple of three.
    """
    if value.denominator == 1:
        num, exponent = value.numerator, 0
    else:  # value is a multiple of 10^-9 here, so the denominator divides 10^9
        num, exponent = value.numerator * (_NANO // value.denominator), -9
    while num % 10 == 0:
        num //= 10
        exponent += 1
    shift = exponent % 3
    return num * 10**shift, exponent - shift


def format_quantity(value: Number, *, binary: bool = False) -> str:
    """The canonical string of a value (upstream ``Quantity.String``).

    ``binary=True`` prints BinarySI (``16Gi``, ``1536Mi``, ``1025``) when the value is an integer
    of magnitude ≥ 1024, else falls back to DecimalSI as upstream does (``512`` → ``512``, ``0.5`` →
    ``500m``).  Values are first rounded away from zero to nano precision.
    """
    v = _round_away_from_zero(Fraction(value), _NANO)
    if v == 0:
        return "0"
    if binary and abs(v) >= 1024 and v.denominator == 1:
        n, exp = int(v), 0
        while n % 1024 == 0 and exp < 60:
            n //= 1024
            exp += 10
        return f"{n}{_BINARY_BY_EXPONENT[exp]}"
    mantissa, exponent = _decimal_mantissa(v)
    suffix = _DECIMAL_BY_EXPONENT.get(exponent)
    if suffix is None:  # beyond E: upstream has no SI suffix; keep the value exact
        return f"{mantissa}e{exponent}"
    return f"{mantissa}{suffix}"


def canonical_quantity(text: str) -> str:
    """Re-print a quantity string in canonical form, in the format its suffix implies.

    This is what the API server stores/returns: ``"1000m"`` → ``"1"``, ``"1.5Gi"`` →
    ``"1536Mi"``, ``"1e3"`` → ``"1e3"``, ``"0.5Gi"`` → ``"512Mi"``.
    """
    value, fmt = _parse(text)
    if fmt == DECIMAL_EXPONENT:
        if value == 0:
            return "0"
        mantissa, exponent = _decimal_mantissa(_round_away_from_zero(value, _NANO))
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    return format_quantity(value, binary=fmt == BINARY_SI)
