"""Field errors rendered exactly as apimachinery's ``field.Error`` renders them.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go``.  The text
of a 422 response (and what kubectl prints) is built from these, so the rendering rules —
which error types omit the value, how strings are quoted — are reproduced here, once.

Validation modules import it as ``field`` (``field.invalid(...)`` reads as upstream's
``field.Invalid``); modules where ``field`` names something else use ``fielderr``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

# error type -> (cause reason, text)
_TYPES: dict[str, tuple[str, str]] = {
    "NotFound": ("FieldValueNotFound", "Not found"),
    "Required": ("FieldValueRequired", "Required value"),
    "Duplicate": ("FieldValueDuplicate", "Duplicate value"),
    "Invalid": ("FieldValueInvalid", "Invalid value"),
    "NotSupported": ("FieldValueNotSupported", "Unsupported value"),
    "Forbidden": ("FieldValueForbidden", "Forbidden"),
    "TooLong": ("FieldValueTooLong", "Too long"),
    "TooMany": ("FieldValueTooMany", "Too many"),
    "Internal": ("InternalError", "Internal error"),
    "TypeInvalid": ("FieldValueTypeInvalid", "Invalid value"),
}
_NO_VALUE = {"Required", "Forbidden", "TooLong", "Internal"}

OMIT = object()
"""Pass as the value to render the error type without a value (upstream's ``omitValue``)."""


def render_value(value: Any) -> str:
    """Render a bad value the way Go's ``%v`` / ``%q`` does for the simple cases."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


@dataclass(frozen=True, slots=True)
class FieldError:
    type: str
    field: str
    value: Any = OMIT
    detail: str = ""

    @property
    def reason(self) -> str:
        return _TYPES[self.type][0]

    def body(self) -> str:
        """The message without the field path (``ErrorBody``); used as a Status cause message."""
        text = _TYPES[self.type][1]
        if self.type not in _NO_VALUE and self.value is not OMIT:
            text = f"{text}: {render_value(self.value)}"
        if self.detail:
            text = f"{text}: {self.detail}"
        return text

    def message(self) -> str:
        return f"{self.field}: {self.body()}"

    def cause(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.body(), "field": self.field}

    def __str__(self) -> str:
        return self.message()


def required(field: str, detail: str = "") -> FieldError:
    return FieldError("Required", field, OMIT, detail)


def invalid(field: str, value: Any, detail: str = "") -> FieldError:
    return FieldError("Invalid", field, value, detail)


def forbidden(field: str, detail: str = "") -> FieldError:
    return FieldError("Forbidden", field, OMIT, detail)


def not_supported(field: str, value: Any, supported: list[str] | None = None) -> FieldError:
    detail = ""
    if supported:
        detail = "supported values: " + ", ".join(orjson.dumps(s).decode() for s in supported)
    return FieldError("NotSupported", field, value, detail)


def duplicate(field: str, value: Any) -> FieldError:
    return FieldError("Duplicate", field, value)


def not_found(field: str, value: Any) -> FieldError:
    return FieldError("NotFound", field, value)


def too_long(field: str, max_length: int) -> FieldError:
    return FieldError("TooLong", field, OMIT, f"must have at most {max_length} bytes")


def too_many(field: str, actual: int, max_items: int) -> FieldError:
    return FieldError("TooMany", field, actual, f"must have at most {max_items} items")


def aggregate(errors: list[FieldError]) -> str:
    """Render a list like ``utilerrors.NewAggregate(...).Error()``: one message, or ``[a, b]``."""
    msgs: list[str] = []
    for e in errors:
        m = e.message()
        if m not in msgs:
            msgs.append(m)
    if len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"
