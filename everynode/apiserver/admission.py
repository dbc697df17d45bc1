"""The admission plugins kube-apiserver runs by default that change what everynode stores.

Why these and only these: they are the ones whose effect a user (or the DaemonSet controller)
can observe on the objects — a pod created in a missing namespace is refused, a pod's
``priority`` comes from its PriorityClass, every pod gets the 300 s not-ready/unreachable
tolerations and the ``default`` service account.  Authorization plugins and webhooks have no
counterpart (one admin user).  The plugins read the store directly (the apiserver's informers
play that role upstream), so admission costs a dictionary lookup, not a request.

Upstream: ``plugin/pkg/admission/namespace/lifecycle/admission.go``,
``plugin/pkg/admission/priority/admission.go``,
``plugin/pkg/admission/defaulttolerationseconds/admission.go``,
``plugin/pkg/admission/serviceaccount/admission.go``; the built-in PriorityClasses are
``pkg/apis/scheduling/types.go`` (``SystemPriorityClasses``).
"""

from __future__ import annotations

from typing import Any

from everynode.api import errors
from everynode.api.registry import ResourceType
from everynode.storage.base import Store

Obj = dict[str, Any]

NAMESPACES = "namespaces"
PRIORITY_CLASSES = "priorityclasses.scheduling.k8s.io"

# lifecycle/admission.go: these namespaces can never be deleted.
IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})

DEFAULT_SERVICE_ACCOUNT = "default"
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"
DEFAULT_TOLERATION_SECONDS = 300
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"

SYSTEM_NODE_CRITICAL = "system-node-critical"
SYSTEM_CLUSTER_CRITICAL = "system-cluster-critical"


def system_priority_classes() -> list[Obj]:
    """The PriorityClasses every cluster has from the start (``SystemPriorityClasses()``)."""
    return [
        {
            "kind": "PriorityClass",
            "apiVersion": "scheduling.k8s.io/v1",
            "metadata": {"name": SYSTEM_NODE_CRITICAL},
            "value": 2000001000,
            "description": "Used for system critical pods that must not be moved from their current node.",
            "preemptionPolicy": DEFAULT_PREEMPTION_POLICY,
        },
        {
            "kind": "PriorityClass",
            "apiVersion": "scheduling.k8s.io/v1",
            "metadata": {"name": SYSTEM_CLUSTER_CRITICAL},
            "value": 2000000000,
            "description": "Used for system critical pods that must run in the cluster, but can be moved to "
                           "another node if necessary.",
            "preemptionPolicy": DEFAULT_PREEMPTION_POLICY,
        },
    ]


def forbidden(rt: ResourceType, obj: Obj | None, name: str, why: str) -> errors.ApiError:
    """``admission.NewForbidden``: names the object by name, else generateName, else "Unknown"."""
    if not name and obj is not None:
        md = obj.get("metadata") or {}
        name = md.get("name") or md.get("generateName") or "Unknown"
    return errors.forbidden(rt.plural, rt.group, name, why)


class Admission:
    """Mutating and validating admission for creates, updates and deletes."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- namespace lifecycle --------------------------------------------------------------------

    def check_namespace_for_create(self, rt: ResourceType, namespace: str, obj: Obj | None) -> None:
        """New content needs an existing namespace that is not being terminated."""
        if not rt.namespaced or not namespace:
            return
        ns = self.store.get(NAMESPACES, "", namespace)
        if ns is None:
            raise errors.not_found("namespaces", "", namespace)
        if (ns.get("status") or {}).get("phase") == "Terminating":
            err = forbidden(rt, obj, "", f"unable to create new content in namespace {namespace} "
                                         "because it is being terminated")
            err.status.setdefault("details", {})["causes"] = [{
                "reason": "NamespaceTerminating",
                "message": f"namespace {namespace} is being terminated",
                "field": "metadata.namespace",
            }]
            raise err

    def check_delete(self, rt: ResourceType, name: str) -> None:
        if rt.key == NAMESPACES and name in IMMORTAL_NAMESPACES:
            raise errors.forbidden("namespaces", "", name, "this namespace may not be deleted")

    # -- create / update -----------------------------------------------------------------------

    def admit_create(self, rt: ResourceType, obj: Obj) -> None:
        """Mutating then validating plugins for a create of ``obj`` (a private, mutable object)."""
        if rt.key == "pods":
            self._service_account(obj)
            self._priority(rt, obj)
            self._default_toleration_seconds(obj)
        elif rt.key == PRIORITY_CLASSES:
            self._single_global_default(rt, obj)

    def admit_update(self, rt: ResourceType, new: Obj, old: Obj) -> None:
        if rt.key == "pods":
            # The priority plugin set these on create; an update that omits them keeps them.
            spec = new.get("spec")
            old_spec = old.get("spec") or {}
            if isinstance(spec, dict):
                for key in ("priority", "preemptionPolicy"):
                    if spec.get(key) is None and old_spec.get(key) is not None:
                        spec[key] = old_spec[key]
        elif rt.key == PRIORITY_CLASSES:
            self._single_global_default(rt, new)

    # -- plugins -------------------------------------------------------------------------------

    @staticmethod
    def _service_account(pod: Obj) -> None:
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        if "kubernetes.io/config.mirror" in annotations:
            return  # mirror pods keep what the kubelet wrote
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
        # v1 conversion serves the deprecated alias with the same value.
        spec["serviceAccount"] = spec["serviceAccountName"]

    def _priority(self, rt: ResourceType, pod: Obj) -> None:
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return
        class_name = spec.get("priorityClassName") or ""
        if not class_name:
            default = self._global_default()
            if default is None:
                value, policy = 0, DEFAULT_PREEMPTION_POLICY
            else:
                class_name = default["metadata"]["name"]
                spec["priorityClassName"] = class_name
                value = int(default.get("value") or 0)
                policy = default.get("preemptionPolicy") or DEFAULT_PREEMPTION_POLICY
        else:
            pc = self.store.get(PRIORITY_CLASSES, "", class_name)
            if pc is None:
                raise forbidden(rt, pod, "", f"no PriorityClass with name {class_name} was found")
            value = int(pc.get("value") or 0)
            policy = pc.get("preemptionPolicy") or DEFAULT_PREEMPTION_POLICY
        given = spec.get("priority")
        if given is not None and given != value:
            raise forbidden(rt, pod, "", f"the integer value of priority ({given}) must not be provided in pod "
                                         f"spec; priority admission controller computed {value} from the given "
                                         "PriorityClass name")
        spec["priority"] = value
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise forbidden(rt, pod, "", f"the string value of PreemptionPolicy ({given_policy}) must not be "
                                         f"provided in pod spec; priority admission controller computed {policy} "
                                         "from the given PriorityClass name")
        spec["preemptionPolicy"] = policy

    def _global_default(self) -> Obj | None:
        """The PriorityClass marked ``globalDefault`` (the lowest value if several, as upstream)."""
        best: Obj | None = None
        for pc in self.store.list(PRIORITY_CLASSES).items:
            if pc.get("globalDefault") and (best is None or pc.get("value", 0) < best.get("value", 0)):
                best = pc
        return best

    def _single_global_default(self, rt: ResourceType, pc: Obj) -> None:
        if not pc.get("globalDefault"):
            return
        name = (pc.get("metadata") or {}).get("name")
        for other in self.store.list(PRIORITY_CLASSES).items:
            other_name = other["metadata"]["name"]
            if other.get("globalDefault") and other_name != name:
                raise forbidden(rt, pc, "", f"PriorityClass {other_name} is already marked as default. "
                                            "Only one default can exist")

    @staticmethod
    def _default_toleration_seconds(pod: Obj) -> None:
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return
        tolerations = spec.get("tolerations")
        if not isinstance(tolerations, list):
            tolerations = []
        tolerates_not_ready = tolerates_unreachable = False
        for tol in tolerations:
            if not isinstance(tol, dict):
                continue
            key = tol.get("key") or ""
            effect = tol.get("effect") or ""
            if effect not in ("", "NoExecute"):
                continue
            if key in (NOT_READY_TAINT, ""):
                tolerates_not_ready = True
            if key in (UNREACHABLE_TAINT, ""):
                tolerates_unreachable = True
        if tolerates_not_ready and tolerates_unreachable:
            return
        tolerations = list(tolerations)
        if not tolerates_not_ready:
            tolerations.append({"key": NOT_READY_TAINT, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
        if not tolerates_unreachable:
            tolerations.append({"key": UNREACHABLE_TAINT, "operator": "Exists", "effect": "NoExecute",
                                "tolerationSeconds": DEFAULT_TOLERATION_SECONDS})
        spec["tolerations"] = tolerations
