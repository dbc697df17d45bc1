"""Per-kind bookkeeping the API server does around every write: kube's ``rest.RESTCreateStrategy``
/ ``RESTUpdateStrategy`` / ``RESTDeleteStrategy`` for the kinds everynode serves.

Why a separate module: these rules are what makes a write *look* like kube-apiserver's answer
(``metadata.generation``, reset status, the DaemonSet ``templateGeneration`` annotation, pod QoS,
namespace finalizers), and they are pure functions of (new, old).  The service owns the order of
the pipeline (decode → defaults → admission → *prepare* → validate → store); this module owns
what *prepare* means per kind, so adding a kind is a table entry here, not a branch in the service.

Upstream sources: ``staging/src/k8s.io/apiserver/pkg/registry/rest/{create,update,delete}.go``
(common metadata rules), ``pkg/registry/apps/daemonset/strategy.go`` + ``pkg/apis/apps/v1/conversion.go``
(generation, templateGeneration annotation), ``pkg/registry/core/pod/strategy.go`` (generation,
QoS, graceful delete), ``pkg/registry/core/namespace/strategy.go`` (Active phase, ``kubernetes``
finalizer), ``pkg/registry/core/node/strategy.go``, ``pkg/registry/core/service/strategy.go``.

All functions mutate the *new* object in place; the caller owns it (a decoded request body or a
private copy).  Old objects are stored objects and are never mutated; values taken from them are
shared, not copied, which is safe because stored objects are immutable.
"""

from __future__ import annotations

from typing import Any

from everynode.api import meta as apimeta
from everynode.api.registry import ResourceType

Obj = dict[str, Any]

TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
NAMESPACE_FINALIZER = "kubernetes"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"

DAEMONSETS = "daemonsets.apps"
PODS = "pods"
NAMESPACES = "namespaces"
NODES = "nodes"
SERVICES = "services"

# Kinds whose strategy keeps metadata.generation (set to 1 on create, +1 on spec changes).
_GENERATION_KINDS = frozenset({DAEMONSETS, PODS})

# ``AllowCreateOnUpdate()`` is true for these strategies upstream; a PUT of a missing object of
# any other kind answers 404.
ALLOW_CREATE_ON_UPDATE = frozenset({
    "serviceaccounts", "services", "endpoints", "events", "events.events.k8s.io",
    "leases.coordination.k8s.io",
})

# ``ReturnDeletedObject: true`` registries answer a DELETE with the object instead of a Status.
RETURN_DELETED_OBJECT = frozenset({PODS, NAMESPACES, "serviceaccounts", SERVICES})

# A DaemonSet's status as ``apps.DaemonSetStatus{}`` serialises (the four non-omitempty fields).
_EMPTY_DAEMONSET_STATUS = {
    "currentNumberScheduled": 0,
    "numberMisscheduled": 0,
    "desiredNumberScheduled": 0,
    "numberReady": 0,
}


# --------------------------------------------------------------------------------------------
# create


def prepare_for_create(rt: ResourceType, obj: Obj, *, now: str) -> None:
    """``rest.BeforeCreate`` minus validation: system metadata plus the kind's ``PrepareForCreate``.

    ``metadata.name`` from ``generateName`` is *not* chosen here: the service picks it (and
    retries on a collision, as ``RetryGenerateName`` does)."""
    md = obj["metadata"]
    md.pop("deletionTimestamp", None)
    md.pop("deletionGracePeriodSeconds", None)
    md.pop("selfLink", None)
    md["uid"] = apimeta.new_uid()
    md["creationTimestamp"] = now
    if not rt.namespaced:
        md.pop("namespace", None)
    prepare = _CREATE.get(rt.key)
    if prepare is not None:
        prepare(obj)


def _create_daemonset(obj: Obj) -> None:
    md = obj["metadata"]
    md["generation"] = 1
    obj["status"] = dict(_EMPTY_DAEMONSET_STATUS)
    # conversion.go: the annotation is parsed into spec.templateGeneration on the way in, and
    # PrepareForCreate raises it to at least 1.
    generation = _template_generation(md)
    _set_template_generation(md, max(generation, 1))


def _create_pod(obj: Obj) -> None:
    md = obj["metadata"]
    md["generation"] = 1
    spec = obj.get("spec") or {}
    status: Obj = {"phase": "Pending", "qosClass": pod_qos_class(spec)}
    if spec.get("schedulingGates"):
        status["conditions"] = [{
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": None,
            "lastTransitionTime": None,
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }]
    obj["status"] = status


def _create_namespace(obj: Obj) -> None:
    obj["status"] = {"phase": "Active"}
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = obj["spec"] = {}
    finalizers = list(spec.get("finalizers") or ())
    if NAMESPACE_FINALIZER not in finalizers:
        finalizers.append(NAMESPACE_FINALIZER)
    spec["finalizers"] = finalizers
    _namespace_name_label(obj)


def _create_service(obj: Obj) -> None:
    obj["status"] = {"loadBalancer": {}}


_CREATE = {
    DAEMONSETS: _create_daemonset,
    PODS: _create_pod,
    NAMESPACES: _create_namespace,
    SERVICES: _create_service,
}


# --------------------------------------------------------------------------------------------
# update (main resource)


def prepare_for_update(rt: ResourceType, new: Obj, old: Obj) -> None:
    """``rest.BeforeUpdate`` minus validation: fields a client cannot change, plus the kind's
    ``PrepareForUpdate`` (status kept, generation bumps)."""
    md = new["metadata"]
    old_md = old["metadata"]
    _keep_system_metadata(md, old_md)
    prepare = _UPDATE.get(rt.key)
    if prepare is not None:
        prepare(new, old)
    elif rt.key in _GENERATION_KINDS:
        _bump_generation_on_spec_change(new, old)


def _keep_system_metadata(md: Obj, old_md: Obj) -> None:
    """What ``BeforeUpdate`` forces from the stored object whatever the client sent."""
    if "generation" in old_md:
        md["generation"] = old_md["generation"]
    else:
        md.pop("generation", None)
    if not md.get("uid"):
        md["uid"] = old_md.get("uid")
    if old_md.get("creationTimestamp"):
        md["creationTimestamp"] = old_md["creationTimestamp"]
    # A deletion timestamp is only ever set by DELETE; an update can neither add nor remove it.
    if old_md.get("deletionTimestamp"):
        md["deletionTimestamp"] = old_md["deletionTimestamp"]
    else:
        md.pop("deletionTimestamp", None)
    if old_md.get("deletionGracePeriodSeconds") is not None:
        md["deletionGracePeriodSeconds"] = old_md["deletionGracePeriodSeconds"]
    else:
        md.pop("deletionGracePeriodSeconds", None)
    md.pop("selfLink", None)


def _keep(new: Obj, old: Obj, key: str) -> None:
    if key in old:
        new[key] = old[key]
    else:
        new.pop(key, None)


def _bump_generation_on_spec_change(new: Obj, old: Obj) -> None:
    if new.get("spec") != old.get("spec"):
        new["metadata"]["generation"] = int(new["metadata"].get("generation") or 0) + 1


def _update_daemonset(new: Obj, old: Obj) -> None:
    _keep(new, old, "status")
    md = new["metadata"]
    generation = _template_generation(old["metadata"])
    new_spec = new.get("spec") or {}
    old_spec = old.get("spec") or {}
    if new_spec.get("template") != old_spec.get("template"):
        generation += 1
        md["generation"] = int(md.get("generation") or 0) + 1
    elif new_spec != old_spec:
        md["generation"] = int(md.get("generation") or 0) + 1
    _set_template_generation(md, generation)


def _update_pod(new: Obj, old: Obj) -> None:
    _keep(new, old, "status")
    _bump_generation_on_spec_change(new, old)


def _update_namespace(new: Obj, old: Obj) -> None:
    _keep(new, old, "status")
    # spec.finalizers only change through the finalize subresource.
    old_finalizers = (old.get("spec") or {}).get("finalizers")
    spec = new.get("spec")
    if not isinstance(spec, dict):
        spec = new["spec"] = {}
    if old_finalizers is not None:
        spec["finalizers"] = old_finalizers
    else:
        spec.pop("finalizers", None)
    _namespace_name_label(new)


def _keep_status(new: Obj, old: Obj) -> None:
    _keep(new, old, "status")


_UPDATE = {
    DAEMONSETS: _update_daemonset,
    PODS: _update_pod,
    NAMESPACES: _update_namespace,
    NODES: _keep_status,
    SERVICES: _keep_status,
}


def restored_fields(rt: ResourceType, subresource: str | None) -> tuple[str, ...]:
    """Top-level fields an update's strategy resets to the stored value before anything else
    reads them: ``spec`` for ``/status`` writes, ``status`` for main-resource writes of kinds
    with a status subresource.  The service need not copy what the request left untouched there
    (``ApiService._private_copy``)."""
    if subresource == "status":
        return ("spec",)
    if subresource is None and _UPDATE.get(rt.key) in _KEEPING_STATUS:
        return ("status",)
    return ()


_KEEPING_STATUS = (_update_daemonset, _update_pod, _update_namespace, _keep_status)


# --------------------------------------------------------------------------------------------
# update (subresources)


def prepare_for_status_update(rt: ResourceType, new: Obj, old: Obj) -> None:
    """The ``*/status`` strategies: the spec is the stored one, whatever the request says."""
    md = new["metadata"]
    old_md = old["metadata"]
    _keep_system_metadata(md, old_md)
    _keep(new, old, "spec")
    if rt.key == PODS:
        # Old kubelets corrupted owner references; the pods/status endpoint never touches them.
        _keep(md, old_md, "ownerReferences")
        status = new.get("status")
        old_qos = (old.get("status") or {}).get("qosClass")
        if isinstance(status, dict) and not status.get("qosClass") and old_qos:
            status["qosClass"] = old_qos
    elif rt.key == DAEMONSETS:
        _reset_object_meta_for_status(md, old_md)


def _reset_object_meta_for_status(md: Obj, old_md: Obj) -> None:
    """``metav1.ResetObjectMetaForStatus``: a status write cannot change these."""
    for key in ("labels", "annotations", "finalizers", "ownerReferences"):
        _keep(md, old_md, key)


def prepare_for_finalize(new: Obj, old: Obj) -> None:
    """``namespaces/finalize``: the request may change ``spec.finalizers``; status is kept."""
    _keep_system_metadata(new["metadata"], old["metadata"])
    _keep(new, old, "status")
    _namespace_name_label(new)


# --------------------------------------------------------------------------------------------
# delete


def graceful_delete_period(rt: ResourceType, obj: Obj, grace_period: int | None) -> int | None:
    """``CheckGracefulDelete``: the grace period for a first graceful delete, or None when the
    kind has no graceful deletion.  Only pods are graceful."""
    if rt.key != PODS:
        return None
    spec = obj.get("spec") or {}
    if grace_period is not None:
        period = int(grace_period)
    else:
        period = int(spec.get("terminationGracePeriodSeconds") or 0)
    if not spec.get("nodeName"):
        period = 0  # never scheduled: nothing to stop
    if (obj.get("status") or {}).get("phase") in ("Failed", "Succeeded"):
        period = 0  # already terminated
    if period < 0:
        period = 1
    return period


def should_delete_during_update(rt: ResourceType, new: Obj, old: Obj) -> bool:
    """``ShouldDeleteDuringUpdate``: an update leaving no finalizers on an object whose deletion
    was requested (with no grace period pending) finishes the deletion.  Namespaces also wait for
    ``spec.finalizers`` (``ShouldDeleteNamespaceDuringUpdate``)."""
    if new["metadata"].get("finalizers"):
        return False
    old_md = old["metadata"]
    if not old_md.get("deletionTimestamp"):
        return False
    if rt.key == NAMESPACES and (new.get("spec") or {}).get("finalizers"):
        return False
    return not old_md.get("deletionGracePeriodSeconds")


def has_generation(rt: ResourceType) -> bool:
    return rt.key in _GENERATION_KINDS


# --------------------------------------------------------------------------------------------
# helpers


def _template_generation(md: Obj) -> int:
    value = (md.get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _set_template_generation(md: Obj, generation: int) -> None:
    annotations = dict(md.get("annotations") or {})
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation)
    md["annotations"] = annotations


def _namespace_name_label(obj: Obj) -> None:
    md = obj["metadata"]
    name = md.get("name")
    if not name:
        return
    labels = md.get("labels")
    if isinstance(labels, dict) and labels.get(NAMESPACE_NAME_LABEL) == name:
        return
    labels = dict(labels or {})
    labels[NAMESPACE_NAME_LABEL] = name
    md["labels"] = labels


_QOS_RESOURCES = ("cpu", "memory")


def _quantity(value: Any) -> Any:
    try:
        from everynode.api.quantity import parse_quantity
    except ImportError:  # pragma: no cover - the quantity module lands separately
        return str(value)
    try:
        return parse_quantity(str(value))
    except ValueError:
        return str(value)


def _is_zero(value: Any) -> bool:
    q = _quantity(value)
    return q == 0 if not isinstance(q, str) else q in ("0", "0m", "")


def pod_qos_class(spec: Obj) -> str:
    """``qos.GetPodQOS``: BestEffort without cpu/memory requests or limits; Guaranteed when every
    container limits both and requests equal limits; Burstable otherwise."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    guaranteed = True
    containers = list(spec.get("initContainers") or ()) + list(spec.get("containers") or ())
    for container in containers:
        if not isinstance(container, dict):
            continue
        resources = container.get("resources") or {}
        for name, value in (resources.get("requests") or {}).items():
            if name in _QOS_RESOURCES and not _is_zero(value):
                q = _quantity(value)
                requests[name] = _add(requests.get(name), q)
        found = set()
        for name, value in (resources.get("limits") or {}).items():
            if name in _QOS_RESOURCES and not _is_zero(value):
                found.add(name)
                limits[name] = _add(limits.get(name), _quantity(value))
        if found != set(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed:
        for name, value in requests.items():
            if limits.get(name) != value:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return "Guaranteed"
    return "Burstable"


def _add(total: Any, value: Any) -> Any:
    if total is None:
        return value
    if isinstance(total, str) or isinstance(value, str):
        return f"{total}+{value}"
    return total + value
