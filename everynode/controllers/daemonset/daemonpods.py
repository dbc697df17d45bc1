"""The pods a DaemonSet makes and how the controller reads them: template, node pin, target
node, "is updated", and the "oldest first" order.

Upstream: ``pkg/controller/daemon/util/daemonset_util.go`` (``CreatePodTemplate``,
``ReplaceDaemonSetPodNodeNameNodeAffinity``, ``GetTargetNodeName``, ``IsPodUpdated``) and
``daemon_controller.go`` (``podByCreationTimestampAndPhase``); reference: daemonset-semantics.md
§3, §5.1.  Pure (no I/O, no clock reads), so they are tested as tables.  Pod readiness and
availability are the api layer's (:mod:`everynode.api.pod`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final

from everynode.api.meta import deep_copy, field_of, make_controller_ref
from everynode.api.pod import timestamp_seconds
from everynode.controllers.daemonset.placement import with_daemon_tolerations

Obj = dict[str, Any]

# staging/src/k8s.io/api/apps/v1/types.go
CONTROLLER_REVISION_HASH_LABEL: Final = "controller-revision-hash"  # DefaultDaemonSetUniqueLabelKey
TEMPLATE_GENERATION_LABEL: Final = "pod-template-generation"  # DaemonSetTemplateGenerationKey
TEMPLATE_GENERATION_ANNOTATION: Final = "deprecated.daemonset.template.generation"  # DeprecatedTemplateGeneration

OBJECT_NAME_FIELD: Final = "metadata.name"  # metav1.ObjectNameField


# ---------------------------------------------------------------------------------------------
# Pods the controller creates (CreatePodTemplate, ReplaceDaemonSetPodNodeNameNodeAffinity)
# ---------------------------------------------------------------------------------------------

def template_generation(ds: Mapping[str, Any]) -> int | None:
    """``GetTemplateGeneration``: the deprecated annotation as an int; missing/unparsable → None."""
    text = field_of(field_of(field_of(ds, "metadata"), "annotations"), TEMPLATE_GENERATION_ANNOTATION)
    if text is None:
        return None
    try:
        return int(text, 10)
    except ValueError:
        return None


def pin_to_node(affinity: Obj | None, node_name: str) -> Obj:
    """The pod's affinity with its *required* node affinity replaced by one ``metadata.name`` term.

    All existing required terms are dropped (safe: the controller already checked the node
    satisfies them); preferred terms and pod (anti-)affinity are kept.  Returns a new dict.
    """
    term = {"matchFields": [{"key": OBJECT_NAME_FIELD, "operator": "In", "values": [node_name]}]}
    result = dict(affinity or {})
    node_affinity = dict(result.get("nodeAffinity") or {})
    required = dict(node_affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    required["nodeSelectorTerms"] = [term]
    node_affinity["requiredDuringSchedulingIgnoredDuringExecution"] = required
    result["nodeAffinity"] = node_affinity
    return result


def daemon_pod(ds: Obj, template: Obj, node_name: str) -> Obj | None:
    """The pod ``syncNodes`` creates for ``node_name`` from ``template`` (:func:`pod_template_for`):
    ``generateName`` ``<ds>-``, the template's labels, annotations and finalizers, the DaemonSet as
    controller, and the node pin in place of the required node affinity.  None when the template
    has no labels (upstream refuses to create such pods)."""
    md = ds["metadata"]
    tmd: dict[str, Any] = template.get("metadata") or {}
    labels = dict(tmd.get("labels") or {})
    if not labels:
        return None
    metadata: Obj = {"generateName": f"{md['name']}-", "namespace": md.get("namespace") or "",
                     "labels": labels,
                     "ownerReferences": [make_controller_ref(ds, api_version="apps/v1", kind="DaemonSet")]}
    if tmd.get("annotations"):
        metadata["annotations"] = dict(tmd["annotations"])
    if tmd.get("finalizers"):
        metadata["finalizers"] = list(tmd["finalizers"])
    spec = dict(template.get("spec") or {})
    spec["affinity"] = pin_to_node(spec.get("affinity"), node_name)  # the scheduler binds it
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def pod_template_for(ds: Obj, hash_: str) -> Obj:
    """``CreatePodTemplate``: a private copy of the template with the default tolerations and the
    ``pod-template-generation`` / ``controller-revision-hash`` labels."""
    template = deep_copy(field_of(ds.get("spec"), "template") or {})
    spec = template.setdefault("spec", {})
    spec["tolerations"] = with_daemon_tolerations(spec.get("tolerations"), host_network=bool(spec.get("hostNetwork")))
    metadata = template.setdefault("metadata", {})
    labels = metadata.get("labels")
    if labels is None:
        labels = metadata["labels"] = {}
    generation = template_generation(ds)
    if generation is not None:
        labels[TEMPLATE_GENERATION_LABEL] = str(generation)
    if hash_:
        labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    return template


class TargetNodeError(ValueError):
    """``GetTargetNodeName`` failed; the message is upstream's."""


def target_node_name(pod: Mapping[str, Any]) -> str:
    """``GetTargetNodeName``: ``spec.nodeName``, else the ``metadata.name`` matchFields pin.

    (Read through typed locals and ``field_of``: every informer handler of a DaemonSet's pods
    asks this, and ``.get`` on a value of unknown type is a method call by name.)"""
    spec: Obj = field_of(pod, "spec") or {}
    node_name = spec.get("nodeName")
    if node_name:
        result: str = node_name
        return result
    required = field_of(field_of(spec.get("affinity"), "nodeAffinity"),
                        "requiredDuringSchedulingIgnoredDuringExecution")
    if required is None:
        raise TargetNodeError("no spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution "
                              f"for pod {_ref(pod)}")
    terms = field_of(required, "nodeSelectorTerms") or []
    if not terms:
        raise TargetNodeError(f"no nodeSelectorTerms in requiredDuringSchedulingIgnoredDuringExecution of pod {_ref(pod)}")
    for term in terms:
        for req in field_of(term, "matchFields") or ():
            if field_of(req, "key") == OBJECT_NAME_FIELD and field_of(req, "operator") == "In":
                values = field_of(req, "values") or []
                if len(values) != 1:
                    raise TargetNodeError(f"the matchFields value of '{OBJECT_NAME_FIELD}' is not unique "
                                          f"for pod {_ref(pod)}")
                value: str = values[0]
                return value
    raise TargetNodeError(f"no node name found for pod {_ref(pod)}")


def _ref(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` of a pod, for an error's words."""
    md = field_of(pod, "metadata") or {}
    return f"{md.get('namespace') or ''}/{md.get('name') or ''}"


def target_node_or_none(pod: Mapping[str, Any]) -> str | None:
    try:
        return target_node_name(pod)
    except TargetNodeError:
        return None


# ---------------------------------------------------------------------------------------------
# Pod state: updated, and "oldest first" (ready / available: everynode.api.pod)
# ---------------------------------------------------------------------------------------------

def pod_hash(pod: Mapping[str, Any]) -> str | None:
    """The revision hash a pod carries (its ``controller-revision-hash`` label), if any."""
    hash_: str | None = field_of(field_of(field_of(pod, "metadata"), "labels"), CONTROLLER_REVISION_HASH_LABEL)
    return hash_


def is_pod_updated(pod: Mapping[str, Any], hash_: str, generation: int | None) -> bool:
    """``IsPodUpdated``: the pod carries the current hash, or the current template generation."""
    labels: Obj = field_of(field_of(pod, "metadata"), "labels") or {}
    if hash_ and labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_:
        return True
    return generation is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(generation)


def oldest_first_key(pod: Obj) -> tuple[bool, float, str]:
    """``podByCreationTimestampAndPhase``: bound before unbound, then creationTimestamp, then name."""
    md: dict[str, Any] = pod.get("metadata") or {}
    ts = md.get("creationTimestamp")
    return (not field_of(pod.get("spec"), "nodeName"), timestamp_seconds(ts) if ts else -math.inf, md.get("name") or "")


def sort_oldest_first(pods: Iterable[Obj]) -> list[Obj]:
    return sorted(pods, key=oldest_first_key)


def oldest_pod(pods: Iterable[Obj]) -> Obj | None:
    if isinstance(pods, list) and len(pods) < 2:  # a node's usual one pod: nothing to order
        return pods[0] if pods else None
    return min(pods, key=oldest_first_key, default=None)
