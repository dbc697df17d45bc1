"""The ConfigMaps, Secrets and ServiceAccounts pods refer to, and the pods waiting for one.

Why watch-driven: a pod that mounts a ConfigMap nobody applied yet must start the moment it is
applied, and there may be thousands of such pods (a DaemonSet whose ConfigMap comes second in a
manifest).  Polling each pod's references would cost O(waiting pods) lookups per period.  Instead
the kubelet keeps one shared informer per kind (the kubelet's own ``configMapAndSecretChangeDetectionStrategy``
is ``Watch`` by default) and an index ``(kind, namespace, name) → waiting pods``: an object that
is added or changed wakes exactly the pods waiting for it, in O(those pods).  The waiting pods
also keep upstream's retry timer (the volume reconciler's exponential back-off), which is what
repeats their ``FailedMount`` events; the watch only makes the start prompt.

Deleting an object a running pod mounted changes nothing for that pod, as upstream (files stay).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from everynode.client.informer import Informer
from everynode.client.kit import ControllerKit
from everynode.kubelet.mounts import CONFIGMAP, SECRET, SERVICEACCOUNT, Ref

Obj = dict[str, Any]

RESOURCES = {CONFIGMAP: "configmaps", SECRET: "secrets", SERVICEACCOUNT: "serviceaccounts"}

Key = tuple[str, str, str]  # (kind, namespace, name)


class ReferencedObjects:
    """``wake(pod_key)`` is called for every pod waiting on an object that appears or changes."""

    def __init__(self, *, wake: Callable[[str], None]) -> None:
        self._wake = wake
        self._informers: dict[str, Informer] = {}
        self._waiting: dict[Key, set[str]] = {}
        self._waits_of: dict[str, tuple[Key, ...]] = {}

    def start(self, kit: ControllerKit) -> None:
        """The informers and their handlers, through ``kit`` (which starts the factory)."""
        for kind, resource in RESOURCES.items():
            inf = self._informers[kind] = kit.informer(resource)

            def changed(obj: Obj, _kind: str = kind) -> None:
                self._changed(_kind, obj)

            def updated(old: Obj, new: Obj, _kind: str = kind) -> None:
                self._changed(_kind, new)

            kit.watch(inf, on_add=changed, on_update=updated)

    @property
    def synced(self) -> bool:
        return all(inf.has_synced for inf in self._informers.values())

    def lookup(self, kind: str, namespace: str, name: str) -> Obj | None:
        inf = self._informers.get(kind)
        return inf.get_by_name(namespace, name) if inf is not None else None

    def wait(self, pod_key: str, namespace: str, refs: tuple[Ref, ...]) -> None:
        """``pod_key`` waits for these objects (replacing what it waited for before)."""
        self.forget(pod_key)
        keys = tuple((kind, namespace, name) for kind, name in refs)
        self._waits_of[pod_key] = keys
        for key in keys:
            self._waiting.setdefault(key, set()).add(pod_key)

    def forget(self, pod_key: str) -> None:
        for key in self._waits_of.pop(pod_key, ()):
            pods = self._waiting.get(key)
            if pods is not None:
                pods.discard(pod_key)
                if not pods:
                    del self._waiting[key]

    @property
    def waiting(self) -> int:
        """How many pods wait for an object (diagnostics)."""
        return len(self._waits_of)

    def _changed(self, kind: str, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        pods = self._waiting.get((kind, md.get("namespace") or "", md.get("name") or ""))
        if pods:
            for pod_key in list(pods):
                self.forget(pod_key)
                self._wake(pod_key)
