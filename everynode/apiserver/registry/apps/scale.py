"""The ``scale`` subresource of Deployments and ReplicaSets: an ``autoscaling/v1`` Scale.

Upstream: ``pkg/registry/apps/{deployment,replicaset}/storage/storage.go`` (``ScaleREST``,
``scaleFromDeployment``, ``scaleUpdatedObjectInfo``).  A Scale is a view, never stored: GET
builds it from the parent (name, namespace, uid, resourceVersion, creationTimestamp;
``spec.replicas``; ``status.replicas`` and the selector as a string); PUT and PATCH work on that
view, validate it (``ValidateScale``: 422 naming ``Scale.autoscaling``), then write the parent's
``spec.replicas`` through the parent's own update path — so admission, the strategy (the
generation bump) and the optimistic concurrency on the Scale's resourceVersion are the parent's.

Why a storage subclass: the generic store serves only ``status`` as a readable subresource; the
scale view is the one other subresource with GET, PUT and PATCH, and it belongs to these kinds.
``kubectl scale`` sends a merge patch ``{"spec":{"replicas":N}}`` (or, with
``--resource-version`` / ``--current-replicas``, a GET then a PUT).
"""

from __future__ import annotations

from typing import Any

from everynode.api import errors
from everynode.api.meta import deep_copy
from everynode.api.validation.workloads import validate_scale
from everynode.apiserver.patch import apply_json_patch, apply_merge_patch, apply_strategic_merge_patch
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.options import PATCH_TYPES, RequestOptions, check_patch_options
from everynode.apiserver.tables import format_selector

Obj = dict[str, Any]

SCALE = "scale"
SCALE_API_VERSION = "autoscaling/v1"
_META_KEPT = ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")


def scale_of(obj: Obj) -> Obj:
    """``scaleFromDeployment`` / ``scaleFromReplicaSet``: the Scale view of a stored parent."""
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    replicas = int(spec.get("replicas") or 0)
    selector = spec.get("selector")
    status: Obj = {"replicas": int((obj.get("status") or {}).get("replicas") or 0)}
    text = format_selector(selector) if selector is not None else ""
    if text and text != "<none>":
        status["selector"] = text
    return {
        "kind": "Scale",
        "apiVersion": SCALE_API_VERSION,
        "metadata": {k: md[k] for k in _META_KEPT if md.get(k) is not None},
        "spec": {"replicas": replicas} if replicas else {},  # omitempty
        "status": status,
    }


class ScalableStore(ResourceStore):
    """A workload storage that also serves ``<plural>/scale``."""

    async def get(self, namespace: str, name: str, *, subresource: str | None = None) -> Obj:
        if subresource == SCALE:
            return scale_of(await super().get(namespace, name))
        return await super().get(namespace, name, subresource=subresource)

    async def update(self, namespace: str, name: str, body: Obj, *, subresource: str | None = None,
                     opts: RequestOptions) -> tuple[Obj, bool]:
        if subresource != SCALE:
            return await super().update(namespace, name, body, subresource=subresource, opts=opts)
        await self.ctx.ready()
        self.check_subresource(subresource, "update")
        if not isinstance(body, dict):
            raise errors.bad_request("the object provided is unrecognized (must be of type Scale)")
        kind, api_version = body.get("kind"), body.get("apiVersion")
        if kind and kind != "Scale":
            raise errors.bad_request(f'{kind} in version "{(api_version or "v1").rpartition("/")[2]}" cannot be '
                                     f"handled as a Scale: no kind \"{kind}\" is registered for version "
                                     f"\"{api_version}\"")
        body_name = (body.get("metadata") or {}).get("name") or ""
        if body_name != name:
            raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on the "
                                     f"URL ({name})")
        return await self._write_scale(namespace, name, body, opts), False

    async def patch(self, namespace: str, name: str, patch: Any, patch_type: str, *,
                    subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        if subresource != SCALE:
            return await super().patch(namespace, name, patch, patch_type, subresource=subresource, opts=opts)
        await self.ctx.ready()
        if patch_type not in PATCH_TYPES or patch_type == "apply":
            raise errors.unsupported_media_type(patch_type)
        self.check_subresource(subresource, "patch")
        check_patch_options(patch_type, opts)
        current = scale_of(await super().get(namespace, name))
        if patch_type == "json":
            patched = apply_json_patch(current, patch)
        elif patch_type == "merge":
            patched = apply_merge_patch(current, patch)
        else:
            patched = apply_strategic_merge_patch(current, patch, api_version=SCALE_API_VERSION, kind="Scale")
        return await self._write_scale(namespace, name, patched, opts), False

    async def _write_scale(self, namespace: str, name: str, scale: Obj, opts: RequestOptions) -> Obj:
        rt = self.rt
        ns = namespace if rt.namespaced else ""
        old = self.ctx.store.get(rt.key, ns, name)
        if old is None:
            raise errors.not_found(rt.plural, rt.group, name)
        md: Obj = scale["metadata"] if isinstance(scale.get("metadata"), dict) else {}
        checked = {**scale, "metadata": {**md, "namespace": md.get("namespace") or ns}}
        errs = validate_scale(checked)
        if errs:
            raise errors.invalid("Scale", "autoscaling", name, errs)
        replicas = (scale.get("spec") or {}).get("replicas") or 0
        new = deep_copy(old)
        new["spec"]["replicas"] = int(replicas)
        rv = md.get("resourceVersion")
        if rv:
            new["metadata"]["resourceVersion"] = rv
        stored = await self.update_existing(new, old, None, opts)
        return scale_of(stored)
