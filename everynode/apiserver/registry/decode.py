"""What the handler's decoder does with a body before any registry rule sees it: the kind and
apiVersion it names, its JSON types against the schema, unknown fields (per ``fieldValidation``),
the namespace, and the canonical key order.

Why apart from the generic store: every write path (create, update, each patch type, apply) and
only they decode, and the error texts depend on *what* was decoded (a body, a patched object, an
apply configuration), as upstream words them (``transformDecodeError``, ``patch.go``,
``ObjectToTyped``).  The check skips the parts of a body equal to the stored object it starts
from (stored objects are clean), so a write costs about what it changes.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from everynode.api import errors
from everynode.api import field_errors as fielderr
from everynode.api.registry import ResourceType
from everynode.api.typecheck import (
    Findings,
    TypeProblem,
    check_object,
    go_decode_message,
    is_structural,
    smd_errors,
)
from everynode.apiserver.registry.options import RequestOptions

Obj = dict[str, Any]

_TYPED: Final = Findings()  # what a typed body holds: nothing to report (never changed: read only)


def _cannot_be_handled(rt: ResourceType, body: Obj, message: str) -> str:
    """``transformDecodeError``: the decoder's error behind the kind and version the body named."""
    kind = body.get("kind") or rt.kind
    version = str(body.get("apiVersion") or rt.api_version).rpartition("/")[2]
    return f'{kind} in version "{version}" cannot be handled as a {rt.kind}: {message}'


def type_error(rt: ResourceType, body: Obj, problem: TypeProblem, source: str) -> errors.ApiError:
    """A badly typed value, answered as kube-apiserver answers its decoder's error."""
    message = go_decode_message(problem)
    if source == "patch":  # patch.go: NewInvalid(GroupKind{}, "", [Invalid("patch", <patched object>, err)])
        cause = fielderr.invalid("patch", orjson.dumps(body).decode(), message)
        return errors.ApiError(errors.status(422, "Invalid", f' "" is invalid: {fielderr.aggregate([cause])}',
                                             {"causes": [cause.cause()]}))
    return errors.bad_request(_cannot_be_handled(rt, body, message))


def typed_patch_error(rt: ResourceType, applied: Obj) -> errors.ApiError | None:
    """Server-side apply's typed conversion of the configuration (``ObjectToTyped``): unknown fields
    and wrong JSON kinds, in structured-merge-diff's words.  Upstream 1.33 returns this as a
    plain error (a 500 without a reason, kubernetes#122480); it is the client's mistake, so it
    is answered 400 BadRequest with upstream's message, as kubernetes#139255 proposes."""
    findings = check_object(rt.api_version, rt.kind, applied)
    if not findings.unknown and not any(is_structural(p) for p in findings.problems):
        return None
    md: Obj = applied["metadata"] if isinstance(applied.get("metadata"), dict) else {}
    group, _, version = rt.api_version.rpartition("/")
    where = f"{md.get('namespace') or ''}/{md.get('name') or ''}; {group}/{version}, Kind={rt.kind}"
    return errors.bad_request(f"failed to create typed patch object ({where}): {smd_errors(findings)}")


def decode(rt: ResourceType, namespace: str, body: Any, opts: RequestOptions, *,
           source: str = "body", known: Obj | None = None) -> Obj:
    """What the handler's decoder does: kind/apiVersion, types, unknown fields, namespace.

    ``source`` says what ``body`` is, because upstream words the errors by it: "body" (a
    create or update: Go's decoding errors behind ``DaemonSet in version "v1" cannot be
    handled as a DaemonSet: ``), "patch" (a patched object: 422 on ``patch``) or "apply"
    (the merge of an apply configuration that was checked before merging).  ``known`` is the
    stored object an update or patch starts from: the check skips the parts of ``body``
    equal to it (stored objects are clean)."""
    if not isinstance(body, dict):
        got = "array" if isinstance(body, list) else type(body).__name__
        raise errors.bad_request(f"the object provided is unrecognized (must be of type {rt.kind}): "
                                 f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                                 f"{got} into Go value of type struct {{ APIVersion string "
                                 f'"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }}')
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if kind and kind != rt.kind:
        version = (api_version or rt.api_version).rpartition("/")[2]
        raise errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {rt.kind}: '
                                 f"no kind \"{kind}\" is registered for version \"{api_version or rt.api_version}\"")
    if api_version and api_version != rt.api_version:
        raise errors.bad_request(f"the API version in the data ({api_version}) does not match the expected "
                                 f"API version ({rt.api_version})")
    findings = _TYPED if opts.typed else check_object(rt.api_version, rt.kind, body, known=known)
    if findings.problems:
        raise type_error(rt, body, findings.problems[0], source)
    unknown = findings.unknown
    if unknown and opts.field_validation == "Strict":
        message = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown)
        raise errors.bad_request(_cannot_be_handled(rt, body, message) if source == "body" else message)
    if unknown and opts.field_validation != "Ignore":
        opts.warnings.extend(f'unknown field "{p}"' for p in unknown)
    for path in unknown:
        drop_path(body, path)
    md = body.get("metadata")
    if md is None:
        md = {}
    # Canonical order, as Go serialises the struct: kind, apiVersion, metadata, the rest.
    obj: Obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": md}
    for key, value in body.items():
        if key not in obj:
            obj[key] = value
    obj_ns = md.get("namespace") or ""
    if rt.namespaced:
        if not obj_ns:
            md["namespace"] = namespace
        elif namespace and obj_ns != namespace:
            raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                     "sent on the request")
    elif obj_ns:
        md.pop("namespace", None)
    return obj


def drop_path(obj: Any, path: str) -> None:
    """Remove a field named by a dotted path with ``[i]``/``[key]`` steps (unknown_fields' form)."""
    steps: list[str | int] = []
    i, n = 0, len(path)
    buf = ""
    while i < n:
        c = path[i]
        if c == ".":
            if buf:
                steps.append(buf)
            buf = ""
            i += 1
        elif c == "[":
            if buf:
                steps.append(buf)
            buf = ""
            j = path.index("]", i)
            inner = path[i + 1:j]
            steps.append(int(inner) if inner.isdigit() else inner)
            i = j + 1
        else:
            buf += c
            i += 1
    if buf:
        steps.append(buf)
    node = obj
    for step in steps[:-1]:
        if isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        elif isinstance(node, dict) and str(step) in node:
            node = node[str(step)]
        else:
            return
    if isinstance(node, dict):
        node.pop(str(steps[-1]), None)
