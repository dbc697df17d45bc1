"""CustomResourceDefinition (apiextensions.k8s.io/v1): defaults, validation, and the reading of
a CRD that serving its kind needs (versions, schemas, subresources, printer columns).

Upstream: ``pkg/apis/apiextensions/v1/defaults.go`` and
``pkg/apis/apiextensions/validation/validation.go`` (``ValidateCustomResourceDefinition``,
``...Update``, ``...Names``, ``...Version``, ``...Subresources``, ``...ColumnDefinition``);
the structural-schema check is :mod:`everynode.api.apiextensions.structural`.  The rules kept
are the ones a CRD author meets: names (plural/singular/short names are DNS-1035 labels,
``metadata.name`` is ``<plural>.<group>``, kind and listKind differ), the group has a dot,
scope is Namespaced or Cluster and immutable, exactly one storage version, unique version
names, a schema for every version and a structural one, scale paths under ``.spec``/
``.status``, printer column types and paths.
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as fielderr
from everynode.api.apiextensions import jsonpath
from everynode.api.apiextensions.structural import structural_errors
from everynode.api.field_errors import FieldError
from everynode.api.names import is_dns1035_label, is_dns1123_subdomain, name_is_dns_subdomain
from everynode.api.validation.meta import validate_object_meta, validate_object_meta_update

Obj = dict[str, Any]

SCOPES = ["Cluster", "Namespaced"]
COLUMN_TYPES = ["boolean", "date", "integer", "number", "string"]
CONVERSION_STRATEGIES = ["None", "Webhook"]


def _d(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _l(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


# --------------------------------------------------------------------------- defaults

def default_crd(obj: Obj) -> None:
    """``SetDefaults_CustomResourceDefinition``: singular and listKind from the kind, conversion
    ``None``, and per version ``served``/``storage`` left as given."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict):
        kind = names.get("kind") or ""
        if not names.get("singular") and kind:
            names["singular"] = kind.lower()
        if not names.get("listKind") and kind:
            names["listKind"] = f"{kind}List"
    conversion = spec.get("conversion")
    if not isinstance(conversion, dict):
        spec["conversion"] = {"strategy": "None"}
    elif not conversion.get("strategy"):
        conversion["strategy"] = "None"


# --------------------------------------------------------------------------- reading a CRD

def versions(crd: Obj) -> list[Obj]:
    return [v for v in _l(_d(crd.get("spec")).get("versions")) if isinstance(v, dict)]


def storage_version(crd: Obj) -> str:
    for v in versions(crd):
        if v.get("storage"):
            return str(v.get("name"))
    return ""


def served_versions(crd: Obj) -> list[Obj]:
    return [v for v in versions(crd) if v.get("served")]


def version_schema(version: Obj) -> Obj | None:
    schema = _d(version.get("schema")).get("openAPIV3Schema")
    return schema if isinstance(schema, dict) else None


def condition(crd: Obj, type_: str) -> Obj | None:
    for c in _l(_d(crd.get("status")).get("conditions")):
        if isinstance(c, dict) and c.get("type") == type_:
            return c
    return None


def is_established(crd: Obj) -> bool:
    c = condition(crd, "Established")
    return c is not None and c.get("status") == "True"


# --------------------------------------------------------------------------- validation

def validate_crd_create(obj: Obj) -> list[FieldError]:
    errs = validate_object_meta(obj.get("metadata"), namespaced=False, name_fn=name_is_dns_subdomain)
    errs += _validate_spec(obj)
    return errs


def validate_crd_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    errs += _validate_spec(new)
    new_spec, old_spec = _d(new.get("spec")), _d(old.get("spec"))
    for key in ("scope", "group"):
        if key in old_spec and new_spec.get(key) != old_spec.get(key):
            errs.append(fielderr.invalid(f"spec.{key}", new_spec.get(key), "field is immutable"))
    return errs


def validate_crd_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    names = _d(_d(new.get("status")).get("acceptedNames"))
    if names:  # names not (yet) accepted are empty: only the accepted ones must be well formed
        errs += [e for e in _validate_names(names, "status.acceptedNames") if e.type != "Required"]
    return errs


def _validate_spec(obj: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    spec = _d(obj.get("spec"))
    md = _d(obj.get("metadata"))
    group = spec.get("group") or ""
    names = _d(spec.get("names"))
    plural = names.get("plural") or ""
    if md.get("name") != f"{plural}.{group}":
        errs.append(fielderr.invalid("metadata.name", md.get("name") or "", 'must be spec.names.plural+"."+spec.group'))
    if not group:
        errs.append(fielderr.required("spec.group", ""))
    else:
        msgs = is_dns1123_subdomain(group)
        if msgs:
            errs.append(fielderr.invalid("spec.group", group, ",".join(msgs)))
        elif "." not in group:
            errs.append(fielderr.invalid("spec.group", group, "should be a domain with at least one dot"))
    scope = spec.get("scope")
    if not scope:
        errs.append(fielderr.required("spec.scope", ""))
    elif scope not in SCOPES:
        errs.append(fielderr.not_supported("spec.scope", scope, SCOPES))
    errs += _validate_names(names, "spec.names")
    errs += _validate_versions(spec)
    conversion = _d(spec.get("conversion"))
    strategy = conversion.get("strategy")
    if strategy and strategy not in CONVERSION_STRATEGIES:
        errs.append(fielderr.not_supported("spec.conversion.strategy", strategy, CONVERSION_STRATEGIES))
    if strategy == "Webhook" and not _d(conversion.get("webhook")).get("clientConfig"):
        errs.append(fielderr.required("spec.conversion.webhook", "must be set if strategy is Webhook"))
    return errs


def _validate_names(names: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for key in ("plural", "singular"):
        value = names.get(key) or ""
        if key == "plural" and not value:
            errs.append(fielderr.required(f"{path}.plural", ""))
            continue
        msgs = is_dns1035_label(value) if value else []
        if msgs:
            errs.append(fielderr.invalid(f"{path}.{key}", value, ",".join(msgs)))
    for i, short in enumerate(_l(names.get("shortNames"))):
        msgs = is_dns1035_label(str(short))
        if msgs:
            errs.append(fielderr.invalid(f"{path}.shortNames[{i}]", short, ",".join(msgs)))
    kind = names.get("kind") or ""
    if not kind:
        errs.append(fielderr.required(f"{path}.kind", ""))
    elif (msgs := is_dns1035_label(kind.lower())):
        errs.append(fielderr.invalid(f"{path}.kind", kind, "may have mixed case, but should otherwise match: "
                                     + ",".join(msgs)))
    list_kind = names.get("listKind") or ""
    if not list_kind:
        errs.append(fielderr.required(f"{path}.listKind", ""))
    elif (msgs := is_dns1035_label(list_kind.lower())):
        errs.append(fielderr.invalid(f"{path}.listKind", list_kind, "may have mixed case, but should otherwise "
                                     "match: " + ",".join(msgs)))
    elif list_kind == kind:
        errs.append(fielderr.invalid(f"{path}.listKind", list_kind, "kind and listKind may not be the same"))
    for i, category in enumerate(_l(names.get("categories"))):
        msgs = is_dns1035_label(str(category))
        if msgs:
            errs.append(fielderr.invalid(f"{path}.categories[{i}]", category, ",".join(msgs)))
    return errs


def _validate_versions(spec: Obj) -> list[FieldError]:
    errs: list[FieldError] = []
    all_versions = _l(spec.get("versions"))
    if not all_versions:
        errs.append(fielderr.invalid("spec.versions", all_versions, "must have exactly one version marked as "
                                     "storage version"))
        return errs
    seen: set[str] = set()
    storage = 0
    served = 0
    for i, version in enumerate(all_versions):
        path = f"spec.versions[{i}]"
        version = _d(version)
        name = version.get("name") or ""
        if not name:
            errs.append(fielderr.required(f"{path}.name", ""))
        elif (msgs := is_dns1035_label(name)):
            errs.append(fielderr.invalid(f"{path}.name", name, ",".join(msgs)))
        elif name in seen:
            errs.append(fielderr.duplicate(f"{path}.name", name))
        seen.add(name)
        storage += bool(version.get("storage"))
        served += bool(version.get("served"))
        schema = version_schema(version)
        if schema is None:
            errs.append(fielderr.required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
        else:
            errs += structural_errors(schema, f"{path}.schema.openAPIV3Schema")
        errs += _validate_subresources(_d(version.get("subresources")), f"{path}.subresources")
        for j, column in enumerate(_l(version.get("additionalPrinterColumns"))):
            errs += _validate_column(_d(column), f"{path}.additionalPrinterColumns[{j}]")
    if storage != 1:
        errs.append(fielderr.invalid("spec.versions", all_versions, "must have exactly one version marked as "
                                     "storage version"))
    if served == 0:
        errs.append(fielderr.invalid("spec.versions", all_versions, "must have at least one version marked as "
                                     "served"))
    return errs


def _validate_subresources(subresources: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    scale = subresources.get("scale")
    if not isinstance(scale, dict):
        return errs
    spec_path = scale.get("specReplicasPath") or ""
    if not spec_path:
        errs.append(fielderr.required(f"{path}.scale.specReplicasPath", ""))
    elif not spec_path.startswith(".spec.") or jsonpath.field_path(spec_path) is None:
        errs.append(fielderr.invalid(f"{path}.scale.specReplicasPath", spec_path, "should be a json path under .spec"))
    status_path = scale.get("statusReplicasPath") or ""
    if not status_path:
        errs.append(fielderr.required(f"{path}.scale.statusReplicasPath", ""))
    elif not status_path.startswith(".status.") or jsonpath.field_path(status_path) is None:
        errs.append(fielderr.invalid(f"{path}.scale.statusReplicasPath", status_path,
                                     "should be a json path under .status"))
    selector_path = scale.get("labelSelectorPath")
    if selector_path and (not selector_path.startswith((".spec.", ".status."))
                          or jsonpath.field_path(selector_path) is None):
        errs.append(fielderr.invalid(f"{path}.scale.labelSelectorPath", selector_path,
                                     "should be a json path under either .spec or .status"))
    return errs


def _validate_column(column: Obj, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not column.get("name"):
        errs.append(fielderr.required(f"{path}.name", ""))
    type_ = column.get("type")
    if not type_:
        errs.append(fielderr.required(f"{path}.type", ""))
    elif type_ not in COLUMN_TYPES:
        errs.append(fielderr.not_supported(f"{path}.type", type_, COLUMN_TYPES))
    fmt = column.get("format")
    formats = ["int32", "int64", "float", "double", "byte", "date", "date-time", "password"]
    if fmt and fmt not in formats:
        errs.append(fielderr.not_supported(f"{path}.format", fmt, formats))
    if column.get("priority") is not None and int(column.get("priority") or 0) < 0:
        errs.append(fielderr.invalid(f"{path}.priority", column["priority"], "must be greater than or equal to 0"))
    path_text = column.get("jsonPath") or ""
    if not path_text:
        errs.append(fielderr.required(f"{path}.jsonPath", ""))
    elif jsonpath.parse(path_text) is None:
        errs.append(fielderr.invalid(f"{path}.jsonPath", path_text, "must be a simple json path"))
    return errs
