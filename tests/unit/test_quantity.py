"""Resource quantities: parsing, rounding, canonical printing and upstream error texts."""

from __future__ import annotations

from fractions import Fraction

import pytest

from everynode.api.quantity import (
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    canonical_quantity,
    format_quantity,
    int_value,
    milli_value,
    parse_quantity,
    quantity_format,
)

GI = 1 << 30


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", 0),
        ("1", 1),
        ("+1", 1),
        ("-1", -1),
        ("100m", Fraction(1, 10)),
        ("1.5", Fraction(3, 2)),
        (".5", Fraction(1, 2)),
        ("1.", 1),
        ("007", 7),
        ("5n", Fraction(5, 10**9)),
        ("3u", Fraction(3, 10**6)),
        ("2k", 2000),
        ("2M", 2 * 10**6),
        ("2G", 2 * 10**9),
        ("2T", 2 * 10**12),
        ("2P", 2 * 10**15),
        ("2E", 2 * 10**18),
        ("1Ki", 1024),
        ("1Mi", 1 << 20),
        ("16Gi", 16 * GI),
        ("1Ti", 1 << 40),
        ("1Pi", 1 << 50),
        ("1Ei", 1 << 60),
        ("1.5Gi", 3 * GI // 2),
        ("1e3", 1000),
        ("1E3", 1000),
        ("1e+3", 1000),
        ("1e-3", Fraction(1, 1000)),
        ("12e-1", Fraction(6, 5)),
        ("1e-10", Fraction(1, 10**9)),  # rounded up to nano precision
        ("-1e-10", Fraction(-1, 10**9)),  # away from zero
        ("0.0001m", Fraction(1, 10**7)),
        ("9Ei", (1 << 63) - 1),  # binary quantities are capped at 2^63-1
        # upstream scanner quirks: the numeric part may be empty
        (".", 0),
        ("-", 0),
        ("Ki", 0),
        ("e3", 0),
    ],
)
def test_parse_quantity(text: str, value: int | Fraction) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", ERR_FORMAT_WRONG),
        ("abc", ERR_FORMAT_WRONG),
        ("1 ", ERR_FORMAT_WRONG),
        (" 1", ERR_FORMAT_WRONG),
        ("1KiB", ERR_FORMAT_WRONG),
        ("1.2.3", ERR_FORMAT_WRONG),
        ("1,5", ERR_FORMAT_WRONG),
        ("1e", ERR_SUFFIX),
        ("1k3", ERR_SUFFIX),
        ("1mi", ERR_SUFFIX),
        ("1KI", ERR_FORMAT_WRONG),  # "I" is not a suffix letter
        ("1kk", ERR_SUFFIX),
        ("1-", ERR_SUFFIX),
        ("--1", ERR_SUFFIX),
        ("1e99999999999", ERR_SUFFIX),  # exponent does not fit int32
        ("1e99999", ERR_NUMERIC),  # too large to be useful (guard; upstream stores it lazily)
    ],
)
def test_parse_quantity_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        parse_quantity(text)
    assert str(exc.value) == message


def test_format_error_message_is_upstreams() -> None:
    assert ERR_FORMAT_WRONG == ("quantities must match the regular expression "
                                "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")


@pytest.mark.parametrize(
    ("value", "milli", "integer"),
    [
        ("100m", 100, 1),
        ("1", 1000, 1),
        ("1.5", 1500, 2),
        ("0.1m", 1, 1),  # rounded up
        ("1n", 1, 1),
        ("0", 0, 0),
        ("-1.5", -1500, -2),  # away from zero
        ("-0.1m", -1, -1),
        ("2Gi", 2 * GI * 1000, 2 * GI),
        (2, 2000, 2),
        (Fraction(1, 3), 334, 1),
    ],
)
def test_milli_and_int_value(value: str | int | Fraction, milli: int, integer: int) -> None:
    assert milli_value(value) == milli
    assert int_value(value) == integer


@pytest.mark.parametrize(
    ("value", "binary", "text"),
    [
        (0, False, "0"),
        (0, True, "0"),
        (4, False, "4"),
        (Fraction(1, 10), False, "100m"),
        (Fraction(3, 2), False, "1500m"),
        (1500, False, "1500"),
        (2000, False, "2k"),
        (10**6, False, "1M"),
        (25 * 10**5, False, "2500k"),
        (Fraction(5, 10**9), False, "5n"),
        (Fraction(1, 10**10), False, "1n"),  # rounded up to nano
        (10**21, False, "1e21"),  # beyond the largest SI suffix
        (-2000, False, "-2k"),
        (16 * GI, True, "16Gi"),
        (1024, True, "1Ki"),
        (1536 << 20, True, "1536Mi"),
        (1536, True, "1536"),
        (1023, True, "1023"),  # below 1024: printed as DecimalSI
        (2000, True, "2000"),
        (512, True, "512"),
        (Fraction(1, 2), True, "500m"),
        (Fraction(2051, 2), True, "1025500m"),  # not an integer: DecimalSI
        (-2048, True, "-2Ki"),
    ],
)
def test_format_quantity(value: int | Fraction, binary: bool, text: str) -> None:
    assert format_quantity(value, binary=binary) == text


@pytest.mark.parametrize(
    ("text", "canonical", "fmt"),
    [
        ("1000m", "1", "DecimalSI"),
        ("100m", "100m", "DecimalSI"),
        ("0.5", "500m", "DecimalSI"),
        ("2000", "2k", "DecimalSI"),
        ("1.5Gi", "1536Mi", "BinarySI"),
        ("0.5Gi", "512Mi", "BinarySI"),
        ("1024Mi", "1Gi", "BinarySI"),
        ("0.5Ki", "512", "BinarySI"),
        ("1e3", "1e3", "DecimalExponent"),
        ("1.5e3", "1500", "DecimalExponent"),
        ("100e-3", "100e-3", "DecimalExponent"),
        ("0e3", "0", "DecimalExponent"),
        ("0", "0", "DecimalSI"),
    ],
)
def test_canonical_quantity(text: str, canonical: str, fmt: str) -> None:
    assert canonical_quantity(text) == canonical
    assert quantity_format(text) == fmt
    assert parse_quantity(canonical) == parse_quantity(text)
