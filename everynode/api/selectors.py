"""Label selectors and field selectors, parsed, matched and printed the way apimachinery does.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/labels/selector.go`` (the set-based grammar,
``NewRequirement`` validation, ``String``), ``.../apis/meta/v1/helpers.go``
(``LabelSelectorAsSelector``) and ``.../fields/selector.go`` (``ParseSelector`` with backslash
escaping).  No Python library implements these, so they are written here; error texts are the
upstream ones because the API server returns them verbatim (400 BadRequest) and kubectl prints them.

Design: a selector is parsed once into an immutable object whose ``matches`` runs a precompiled
plan (one tuple per requirement, the operator reduced to a small integer and the values to a
frozenset or an int), because selectors are evaluated per object on list/watch and per pod in
every controller.  Requirements are kept sorted by key, as upstream does, so ``str()`` is the
canonical form and equal selectors compare equal.

Label keys/values are validated with the apimachinery 1.33 messages (``IsQualifiedName``,
``IsValidLabelValue`` of :mod:`everynode.api.names`, cached here); :func:`label_key_errors` /
:func:`label_value_errors` expose them for the validation package.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, TypeVar

from everynode.api.field_errors import FieldError, aggregate, invalid, not_supported, render_value
from everynode.api.names import is_qualified_name, is_valid_label_value

__all__ = [
    "SelectorError",
    "Requirement",
    "LabelSelector",
    "FieldSelector",
    "EVERYTHING",
    "NOTHING",
    "new_requirement",
    "parse_label_selector",
    "label_selector_from_dict",
    "selector_from_set",
    "parse_field_selector",
    "escape_field_value",
    "label_key_errors",
    "label_value_errors",
    "selecting",
]

_T = TypeVar("_T")


class SelectorError(ValueError):
    """A selector that cannot be parsed or built; ``str()`` is upstream's error text.

    ``errors`` holds the individual field errors when the failure came from requirement
    validation (empty otherwise), for callers that report causes.
    """

    def __init__(self, message: str, errors: list[FieldError] | None = None):
        super().__init__(message)
        self.errors: list[FieldError] = errors or []


# --------------------------------------------------------------------------------------------
# Label key / value validation (apimachinery/pkg/util/validation, 1.33 wording)
# --------------------------------------------------------------------------------------------


def label_key_errors(key: str) -> list[str]:
    """Upstream ``IsQualifiedName``: ``[prefix/]name``, prefix a DNS-1123 subdomain, name ≤ 63."""
    return list(_key_errors(key))


def label_value_errors(value: str) -> list[str]:
    """Upstream ``IsValidLabelValue``: empty, or ≤ 63 characters of ``[-A-Za-z0-9_.]`` framed by alphanumerics."""
    return list(_value_errors(value))


# Keys and values repeat endlessly (every DaemonSet, every pod template), so the checks of
# everynode.api.names are cached here.
@lru_cache(maxsize=4096)
def _key_errors(key: str) -> tuple[str, ...]:
    return tuple(is_qualified_name(key))


@lru_cache(maxsize=4096)
def _value_errors(value: str) -> tuple[str, ...]:
    return tuple(is_valid_label_value(value))


_INT64_RE: Final = re.compile(r"^[+-]?[0-9]+$")
_INT64_MIN: Final = -(1 << 63)
_INT64_MAX: Final = (1 << 63) - 1


def _parse_int64(text: str) -> int | None:
    """Go ``strconv.ParseInt(text, 10, 64)``: optional sign, ASCII digits, int64 range; else None."""
    if not _INT64_RE.fullmatch(text):
        return None
    n = int(text)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


# --------------------------------------------------------------------------------------------
# Requirements
# --------------------------------------------------------------------------------------------

IN: Final = 'in'
NOT_IN: Final = 'notin'
EQUALS: Final = '='
DOUBLE_EQUALS: Final = '=='
NOT_EQUALS: Final = '!='
EXISTS: Final = 'exists'
DOES_NOT_EXIST: Final = '!'
GREATER_THAN: Final = 'gt'
LESS_THAN: Final = 'lt'
_BINARY_OPERATORS: Final = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_VALID_OPERATORS: Final = _BINARY_OPERATORS + (EXISTS, DOES_NOT_EXIST)

# Plan kinds used by LabelSelector.matches.
_K_IN, _K_NOT_IN, _K_EXISTS, _K_NOT_EXISTS, _K_GT, _K_LT, _K_EQ = range(7)
_MISSING: Final = object()


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``key <operator> values`` term; build it with :func:`new_requirement` (validates)."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def __str__(self) -> str:
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        vals = self.values[0] if len(self.values) == 1 else ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({vals})"
        return f"{self.key}{_OP_TEXT[op]}{vals}"

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        return LabelSelector((self,)).matches(labels)


_OP_TEXT: Final = {EQUALS: "=", DOUBLE_EQUALS: "==", NOT_EQUALS: "!=", GREATER_THAN: ">", LESS_THAN: "<"}


def _join_path(path: str | None, child: str) -> str:
    return f"{path}.{child}" if path else child


def new_requirement(key: str, operator: str, values: Iterable[str] = (), *,
                    path: str | None = None) -> Requirement:
    """Upstream ``labels.NewRequirement``: validate and build; raise :class:`SelectorError`.

    ``path`` prefixes the field paths of the errors (``<path>.key``, ``<path>.values[i]``), as
    upstream's ``field.WithPath`` does; without it they are ``key`` / ``values[i]``.
    """
    vals = list(values)
    errs: list[FieldError] = []
    key_errs = _key_errors(key) if isinstance(key, str) else ("must be a string",)
    if key_errs:
        errs.append(invalid(_join_path(path, "key"), key, "; ".join(key_errs)))
    values_path = _join_path(path, "values")
    if operator in (IN, NOT_IN):
        if not vals:
            errs.append(invalid(values_path, vals, "for 'in', 'notin' operators, values set can't be empty"))
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(vals) != 1:
            errs.append(invalid(values_path, vals, "exact-match compatibility requires one single value"))
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if vals:
            errs.append(invalid(values_path, vals, "values set must be empty for exists and does not exist"))
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(vals) != 1:
            errs.append(invalid(values_path, vals, "for 'Gt', 'Lt' operators, exactly one value is required"))
        for i, v in enumerate(vals):
            if _parse_int64(v) is None:
                errs.append(invalid(f"{values_path}[{i}]", v,
                                    "for 'Gt', 'Lt' operators, the value must be an integer"))
    else:
        errs.append(not_supported(_join_path(path, "operator"), operator, list(_VALID_OPERATORS)))
    for i, v in enumerate(vals):
        if not isinstance(v, str):
            errs.append(invalid(f"{values_path}[{i}][{key}]", v, "must be a string"))
            continue
        v_errs = _value_errors(v)
        if v_errs:
            errs.append(invalid(f"{values_path}[{i}][{key}]", v, "; ".join(v_errs)))
    if errs:
        raise SelectorError(aggregate(errs), errs)
    return Requirement(key, operator, tuple(vals))


def _plan_entry(r: Requirement) -> tuple[str, int, Any]:
    op = r.operator
    if op in (IN, EQUALS, DOUBLE_EQUALS):
        if len(r.values) == 1:
            return (r.key, _K_EQ, r.values[0])
        return (r.key, _K_IN, frozenset(r.values))
    if op in (NOT_IN, NOT_EQUALS):
        return (r.key, _K_NOT_IN, frozenset(r.values))
    if op == EXISTS:
        return (r.key, _K_EXISTS, None)
    if op == DOES_NOT_EXIST:
        return (r.key, _K_NOT_EXISTS, None)
    # Gt / Lt: a requirement whose value is not exactly one integer never matches (upstream logs and
    # returns false); None marks that.
    bound = _parse_int64(r.values[0]) if len(r.values) == 1 else None
    return (r.key, _K_GT if op == GREATER_THAN else _K_LT, bound)


# --------------------------------------------------------------------------------------------
# LabelSelector
# --------------------------------------------------------------------------------------------

_NO_LABELS: Final[Mapping[str, str]] = {}


class LabelSelector:
    """An AND of label requirements (sorted by key), or the special "nothing" selector."""

    __slots__ = ("_requirements", "_plan", "_nothing", "_hash")

    def __init__(self, requirements: Iterable[Requirement] = (), *, nothing: bool = False):
        reqs = tuple(sorted(requirements, key=lambda r: r.key))
        self._requirements = reqs
        self._nothing = nothing
        self._plan = tuple(_plan_entry(r) for r in reqs)
        self._hash: int | None = None

    @property
    def requirements(self) -> tuple[Requirement, ...]:
        return self._requirements

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (upstream ``Empty()``)."""
        return not self._nothing and not self._requirements

    @property
    def matches_nothing(self) -> bool:
        """True only for the "nothing" selector (upstream ``labels.MatchesNothing``)."""
        return self._nothing

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self._nothing:
            return False
        if labels is None:
            labels = _NO_LABELS
        get = labels.get
        for key, kind, arg in self._plan:
            value = get(key, _MISSING)
            if kind == _K_EQ:
                if value != arg:
                    return False
            elif kind == _K_IN:
                if value is _MISSING or value not in arg:
                    return False
            elif kind == _K_NOT_IN:
                if value is not _MISSING and value in arg:
                    return False
            elif kind == _K_EXISTS:
                if value is _MISSING:
                    return False
            elif kind == _K_NOT_EXISTS:
                if value is not _MISSING:
                    return False
            else:  # Gt / Lt
                if value is _MISSING or arg is None:
                    return False
                n = _parse_int64(value) if isinstance(value, str) else None
                if n is None or not (n > arg if kind == _K_GT else n < arg):
                    return False
        return True

    def exact_value(self, key: str) -> str | None:
        """Upstream ``RequiresExactMatch``: the value an ``=``/``==``/single-value ``in`` term on
        ``key`` requires (for index lookups), else None."""
        for r in self._requirements:
            if r.key == key:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def add(self, *requirements: Requirement) -> LabelSelector:
        """A new selector with more requirements (the "nothing" selector stays nothing)."""
        if self._nothing:
            return self
        return LabelSelector(self._requirements + requirements)

    def __str__(self) -> str:
        return ",".join(str(r) for r in self._requirements)

    def __repr__(self) -> str:
        return "LabelSelector(<nothing>)" if self._nothing else f"LabelSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LabelSelector):
            return NotImplemented
        return self._nothing == other._nothing and self._requirements == other._requirements

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash((self._nothing, self._requirements))
        return self._hash


EVERYTHING: Final = LabelSelector()
"""Matches every label set (upstream ``labels.Everything()``)."""
NOTHING: Final = LabelSelector(nothing=True)
"""Matches no label set (upstream ``labels.Nothing()``); prints as ``""``."""


def selector_from_set(labels: Mapping[str, str] | None) -> LabelSelector:
    """Upstream ``SelectorFromSet``: ``k=v`` for every pair, unvalidated; None/{} → everything."""
    if not labels:
        return EVERYTHING
    return LabelSelector(Requirement(k, EQUALS, (v,)) for k, v in labels.items())


_DICT_OPERATORS: Final = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}


def label_selector_from_dict(sel: Mapping[str, Any] | None) -> LabelSelector:
    """Upstream ``metav1.LabelSelectorAsSelector``.

    None → :data:`NOTHING`; no matchLabels and no matchExpressions → :data:`EVERYTHING`;
    otherwise the AND of ``matchLabels`` (``k=v``) and ``matchExpressions``
    (In/NotIn/Exists/DoesNotExist).  Invalid input raises :class:`SelectorError`.
    """
    if sel is None:
        return NOTHING
    match_labels = sel.get("matchLabels") or {}
    match_expressions = sel.get("matchExpressions") or []
    if not match_labels and not match_expressions:
        return EVERYTHING
    reqs: list[Requirement] = []
    # Upstream walks a Go map (random order); sorted order makes the first error deterministic.
    for k in sorted(match_labels):
        reqs.append(new_requirement(k, EQUALS, (match_labels[k],)))
    for expr in match_expressions:
        op_name = expr.get("operator")
        op = _DICT_OPERATORS.get(op_name) if isinstance(op_name, str) else None
        if op is None:
            raise SelectorError(f"{_go_quote(op_name)} is not a valid pod selector operator")
        reqs.append(new_requirement(expr.get("key") or "", op, expr.get("values") or ()))
    return LabelSelector(reqs)



def selecting(candidates: Iterable[_T], labels: Mapping[str, str] | None,
              selector_of: Callable[[_T], LabelSelector | None]) -> list[_T]:
    """The candidates whose selector selects ``labels``: upstream's controller look-ups by
    labels (``GetPodReplicaSets``, ``GetDeploymentsForReplicaSet``, ``GetPodDaemonSets``,
    ``GetHistoryDaemonSets``).  An object without labels is selected by none, and a selector
    that is empty (or None: missing or not convertible) selects nothing, not everything."""
    if not labels:
        return []
    found = []
    for candidate in candidates:
        selector = selector_of(candidate)
        if selector is not None and not selector.empty and selector.matches(labels):
            found.append(candidate)
    return found

def _go_quote(value: Any) -> str:
    if value is None:
        return '""'
    return render_value(value if isinstance(value, str) else str(value))


# --------------------------------------------------------------------------------------------
# Label selector string grammar
# --------------------------------------------------------------------------------------------

# Token kinds
_T_END, _T_CLOSE, _T_COMMA, _T_NOT, _T_DEQ, _T_EQ, _T_GT, _T_ID, _T_IN, _T_LT, _T_NEQ, _T_NOTIN, _T_OPEN = range(13)
_SYMBOLS: Final = {")": _T_CLOSE, ",": _T_COMMA, "!": _T_NOT, "==": _T_DEQ, "=": _T_EQ, ">": _T_GT, "<": _T_LT,
            "!=": _T_NEQ, "(": _T_OPEN}
_SPECIAL: Final = frozenset("=!(),<>")
_WHITESPACE: Final = frozenset(" \t\r\n")
_TOKEN_OPERATOR: Final = {_T_IN: IN, _T_EQ: EQUALS, _T_DEQ: DOUBLE_EQUALS, _T_GT: GREATER_THAN,
                          _T_LT: LESS_THAN, _T_NOTIN: NOT_IN, _T_NEQ: NOT_EQUALS}
_BINARY_OPERATORS_TEXT: Final = ", ".join(_BINARY_OPERATORS)


def _lex(text: str) -> list[tuple[int, str]]:
    tokens: list[tuple[int, str]] = []
    i, n = 0, len(text)
    while True:
        while i < n and text[i] in _WHITESPACE:
            i += 1
        if i >= n:
            tokens.append((_T_END, ""))
            return tokens
        ch = text[i]
        if ch in _SPECIAL:
            two = text[i:i + 2]
            lit = two if two in ("==", "!=") else ch
            tokens.append((_SYMBOLS[lit], lit))
            i += len(lit)
            continue
        j = i
        while j < n and text[j] not in _SPECIAL and text[j] not in _WHITESPACE:
            j += 1
        word = text[i:j]
        tokens.append((_T_IN if word == "in" else _T_NOTIN if word == "notin" else _T_ID, word))
        i = j


class _Parser:
    """Recursive-descent parser over the token list; in "values" context in/notin are identifiers."""

    __slots__ = ("tokens", "pos")

    def __init__(self, text: str):
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self, values: bool = True) -> tuple[int, str]:
        tok, lit = self.tokens[self.pos]
        if values and tok in (_T_IN, _T_NOTIN):
            tok = _T_ID
        return tok, lit

    def take(self, values: bool = True) -> tuple[int, str]:
        item = self.peek(values)
        self.pos += 1
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.peek()
            if tok in (_T_ID, _T_NOT):
                try:
                    reqs.append(self.requirement())
                except SelectorError as e:
                    raise SelectorError(f"unable to parse requirement: {e}", e.errors) from None
                tok, lit = self.take()
                if tok == _T_END:
                    return reqs
                if tok == _T_COMMA:
                    tok2, lit2 = self.peek()
                    if tok2 not in (_T_ID, _T_NOT):
                        raise SelectorError(f"found '{lit2}', expected: identifier after ','")
                else:
                    raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            elif tok == _T_END:
                return reqs
            else:
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")

    def requirement(self) -> Requirement:
        operator: str | None = None
        tok, lit = self.take()
        if tok == _T_NOT:
            operator = DOES_NOT_EXIST
            tok, lit = self.take()
        if tok != _T_ID:
            raise SelectorError(f"found '{lit}', expected: identifier")
        key_errs = _key_errors(lit)
        if key_errs:
            err = invalid("<nil>", lit, "; ".join(key_errs))
            raise SelectorError(err.message(), [err])
        if self.peek()[0] in (_T_END, _T_COMMA) and operator is None:
            operator = EXISTS
        if operator in (EXISTS, DOES_NOT_EXIST):
            return new_requirement(lit, operator)
        key = lit
        tok, lit = self.take(values=False)
        op = _TOKEN_OPERATOR.get(tok)
        if op is None:
            raise SelectorError(f"found '{lit}', expected: {_BINARY_OPERATORS_TEXT}")
        values = self.value_set() if op in (IN, NOT_IN) else self.exact_value()
        return new_requirement(key, op, sorted(values))

    def value_set(self) -> set[str]:
        tok, lit = self.take()
        if tok != _T_OPEN:
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.peek()
        if tok == _T_CLOSE:
            self.take()
            return {""}
        if tok not in (_T_ID, _T_COMMA):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == _T_ID:
                values.add(lit)
                tok2, lit2 = self.peek()
                if tok2 == _T_COMMA:
                    continue
                if tok2 == _T_CLOSE:
                    break
                raise SelectorError(f"found '{lit2}', expected: ',' or ')'")
            elif tok == _T_COMMA:
                # "(,", ",,", ",)" each stand for an empty value.
                if not values:
                    values.add("")
                tok2 = self.peek()[0]
                if tok2 == _T_CLOSE:
                    values.add("")
                    break
                if tok2 == _T_COMMA:
                    values.add("")
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")
        self.take()  # the ")" seen by peek
        return values

    def exact_value(self) -> set[str]:
        tok, lit = self.peek()
        if tok in (_T_END, _T_COMMA):
            return {""}
        tok, lit = self.take()
        if tok == _T_ID:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse_label_selector(text: str) -> LabelSelector:
    """Upstream ``labels.Parse``: the ``labelSelector`` query-parameter grammar.

    ``a=b,c!=d,e in (f,g),h notin (i),j,!k,l>5,m<3``; whitespace is ignored around tokens; the
    empty string selects everything.  Raises :class:`SelectorError` with upstream's message.
    """
    if not text or text.isspace():
        return EVERYTHING
    return LabelSelector(_Parser(text).parse())


# --------------------------------------------------------------------------------------------
# Field selectors
# --------------------------------------------------------------------------------------------

_FIELD_OPERATORS: Final = ("!=", "==", "=")


def escape_field_value(value: str) -> str:
    """Upstream ``fields.EscapeValue``: backslash-escape ``\\``, ``,`` and ``=``."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    if "\\" not in value and "," not in value and "=" not in value:
        return value
    out: list[str] = []
    escaped = False
    for c in value:
        if escaped:
            if c not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{c}")
            out.append(c)
            escaped = False
        elif c == "\\":
            escaped = True
        elif c in ",=":
            # Go prints the rune with %v, i.e. as its code point number.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(c)}")
        else:
            out.append(c)
    if escaped:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas not preceded by an escaping backslash (the backslash is kept)."""
    if "\\" not in text:
        return text.split(",")
    terms: list[str] = []
    start = 0
    escaped = False
    for i, c in enumerate(text):
        if escaped:
            escaped = False
        elif c == "\\":
            escaped = True
        elif c == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """The leftmost operator splits the term (``!=`` before ``==`` before ``=`` at each position)."""
    for i in range(len(term)):
        for op in _FIELD_OPERATORS:
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
    return None


class FieldSelector:
    """An AND of ``field=value`` / ``field!=value`` terms (upstream ``fields.Selector``).

    ``requirements`` is a tuple of ``(field, op, value)`` with op ``"="`` or ``"!="``, sorted by
    the term text as upstream sorts them; ``"=="`` is normalised to ``"="``.
    """

    __slots__ = ("requirements",)

    def __init__(self, requirements: Iterable[tuple[str, str, str]] = ()):
        self.requirements: tuple[tuple[str, str, str], ...] = tuple(requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def matches(self, fields: Mapping[str, str]) -> bool:
        """A missing field reads as ``""`` (upstream ``fields.Set.Get``)."""
        get = fields.get
        for field, op, value in self.requirements:
            if (get(field, "") == value) != (op == "="):
                return False
        return True

    def exact_value(self, field: str) -> str | None:
        """Upstream ``RequiresExactMatch``: the value of the first ``=`` term on ``field``."""
        for f, op, value in self.requirements:
            if f == field and op == "=":
                return value
        return None

    def transform(self, fn: Any) -> FieldSelector:
        """Upstream ``Transform``: map every ``(field, value)`` through ``fn``, which may raise."""
        out = []
        for field, op, value in self.requirements:
            new_field, new_value = fn(field, value)
            out.append((new_field, op, new_value))
        return FieldSelector(out)

    def __str__(self) -> str:
        return ",".join(f"{f}{op}{escape_field_value(v)}" for f, op, v in self.requirements)

    def __repr__(self) -> str:
        return f"FieldSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSelector):
            return NotImplemented
        return self.requirements == other.requirements

    def __hash__(self) -> int:
        return hash(self.requirements)


def parse_field_selector(text: str) -> FieldSelector:
    """Upstream ``fields.ParseSelector``: comma-separated terms (any order), ``=``/``==``/``!=``.

    Values may contain ``\\,``, ``\\=`` and ``\\\\`` escapes; empty terms are ignored, so ``""``
    selects everything.  Raises :class:`SelectorError` with upstream's message.
    """
    if not text:
        return FieldSelector()
    parts = sorted(_split_terms(text))
    reqs: list[tuple[str, str, str]] = []
    for part in parts:
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        lhs, op, rhs = split
        reqs.append((lhs, "!=" if op == "!=" else "=", _unescape_field_value(rhs)))
    return FieldSelector(reqs)
