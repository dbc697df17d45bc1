"""Int-or-percent scaling (maxUnavailable / maxSurge) and percent helpers."""

from __future__ import annotations

import pytest

from everynode.api.intstr import int_or_percent_value, is_percent, parse_percent, scaled_value


@pytest.mark.parametrize(
    ("value", "total", "round_up", "expected"),
    [
        (0, 10, True, 0),
        (3, 10, True, 3),
        (3, 0, False, 3),  # ints are not scaled
        (15, 10, True, 15),
        (-1, 10, True, -1),
        ("0%", 10, True, 0),
        ("0%", 10, False, 0),
        ("100%", 7, True, 7),
        ("100%", 7, False, 7),
        ("30%", 7, True, 3),  # 2.1 rounds up to 3
        ("30%", 7, False, 2),
        ("50%", 5, True, 3),
        ("50%", 5, False, 2),
        ("10%", 10, True, 1),
        ("10%", 10, False, 1),
        ("1%", 1, True, 1),
        ("1%", 1, False, 0),
        ("25%", 0, True, 0),
        ("200%", 3, True, 6),
        ("33%", 1000, False, 330),
        ("+5%", 100, True, 5),  # strconv.Atoi accepts a sign
        ("-5%", 7, True, 0),  # ceil(-0.35) = 0
        ("-5%", 7, False, -1),
        ("007%", 100, True, 7),
    ],
)
def test_scaled_value(value: int | str, total: int, round_up: bool, expected: int) -> None:
    assert scaled_value(value, total, round_up=round_up) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("5", "invalid value for IntOrString: invalid type: string is not a percentage"),
        ("", "invalid value for IntOrString: invalid type: string is not a percentage"),
        ("abc", "invalid value for IntOrString: invalid type: string is not a percentage"),
        ("abc%", 'invalid value for IntOrString: invalid value "abc%": strconv.Atoi: parsing "abc": invalid syntax'),
        ("%", 'invalid value for IntOrString: invalid value "%": strconv.Atoi: parsing "": invalid syntax'),
        ("1.5%", 'invalid value for IntOrString: invalid value "1.5%": strconv.Atoi: parsing "1.5": invalid syntax'),
        (" 5%", 'invalid value for IntOrString: invalid value " 5%": strconv.Atoi: parsing " 5": invalid syntax'),
        ("99999999999999999999%", 'invalid value for IntOrString: invalid value "99999999999999999999%": '
                                  'strconv.Atoi: parsing "99999999999999999999": value out of range'),
        (None, "nil value for IntOrString"),
        (1.5, "invalid value for IntOrString: invalid type: neither int nor percentage"),
        (True, "invalid value for IntOrString: invalid type: neither int nor percentage"),
    ],
)
def test_scaled_value_errors(value: object, message: str) -> None:
    with pytest.raises(ValueError) as exc:
        scaled_value(value, 10, round_up=True)  # type: ignore[arg-type]
    assert str(exc.value) == message


@pytest.mark.parametrize(
    ("value", "percent", "number"),
    [
        ("0%", 0, 0),
        ("25%", 25, 25),
        ("150%", 150, 150),
        ("-5%", None, 0),  # IsValidPercent is [0-9]+%
        ("+5%", None, 0),
        ("5", None, 5),  # not a percent: read as an int (validation's "is it zero" reading)
        ("x", None, 0),
        ("%", None, 0),
        ("5%%", None, 0),
        ("5%\n", None, 0),
        (5, None, 5),
        (0, None, 0),
    ],
)
def test_percent_helpers(value: int | str, percent: int | None, number: int) -> None:
    assert is_percent(value) is (percent is not None)
    assert parse_percent(value) == percent
    assert int_or_percent_value(value) == number
