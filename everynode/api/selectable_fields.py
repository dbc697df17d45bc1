"""Which fields each kind can be selected on, and their values for one object.

Upstream splits this in two, and so do we:

* the *field label conversion* registered per kind (``pkg/apis/core/v1/conversion.go``,
  ``pkg/apis/events/v1/conversion.go``, else ``runtime.DefaultMetaV1FieldSelectorConversion``)
  decides which labels a request may use and renames legacy ones (``spec.host`` →
  ``spec.nodeName``, events.k8s.io ``regarding.*`` → ``involvedObject.*``).  An unknown label is
  a 400 BadRequest whose message is the conversion's error text — ``field label not supported:
  x`` for the core kinds with their own conversion, ``"x" is not a known field selector: only
  "metadata.name", "metadata.namespace"`` for the rest.  :func:`check_field_selector` /
  :func:`normalize_field_selector` do this once per request.
* the registry's ``GetAttrs``/``ToSelectableFields`` (``pkg/registry/core/<kind>/strategy.go``)
  produce the field set matched per object; :func:`selectable_fields` does this.  A label that is
  accepted but absent from the set (``status.podIPs`` on pods) reads as ``""``, as upstream.

Extractors are plain functions looked up in a dict so a list/watch filter costs one dict build per
object and no reflection.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from everynode.api.field_errors import render_value
from everynode.api.registry import RESOURCES
from everynode.api.selectors import FieldSelector, SelectorError

__all__ = ["selectable_fields", "check_field_selector", "normalize_field_selector", "allowed_field_labels"]

_Fields = dict[str, str]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _namespaced_meta(obj: Mapping[str, Any]) -> _Fields:
    m = _meta(obj)
    return {"metadata.name": m.get("name") or "", "metadata.namespace": m.get("namespace") or ""}


def _cluster_meta(obj: Mapping[str, Any]) -> _Fields:
    return {"metadata.name": _meta(obj).get("name") or "", "metadata.namespace": ""}


def _bool_text(value: Any) -> str:
    return "true" if value else "false"


def _pod(obj: Mapping[str, Any]) -> _Fields:
    m = _meta(obj)
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    ips = status.get("podIPs")
    # Internally upstream reads podIPs[0]; v1 → internal conversion fills podIPs from podIP.
    pod_ip = ((ips[0] or {}).get("ip") or "") if ips else (status.get("podIP") or "")
    return {
        "metadata.name": m.get("name") or "",
        "metadata.namespace": m.get("namespace") or "",
        "spec.nodeName": spec.get("nodeName") or "",
        "spec.restartPolicy": spec.get("restartPolicy") or "",
        "spec.schedulerName": spec.get("schedulerName") or "",
        "spec.serviceAccountName": spec.get("serviceAccountName") or "",
        "spec.hostNetwork": _bool_text(spec.get("hostNetwork")),
        "status.phase": status.get("phase") or "",
        "status.podIP": pod_ip,
        "status.nominatedNodeName": status.get("nominatedNodeName") or "",
    }


def _node(obj: Mapping[str, Any]) -> _Fields:
    # ObjectMetaFieldsSet(meta, false): no metadata.namespace key for nodes.
    return {
        "metadata.name": _meta(obj).get("name") or "",
        "spec.unschedulable": _bool_text((obj.get("spec") or {}).get("unschedulable")),
    }


def _namespace(obj: Mapping[str, Any]) -> _Fields:
    return {
        "metadata.name": _meta(obj).get("name") or "",
        "status.phase": (obj.get("status") or {}).get("phase") or "",
    }


def _secret(obj: Mapping[str, Any]) -> _Fields:
    out = _namespaced_meta(obj)
    out["type"] = obj.get("type") or ""
    return out


def _service(obj: Mapping[str, Any]) -> _Fields:
    out = _namespaced_meta(obj)
    spec = obj.get("spec") or {}
    out["spec.clusterIP"] = spec.get("clusterIP") or ""
    out["spec.type"] = spec.get("type") or ""
    return out


def _event(obj: Mapping[str, Any]) -> _Fields:
    """Core ``ToSelectableFields`` for events; reads core/v1 and events.k8s.io/v1 spellings alike."""
    ref = obj.get("involvedObject") or obj.get("regarding") or {}
    reporting = obj.get("reportingComponent") or obj.get("reportingController") or ""
    source = (obj.get("source") or obj.get("deprecatedSource") or {}).get("component") or reporting
    out = _namespaced_meta(obj)
    out.update({
        "involvedObject.kind": ref.get("kind") or "",
        "involvedObject.namespace": ref.get("namespace") or "",
        "involvedObject.name": ref.get("name") or "",
        "involvedObject.uid": ref.get("uid") or "",
        "involvedObject.apiVersion": ref.get("apiVersion") or "",
        "involvedObject.resourceVersion": ref.get("resourceVersion") or "",
        "involvedObject.fieldPath": ref.get("fieldPath") or "",
        "reason": obj.get("reason") or "",
        "reportingComponent": reporting,
        "source": source,
        "type": obj.get("type") or "",
    })
    return out


_EXTRACTORS: dict[str, Callable[[Mapping[str, Any]], _Fields]] = {
    "pods": _pod,
    "nodes": _node,
    "namespaces": _namespace,
    "secrets": _secret,
    "services": _service,
    "events": _event,
    "events.events.k8s.io": _event,
}
_NAMESPACED = {rt.key: rt.namespaced for rt in RESOURCES}


def selectable_fields(resource_key: str, obj: Mapping[str, Any]) -> dict[str, str]:
    """The field set a field selector is matched against (upstream ``GetAttrs``)."""
    extractor = _EXTRACTORS.get(resource_key)
    if extractor is not None:
        return extractor(obj)
    if _NAMESPACED.get(resource_key, True):
        return _namespaced_meta(obj)
    return _cluster_meta(obj)


# --- field label conversion -----------------------------------------------------------------

def _identity(*labels: str) -> dict[str, str]:
    return {label: label for label in labels}


_EVENT_LABELS = _identity(
    "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
    "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
    "reason", "reportingComponent", "source", "type", "metadata.namespace", "metadata.name",
)

# resource key -> {accepted label: label in the selectable field set}
_CONVERSIONS: dict[str, dict[str, str]] = {
    "pods": {
        **_identity("metadata.name", "metadata.namespace", "spec.nodeName", "spec.restartPolicy",
                    "spec.schedulerName", "spec.serviceAccountName", "spec.hostNetwork", "status.phase",
                    "status.podIP", "status.podIPs", "status.nominatedNodeName"),
        "spec.host": "spec.nodeName",  # old v1 clients
    },
    "nodes": _identity("metadata.name", "spec.unschedulable"),
    "events": _EVENT_LABELS,
    "events.events.k8s.io": {
        **_identity("reason", "source", "type", "metadata.namespace", "metadata.name"),
        **{f"regarding.{f}": f"involvedObject.{f}"
           for f in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")},
        "reportingController": "reportingComponent",
    },
    "namespaces": _identity("status.phase", "metadata.name"),
    "secrets": _identity("type", "metadata.namespace", "metadata.name"),
    "services": _identity("metadata.namespace", "metadata.name", "spec.clusterIP", "spec.type"),
}
_DEFAULT_CONVERSION = _identity("metadata.name", "metadata.namespace")


def allowed_field_labels(resource_key: str) -> frozenset[str]:
    """The labels a field selector on this resource may use."""
    return frozenset(_CONVERSIONS.get(resource_key, _DEFAULT_CONVERSION))


def _unsupported(resource_key: str, label: str) -> SelectorError:
    if resource_key in _CONVERSIONS:
        return SelectorError(f"field label not supported: {label}")
    return SelectorError(f"{render_value(label)} is not a known field selector: only "
                         '"metadata.name", "metadata.namespace"')


def normalize_field_selector(resource_key: str, selector: FieldSelector) -> FieldSelector:
    """Apply the kind's field label conversion: reject unknown labels, rename legacy ones.

    Raises :class:`SelectorError` with the upstream message (the API answers 400 BadRequest).
    The result matches against :func:`selectable_fields`.
    """
    conversion = _CONVERSIONS.get(resource_key, _DEFAULT_CONVERSION)
    renamed = False
    for field, _op, _value in selector.requirements:
        target = conversion.get(field)
        if target is None:
            raise _unsupported(resource_key, field)
        renamed = renamed or target != field
    if not renamed:
        return selector
    return FieldSelector((conversion[f], op, v) for f, op, v in selector.requirements)


def check_field_selector(resource_key: str, selector: FieldSelector) -> None:
    """Raise :class:`SelectorError` if the selector uses a label this resource does not support."""
    normalize_field_selector(resource_key, selector)
