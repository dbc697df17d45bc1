"""Does a pod get what it mounts and what its environment refers to?  (Pure: lookups are passed in.)

A kubelet starts a pod's sandbox only once every volume is set up
(``pkg/kubelet/volumemanager``: ``WaitForAttachAndMount``), and a container only once its
environment can be made (``pkg/kubelet/kubelet_pods.go``: ``makeEnvironmentVariables``).  A
simulated node has no files to write, but the *references* are as real as on any cluster: a
ConfigMap that was never applied keeps the pod in ``ContainerCreating`` with ``FailedMount``
events, a missing key in an ``env`` reference makes ``CreateContainerConfigError``.  This module
says, for one pod, what fails and with upstream's words, and which objects it waits for (so the
caller can wake the pod when one of them appears instead of polling).

Volume sources checked (generic over the source kinds that name API objects):
``configMap``, ``secret`` and ``projected`` (its ``configMap``, ``secret`` and
``serviceAccountToken`` sources — the token needs the pod's ServiceAccount, which is what
``kube-api-access-*`` volumes carry).  ``optional: true`` makes a missing object or key no error,
as upstream.  Other sources (``emptyDir``, ``hostPath``, ``downwardAPI``, CSI, PVCs) mount.

Messages, as the kubelet words them:
* volume: ``MountVolume.SetUp failed for volume "<v>" : configmap "<x>" not found`` (``secret``;
  ``configmap references non-existent config key: <k>`` / ``references non-existent secret key:
  <k>`` for a missing ``items`` key; a projected volume joins several errors as ``[e1, e2]``
  (``utilerrors.NewAggregate``); a token: ``failed to fetch token: serviceaccounts "<sa>" not
  found``);
* env: ``configmap "<x>" not found``, ``couldn't find key <k> in ConfigMap <ns>/<x>`` (and the
  Secret forms), checked for ``envFrom`` first, then ``env``, as ``makeEnvironmentVariables``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, NamedTuple

Obj = dict[str, Any]

FAILED_MOUNT: Final = "FailedMount"  # the reason of the kubelet's Event about a volume or token it cannot mount yet
CONFIGMAP: Final = "configmap"
SECRET: Final = "secret"
SERVICEACCOUNT: Final = "serviceaccount"

# lookup(kind, namespace, name) -> the object, or None when it does not exist.
Lookup = Callable[[str, str, str], Obj | None]
Ref = tuple[str, str]  # (kind, name) in the pod's namespace


class Failure(NamedTuple):
    """What stops the pod: the message, and the objects whose appearance may end it."""

    message: str
    waits_for: tuple[Ref, ...]


def _keys(obj: Obj) -> set[str]:
    return set(obj.get("data") or ()) | set(obj.get("binaryData") or ()) | set(obj.get("stringData") or ())


def _source_error(kind: str, source: Obj, namespace: str, lookup: Lookup) -> str | None:
    name = source.get("name") or source.get("secretName") or ""
    optional = bool(source.get("optional"))
    obj = lookup(kind, namespace, name)
    if obj is None:
        return None if optional else f'{kind} "{name}" not found'
    keys = _keys(obj)
    for item in source.get("items") or ():
        key = item.get("key") or ""
        if key not in keys and not optional:
            return (f"configmap references non-existent config key: {key}" if kind == CONFIGMAP
                    else f"references non-existent secret key: {key}")
    return None


def service_account(pod: Obj) -> str:
    spec = pod.get("spec") or {}
    return spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"


def _volume_error(pod: Obj, volume: Obj, lookup: Lookup) -> Failure | None:
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    if "configMap" in volume:
        src = volume.get("configMap") or {}
        err = _source_error(CONFIGMAP, src, namespace, lookup)
        return Failure(err, ((CONFIGMAP, src.get("name") or ""),)) if err else None
    if "secret" in volume:
        src = volume.get("secret") or {}
        err = _source_error(SECRET, src, namespace, lookup)
        return Failure(err, ((SECRET, src.get("secretName") or ""),)) if err else None
    if "projected" in volume:
        errs: list[str] = []
        waits: list[Ref] = []
        for source in (volume.get("projected") or {}).get("sources") or ():
            if "configMap" in source:
                src = source.get("configMap") or {}
                if err := _source_error(CONFIGMAP, src, namespace, lookup):
                    errs.append(err)
                    waits.append((CONFIGMAP, src.get("name") or ""))
            elif "secret" in source:
                src = source.get("secret") or {}
                if err := _source_error(SECRET, src, namespace, lookup):
                    errs.append(err)
                    waits.append((SECRET, src.get("name") or ""))
            elif "serviceAccountToken" in source:
                sa = service_account(pod)
                if lookup(SERVICEACCOUNT, namespace, sa) is None:
                    errs.append(f'failed to fetch token: serviceaccounts "{sa}" not found')
                    waits.append((SERVICEACCOUNT, sa))
        if errs:
            return Failure(errs[0] if len(errs) == 1 else f"[{', '.join(errs)}]", tuple(waits))
    return None


def mount_failure(pod: Obj, lookup: Lookup) -> tuple[str, Failure] | None:
    """The first volume of ``pod`` that cannot be set up: (volume name, failure), else None."""
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        failure = _volume_error(pod, volume, lookup)
        if failure is not None:
            return volume.get("name") or "", failure
    return None


def mount_message(volume: str, failure: Failure) -> str:
    """The ``FailedMount`` event's message."""
    return f'MountVolume.SetUp failed for volume "{volume}" : {failure.message}'


def _titled(kind: str) -> str:
    return "ConfigMap" if kind == CONFIGMAP else "Secret"


def env_failure(pod: Obj, container: Obj, lookup: Lookup) -> Failure | None:
    """Why the environment of ``container`` cannot be made, or None (``CreateContainerConfigError``)."""
    namespace = (pod.get("metadata") or {}).get("namespace") or ""
    for source in container.get("envFrom") or ():
        for field, kind in (("configMapRef", CONFIGMAP), ("secretRef", SECRET)):
            ref = source.get(field)
            if ref is None:
                continue
            name = ref.get("name") or ""
            if lookup(kind, namespace, name) is None and not ref.get("optional"):
                return Failure(f'{kind} "{name}" not found', ((kind, name),))
    for var in container.get("env") or ():
        value_from = var.get("valueFrom") or {}
        for field, kind in (("configMapKeyRef", CONFIGMAP), ("secretKeyRef", SECRET)):
            ref = value_from.get(field)
            if ref is None:
                continue
            name, key, optional = ref.get("name") or "", ref.get("key") or "", bool(ref.get("optional"))
            obj = lookup(kind, namespace, name)
            if obj is None:
                if not optional:
                    return Failure(f'{kind} "{name}" not found', ((kind, name),))
            elif key not in _keys(obj) and not optional:
                return Failure(f"couldn't find key {key} in {_titled(kind)} {namespace}/{name}", ((kind, name),))
    return None


def refers_to_objects(pod: Obj) -> bool:
    """Whether the pod names any ConfigMap, Secret or token source at all (most pods do not: for
    them no lookup is made)."""
    spec = pod.get("spec") or {}
    for volume in spec.get("volumes") or ():
        if "configMap" in volume or "secret" in volume or "projected" in volume:
            return True
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or ():
            if c.get("envFrom"):
                return True
            for var in c.get("env") or ():
                vf = var.get("valueFrom")
                if vf and ("configMapKeyRef" in vf or "secretKeyRef" in vf):
                    return True
    return False
