"""Custom resources: the storage of one served version of an Established CRD —
``pkg/apiserver/customresource_handler.go`` (the per-version serving info), ``pkg/registry/
customresource`` (strategy, status and scale storage) and ``pkg/apiserver/conversion`` (the
``None`` converter).

Why the generic store with a strategy, not a storage of its own: a custom resource has every
verb of a built-in (CRUD, watch, selectors, merge/JSON patch, server-side apply, finalizers,
GC); what differs is only where the rules come from — the CRD's schema instead of Go types.
The schema compiles to the decoder's node tree (so decoding prunes unknown fields and reports
them per ``fieldValidation``, ``api/apiextensions/structural.py``), defaulting is the resource's
defaulter, validation and the spec/status split are the :class:`CustomResourceStrategy`, and
the rest is the generic path.  What is special is three things, each overridden here:

* **versions**: every served version has its own storage (its own :class:`ResourceType`), all
  over the same stored objects kept in the storage version; :class:`VersionedStore` is the
  storage view of one version — objects are written with the storage version's apiVersion and
  read back with the requested one (conversion ``None`` rewrites apiVersion only, as upstream's
  ``nopConverter``), and defaults are applied on read, as upstream defaults objects read from
  etcd.  Reading in the storage version of objects that need no defaults is a pass-through.
* **scale**: ``/scale`` reads and writes an ``autoscaling/v1`` Scale mapped onto the object
  through ``specReplicasPath``/``statusReplicasPath``/``labelSelectorPath``.
* **strategic merge patch** is refused with upstream's 415: a custom resource has no Go struct
  tags to merge by.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from everynode.api import errors
from everynode.api import field_errors as fielderr
from everynode.api import meta as apimeta
from everynode.api.apiextensions import jsonpath
from everynode.api.apiextensions.structural import apply_defaults, validate_value
from everynode.api.names import name_is_dns_subdomain
from everynode.api.registry import ResourceType
from everynode.api.validation.meta import validate_object_meta, validate_object_meta_update
from everynode.apiserver.patch import apply_json_patch, apply_merge_patch
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.options import RequestOptions
from everynode.apiserver.registry.strategy import (
    Strategy,
    SubresourceStrategy,
    reset_object_meta_for_status,
)
from everynode.storage.base import ListResult, Predicate, Store, Watch, WatchEvent

Obj = dict[str, Any]

STRATEGIC_REFUSED = ("the body of the request was in an unknown format - accepted media types include: "
                     "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml")
_SYSTEM_TOP = ("apiVersion", "kind", "metadata")


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    type: str
    json_path: str
    format: str = ""
    description: str = ""
    priority: int = 0


@dataclass(slots=True)
class ServedVersion:
    """What serving one version of a CRD needs, read once from the CRD when it is (re)registered."""

    rt: ResourceType
    storage_api_version: str
    schema: Obj | None
    status: bool
    scale: Obj | None
    columns: tuple[Column, ...]
    schemas: dict[str, Obj | None] = field(default_factory=dict)  # apiVersion → schema, every served version
    terminating: Callable[[], bool] = lambda: False

    @property
    def has_defaults(self) -> bool:
        return any(_has_default(s) for s in self.schemas.values())


def _has_default(schema: Any) -> bool:
    if isinstance(schema, dict):
        return "default" in schema or any(_has_default(v) for k, v in schema.items() if k != "default")
    if isinstance(schema, list):
        return any(_has_default(v) for v in schema)
    return False


# --------------------------------------------------------------------------- the storage view

class VersionedStore(Store):
    """``ctx.store`` as one version of a custom resource sees it (see the module docstring)."""

    def __init__(self, inner: Store, served: ServedVersion) -> None:
        self.inner = inner
        self.served = served
        self._defaults = served.has_defaults

    def _out(self, obj: Obj) -> Obj:
        want = self.served.rt.api_version
        if obj.get("apiVersion") == want and not self._defaults:
            return obj
        out = apimeta.deep_copy(obj) if self._defaults else dict(obj)
        out["apiVersion"] = want
        if self._defaults:
            apply_defaults(out, self.served.schema)
        return out

    def _in(self, obj: Obj) -> Obj:
        if obj.get("apiVersion") == self.served.storage_api_version:
            return obj
        return dict(obj, apiVersion=self.served.storage_api_version)

    def current_rv(self) -> int:
        return self.inner.current_rv()

    async def create(self, resource: str, obj: Obj) -> Obj:
        return self._out(await self.inner.create(resource, self._in(obj)))

    async def update(self, resource: str, obj: Obj, *, expected_rv: int | None = None) -> Obj:
        return self._out(await self.inner.update(resource, self._in(obj), expected_rv=expected_rv))

    async def delete(self, resource: str, namespace: str, name: str, *,
                     expected_rv: int | None = None, expected_uid: str | None = None) -> Obj:
        deleted = await self.inner.delete(resource, namespace, name, expected_rv=expected_rv, expected_uid=expected_uid)
        return self._out(deleted)

    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        obj = self.inner.get(resource, namespace, name)
        return None if obj is None else self._out(obj)

    def list(self, resource: str, *, namespace: str | None = None, predicate: Predicate | None = None,
             limit: int | None = None, continue_token: str | None = None) -> ListResult:
        result = self.inner.list(resource, namespace=namespace, predicate=predicate, limit=limit,
                                 continue_token=continue_token)
        return replace(result, items=[self._out(o) for o in result.items])

    def count(self, resource: str) -> int:
        return self.inner.count(resource)

    def watch(self, resource: str, *, namespace: str | None = None, predicate: Predicate | None = None,
              since_rv: int | None = None) -> Watch:
        return _ConvertingWatch(self.inner.watch(resource, namespace=namespace, predicate=predicate,
                                                 since_rv=since_rv), self)

    async def close(self) -> None:
        return None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _ConvertingWatch(Watch):
    def __init__(self, inner: Watch, view: VersionedStore) -> None:
        self.inner = inner
        self.view = view

    async def _events(self) -> AsyncIterator[WatchEvent]:
        view = self.view
        async for event in self.inner:
            converted = view._out(event.object) if event.type != "ERROR" else event.object
            if converted is event.object:
                yield event
            else:
                prev = None if event.prev is None else view._out(event.prev)
                yield WatchEvent(event.type, converted, event.rv, event.resource, prev)

    def __aiter__(self) -> AsyncIterator[WatchEvent]:
        return self._events()

    def stop(self) -> None:
        self.inner.stop()


# --------------------------------------------------------------------------- strategy

def _content(obj: Obj, *, without_status: bool) -> Obj:
    skip = (*_SYSTEM_TOP, "status") if without_status else _SYSTEM_TOP
    return {k: v for k, v in obj.items() if k not in skip}


class CustomResourceStrategy(Strategy):
    """``customresource.customResourceStrategy``: generation, the status split, validation."""

    def __init__(self, served: ServedVersion) -> None:
        subresources: dict[str, SubresourceStrategy] = {}
        if served.status:
            subresources["status"] = CustomResourceStatusStrategy(served)
        super().__init__(keeps_status=served.status, subresources=subresources)
        self.served = served

    def prepare_for_create(self, obj: Obj) -> None:
        if self.served.status:
            obj.pop("status", None)
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)  # keeps the stored status when the subresource is on
        without_status = self.served.status
        if _content(new, without_status=without_status) != _content(old, without_status=without_status):
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1

    def validate_create(self, rt: ResourceType, obj: Obj) -> list[fielderr.FieldError]:
        errs = validate_object_meta(obj.get("metadata"), namespaced=rt.namespaced, name_fn=name_is_dns_subdomain)
        return errs + self._schema_errors(obj)

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[fielderr.FieldError]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        return errs + self._schema_errors(new)

    def _schema_errors(self, obj: Obj) -> list[fielderr.FieldError]:
        errs = validate_value(obj, self.served.schema, "")
        errs += scale_errors(self.served, obj)
        return errs


def scale_errors(served: ServedVersion, obj: Obj) -> list[fielderr.FieldError]:
    """``validateScaleSpec``/``validateScaleStatus``: the replica paths hold int32s."""
    scale = served.scale
    if not scale:
        return []
    errs: list[fielderr.FieldError] = []
    for key in ("specReplicasPath", "statusReplicasPath"):
        path = scale.get(key) or ""
        found = jsonpath.find(obj, path)
        if found and type(found[0]) is int and not 0 <= found[0] < 2**31:  # other types: the schema's error
            errs.append(fielderr.invalid(path.lstrip("."), found[0], "should be a non-negative integer"))
    return errs


class CustomResourceStatusStrategy(SubresourceStrategy):
    """``customresource.statusStrategy``: only ``status`` (and nothing of metadata a status
    write may not touch) changes; everything else is the stored object's."""

    restored = ()

    def __init__(self, served: ServedVersion) -> None:
        self.served = served

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        for key in [k for k in new if k not in _SYSTEM_TOP and k != "status"]:
            del new[key]
        for key, value in old.items():
            if key not in _SYSTEM_TOP and key != "status":
                new[key] = value
        reset_object_meta_for_status(new["metadata"], old["metadata"])

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[fielderr.FieldError]:
        errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
        status_schema = ((self.served.schema or {}).get("properties") or {}).get("status")
        if "status" in new:
            errs += validate_value(new["status"], status_schema, "status")
        return errs + scale_errors(self.served, new)


# --------------------------------------------------------------------------- the store

class CustomResourceStore(ResourceStore):
    """One served version of a custom resource (see the module docstring)."""

    def __init__(self, served: ServedVersion, ctx: ServerContext) -> None:
        view_ctx = ServerContext(store=VersionedStore(ctx.store, served), clock=ctx.clock, admission=ctx.admission,
                                 bookmark_interval=ctx.bookmark_interval, ready=ctx.ready)
        super().__init__(served.rt, view_ctx, CustomResourceStrategy(served))
        self.served = served

    async def create(self, namespace: str, body: Obj, *, opts: RequestOptions) -> Obj:
        if self.served.terminating():
            raise errors.ApiError(errors.status(
                405, "MethodNotAllowed", f'create is not supported on resources of kind "{self.rt.key}"',
                {"group": self.rt.group, "kind": self.rt.plural}))
        return await super().create(namespace, body, opts=opts)

    async def get(self, namespace: str, name: str, *, subresource: str | None = None) -> Obj:
        if subresource == "scale" and self.served.scale is not None:
            return self._scale_of(await super().get(namespace, name))
        return await super().get(namespace, name, subresource=subresource)

    async def update(self, namespace: str, name: str, body: Obj, *, subresource: str | None = None,
                     opts: RequestOptions) -> tuple[Obj, bool]:
        if subresource == "scale" and self.served.scale is not None:
            return await self._update_scale(namespace, name, body, opts), False
        return await super().update(namespace, name, body, subresource=subresource, opts=opts)

    async def patch(self, namespace: str, name: str, patch: Any, patch_type: str, *,
                    subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        if patch_type == "strategic":
            raise errors.ApiError(errors.status(415, "UnsupportedMediaType", STRATEGIC_REFUSED))
        if subresource == "scale" and self.served.scale is not None:
            current = self._scale_of(await super().get(namespace, name))
            if patch_type == "merge":
                patched = apply_merge_patch(current, patch)
            elif patch_type == "json":
                patched = apply_json_patch(current, patch)
            else:
                raise errors.ApiError(errors.status(415, "UnsupportedMediaType", STRATEGIC_REFUSED))
            return await self._update_scale(namespace, name, patched, opts, from_patch=True), False
        return await super().patch(namespace, name, patch, patch_type, subresource=subresource, opts=opts)

    # -- scale ------------------------------------------------------------------------------------

    def _scale_of(self, obj: Obj) -> Obj:
        scale = self.served.scale or {}
        md = obj["metadata"]
        spec_replicas = jsonpath.find(obj, scale.get("specReplicasPath") or "")
        status_replicas = jsonpath.find(obj, scale.get("statusReplicasPath") or "")
        status: Obj = {"replicas": status_replicas[0] if status_replicas and isinstance(status_replicas[0], int) else 0}
        selector_path = scale.get("labelSelectorPath")
        if selector_path:
            found = jsonpath.find(obj, selector_path)
            if found and isinstance(found[0], str):
                status["selector"] = found[0]
        scale_md = {k: md[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp") if k in md}
        return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": scale_md,
                "spec": {"replicas": spec_replicas[0] if spec_replicas and isinstance(spec_replicas[0], int) else 0},
                "status": status}

    async def _update_scale(self, namespace: str, name: str, body: Any, opts: RequestOptions, *,
                            from_patch: bool = False) -> Obj:
        rt = self.rt
        if not isinstance(body, dict) or (body.get("kind") not in (None, "Scale")):
            raise errors.bad_request("the object provided is unrecognized (must be of type Scale)")
        replicas = (body.get("spec") or {}).get("replicas") if isinstance(body.get("spec"), dict) else None
        if type(replicas) is not int or replicas < 0:
            err = fielderr.invalid("spec.replicas", replicas, "must be greater than or equal to 0")
            raise errors.invalid("Scale", "autoscaling", name, [err])
        old = self.ctx.store.get(rt.key, namespace if rt.namespaced else "", name)
        if old is None:
            raise errors.not_found(rt.plural, rt.group, name)
        wanted_rv = (body.get("metadata") or {}).get("resourceVersion") if not from_patch else None
        if wanted_rv and wanted_rv != old["metadata"].get("resourceVersion"):
            raise errors.stale(rt.plural, rt.group, name)
        new = apimeta.deep_copy(old)
        steps = jsonpath.field_path((self.served.scale or {}).get("specReplicasPath") or "") or []
        node = new
        for step in steps[:-1]:
            child = node.get(step)
            if not isinstance(child, dict):
                child = node[step] = {}
            node = child
        if steps:
            node[steps[-1]] = replicas
        stored = await self.update_existing(new, old, None, opts)
        return self._scale_of(stored)
