"""Name/label format checks: exact upstream detail strings (util/validation/validation.go)."""

from __future__ import annotations

import pytest

from everynode.api import names

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
    "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
    "for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)
PERCENT_MSG = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', "
    "regex used for validation is '[0-9]+%')"
)


@pytest.mark.parametrize(("value", "expected"), [
    ("example.com", []),
    ("a", []),
    ("a-b.c-d", []),
    ("Example.com", [SUBDOMAIN_MSG]),
    ("-a", [SUBDOMAIN_MSG]),
    ("a.", [SUBDOMAIN_MSG]),
    ("a_b", [SUBDOMAIN_MSG]),
    ("", [SUBDOMAIN_MSG]),
    ("a" * 253, []),
    ("a" * 254, ["must be no more than 253 characters"]),
])
def test_dns1123_subdomain(value: str, expected: list[str]) -> None:
    assert names.is_dns1123_subdomain(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("my-name", []),
    ("123-abc", []),
    ("a.b", ["must not contain dots"]),
    ("My-name", [LABEL_MSG]),
    ("a-", [LABEL_MSG]),
    ("a" * 63, []),
    ("a" * 64, ["must be no more than 63 characters"]),
    ("A" * 64, ["must be no more than 63 characters", LABEL_MSG]),
])
def test_dns1123_label(value: str, expected: list[str]) -> None:
    assert names.is_dns1123_label(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("my-svc", []),
    ("1svc", [DNS1035_MSG]),
])
def test_dns1035_label(value: str, expected: list[str]) -> None:
    assert names.is_dns1035_label(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("app", []),
    ("app.kubernetes.io/name", []),
    ("My_Key.1", []),
    ("", ["name part must be non-empty", NAME_PART_MSG]),
    ("/name", ["prefix part must be non-empty"]),
    ("Bad.Prefix/name", ["prefix part " + SUBDOMAIN_MSG]),
    ("example.com/", ["name part must be non-empty", NAME_PART_MSG]),
    ("-app", [NAME_PART_MSG]),
    ("k" * 64, ["name part must be no more than 63 characters"]),
    ("a/b/c", [
        "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
        "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' "
        "(e.g. 'example.com/MyName')"
    ]),
])
def test_qualified_name(value: str, expected: list[str]) -> None:
    assert names.is_qualified_name(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("", []),
    ("v1.2_3-x", []),
    ("-x", [LABEL_VALUE_MSG]),
    ("a b", [LABEL_VALUE_MSG]),
    ("v" * 64, ["must be no more than 63 characters"]),
])
def test_label_value(value: str, expected: list[str]) -> None:
    assert names.is_valid_label_value(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    (1, []), (65535, []),
    (0, ["must be between 1 and 65535, inclusive"]),
    (65536, ["must be between 1 and 65535, inclusive"]),
])
def test_port_num(value: int, expected: list[str]) -> None:
    assert names.is_valid_port_num(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("http", []),
    ("metrics-9100", []),
    ("a" * 16, ["must be no more than 15 characters"]),
    ("Http", ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]),
    ("9100", ["must contain at least one letter (a-z)"]),
    ("a--b", ["must not contain consecutive hyphens"]),
    ("-ab", ["must not begin or end with a hyphen"]),
])
def test_port_name(value: str, expected: list[str]) -> None:
    assert names.is_valid_port_name(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("key.name", []),
    ("KEY_NAME", []),
    ("a/b", [CONFIG_KEY_MSG]),
    (".", ["must not be '.'"]),
    ("..", ["must not be '..'"]),
    ("..x", ["must not start with '..'"]),
])
def test_config_map_key(value: str, expected: list[str]) -> None:
    assert names.is_config_map_key(value) == expected


@pytest.mark.parametrize(("value", "expected"), [
    ("MY_VAR", []),
    ("my.env-name", []),
    ("1BAD", []),  # the relaxed (1.33 default) rule allows a leading digit
    ("", ["environment variable name must be non-empty"]),
    ("A=B", ["a valid environment variable name must consist only of printable ASCII characters other than '='"]),
])
def test_relaxed_env_var_name(value: str, expected: list[str]) -> None:
    assert names.is_relaxed_env_var_name(value) == expected


def test_strict_env_var_name_rejects_leading_digit() -> None:
    assert names.is_env_var_name("1BAD") == [
        "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and "
        "must not start with a digit (e.g. 'my.env-name',  or 'MY_ENV.NAME',  or 'MyEnvName1', regex used for "
        "validation is '[-._a-zA-Z][-._a-zA-Z0-9]*')"
    ]


@pytest.mark.parametrize(("value", "expected"), [
    ("my_name", []),
    ("1abc", [
        "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric "
        "characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is "
        "'[A-Za-z_][A-Za-z0-9_]*')"
    ]),
])
def test_c_identifier(value: str, expected: list[str]) -> None:
    assert names.is_c_identifier(value) == expected


@pytest.mark.parametrize(("value", "expected"), [("25%", []), ("0%", []), ("25", [PERCENT_MSG]), ("x%", [PERCENT_MSG])])
def test_percent(value: str, expected: list[str]) -> None:
    assert names.is_valid_percent(value) == expected


@pytest.mark.parametrize(("name", "prefix", "valid"), [
    ("node-exporter-", True, True),   # generateName keeps its trailing dash
    ("node-exporter-", False, False),
    ("node-exporter", True, True),
])
def test_name_func_prefix_mode(name: str, prefix: bool, valid: bool) -> None:
    assert (names.name_is_dns_subdomain(name, prefix) == []) is valid
