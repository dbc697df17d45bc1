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

import asyncio
import random
from typing import Any, Final

from everynode.api import errors
from everynode.api.meta import generate_name
from everynode.api.registry import ResourceType
from everynode.storage.base import Store

Obj = dict[str, Any]

NAMESPACES: Final = "namespaces"
PRIORITY_CLASSES: Final = "priorityclasses.scheduling.k8s.io"

# lifecycle/admission.go: these namespaces can never be deleted.
IMMORTAL_NAMESPACES: Final = frozenset({"default", "kube-system", "kube-public"})

DEFAULT_SERVICE_ACCOUNT: Final = "default"
# serviceaccount/admission.go: the projected token volume and where it is mounted.
TOKEN_VOLUME_PREFIX: Final = "kube-api-access-"
TOKEN_MOUNT_PATH: Final = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION_SECONDS: Final = 3607  # WarnOnlyBoundTokenExpirationSeconds
PROJECTED_DEFAULT_MODE: Final = 0o644
ROOT_CA_CONFIG_MAP: Final = "kube-root-ca.crt"
# getServiceAccount: the default account is looked up this many times (the controller creates it).
DEFAULT_SERVICE_ACCOUNT_ATTEMPTS: Final = 10
DEFAULT_PREEMPTION_POLICY: Final = "PreemptLowerPriority"
DEFAULT_TOLERATION_SECONDS: Final = 300
NOT_READY_TAINT: Final = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT: Final = "node.kubernetes.io/unreachable"

SYSTEM_NODE_CRITICAL: Final = "system-node-critical"
SYSTEM_CLUSTER_CRITICAL: Final = "system-cluster-critical"


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


def token_volume_source() -> Obj:
    """``TokenVolumeSource``: the token, the cluster CA and the namespace, projected together."""
    return {"defaultMode": PROJECTED_DEFAULT_MODE, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"items": [{"key": "ca.crt", "path": "ca.crt"}], "name": ROOT_CA_CONFIG_MAP}},
        {"downwardAPI": {"items": [{"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"},
                                    "path": "namespace"}]}},
    ]}


def with_token_volume(pod: Obj) -> Obj:
    """``mountServiceAccountToken``: ``pod`` (not changed) with the ``kube-api-access-*`` volume
    and its read-only mount in every container and init container that has nothing mounted at
    the token path.  A pod that already has such a volume keeps it (its name is reused).

    Why a copy of only what changes: this runs on every pod create, after validation and
    managed fields (see :meth:`Admission.pod_service_account`); the containers are shallow
    copies with a new ``volumeMounts`` list, everything else is shared with ``pod``."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod
    volumes: list[Any] = spec["volumes"] if isinstance(spec.get("volumes"), list) else []
    name = ""
    names = set()
    for volume in volumes:
        if isinstance(volume, dict):
            names.add(volume.get("name"))
            if not name and str(volume.get("name") or "").startswith(TOKEN_VOLUME_PREFIX):
                name = volume["name"]
    has_volume = bool(name)
    while not name or (not has_volume and name in names):
        name = generate_name(TOKEN_VOLUME_PREFIX)
    mount = {"mountPath": TOKEN_MOUNT_PATH, "name": name, "readOnly": True}
    new_spec = dict(spec)
    needs_volume = False
    for key in ("initContainers", "containers"):
        containers = spec.get(key)
        if not isinstance(containers, list):
            continue
        changed = []
        for container in containers:
            if isinstance(container, dict):
                mounts: list[Any] = container["volumeMounts"] if isinstance(container.get("volumeMounts"), list) else []
                if not any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                    container = dict(container, volumeMounts=[*mounts, dict(mount)])
                    needs_volume = True
            changed.append(container)
        new_spec[key] = changed
    if not needs_volume:
        return pod
    if not has_volume:
        new_spec["volumes"] = [*volumes, {"name": name, "projected": token_volume_source()}]
    return dict(pod, spec=new_spec)


class Admission:
    """Mutating and validating admission for creates, updates and deletes.

    ``service_accounts``: the ServiceAccount plugin's checks and token volume (the control
    plane turns them on when it runs the ServiceAccount controller; a bare API service, as the
    unit tests use, has no controller to create ``default`` accounts)."""

    def __init__(self, store: Store, *, service_accounts: bool = False) -> None:
        self.store = store
        self.service_accounts = service_accounts

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

    def create_inputs(self, rt: ResourceType) -> tuple[int, ...] | None:
        """What a create of ``rt`` took from the cluster's state in :meth:`admit_create` and
        :meth:`pod_service_account` (PriorityClasses: a pod's priority; ServiceAccounts: its
        image pull secrets), as the store's write counts of those resources: while they are the
        same, so is what the plugins derived (registry/templates.py).  None: not counted."""
        if rt.key != "pods":
            return ()
        classes = self.store.writes(PRIORITY_CLASSES)
        if classes is None:
            return None
        if not self.service_accounts:
            return (classes,)
        accounts = self.store.writes("serviceaccounts")
        return None if accounts is None else (classes, accounts)

    # -- plugins -------------------------------------------------------------------------------

    async def pod_service_account(self, rt: ResourceType, pod: Obj) -> Obj | None:
        """The ServiceAccount plugin's look-up (``getServiceAccount``): the account a new pod
        names, or a 403 when it does not exist.  ``default`` is looked up again for up to about
        a second and a half (upstream: 10 attempts 100-200 ms apart), as the ServiceAccount
        controller creates it just after its namespace.  None when the pod gets no token
        volume (mirror pods, ``automountServiceAccountToken: false`` on the pod or the account,
        or the plugin off); the caller adds it with :func:`with_token_volume` once the pod is
        validated and its managed fields recorded — upstream's field manager records them
        before mutating admission, so the token volume is no manager's field — and the volume
        is valid by construction."""
        if not self.service_accounts or rt.key != "pods":
            return None
        spec = pod.get("spec")
        md = pod.get("metadata") or {}
        if not isinstance(spec, dict) or "kubernetes.io/config.mirror" in (md.get("annotations") or {}):
            return None
        namespace = md.get("namespace") or ""
        name = spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
        sa = self.store.get("serviceaccounts", namespace, name)
        attempts = DEFAULT_SERVICE_ACCOUNT_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT else 1
        for _ in range(1, attempts):
            if sa is not None:
                break
            await asyncio.sleep(random.uniform(0.1, 0.2))
            sa = self.store.get("serviceaccounts", namespace, name)
        if sa is None:
            raise forbidden(rt, pod, "", f'error looking up service account {namespace}/{name}: '
                                         f'serviceaccount "{name}" not found')
        if len(spec.get("imagePullSecrets") or ()) == 0 and sa.get("imagePullSecrets"):
            spec["imagePullSecrets"] = [dict(s) for s in sa["imagePullSecrets"] if isinstance(s, dict)]
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = sa.get("automountServiceAccountToken")
        return None if automount is False else sa

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
