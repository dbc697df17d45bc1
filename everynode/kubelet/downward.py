"""The Downward API for simulated containers: the environment a container would see.

There is no process, so "the container's environment" must be put where a user can read it.
Choice: when a container starts, the simulated kubelet resolves every container's ``env`` and
records the result on the pod as the annotation ``everynode.io/resolved-env`` — JSON
``{"<container>": {"NAME": "value", ...}, ...}`` — readable with ``kubectl get pod -o yaml``;
:func:`resolve_environment` is the same computation for Python callers
(``KubeletSimulator.environment(pod)``).

Upstream rules (``pkg/kubelet/kubelet_pods.go`` ``makeEnvironmentVariables``,
``podFieldSelectorRuntimeValue``):
* ``value`` is expanded: ``$(VAR)`` refers to a variable defined earlier in the same list,
  ``$$`` is a literal ``$``, an undefined reference stays as written;
* ``valueFrom.fieldRef`` supports ``metadata.name``, ``metadata.namespace``, ``metadata.uid``,
  ``metadata.labels['k']``, ``metadata.annotations['k']``, ``spec.nodeName``,
  ``spec.serviceAccountName``, ``status.hostIP``, ``status.hostIPs``, ``status.podIP``,
  ``status.podIPs``;
* ``resourceFieldRef`` (limits/requests of cpu, memory) is resolved with divisor 1 → cpu
  rounded up to whole cores, memory in bytes; a missing limit falls back to the node's
  allocatable, as upstream;
* ``configMapKeyRef`` and ``envFrom.configMapRef`` are resolved from the ConfigMap as the kubelet
  sees it when the container starts (``envFrom`` first, keys in sorted order with their
  ``prefix``, names that are not valid variable names skipped, later definitions winning);
* ``secretKeyRef`` and ``envFrom.secretRef`` are deliberately left out: the resolved environment
  is written to a pod annotation and shown by ``kubectl logs``, both readable with rights on pods
  only, and a Secret's value must not leak to those who may not read the Secret.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, Final

from everynode.api.quantity import int_value, milli_value

Obj = dict[str, Any]

RESOLVED_ENV_ANNOTATION: Final = "everynode.io/resolved-env"
# lookup(kind, namespace, name) -> the object or None (kind "configmap"; see mounts.py)
Lookup = Callable[[str, str, str], Obj | None]
_ENV_NAME: Final = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")

_SUBSCRIPT: Final = re.compile(r"^metadata\.(labels|annotations)\['(.*)'\]$")
_REF: Final = re.compile(r"\$\$|\$\(([^)]*)\)")


def field_value(pod: Obj, path: str) -> str | None:
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    m = _SUBSCRIPT.match(path)
    if m:
        return (md.get(m.group(1)) or {}).get(m.group(2), "")
    if path == "metadata.name":
        return md.get("name") or ""
    if path == "metadata.namespace":
        return md.get("namespace") or ""
    if path == "metadata.uid":
        return md.get("uid") or ""
    if path == "metadata.labels":
        return "\n".join(f'{k}="{v}"' for k, v in sorted((md.get("labels") or {}).items()))
    if path == "metadata.annotations":
        return "\n".join(f'{k}="{v}"' for k, v in sorted((md.get("annotations") or {}).items()))
    if path == "spec.nodeName":
        return spec.get("nodeName") or ""
    if path == "spec.serviceAccountName":
        return spec.get("serviceAccountName") or ""
    if path == "status.hostIP":
        return status.get("hostIP") or ""
    if path == "status.hostIPs":
        return ",".join(x.get("ip", "") for x in status.get("hostIPs") or ())
    if path == "status.podIP":
        return status.get("podIP") or ""
    if path == "status.podIPs":
        return ",".join(x.get("ip", "") for x in status.get("podIPs") or ())
    return None


def _expand(text: str, env: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name = m.group(1)
        return env[name] if name in env else m.group(0)

    return _REF.sub(sub, text)


def _resource_value(container: Obj, ref: Obj, allocatable: Obj) -> str | None:
    resource = ref.get("resource") or ""
    kind, _, name = resource.partition(".")
    res = container.get("resources") or {}
    value = (res.get(kind) or {}).get(name)
    if value is None and kind == "limits":
        value = allocatable.get(name)
    if value is None:
        return "0"
    divisor = ref.get("divisor") or "1"
    try:
        if name == "cpu":
            amount, div = milli_value(str(value)), milli_value(str(divisor)) or 1000
        else:
            amount, div = int_value(str(value)), int_value(str(divisor)) or 1
    except (ValueError, ArithmeticError):
        return None
    return str(-(-amount // div))


def _configmap_data(pod: Obj, name: str, lookup: Lookup | None) -> dict[str, str] | None:
    if lookup is None:
        return None
    obj = lookup("configmap", (pod.get("metadata") or {}).get("namespace") or "", name)
    return None if obj is None else dict(obj.get("data") or {})


def resolve_container_env(pod: Obj, container: Obj, *, allocatable: Obj | None = None,
                          lookup: Lookup | None = None) -> dict[str, str]:
    env: dict[str, str] = {}
    for source in container.get("envFrom") or ():
        ref = source.get("configMapRef")
        data = _configmap_data(pod, (ref or {}).get("name") or "", lookup) if ref is not None else None
        for key in sorted(data or ()):
            name = f"{source.get('prefix') or ''}{key}"
            if _ENV_NAME.match(name):
                env[name] = (data or {})[key]
    for var in container.get("env") or ():
        name = var.get("name")
        if not name:
            continue
        src = var.get("valueFrom")
        if src is None:
            env[name] = _expand(var.get("value") or "", env)
            continue
        if "fieldRef" in src:
            v = field_value(pod, (src.get("fieldRef") or {}).get("fieldPath") or "")
        elif "resourceFieldRef" in src:
            v = _resource_value(container, src.get("resourceFieldRef") or {}, allocatable or {})
        elif "configMapKeyRef" in src:
            ref = src.get("configMapKeyRef") or {}
            v = (_configmap_data(pod, ref.get("name") or "", lookup) or {}).get(ref.get("key") or "")
        else:
            v = None
        if v is not None:
            env[name] = v
    return env


def resolve_environment(pod: Obj, *, allocatable: Obj | None = None,
                        lookup: Lookup | None = None) -> dict[str, dict[str, str]]:
    """``{container name: {VAR: value}}`` for init and app containers that define ``env``."""
    spec = pod.get("spec") or {}
    out: dict[str, dict[str, str]] = {}
    for group in ("initContainers", "containers"):
        for c in spec.get(group) or ():
            if c.get("env") or c.get("envFrom"):
                out[c.get("name") or ""] = resolve_container_env(pod, c, allocatable=allocatable, lookup=lookup)
    return out


def has_env(pod: Obj) -> bool:
    spec = pod.get("spec") or {}
    return any(c.get("env") or c.get("envFrom") for group in ("initContainers", "containers")
               for c in spec.get(group) or ())
