"""ObjectMeta validation and the small shared checks every kind uses.

Upstream: ``staging/src/k8s.io/apimachinery/pkg/api/validation/objectmeta.go``
(``ValidateObjectMetaAccessor``, ``ValidateObjectMetaAccessorUpdate``), the core wrappers in
``pkg/apis/core/validation/validation.go`` (``ValidateObjectMeta`` adds the kube finalizer-name
check) and ``staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/validation/validation.go``
(labels, label selectors).

Field paths are plain strings built the way ``field.Path`` prints them (``a.b[0][key]``).  Go
iterates maps in random order; we iterate dicts in insertion order, so multi-error outputs are
deterministic (upstream's are not, so nothing can depend on their order).

Deliberately not checked here: ``metadata.resourceVersion`` on update (upstream's generic store
copies the live resourceVersion into unconditional updates before validating, so the check can
only fire on a request the service layer already turns into a Conflict), and managedFields
(produced by our own server-side-apply code).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import (
    is_dns1123_label,
    is_qualified_name,
    is_valid_label_value,
    name_is_path_segment,
)
from everynode.memo import remember

Obj = dict[str, Any]
NameFn = Callable[[str, bool], list[str]]

TOTAL_ANNOTATION_SIZE_LIMIT_B: Final = 256 * (1 << 10)
IS_NEGATIVE_ERROR_MSG: Final = "must be greater than or equal to 0"
FIELD_IMMUTABLE_ERROR_MSG: Final = "field is immutable"
STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


# --- paths and tolerant accessors ---------------------------------------------------------------

def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


def as_dict(value: Any) -> Obj:
    """The value if it is a JSON object, else ``{}`` (type errors are the decoder's business)."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def as_str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def as_int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return default
    return value if isinstance(value, int) else default


def dicts(value: Any) -> Iterable[tuple[int, Obj]]:
    """``enumerate`` over a JSON array, mapping non-object members to ``{}``."""
    for i, item in enumerate(as_list(value)):
        yield i, as_dict(item)


# --- small shared checks ------------------------------------------------------------------------

def validate_nonnegative(value: Any, path: str) -> list[FieldError]:
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [field.invalid(path, value, IS_NEGATIVE_ERROR_MSG)]
    return []


def validate_status_counters(status: Obj, names: Iterable[str]) -> list[FieldError]:
    """Each named ``status`` counter is not negative (the status rule of every workload kind)."""
    errs: list[FieldError] = []
    for name in names:
        value = status.get(name)
        if type(value) is int and value < 0:  # (the path is only made for an error)
            errs.extend(validate_nonnegative(value, child("status", name)))
    return errs


def required_enum(value: str, path: str, supported: Any) -> list[FieldError]:
    """A required field with a fixed set of values: ``Required value`` or ``Unsupported value``."""
    if not value:
        return [field.required(path)]
    if value not in supported:
        return [field.not_supported(path, value, supported)]
    return []


def validate_immutable(new: Any, old: Any, path: str) -> list[FieldError]:
    if new != old:
        return [field.invalid(path, new, FIELD_IMMUTABLE_ERROR_MSG)]
    return []


def validate_dns1123_label(value: str, path: str) -> list[FieldError]:
    return [field.invalid(path, value, msg) for msg in is_dns1123_label(value)]


def validate_qualified_name(value: str, path: str) -> list[FieldError]:
    """``ValidateQualifiedName``; the names found valid are remembered (label keys, condition
    types, finalizers: the same few on every write)."""
    if value in _QUALIFIED_NAMES:
        return []
    errs = [field.invalid(path, value, msg) for msg in is_qualified_name(value)]
    if not errs and type(value) is str:
        remember(_QUALIFIED_NAMES, value, True, limit=_QUALIFIED_NAMES_MAX)
    return errs


_QUALIFIED_NAMES: Final[dict[str, bool]] = {}  # names known to pass validate_qualified_name
_QUALIFIED_NAMES_MAX: Final = 16_384


def validate_label_name(name: str, path: str) -> list[FieldError]:
    return validate_qualified_name(name, path)


def validate_labels(labels: Any, path: str) -> list[FieldError]:
    """``ValidateLabels``: keys and values both reported on the map's own path.

    The (key, value) pairs found valid are remembered (``_VALID_LABELS``): every pod of a
    controller, and every write of every object, carries the same few labels, and each check
    is two regular expressions.  Only the verdict "valid" is kept, so error texts always come
    from the checks."""
    errs: list[FieldError] = []
    for k, v in as_dict(labels).items():
        value = v if isinstance(v, str) else ""
        pair = (k, value)
        if pair in _VALID_LABELS:
            continue
        found = validate_label_name(k, path)
        found.extend(field.invalid(path, value, msg) for msg in is_valid_label_value(value))
        if found:
            errs.extend(found)
        elif type(k) is str:
            remember(_VALID_LABELS, pair, True, limit=_VALID_LABELS_MAX)
    return errs


_VALID_LABELS: dict[tuple[Any, str], bool] = {}  # (key, value) pairs known to pass validate_labels
_VALID_LABELS_MAX: Final = 16_384


def validate_annotations(annotations: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    total = 0
    for k, v in as_dict(annotations).items():
        errs.extend(field.invalid(path, k, msg) for msg in is_qualified_name(k.lower()))
        total += len(k.encode()) + len(as_str(v).encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT_B:
        errs.append(field.too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B))
    return errs


def validate_owner_references(refs: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    first_controller = ""
    for _, ref in dicts(refs):
        api_version = as_str(ref.get("apiVersion"))
        kind = as_str(ref.get("kind"))
        version = api_version.rsplit("/", 1)[-1]
        if not version:
            errs.append(field.invalid(child(path, "apiVersion"), api_version, "version must not be empty"))
        if not kind:
            errs.append(field.invalid(child(path, "kind"), kind, "must not be empty"))
        if not as_str(ref.get("name")):
            errs.append(field.invalid(child(path, "name"), as_str(ref.get("name")), "must not be empty"))
        if not as_str(ref.get("uid")):
            errs.append(field.invalid(child(path, "uid"), as_str(ref.get("uid")), "must not be empty"))
        if api_version == "v1" and kind == "Event":
            errs.append(field.invalid(path, ref, "/v1, Kind=Event is disallowed from being an owner"))
        if ref.get("controller") is True:
            current = f"{kind}/{as_str(ref.get('name'))}"
            if first_controller:
                errs.append(field.invalid(
                    path, refs,
                    f'Only one reference can have Controller set to true. Found "true" in references for '
                    f"{first_controller} and {current}",
                ))
            else:
                first_controller = current
    return errs


def validate_finalizers(finalizers: Any, path: str) -> list[FieldError]:
    """apimachinery's ``ValidateFinalizers`` plus core's ``validateKubeFinalizerName`` per entry."""
    errs: list[FieldError] = []
    names = [f for f in as_list(finalizers) if isinstance(f, str)]
    for name in names:
        errs.extend(validate_qualified_name(name, path))
    if "orphan" in names and "foregroundDeletion" in names:
        errs.append(field.invalid(path, names, "finalizer orphan and foregroundDeletion cannot be both set"))
    for i, name in enumerate(names):
        errs.extend(validate_kube_finalizer_name(name, index(path, i)))
    return errs


def validate_kube_finalizer_name(name: str, path: str) -> list[FieldError]:
    if "/" not in name and name not in STANDARD_FINALIZERS:
        return [field.invalid(path, name, "name is neither a standard finalizer name nor is it fully qualified")]
    return []


def _go_string_slice(values: list[str]) -> str:
    return "[]string{" + ", ".join('"' + v + '"' for v in values) + "}"


# --- ObjectMeta ---------------------------------------------------------------------------------

def validate_object_meta(meta: Any, *, namespaced: bool, name_fn: NameFn, path: str = "metadata") -> list[FieldError]:
    """``ValidateObjectMeta`` for a create (name generation has already happened)."""
    md = as_dict(meta)
    errs: list[FieldError] = []
    generate_name = as_str(md.get("generateName"))
    if generate_name:
        errs.extend(field.invalid(child(path, "generateName"), generate_name, msg)
                    for msg in _name_errors(name_fn, generate_name, True))
    errs.extend(validate_object_name(md, name_fn=name_fn, path=path))
    errs.extend(_validate_object_meta_common(md, namespaced=namespaced, path=path))
    return errs


def validate_object_name(md: Obj, *, name_fn: NameFn, path: str = "metadata") -> list[FieldError]:
    """The ``metadata.name`` part of :func:`validate_object_meta` (a create's name).  A name made
    from ``generateName`` is new by construction: it is checked but not remembered as valid,
    which would only push the names that do repeat out of the table (a DaemonSet's pods, one new
    name each)."""
    name = as_str(md.get("name"))
    if not name:
        return [field.required(child(path, "name"), "name or generateName is required")]
    messages = name_fn(name, False) if md.get("generateName") else _name_errors(name_fn, name, False)
    return [field.invalid(child(path, "name"), name, msg) for msg in messages] if messages else []


_VALID_NAMES: Final[dict[tuple[Any, str, bool], bool]] = {}  # (name_fn, value, prefix) known to pass
_VALID_NAMES_MAX: Final = 16_384


def _name_errors(name_fn: NameFn, value: str, prefix: bool) -> list[str]:
    """``name_fn(value, prefix)``, remembering the values that pass.

    Every update of a kind whose update rule re-runs its create rule (leases, events) checks the
    same name and namespace again: a set lookup instead of the regular expressions.  Only the
    (pure) verdict "no errors" is remembered, so error texts always come from ``name_fn``."""
    if name_fn is name_is_path_segment:
        # Not remembered: its check is cheaper than the look-up, and the kind it is the whole
        # rule of, core/v1 Event, has a new name at every create (that pushed the names that do
        # repeat out of the table, 16,384 Events at a time).
        return name_fn(value, prefix)
    memo_key = (name_fn, value, prefix)
    if memo_key in _VALID_NAMES:
        return []
    errs = name_fn(value, prefix)
    if not errs:
        remember(_VALID_NAMES, memo_key, True, limit=_VALID_NAMES_MAX)
    return errs


def _namespace_name_fn(value: str, prefix: bool) -> list[str]:
    return is_dns1123_label(value)


def _validate_object_meta_common(md: Obj, *, namespaced: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    namespace = as_str(md.get("namespace"))
    if namespaced:
        if not namespace:
            errs.append(field.required(child(path, "namespace")))
        else:
            messages = _name_errors(_namespace_name_fn, namespace, False)
            if messages:
                errs.extend(field.invalid(child(path, "namespace"), namespace, msg) for msg in messages)
    elif namespace:
        errs.append(field.forbidden(child(path, "namespace"), "not allowed on this type"))
    # Each check finds nothing in an absent or empty value: skip the calls (every write of every
    # kind runs this).
    generation = md.get("generation")
    if generation:
        errs.extend(validate_nonnegative(generation, child(path, "generation")))
    for name, check in _REVALIDATED_META:
        value = md.get(name)
        if value:
            errs.extend(check(value, child(path, name)))
    return errs


def validate_object_meta_update(new_meta: Any, old_meta: Any, path: str = "metadata") -> list[FieldError]:
    """``ValidateObjectMetaUpdate``: identity and timestamps are immutable, the rest re-validated."""
    new, old = as_dict(new_meta), as_dict(old_meta)
    errs: list[FieldError] = []
    if old.get("deletionTimestamp"):
        old_finalizers = set(as_list(old.get("finalizers")))
        extra = sorted({f for f in as_list(new.get("finalizers")) if isinstance(f, str)} - old_finalizers)
        if extra:
            errs.append(field.forbidden(
                child(path, "finalizers"),
                "no new finalizers can be added if the object is being deleted, found new finalizers "
                + _go_string_slice(extra),
            ))
    if as_int(new.get("generation")) < as_int(old.get("generation")):
        errs.append(field.invalid(child(path, "generation"), as_int(new.get("generation")), "must not be decremented"))
    for name in _IMMUTABLE_META:
        new_value, old_value = new.get(name), old.get(name)
        if new_value is old_value or new_value == old_value:
            continue  # the common case, without building a path or an error list
        if name in _IMMUTABLE_META_STRINGS:
            new_value, old_value = as_str(new_value), as_str(old_value)
        errs.extend(validate_immutable(new_value, old_value, child(path, name)))
    # Values carried over unchanged were valid when they were stored (every write validates
    # them, or carries them over): skip re-checking them.  This runs on every heartbeat and
    # status write, and a patched object is a private copy, so "unchanged" is equality, not
    # identity; the result is the same either way.
    for name, check in _REVALIDATED_META:
        value = new.get(name)
        if not value:
            continue  # nothing in it to check
        before = old.get(name)
        if value is before or value == before:
            continue
        errs.extend(check(value, child(path, name)))
    return errs


_IMMUTABLE_META: Final = ("name", "namespace", "uid", "creationTimestamp", "deletionTimestamp",
                          "deletionGracePeriodSeconds")
_IMMUTABLE_META_STRINGS: Final = frozenset({"name", "namespace", "uid"})
_REVALIDATED_META: Final[tuple[tuple[str, Callable[[Any, str], list[FieldError]]], ...]] = (
    ("labels", validate_labels), ("annotations", validate_annotations),
    ("ownerReferences", validate_owner_references), ("finalizers", validate_finalizers))


# --- label selectors ----------------------------------------------------------------------------

_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(selector: Any, path: str) -> list[FieldError]:
    """``metav1validation.ValidateLabelSelector`` (label values strictly checked)."""
    if selector is None:
        return []
    sel = as_dict(selector)
    errs: list[FieldError] = []
    for i, req in dicts(sel.get("matchExpressions")):
        req_path = index(child(path, "matchExpressions"), i)
        operator = as_str(req.get("operator"))
        values = as_list(req.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                errs.append(field.required(child(req_path, "values"),
                                           "must be specified when `operator` is 'In' or 'NotIn'"))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errs.append(field.forbidden(child(req_path, "values"),
                                            "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        else:
            errs.append(field.invalid(child(req_path, "operator"), operator, "not a valid selector operator"))
        errs.extend(validate_label_name(as_str(req.get("key")), child(req_path, "key")))
        for j, value in enumerate(values):
            text = as_str(value)
            errs.extend(field.invalid(index(child(req_path, "values"), j), text, msg)
                        for msg in is_valid_label_value(text))
    errs.extend(validate_labels(sel.get("matchLabels"), child(path, "matchLabels")))
    return errs


def selector_matches(selector: Any, labels: Any) -> bool | None:
    """``LabelSelectorAsSelector(sel).Matches(labels)``; ``None`` when the selector does not convert.

    A nil selector matches nothing, ``{}`` matches everything — the rule behind
    "`selector` does not match template `labels`" firing for a missing selector.
    """
    if selector is None:
        return False
    sel = as_dict(selector)
    have = as_dict(labels)
    for k, v in as_dict(sel.get("matchLabels")).items():
        if is_qualified_name(k) or not isinstance(v, str) or is_valid_label_value(v):
            return None
        if have.get(k) != v:
            return False
    result = True
    for _, req in dicts(sel.get("matchExpressions")):
        k = as_str(req.get("key"))
        operator = as_str(req.get("operator"))
        values = [v for v in as_list(req.get("values")) if isinstance(v, str)]
        if operator not in _SELECTOR_OPERATORS or is_qualified_name(k):
            return None
        if operator in ("In", "NotIn") and (not values or any(is_valid_label_value(v) for v in values)):
            return None
        if operator in ("Exists", "DoesNotExist") and values:
            return None
        present = k in have
        if operator == "In":
            result = result and present and have[k] in values
        elif operator == "NotIn":
            result = result and not (present and have[k] in values)
        elif operator == "Exists":
            result = result and present
        else:
            result = result and not present
    return result
