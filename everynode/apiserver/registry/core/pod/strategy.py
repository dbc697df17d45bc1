"""Pods' rules on create, update, ``/status`` and delete, as ``pkg/registry/core/pod/strategy.go``
has them: generation, the initial status (``Pending``, QoS class, the SchedulingGated
condition), graceful deletion, and a status write that leaves owner references alone.

Why the QoS class is computed here: upstream's ``PrepareForCreate`` sets ``status.qosClass``
with ``qos.GetPodQOS`` and the kubelet never changes it; a status write that omits it keeps it.
"""

from __future__ import annotations

from typing import Any, Final

from everynode.api import field_errors as fielderr
from everynode.api.registry import ResourceType
from everynode.api.validation.pod import validate_pod_create_per_object
from everynode.apiserver.registry.strategy import StatusStrategy, Strategy, bump_generation_on_spec_change
from everynode.apiserver.registry.systemmeta import keep

Obj = dict[str, Any]


class PodStrategy(Strategy):
    # The node pin of a DaemonSet's pod.  Not ``nodeName``: a rule reads it with
    # ``schedulingGates`` (and the scheduler's binding sets it, not a controller).
    template_fields = ("affinity",)
    template_refusals = ("nodeName",)

    def __init__(self) -> None:
        super().__init__(return_deleted_object=True, keeps_status=True,
                         subresources={"status": PodStatusStrategy()})

    def prepare_for_create(self, obj: Obj) -> None:
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

    def validate_create_per_object(self, rt: ResourceType, obj: Obj) -> list[fielderr.FieldError]:
        return validate_pod_create_per_object(obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "status")
        bump_generation_on_spec_change(new, old)

    def graceful_delete_period(self, obj: Obj, grace_period: int | None) -> int | None:
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


class PodStatusStrategy(StatusStrategy):
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        md = new["metadata"]
        # Old kubelets corrupted owner references; the pods/status endpoint never touches them.
        keep(md, old["metadata"], "ownerReferences")
        status = new.get("status")
        old_qos = (old.get("status") or {}).get("qosClass")
        if isinstance(status, dict) and not status.get("qosClass") and old_qos:
            status["qosClass"] = old_qos


_QOS_RESOURCES: Final = ("cpu", "memory")


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


def with_condition(status: Obj, condition: Obj, now: str) -> Obj:
    """``podutil.UpdatePodCondition``: replace the condition of that type, keeping the transition
    time when the status did not change (the binding and eviction subresources set conditions)."""
    status = dict(status)
    conditions = list(status.get("conditions") or ())
    full = {"type": condition["type"], "status": condition["status"], "lastProbeTime": None,
            "lastTransitionTime": now}
    for key in ("reason", "message"):
        if condition.get(key):
            full[key] = condition[key]
    for i, existing in enumerate(conditions):
        if isinstance(existing, dict) and existing.get("type") == condition["type"]:
            if existing.get("status") == condition["status"]:
                full["lastTransitionTime"] = existing.get("lastTransitionTime")
            conditions[i] = full
            break
    else:
        conditions.append(full)
    status["conditions"] = conditions
    return status
