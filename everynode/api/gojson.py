"""Go ``encoding/json.Marshal`` output, byte for byte, for JSON-shaped Python values.

Why: ``kubectl rollout undo`` compares ``json.Marshal(current pod template)`` with a
ControllerRevision's ``data`` byte for byte to detect a "skipped rollback"
(kubectl-contract.md gotcha 11), so revision data must be written exactly as Go writes it.
Go's rules (``encoding/json/encode.go``): compact, map keys sorted (byte order of UTF-8, which
equals code-point order), ``<`` ``>`` ``&`` escaped as ``\\u003c`` ``\\u003e`` ``\\u0026``,
U+2028/U+2029 escaped, control characters as ``\\b \\f \\n \\r \\t`` or ``\\u00XX``
(lower-case hex), invalid UTF-8 (lone surrogates here) as U+FFFD; float64 formatted with the
shortest representation, in ``%f`` style for 1e-6 ≤ |x| < 1e21 (so 2.0 → ``2``) and in
exponent style otherwise with a two-digit-minimum exponent trimmed (``1e-07`` → ``1e-7``).

Strings are escaped by orjson (fast, same escapes for ``"`` ``\\`` and control characters) and
then the HTML-sensitive characters are rewritten; those characters cannot occur outside strings
in JSON text, so the rewrite is safe.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from typing import Any, Final

import orjson

_HTML: Final = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
_HTML_RE: Final = re.compile("[<>&\u2028\u2029]")
# (built with chr: the compiled module may not hold surrogates in its literals)
_SURROGATE_RE: Final = re.compile("[" + chr(0xD800) + "-" + chr(0xDFFF) + "]")


def verbatim(s: str) -> bool:
    """Whether Go writes ``s`` as it is between its quotes: printable ASCII without a quote, a
    backslash or the characters it escapes for HTML (``<`` ``>`` ``&``) — a name, a label, an IP.
    Such strings skip the escaping below (and :mod:`~everynode.apiserver.patch.apply` writes
    a pod IP's field-set key with no encoder at all)."""
    return (s.isascii() and s.isprintable() and '"' not in s and "\\" not in s
            and "<" not in s and ">" not in s and "&" not in s)


def _string(s: str) -> str:
    if verbatim(s):
        return f'"{s}"'
    try:
        text = orjson.dumps(s).decode()
    except orjson.JSONEncodeError:  # lone surrogates: Go would see invalid UTF-8
        text = orjson.dumps(_SURROGATE_RE.sub("\ufffd", s)).decode()
    if _HTML_RE.search(text):
        text = _HTML_RE.sub(lambda m: _HTML[m.group()], text)
    return text


def format_float(f: float) -> str:
    """Go's ``float64`` encoding in encoding/json."""
    if math.isnan(f) or math.isinf(f):
        raise ValueError(f"json: unsupported value: {f!r}")
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    a = abs(f)
    r = repr(f)  # shortest round-trip digits, like strconv's precision -1
    if a < 1e-6 or a >= 1e21:
        # Python's repr uses exponent form for every value in this range.
        mantissa, _, exp = r.partition("e")
        n = int(exp)
        return f"{mantissa}e+{n:02d}" if n >= 0 else f"{mantissa}e-{-n}"
    if "e" in r or "E" in r:
        text = format(Decimal(r), "f")
    else:
        text = r
    if text.endswith(".0"):
        text = text[:-2]
    return text


def _encode(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_string(value))
    elif value is None:
        out.append("null")
    elif value is True:
        out.append("true")
    elif value is False:
        out.append("false")
    elif isinstance(value, int):
        out.append(str(value))
    elif isinstance(value, float):
        out.append(format_float(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        out.append("{")
        first = True
        for key in sorted(value):
            if not first:
                out.append(",")
            first = False
            out.append(_string(str(key)))
            out.append(":")
            _encode(value[key], out)
        out.append("}")
    elif isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        out.append("[")
        for i, item in enumerate(value):
            if i:
                out.append(",")
            _encode(item, out)
        out.append("]")
    else:
        raise TypeError(f"json: unsupported type: {type(value).__name__}")


def go_json(obj: Any) -> bytes:
    """``json.Marshal(obj)`` as Go produces it for ``map[string]interface{}`` data."""
    out: list[str] = []
    _encode(obj, out)
    return "".join(out).encode()
