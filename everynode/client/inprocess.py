"""The in-process transport: controllers call the API service directly, with no HTTP and no JSON.

Why: inside ``everynode up`` and the Python API the controllers, scheduler and simulated kubelets
share a process with the API server; going through HTTP would spend most of the time encoding,
decoding and copying (python-stack.md §2).  Calling :class:`~everynode.apiserver.service.ApiService`
directly keeps exactly the API's semantics (admission, validation, CAS, watch filtering) — only
the transport disappears — so a controller behaves the same here and against a real cluster.

Ownership of objects: the service returns stored, shared, immutable objects and we pass them
through unchanged (callers must not mutate them; base.py).  Bodies *handed to* the service are
copied on the way in by default (``copy_inputs=True``): the caller keeps its dict and may reuse
or mutate it, while the service may keep what it was given as the stored object.  Updates and
creates are the exceptions: they are handed over uncopied and marked borrowed, and the store
copies what its pipeline changes (an update is mostly the stored object itself, whose
managedFields need no copy and whose other parts a status write need not copy either:
registry/copies.py ``borrowed_copy``; a pod made from a template is mostly the template, which a
create answered from it only reads: templates.py).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import yaml

from everynode.api import errors
from everynode.api.meta import deep_copy
from everynode.api.registry import ResourceType
from everynode.apiserver.registry.options import client_options
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.client.base import Client, Obj, delete_options, resolve_resource
from everynode.client.faults import FaultInjector
from everynode.client.inprocess_watch import watch_events
from everynode.compiled import mypyc_attr


def _ns(rt: ResourceType, namespace: str | None) -> str:
    return (namespace or "") if rt.namespaced else ""


def _parse_patch(patch: Any, patch_type: str) -> Any:
    """Bytes/str patches (as read from a file) are decoded like the HTTP layer would."""
    if isinstance(patch, bytes | bytearray | str):
        try:
            if patch_type == "apply":
                text = bytes(patch) if isinstance(patch, bytearray) else patch
                return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            return orjson.loads(patch)
        except (ValueError, yaml.YAMLError) as exc:
            raise errors.bad_request(f"error decoding patch: {exc}") from None
    return patch


@mypyc_attr(allow_interpreted_subclasses=True)  # tests derive recording clients from it
class InProcessClient(Client):
    def __init__(self, service: ApiService, *, user_agent: str = "everynode", user: str = "admin",
                 faults: FaultInjector | None = None, copy_inputs: bool = True, typed: bool = False) -> None:
        """``typed``: the caller's bodies are what a typed client sends (RequestOptions.typed):
        only plan's copy says so of its components, which upstream are Go binaries."""
        self.service = service
        self.user_agent = user_agent
        self.user = user
        self.faults = faults
        self.copy_inputs = copy_inputs
        self.typed = typed

    # -- helpers ---------------------------------------------------------------------------------

    def _opts(self, *, dry_run: bool = False, field_manager: str | None = None, force: bool = False) -> RequestOptions:
        return client_options(self.user, self.user_agent, self.typed, dry_run, field_manager, force)

    def _in(self, body: Any) -> Any:
        return deep_copy(body) if self.copy_inputs else body

    async def _write(self, verb: str, rt: ResourceType, name: str, call: Any) -> Any:
        """Run a write coroutine, injecting a fault if the injector says so."""
        fault = self.faults.decide(verb, rt) if self.faults is not None else None
        if fault is None:
            return await call
        kind, after = fault
        if after:
            await call
        else:
            call.close()  # never awaited: close the coroutine to avoid a warning
        raise FaultInjector.error(kind, rt, name)

    # -- reads -----------------------------------------------------------------------------------

    async def get(self, resource: str, name: str, *, namespace: str = "", subresource: str | None = None) -> Obj:
        rt = resolve_resource(resource)
        return await self.service.get(rt, _ns(rt, namespace), name, subresource=subresource)

    async def list(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, resource_version: str | None = None) -> Obj:
        rt = resolve_resource(resource)
        ns = (namespace or None) if rt.namespaced else None
        return await self.service.list(rt, ns, label_selector=label_selector, field_selector=field_selector,
                                       limit=limit, continue_token=continue_token,
                                       resource_version=resource_version)

    def watch(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None, resource_version: str | None = None,
              allow_bookmarks: bool = True, timeout_seconds: int | None = None,
              send_initial_events: bool | None = None) -> AsyncIterator[Obj]:
        rt = resolve_resource(resource)
        return watch_events(self.service, rt, (namespace or None) if rt.namespaced else None,
                            label_selector=label_selector, field_selector=field_selector,
                            resource_version=resource_version, allow_bookmarks=allow_bookmarks,
                            timeout_seconds=timeout_seconds, send_initial_events=send_initial_events)

    # -- writes ----------------------------------------------------------------------------------

    async def create(self, resource: str, obj: Obj, *, namespace: str | None = None, dry_run: bool = False,
                     field_manager: str | None = None, handed_over: bool = False, typed: bool = False) -> Obj:
        rt = resolve_resource(resource)
        md = obj.get("metadata") or {}
        ns = _ns(rt, namespace or md.get("namespace") or "default")
        opts = self._opts(dry_run=dry_run, field_manager=field_manager)
        if typed:
            opts.typed = True
        # handed over uncopied, like a status write (options.RequestOptions.borrowed): a pod made
        # from its controller's template is mostly the template, which the create reads only; a
        # body the caller hands over (an Event) is not even copied where the pipeline changes it
        opts.borrowed = self.copy_inputs and not handed_over
        return await self._write("create", rt, md.get("name") or "", self.service.create(rt, ns, obj, opts=opts))

    async def update(self, resource: str, obj: Obj, *, subresource: str | None = None, dry_run: bool = False,
                     field_manager: str | None = None) -> Obj:
        rt = resolve_resource(resource)
        md = obj.get("metadata") or {}
        name = md.get("name") or ""
        ns = _ns(rt, md.get("namespace") or "default")
        opts = self._opts(dry_run=dry_run, field_manager=field_manager)
        # The store copies what it changes (options.RequestOptions.borrowed): a status write
        # usually carries the stored object's metadata and spec, which need no copy, and any
        # update its managedFields (a lease renewal: copied, its entries cost a third of the write)
        opts.borrowed = self.copy_inputs
        result, _created = await self._write(
            "update", rt, name, self.service.update(rt, ns, name, obj, subresource=subresource, opts=opts))
        return result

    async def patch(self, resource: str, name: str, patch: Any, *, namespace: str = "", patch_type: str = "merge",
                    subresource: str | None = None, field_manager: str | None = None, force: bool | None = None,
                    dry_run: bool = False) -> Obj:
        rt = resolve_resource(resource)
        body = _parse_patch(patch, patch_type)
        if body is patch and patch_type != "strategic":  # (a strategic merge patch is only read: service.py)
            body = self._in(patch)
        opts = self._opts(dry_run=dry_run, field_manager=field_manager, force=bool(force))
        result, _created = await self._write(
            "patch", rt, name,
            self.service.patch(rt, _ns(rt, namespace), name, body, patch_type, subresource=subresource, opts=opts))
        return result

    async def delete(self, resource: str, name: str, *, namespace: str = "", grace_period_seconds: int | None = None,
                     propagation_policy: str | None = None, preconditions: dict[str, str] | None = None,
                     dry_run: bool = False) -> Obj:
        rt = resolve_resource(resource)
        options = delete_options(grace_period_seconds=grace_period_seconds, propagation_policy=propagation_policy,
                                 preconditions=preconditions, dry_run=dry_run)
        _code, body = await self._write(
            "delete", rt, name,
            self.service.delete(rt, _ns(rt, namespace), name, options=options, opts=self._opts(dry_run=dry_run)))
        return body

    async def delete_collection(self, resource: str, *, namespace: str | None = None,
                                label_selector: str | None = None, field_selector: str | None = None) -> Obj:
        rt = resolve_resource(resource)
        ns = (namespace or None) if rt.namespaced else None
        return await self._write(
            "delete_collection", rt, "",
            self.service.delete_collection(rt, ns, label_selector=label_selector, field_selector=field_selector,
                                           options=None, opts=self._opts()))

    async def create_subresource(self, resource: str, name: str, subresource: str, body: Obj, *,
                                 namespace: str = "") -> Obj:
        rt = resolve_resource(resource)
        _code, result = await self._write(
            "create_subresource", rt, name,
            self.service.create_subresource(rt, _ns(rt, namespace), name, subresource, self._in(body),
                                            opts=self._opts()))
        return result

