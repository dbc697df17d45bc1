"""Name, label and key format checks that return upstream's detail strings.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/util/validation/validation.go`` (v1.33; newer
releases moved some of these to ``pkg/api/validate/content`` without changing the texts we
reproduce, except the qualified-name "too many slashes" text, kept here in its v1.33 form).

Each checker returns a list of *detail* strings, empty when the value is valid.  Callers wrap
each detail in a :class:`~everynode.api.field_errors.FieldError` with the path they know; that split is
upstream's, and it is what makes the same texts reappear under many field paths.  Note the
examples in the messages are joined with ``',  or '`` (two spaces): upstream's ``RegexError``
appends ``"', "`` after each example and ``" or "`` before the next one.
"""

from __future__ import annotations

import re
from typing import Final

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
DNS1035_LABEL_MAX_LENGTH: Final = 63
QUALIFIED_NAME_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63

_DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT: Final = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
_QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE_FMT: Final = "(" + _QUALIFIED_NAME_FMT + ")?"
_C_IDENTIFIER_FMT: Final = "[A-Za-z_][A-Za-z0-9_]*"
_ENV_VAR_NAME_FMT: Final = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_CONFIG_MAP_KEY_FMT: Final = "[-._a-zA-Z0-9]+"
_PERCENT_FMT: Final = "[0-9]+%"
_HTTP_HEADER_NAME_FMT: Final = "[-A-Za-z0-9]+"

_DNS1123_LABEL_RE: Final = re.compile(_DNS1123_LABEL_FMT)
_DNS1123_SUBDOMAIN_RE: Final = re.compile(_DNS1123_SUBDOMAIN_FMT)
_DNS1035_LABEL_RE: Final = re.compile(_DNS1035_LABEL_FMT)
_QUALIFIED_NAME_RE: Final = re.compile(_QUALIFIED_NAME_FMT)
_LABEL_VALUE_RE: Final = re.compile(_LABEL_VALUE_FMT)
_C_IDENTIFIER_RE: Final = re.compile(_C_IDENTIFIER_FMT)
_ENV_VAR_NAME_RE: Final = re.compile(_ENV_VAR_NAME_FMT)
_CONFIG_MAP_KEY_RE: Final = re.compile(_CONFIG_MAP_KEY_FMT)
_PERCENT_RE: Final = re.compile(_PERCENT_FMT)
_HTTP_HEADER_NAME_RE: Final = re.compile(_HTTP_HEADER_NAME_FMT)
_PORT_NAME_CHARSET_RE: Final = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER_RE: Final = re.compile("[a-z]")

_DNS1123_LABEL_MSG: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_MSG: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_MSG: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_QUALIFIED_NAME_MSG: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_MSG: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_C_IDENTIFIER_MSG: Final = (
    "a valid C identifier must start with alphabetic character or '_', "
    "followed by a string of alphanumeric characters or '_'"
)
_ENV_VAR_NAME_MSG: Final = (
    "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', "
    "and must not start with a digit"
)
_RELAXED_ENV_VAR_NAME_MSG: Final = (
    "a valid environment variable name must consist only of printable ASCII characters other than '='"
)
_CONFIG_MAP_KEY_MSG: Final = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_PERCENT_MSG: Final = "a valid percent string must be a numeric string followed by an ending '%'"
_HTTP_HEADER_NAME_MSG: Final = "a valid HTTP header must consist of alphanumeric characters or '-'"


def _full(pattern: re.Pattern[str], value: str) -> bool:
    return pattern.fullmatch(value) is not None


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream's ``RegexError``, including its ``',  or '`` example separator."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    text = msg + " (e.g. "
    for i, example in enumerate(examples):
        if i > 0:
            text += " or "
        text += f"'{example}', "
    return text + f"regex used for validation is '{fmt}')"


def is_dns1123_label(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _full(_DNS1123_LABEL_RE, value):
        if _full(_DNS1123_SUBDOMAIN_RE, value):
            # A valid subdomain that is not a label: the only difference left is dots.
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1123_subdomain(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _full(_DNS1123_SUBDOMAIN_RE, value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _full(_DNS1035_LABEL_RE, value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def is_qualified_name(value: str) -> list[str]:
    """Label and annotation keys: optional DNS-subdomain prefix, ``/``, and a 63-char name."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _full(_QUALIFIED_NAME_RE, name):
        errs.append("name part " + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def is_valid_label_value(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _full(_LABEL_VALUE_RE, value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def is_c_identifier(value: str) -> list[str]:
    if _full(_C_IDENTIFIER_RE, value):
        return []
    return [regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]


def _chdir_prefix_errors(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


def is_env_var_name(value: str) -> list[str]:
    """The strict (pre-1.32) env var name rule."""
    errs: list[str] = []
    if not _full(_ENV_VAR_NAME_RE, value):
        errs.append(regex_error(_ENV_VAR_NAME_MSG, _ENV_VAR_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    errs.extend(_chdir_prefix_errors(value))
    return errs


def is_relaxed_env_var_name(value: str) -> list[str]:
    """The rule kube-apiserver 1.33 applies (RelaxedEnvironmentVariableValidation is on by default)."""
    errs: list[str] = []
    if not value:
        errs.append("environment variable name " + empty_error())
    if any(not (0x20 <= ord(ch) <= 0x7E) or ch == "=" for ch in value):
        errs.append(_RELAXED_ENV_VAR_NAME_MSG)
    return errs


def is_config_map_key(value: str) -> list[str]:
    errs: list[str] = []
    if len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _full(_CONFIG_MAP_KEY_RE, value):
        errs.append(regex_error(_CONFIG_MAP_KEY_MSG, _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    errs.extend(_chdir_prefix_errors(value))
    return errs


def is_valid_port_num(port: int) -> list[str]:
    if 1 <= port <= 65535:
        return []
    return [inclusive_range_error(1, 65535)]


def is_in_range(value: int, lo: int, hi: int) -> list[str]:
    if lo <= value <= hi:
        return []
    return [inclusive_range_error(lo, hi)]


def is_valid_port_name(port: str) -> list[str]:
    """IANA service names: ≤15 chars of ``[-a-z0-9]``, one letter at least, no ``--``, no edge ``-``."""
    errs: list[str] = []
    if len(port) > 15:
        errs.append(max_len_error(15))
    if not _full(_PORT_NAME_CHARSET_RE, port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER_RE.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_percent(value: str) -> list[str]:
    if _full(_PERCENT_RE, value):
        return []
    return [regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%")]


def is_http_header_name(value: str) -> list[str]:
    if _full(_HTTP_HEADER_NAME_RE, value):
        return []
    return [regex_error(_HTTP_HEADER_NAME_MSG, _HTTP_HEADER_NAME_FMT, "X-Header-Name")]


def _mask_trailing_dash(name: str) -> str:
    # Upstream quirk reproduced: it drops the last *two* characters and appends one.
    if name.endswith("-"):
        return name[:-2] + "a"
    return name


def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    """``ValidateNameFunc`` for DNS-subdomain names; ``prefix`` is True for ``generateName``."""
    return is_dns1123_subdomain(_mask_trailing_dash(name) if prefix else name)


def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_label(_mask_trailing_dash(name) if prefix else name)


def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1035_label(_mask_trailing_dash(name) if prefix else name)


def name_is_path_segment(name: str, prefix: bool = False) -> list[str]:
    """``IsPathSegmentName`` / ``IsPathSegmentPrefix``: the generic name check the registry
    applies to every object on create (it only has to be one segment of a URL path); kinds
    without a name rule of their own (core/v1 Events) get only this one."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]
