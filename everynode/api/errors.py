"""API errors as kube-apiserver returns them: an HTTP code plus a ``Status`` object.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go``.  Every layer raises
:class:`ApiError`; the HTTP layer serialises ``.status`` verbatim and the client layer raises
the same class from a response, so code above the API never needs to know the transport.
``details.kind`` is the resource plural for NotFound/AlreadyExists/Conflict and the Kind for
Invalid, exactly as upstream (kubectl prints these strings).
"""

from __future__ import annotations

from typing import Any

from everynode.api.field_errors import FieldError, aggregate


class ApiError(Exception):
    """An error with a Kubernetes ``Status`` body."""

    def __init__(self, status: dict[str, Any]):
        self.status = status
        super().__init__(status.get("message", ""))

    @property
    def code(self) -> int:
        return int(self.status.get("code", 500))

    @property
    def reason(self) -> str:
        return str(self.status.get("reason", ""))

    @property
    def message(self) -> str:
        return str(self.status.get("message", ""))

    def __repr__(self) -> str:
        return f"ApiError({self.code}, {self.reason!r}, {self.message!r})"


def status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    st: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
    }
    if details is not None:
        st["details"] = details
    st["code"] = code
    return st


def success_status(code: int = 200, details: dict[str, Any] | None = None) -> dict[str, Any]:
    st: dict[str, Any] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"}
    if details is not None:
        st["details"] = details
    st["code"] = code
    return st


def _qualified(plural: str, group: str) -> str:
    return f"{plural}.{group}" if group else plural


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    d: dict[str, Any] = {"name": name}
    if group:
        d["group"] = group
    d["kind"] = kind
    return d


def not_found(plural: str, group: str, name: str) -> ApiError:
    return ApiError(status(404, "NotFound", f'{_qualified(plural, group)} "{name}" not found',
                           _details(name, group, plural)))


def path_not_found() -> ApiError:
    return ApiError(status(404, "NotFound", "the server could not find the requested resource", {}))


def already_exists(plural: str, group: str, name: str) -> ApiError:
    return ApiError(status(409, "AlreadyExists", f'{_qualified(plural, group)} "{name}" already exists',
                           _details(name, group, plural)))


def conflict(plural: str, group: str, name: str, why: str) -> ApiError:
    msg = f'Operation cannot be fulfilled on {_qualified(plural, group)} "{name}": {why}'
    return ApiError(status(409, "Conflict", msg, _details(name, group, plural)))


OPTIMISTIC_LOCK_MESSAGE = "the object has been modified; please apply your changes to the latest version and try again"


def stale(plural: str, group: str, name: str) -> ApiError:
    return conflict(plural, group, name, OPTIMISTIC_LOCK_MESSAGE)


def invalid(kind: str, group: str, name: str, errors: list[FieldError]) -> ApiError:
    qualified_kind = f"{kind}.{group}" if group else kind
    message = f'{qualified_kind} "{name}" is invalid: {aggregate(errors)}'
    details = _details(name, group, kind)
    details["causes"] = [e.cause() for e in errors]
    return ApiError(status(422, "Invalid", message, details))


def bad_request(message: str) -> ApiError:
    return ApiError(status(400, "BadRequest", message))


def unauthorized() -> ApiError:
    return ApiError(status(401, "Unauthorized", "Unauthorized"))


def forbidden(plural: str, group: str, name: str, why: str) -> ApiError:
    subject = f'{_qualified(plural, group)} "{name}"' if name else _qualified(plural, group)
    return ApiError(status(403, "Forbidden", f"{subject} is forbidden: {why}", _details(name, group, plural)))


def method_not_allowed(verb: str, plural: str, group: str) -> ApiError:
    return ApiError(status(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource",
                           {"group": group, "kind": plural} if group else {"kind": plural}))


def gone(message: str) -> ApiError:
    return ApiError(status(410, "Expired", message))


def request_too_large(limit: int) -> ApiError:
    """``NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))``, as the body reader answers."""
    return ApiError(status(413, "RequestEntityTooLarge", f"Request entity too large: limit is {limit}"))


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(status(415, "UnsupportedMediaType",
                           f'the body of the request was in an unknown format {content_type!r} - accepted media '
                           'types include: application/json, application/yaml, application/vnd.kubernetes.protobuf'))


def too_many_requests(message: str, retry_after: int | None = None) -> ApiError:
    details = {"retryAfterSeconds": retry_after} if retry_after is not None else None
    return ApiError(status(429, "TooManyRequests", message, details))


def internal(message: str) -> ApiError:
    return ApiError(status(500, "InternalError", f"Internal error occurred: {message}",
                           {"causes": [{"message": message}]}))


def timeout(message: str) -> ApiError:
    return ApiError(status(504, "Timeout", message))


NAMESPACE_TERMINATING_CAUSE = "NamespaceTerminating"


def has_cause(error: ApiError, reason: str) -> bool:
    """Whether the Status names a cause of this type (``StatusCause.Type`` is ``reason`` on the wire)."""
    causes = (error.status.get("details") or {}).get("causes") or ()
    return any(isinstance(c, dict) and c.get("reason") == reason for c in causes)


def is_namespace_terminating(error: ApiError) -> bool:
    """A create refused because its namespace is being deleted (controllers ignore these)."""
    return error.code == 403 and has_cause(error, NAMESPACE_TERMINATING_CAUSE)
