"""Validation for every kind the server serves, with kube-apiserver's field paths and texts.

Three entry points, keyed by the registry's resource key (``"pods"``, ``"daemonsets.apps"``,
``"leases.coordination.k8s.io"``, ...):

* :func:`validate_create` — the object as it will be stored (name generated, defaults applied);
* :func:`validate_update` — a main-resource update; the caller has already carried the old
  status over (strategy ``PrepareForUpdate``), as upstream does before validating;
* :func:`validate_status_update` — a ``/status`` update; the caller has carried the old spec over.

All functions are pure and return a list of :class:`~everynode.api.field_errors.FieldError` (empty =
valid); the API layer turns a non-empty list into a 422 Invalid Status.  Unknown resource keys
validate as bare ObjectMeta, so a newly registered kind is never accepted unchecked.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from everynode.api.field_errors import FieldError
from everynode.api.names import name_is_dns_subdomain
from everynode.api.registry import resource
from everynode.api.validation import (
    apps,
    batch,
    builtin,
    coordination,
    core,
    discovery,
    pod,
    policy,
    rbac,
    scheduling,
    workloads,
)
from everynode.api.validation.meta import validate_object_meta, validate_object_meta_update

Obj = dict[str, Any]
CreateFn = Callable[[Obj], list[FieldError]]
UpdateFn = Callable[[Obj, Obj], list[FieldError]]

def _revalidated(create: CreateFn) -> UpdateFn:
    """The update rule of kinds with no update-specific checks: ``ValidateObjectMetaUpdate``
    plus every create rule on the new object (upstream's ``ValidateXUpdate`` for events.k8s.io,
    endpoints, service accounts)."""

    def update(new: Obj, old: Obj) -> list[FieldError]:
        return validate_object_meta_update(new.get("metadata"), old.get("metadata")) + create(new)

    return update


_CREATE: dict[str, CreateFn] = {
    "pods": pod.validate_pod_create,
    "daemonsets.apps": apps.validate_daemon_set_create,
    "controllerrevisions.apps": apps.validate_controller_revision_create,
    "namespaces": core.validate_namespace_create,
    "nodes": core.validate_node_create,
    "services": core.validate_service_create,
    "configmaps": core.validate_config_map_create,
    "secrets": core.validate_secret_create,
    "serviceaccounts": core.validate_service_account_create,
    "events": core.validate_event_create,
    "events.events.k8s.io": core.validate_events_v1_create,
    "endpoints": core.validate_endpoints_create,
    "leases.coordination.k8s.io": coordination.validate_lease_create,
    "priorityclasses.scheduling.k8s.io": scheduling.validate_priority_class_create,
    "endpointslices.discovery.k8s.io": discovery.validate_endpoint_slice_create,
    "deployments.apps": workloads.validate_deployment_create,
    "replicasets.apps": workloads.validate_replica_set_create,
    "roles.rbac.authorization.k8s.io": rbac.validate_role_create,
    "clusterroles.rbac.authorization.k8s.io": rbac.validate_cluster_role_create,
    "rolebindings.rbac.authorization.k8s.io": rbac.validate_role_binding_create,
    "clusterrolebindings.rbac.authorization.k8s.io": rbac.validate_cluster_role_binding_create,
    "poddisruptionbudgets.policy": policy.validate_pod_disruption_budget_create,
    "jobs.batch": batch.validate_job_create,
}

_UPDATE: dict[str, UpdateFn] = {
    "pods": pod.validate_pod_update,
    "daemonsets.apps": apps.validate_daemon_set_update,
    "controllerrevisions.apps": apps.validate_controller_revision_update,
    "namespaces": core.validate_namespace_update,
    "nodes": core.validate_node_update,
    "services": core.validate_service_update,
    "configmaps": core.validate_config_map_update,
    "secrets": core.validate_secret_update,
    "serviceaccounts": _revalidated(core.validate_service_account_create),
    "events": core.validate_event_update,
    "events.events.k8s.io": _revalidated(core.validate_events_v1_create),
    "endpoints": _revalidated(core.validate_endpoints_create),
    "leases.coordination.k8s.io": coordination.validate_lease_update,
    "priorityclasses.scheduling.k8s.io": scheduling.validate_priority_class_update,
    "endpointslices.discovery.k8s.io": discovery.validate_endpoint_slice_update,
    "deployments.apps": workloads.validate_deployment_update,
    "replicasets.apps": workloads.validate_replica_set_update,
    "roles.rbac.authorization.k8s.io": rbac.validate_role_update,
    "clusterroles.rbac.authorization.k8s.io": rbac.validate_cluster_role_update,
    "rolebindings.rbac.authorization.k8s.io": rbac.validate_role_binding_update,
    "clusterrolebindings.rbac.authorization.k8s.io": rbac.validate_cluster_role_binding_update,
    "poddisruptionbudgets.policy": policy.validate_pod_disruption_budget_update,
    "jobs.batch": batch.validate_job_update,
}

_STATUS_UPDATE: dict[str, UpdateFn] = {
    "pods": pod.validate_pod_status_update,
    "daemonsets.apps": apps.validate_daemon_set_status_update,
    "namespaces": core.validate_namespace_status_update,
    # ValidateNodeUpdate is also the node status validator upstream.
    "nodes": core.validate_node_update,
    "services": core.validate_service_status_update,
    "deployments.apps": workloads.validate_deployment_status_update,
    "replicasets.apps": workloads.validate_replica_set_status_update,
    "poddisruptionbudgets.policy": policy.validate_pod_disruption_budget_status_update,
    "jobs.batch": batch.validate_job_status_update,
}


def _namespaced(resource_key: str) -> bool:
    try:
        return resource(resource_key).namespaced
    except KeyError:
        return True


def validate_create(resource_key: str, obj: Obj) -> list[FieldError]:
    fn = _CREATE.get(resource_key)
    if fn is None:
        return validate_object_meta(obj.get("metadata"), namespaced=_namespaced(resource_key),
                                    name_fn=name_is_dns_subdomain) + builtin.validate_create(resource_key, obj)
    return fn(obj)


def create_validator(resource_key: str) -> CreateFn:
    """:func:`validate_create` of one resource as one function, looked up once (the API's store
    of a kind keeps it rather than dispatching on every write)."""
    fn = _CREATE.get(resource_key)
    return fn if fn is not None else functools.partial(validate_create, resource_key)


def update_validator(resource_key: str) -> UpdateFn:
    """:func:`validate_update` of one resource as one function, as :func:`create_validator`."""
    fn = _UPDATE.get(resource_key)
    return fn if fn is not None else functools.partial(validate_update, resource_key)


def validate_update(resource_key: str, new: Obj, old: Obj) -> list[FieldError]:
    fn = _UPDATE.get(resource_key)
    if fn is None:
        return (validate_object_meta_update(new.get("metadata"), old.get("metadata"))
                + builtin.validate_update(resource_key, new, old))
    return fn(new, old)


def validate_status_update(resource_key: str, new: Obj, old: Obj) -> list[FieldError]:
    fn = _STATUS_UPDATE.get(resource_key)
    if fn is None:
        return validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    return fn(new, old)


def validate_namespace_finalize(new: Obj, old: Obj) -> list[FieldError]:
    """The ``namespaces/finalize`` subresource (``ValidateNamespaceFinalizeUpdate``)."""
    return core.validate_namespace_finalize_update(new, old)


__all__ = ["validate_create", "validate_namespace_finalize", "validate_status_update", "validate_update"]
