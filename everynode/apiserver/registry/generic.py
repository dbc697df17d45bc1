"""The generic REST storage of one resource: get, list, create, update, patch (every type and
server-side apply), delete (graceful, finalizers, GC), delete-collection and watch — upstream's
``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`` with the order of the
``endpoints/handlers``.

A :class:`ResourceStore` is built per resource with that resource's :class:`Strategy`; every rule
that belongs to one kind is a strategy hook (``registry/strategy.py`` lists them and where the
store calls them).  A resource whose storage does more than the generic path overrides one method
in a subclass, as upstream wraps its store: namespaces override :meth:`ResourceStore._delete`
(``registry/core/namespace.py``), pods add the ``binding`` and ``eviction`` subresources through
:attr:`ResourceStore.creators` (``registry/core/pod/``).

How a write flows: decode (kind/apiVersion check, unknown fields per ``fieldValidation``,
namespace match: ``registry/decode.py``) → defaults (``api.defaults``) → admission (namespace
lifecycle, priority, default tolerations) → strategy (uid, timestamps, generation, status reset)
→ validation (``api.validation`` through the strategy; 422) → managed fields → store
(compare-and-swap on the resourceVersion).  An update that changes nothing is not written, as
etcd3's ``GuaranteedUpdate`` skips identical bytes: controllers may re-send the same status
freely.

Why writes compare with the stored object: most writes (lease renewals, status heartbeats)
change a few fields of a large object.  The unknown-field check skips subtrees equal to the
stored ones, a patch result is copied only where the pipeline may change it
(``copies.private_copy``), and managedFields, validation and the no-op check all start from
equality with the stored object, so a write costs about what it changes.

Why no copies on reads: the store hands out its immutable objects; ``get``/``list`` return them
as they are, and a watch delivers the store's shared events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

from everynode.api import errors
from everynode.api import field_errors as fielderr
from everynode.api import meta as apimeta
from everynode.api.defaults import apply_defaults
from everynode.api.meta import field_of
from everynode.api.registry import ResourceType
from everynode.api.validation import create_validator, update_validator
from everynode.apiserver.admission import with_token_volume
from everynode.apiserver.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_server_side,
    apply_strategic_merge_patch,
    record_managed_fields,
)
from everynode.apiserver.registry import watch as watching
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.copies import borrowed_copy, private_copy
from everynode.apiserver.registry.decode import decode, typed_patch_error
from everynode.apiserver.registry.deletion import check_preconditions, gc_finalizers
from everynode.apiserver.registry.options import (
    PATCH_TYPES,
    RequestOptions,
    check_list_options,
    check_patch_options,
    delete_options,
    manager,
    parse_rv,
    selection_predicate,
    too_large_rv,
)
from everynode.apiserver.registry.strategy import Strategy, before_create
from everynode.apiserver.registry.systemmeta import before_update
from everynode.apiserver.registry.templates import Created, TemplateCreates
from everynode.clock import format_rfc3339, parse_rfc3339
from everynode.compiled import mypyc_attr
from everynode.storage.base import (
    ConflictError,
    ExpiredError,
    KeyExistsError,
    NotFoundError,
    Predicate,
)

Obj = dict[str, Any]

SubresourceCreator = Callable[[str, str, Obj, RequestOptions], Awaitable[None]]
"""A creatable subresource (``pods/binding``): (namespace, name, body, options); 201 when it returns."""
CreateValidator = Callable[[Obj], list[fielderr.FieldError]]
UpdateValidator = Callable[[Obj, Obj], list[fielderr.FieldError]]

GENERATE_NAME_ATTEMPTS: Final = 8  # RetryGenerateName: a few attempts before giving up
DELETE_CONFLICT_RETRIES: Final = 16  # a delete re-reads after a concurrent write (GuaranteedUpdate retries)
PATCH_ATTEMPTS: Final = 5  # a patch re-reads and re-applies after a concurrent write (GuaranteedUpdate)


def invalid(rt: ResourceType, name: str, errs: list[fielderr.FieldError]) -> errors.ApiError:
    return errors.invalid(rt.kind, rt.group, name, errs)


@mypyc_attr(allow_interpreted_subclasses=True)
class ResourceStore:
    """The REST storage of one resource over the shared :class:`ServerContext`.

    Compiled (compiled.py), and subclassed from source by the resources whose storage does more
    (``allow_interpreted_subclasses``: a method a subclass overrides is called through Python,
    the rest natively)."""

    def __init__(self, rt: ResourceType, ctx: ServerContext, strategy: Strategy | None = None) -> None:
        self.rt = rt
        self.ctx = ctx
        self.strategy = strategy if strategy is not None else Strategy()
        self.creators: Mapping[str, SubresourceCreator] = {}
        # Creates answered from an earlier one's processing (templates.py), for kinds whose
        # objects are made from templates.
        self.templates = TemplateCreates(self) if self.strategy.template_fields else None
        # The hooks a kind leaves at the base's defaults are not called on every write: the base
        # class is interpreted (compiled.py), and each call into it cost about a thousand
        # instructions to do nothing (an Event's create made four such calls); the validation of
        # the kinds that keep the default is looked up once.  Kinds override hooks in their
        # strategy's class, never on an instance.
        rules = type(self.strategy)
        self._prepares_create = rules.prepare_for_create is not Strategy.prepare_for_create
        self._begins_create = rules.begin_create is not Strategy.begin_create
        self._begins_update = rules.begin_update is not Strategy.begin_update
        self._validate_create: CreateValidator | None = (
            create_validator(rt.key) if rules.validate_create is Strategy.validate_create else None)
        self._validate_update: UpdateValidator | None = (
            update_validator(rt.key) if rules.validate_update is Strategy.validate_update else None)

    # -- reads ------------------------------------------------------------------------------------

    async def get(self, namespace: str, name: str, *, subresource: str | None = None) -> Obj:
        rt = self.rt
        if subresource is not None and (subresource != "status" or rt.subresource("status") is None):
            raise errors.path_not_found()
        obj = self.ctx.store.get(rt.key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return obj

    async def list(self, namespace: str | None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, resource_version: str | None = None,
                   resource_version_match: str | None = None) -> Obj:
        rt = self.rt
        store = self.ctx.store
        await self.ctx.ready()
        check_list_options(resource_version, resource_version_match, continue_token)
        predicate, exact_name = selection_predicate(rt, label_selector, field_selector)
        ns = namespace if rt.namespaced else None
        current = store.current_rv()
        requested = parse_rv(resource_version)
        if requested is not None and requested > current:
            raise too_large_rv(requested, current)
        if resource_version_match == "Exact" and requested is not None and requested != current:
            raise errors.gone(f"too old resource version: {requested} ({current})")
        md: Obj = {}
        if exact_name is not None and not continue_token and (ns is not None or not rt.namespaced):
            # One object by name: a lookup, not a scan (kubectl rollout status, delete --wait).
            obj = store.get(rt.key, ns or "", exact_name)
            items = [obj] if obj is not None and (predicate is None or predicate(obj)) else []
            md["resourceVersion"] = str(current)
        else:
            try:
                result = store.list(rt.key, namespace=ns, predicate=predicate,
                                    limit=limit if limit and limit > 0 else None,
                                    continue_token=continue_token or None)
            except ExpiredError:
                raise errors.gone("The provided continue parameter is too old to display a consistent list "
                                  "result. You can start a new list without the continue parameter, or use "
                                  "the continue token in this response to retrieve the remainder of the "
                                  "results. Continuing with the provided token results in an inconsistent "
                                  "list - objects that were created, modified, or deleted between the time "
                                  "the first chunk was returned and now may show up in the list.") from None
            except ValueError:
                raise errors.bad_request("continue key is not valid: incorrect encoded start "
                                         "resourceVersion (version meta.k8s.io/v1)") from None
            items = result.items
            md["resourceVersion"] = str(result.rv)
            if result.continue_token:
                md["continue"] = result.continue_token
                if result.remaining is not None:
                    md["remainingItemCount"] = result.remaining
        return {"kind": rt.list_kind, "apiVersion": rt.api_version, "metadata": md, "items": items}

    # -- create -----------------------------------------------------------------------------------

    async def create(self, namespace: str, body: Obj, *, opts: RequestOptions) -> Obj:
        await self.ctx.ready()
        return await self.create_unguarded(namespace, body, opts=opts)

    async def create_unguarded(self, namespace: str, body: Obj, *, opts: RequestOptions) -> Obj:
        """:meth:`create` without waiting for start-up (the start-up itself creates this way)."""
        rt = self.rt
        if "create" not in rt.verbs:
            raise errors.method_not_allowed("create", rt.plural, rt.group)
        templates = self.templates
        plan = templates.plan(namespace if rt.namespaced else "", body, opts) if templates is not None else None
        if templates is not None and plan is not None:
            created = await templates.create(plan, opts)
            if created is not None:
                return created
        if opts.borrowed:
            body = apimeta.deep_copy(body)  # decoding and defaulting change it in place
        obj = decode(rt, namespace if rt.namespaced else "", body, opts)
        apply_defaults(rt.key, obj)
        learn = templates.learner(plan, opts) if templates is not None and plan is not None else None
        return await self.create_new(obj, opts, on_created=learn)

    async def create_new(self, obj: Obj, opts: RequestOptions, *, managed_fields_done: bool = False,
                         on_created: Created | None = None) -> Obj:
        """Admission → strategy → validation → store, for a decoded and defaulted object.
        ``on_created`` is given the object as made (before the token volume) and as stored."""
        rt = self.rt
        ctx = self.ctx
        strategy = self.strategy
        ctx.admission.check_namespace_for_create(rt, field_of(obj["metadata"], "namespace") or "", obj)
        token_account = await ctx.admission.pod_service_account(rt, obj)
        ctx.admission.admit_create(rt, obj)
        md = obj["metadata"]
        if md.get("resourceVersion"):
            raise errors.ApiError({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": "resourceVersion should not be set on objects to be created",
                                   "code": 500})
        now = ctx.now()
        before_create(rt, obj, now=now)
        if self._prepares_create:
            strategy.prepare_for_create(obj)
        generate = md.get("generateName") if not md.get("name") else None
        if generate:
            md["name"] = apimeta.generate_name(generate)
        validate = self._validate_create
        errs = validate(obj) if validate is not None else strategy.validate_create(rt, obj)
        if not errs and not md.get("name"):
            errs = [fielderr.required("metadata.name", "name or generateName is required")]
        if errs:
            raise invalid(rt, md.get("name") or "", errs)
        finish = strategy.begin_create(obj, dry_run=opts.dry_run) if self._begins_create else None
        if managed_fields_done:
            pass
        elif ctx.managed_fields:
            obj = record_managed_fields(None, obj, manager=manager(opts), operation="Update", now=now,
                                        api_version=rt.api_version, kind=rt.kind)
        else:
            md.pop("managedFields", None)  # (a server that keeps none: context.py)
        made = obj
        if token_account is not None:
            obj = with_token_volume(obj)
        try:
            created = await self.store_new(obj, opts, generate)
        except BaseException:
            if finish is not None:
                finish(False)
            raise
        if finish is not None:
            finish(True)
        if on_created is not None:
            on_created(made, created)
        return created

    async def store_new(self, obj: Obj, opts: RequestOptions, generate: str | None) -> Obj:
        """The write of a new object (a fresh name for ``generate`` when the drawn one is taken)."""
        rt = self.rt
        store = self.ctx.store
        md = obj["metadata"]
        if opts.dry_run:
            if store.get(rt.key, md.get("namespace") or "", md["name"]) is not None and not generate:
                raise errors.already_exists(rt.plural, rt.group, md["name"])
            return obj
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            try:
                return await store.create(rt.key, obj)
            except KeyExistsError:
                if not generate:
                    raise errors.already_exists(rt.plural, rt.group, obj["metadata"]["name"]) from None
                if attempt == GENERATE_NAME_ATTEMPTS - 1:
                    err = errors.already_exists(rt.plural, rt.group, obj["metadata"]["name"])
                    err.status["message"] += ", the server was not able to generate a unique name for the object"
                    raise err from None
                obj = dict(obj)
                obj["metadata"] = dict(obj["metadata"], name=apimeta.generate_name(generate))
        raise AssertionError("unreachable")

    # -- update -----------------------------------------------------------------------------------

    def check_subresource(self, subresource: str | None, verb: str) -> None:
        rt = self.rt
        if subresource is None:
            if verb not in rt.verbs:
                raise errors.method_not_allowed(verb, rt.plural, rt.group)
            return
        sub = rt.subresource(subresource)
        if sub is None:
            raise errors.path_not_found()
        if verb not in sub.verbs:
            raise errors.method_not_allowed(verb, f"{rt.plural}/{subresource}", rt.group)

    async def update(self, namespace: str, name: str, body: Obj, *, subresource: str | None = None,
                     opts: RequestOptions) -> tuple[Obj, bool]:
        """PUT.  Returns (object, created)."""
        rt = self.rt
        await self.ctx.ready()
        self.check_subresource(subresource, "update")
        ns = namespace if rt.namespaced else ""
        old = self.ctx.store.get(rt.key, ns, name)
        if opts.borrowed:
            body = borrowed_copy(body, old, restored=self.strategy.restored_fields(subresource),
                                  status_write=subresource == "status")
        obj = decode(rt, ns, body, opts, known=old)
        body_name = field_of(obj["metadata"], "name") or ""
        if body_name != name:
            raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on the "
                                     f"URL ({name})")
        apply_defaults(rt.key, obj)
        if old is None:
            if subresource is not None or not self.strategy.allow_create_on_update:
                raise errors.not_found(rt.plural, rt.group, name)
            obj["metadata"].pop("resourceVersion", None)
            return await self.create_new(obj, opts), True
        return await self.update_existing(obj, old, subresource, opts), False

    async def update_existing(self, new: Obj, old: Obj, subresource: str | None, opts: RequestOptions, *,
                              managed_fields_done: bool = False) -> Obj:
        rt = self.rt
        ctx = self.ctx
        strategy = self.strategy
        md = new["metadata"]
        name = old["metadata"]["name"]
        expected = parse_rv(md.get("resourceVersion"))
        old_rv = apimeta.resource_version(old)
        if expected is not None and expected != old_rv:
            raise errors.stale(rt.plural, rt.group, name)
        finish = None
        if subresource is None:
            ctx.admission.admit_update(rt, new, old)
            before_update(new, old)
            strategy.prepare_for_update(new, old)
            validate = self._validate_update
            errs = validate(new, old) if validate is not None else strategy.validate_update(rt, new, old)
            if not errs and self._begins_update:
                finish = strategy.begin_update(new, old, dry_run=opts.dry_run)
        else:  # status, namespaces/finalize
            sub = strategy.subresources.get(subresource)
            if sub is None:  # pragma: no cover - the registry lists no other updatable subresource
                raise errors.path_not_found()
            before_update(new, old)
            sub.prepare_for_update(new, old)
            errs = sub.validate_update(rt, new, old)
        if errs:
            raise invalid(rt, name, errs)
        md["resourceVersion"] = field_of(old["metadata"], "resourceVersion")
        if managed_fields_done:
            pass
        elif ctx.managed_fields:
            if "managedFields" not in md and "managedFields" in old["metadata"]:
                md["managedFields"] = old["metadata"]["managedFields"]
            if new == old:
                return old  # nothing changed: no write, no event, same resourceVersion
            new = record_managed_fields(old, new, manager=manager(opts), operation="Update", now=ctx.now(),
                                        api_version=rt.api_version, kind=rt.kind, subresource=subresource)
        else:  # a server that keeps none (context.py): the stored entries (a server-side apply's) stay
            kept = field_of(old["metadata"], "managedFields")
            if kept is None:
                md.pop("managedFields", None)
            else:
                md["managedFields"] = kept
        if new == old:
            return old
        if opts.dry_run:
            return new
        try:
            stored = await ctx.store.update(rt.key, new, expected_rv=old_rv)
        except ConflictError:
            raise errors.stale(rt.plural, rt.group, name) from None
        except NotFoundError:
            raise errors.not_found(rt.plural, rt.group, name) from None
        if finish is not None:
            finish(True)
        if strategy.should_delete_during_update(stored, old):
            try:
                deleted = await ctx.store.delete(rt.key, field_of(stored["metadata"], "namespace") or "", name)
            except NotFoundError:
                return stored
            strategy.after_delete(deleted)
            return deleted
        return stored

    # -- patch ------------------------------------------------------------------------------------

    async def patch(self, namespace: str, name: str, patch: Any, patch_type: str, *,
                    subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        """patch_type: "json" | "merge" | "strategic" | "apply".  Returns (object, created)."""
        rt = self.rt
        await self.ctx.ready()
        if patch_type not in PATCH_TYPES:
            raise errors.unsupported_media_type(patch_type)
        self.check_subresource(subresource, "patch")
        check_patch_options(patch_type, opts)
        ns = namespace if rt.namespaced else ""
        if patch_type == "apply":
            return await self._apply(ns, name, patch, subresource, opts)
        restored = self.strategy.restored_fields(subresource)
        for attempt in range(PATCH_ATTEMPTS):
            old = self.ctx.store.get(rt.key, ns, name)
            if old is None:
                raise errors.not_found(rt.plural, rt.group, name)
            if patch_type == "json":
                patched = apply_json_patch(old, patch)
            elif patch_type == "merge":
                patched = apply_merge_patch(old, patch)
            else:
                patched = apply_strategic_merge_patch(old, patch, api_version=rt.api_version, kind=rt.kind)
            patched = private_copy(patched, old, restored=restored, status_write=subresource == "status")
            new = decode(rt, ns, patched, opts, source="patch", known=old)
            _check_patched_name(new, name)
            apply_defaults(rt.key, new)
            explicit_rv = field_of(new["metadata"], "resourceVersion") != field_of(old["metadata"], "resourceVersion")
            try:
                return await self.update_existing(new, old, subresource, opts), False
            except errors.ApiError as e:
                if e.reason != "Conflict" or explicit_rv or attempt == PATCH_ATTEMPTS - 1:
                    raise
            await asyncio.sleep(0)  # (after the handler, not in it: compiled.py)
        raise AssertionError("unreachable")

    async def _apply(self, ns: str, name: str, applied: Any, subresource: str | None,
                     opts: RequestOptions) -> tuple[Obj, bool]:
        """Server-side apply: merge the configuration into the live object (or create it)."""
        rt = self.rt
        if not isinstance(applied, dict):
            raise errors.bad_request("error decoding YAML: the apply configuration must be an object")
        config_md: Obj = applied["metadata"] if isinstance(applied.get("metadata"), dict) else {}
        config_name = config_md.get("name") or ""
        if config_name != name:
            raise errors.bad_request(f"the name of the object ({config_name}) does not match the name on the "
                                     f"URL ({name})")
        typed_error = typed_patch_error(rt, applied)
        if typed_error is not None:
            raise typed_error
        field_manager = opts.field_manager or manager(opts)
        for attempt in range(PATCH_ATTEMPTS):
            old = self.ctx.store.get(rt.key, ns, name)
            if old is None and subresource is not None:
                raise errors.not_found(rt.plural, rt.group, name)
            merged = apply_server_side(old, applied, manager=field_manager, force=opts.force, now=self.ctx.now(),
                                       api_version=rt.api_version, kind=rt.kind, subresource=subresource)
            new = decode(rt, ns, merged, opts, source="apply", known=old)
            _check_patched_name(new, name)
            apply_defaults(rt.key, new)
            if old is None:
                new["metadata"].pop("resourceVersion", None)
                return await self.create_new(new, opts, managed_fields_done=True), True
            try:
                return await self.update_existing(new, old, subresource, opts, managed_fields_done=True), False
            except errors.ApiError as e:
                if e.reason != "Conflict" or attempt == PATCH_ATTEMPTS - 1 or _is_field_conflict(e):
                    raise
            await asyncio.sleep(0)
        raise AssertionError("unreachable")

    # -- creatable subresources (pods/binding, pods/eviction) -------------------------------------

    async def create_subresource(self, namespace: str, name: str, subresource: str, body: Obj, *,
                                 opts: RequestOptions) -> tuple[int, Obj]:
        """POST to a subresource: 201 + Status Success when its creator returns."""
        await self.ctx.ready()
        self.check_subresource(subresource, "create")
        if not isinstance(body, dict):
            raise errors.bad_request("the object provided is unrecognized")
        creator = self.creators.get(subresource)
        if creator is None:  # pragma: no cover - the registry lists no other creatable subresource
            raise errors.path_not_found()
        await creator(namespace, name, body, opts)
        return 201, errors.success_status(201)

    # -- delete -----------------------------------------------------------------------------------

    async def delete(self, namespace: str, name: str, *, options: Obj | None = None,
                     opts: RequestOptions) -> tuple[int, Obj]:
        """Returns (http code, body): the object (200, or 202 while finalizers/graceful) or a Status."""
        rt = self.rt
        store = self.ctx.store
        await self.ctx.ready()
        self.check_subresource(None, "delete")
        options = delete_options(options, opts)
        ns = namespace if rt.namespaced else ""
        # Upstream's Store.Delete writes through GuaranteedUpdate: a concurrent write is not the
        # caller's conflict — it re-reads and tries again, checking the caller's preconditions
        # against each fresh object.  Only a precondition that no longer holds is a 409.
        for _attempt in range(DELETE_CONFLICT_RETRIES):
            obj = store.get(rt.key, ns, name)
            if obj is None:
                raise errors.not_found(rt.plural, rt.group, name)
            self.ctx.admission.check_delete(rt, name)
            check_preconditions(rt, obj, options)
            try:
                result = await self._delete(obj, options, opts)
                break
            except ConflictError:
                pass
            await asyncio.sleep(0)
        else:
            raise errors.stale(rt.plural, rt.group, name)
        code = 200
        if options.get("orphanDependents") is False and result.get("kind") != "Status" and \
                store.get(rt.key, ns, name) is not None:
            code = 202
        return code, result

    async def _delete(self, obj: Obj, options: Obj, opts: RequestOptions) -> Obj:
        """The resource's deletion of ``obj`` (checked and existing); namespaces override it.
        A ConflictError (the object changed since it was read) makes :meth:`delete` re-read and retry."""
        return await self._delete_object(obj, options, opts)

    async def _delete_object(self, obj: Obj, options: Obj, opts: RequestOptions) -> Obj:
        """``Store.Delete``: graceful deletion, GC finalizers, then removal from storage."""
        rt = self.rt
        ctx = self.ctx
        strategy = self.strategy
        md = obj["metadata"]
        name = md["name"]
        grace = options.get("gracePeriodSeconds")
        graceful = False
        new_md = dict(md)
        if md.get("deletionTimestamp"):
            current = md.get("deletionGracePeriodSeconds")
            if strategy.graceful_delete_period(obj, grace) is not None and current:
                if grace is None or grace >= current:
                    return self.deleted_answer(obj)  # graceful deletion pending: nothing to change
                # Only a shorter grace period may be given; the deadline moves earlier.
                deadline = parse_rfc3339(md["deletionTimestamp"]) - current + grace
                new_md["deletionTimestamp"] = format_rfc3339(deadline)
                new_md["deletionGracePeriodSeconds"] = grace
                graceful = True
        else:
            period = strategy.graceful_delete_period(obj, grace)
            if period is not None:
                graceful = True
                new_md["deletionTimestamp"] = format_rfc3339(ctx.clock.now() + period)
                new_md["deletionGracePeriodSeconds"] = period
                if md.get("generation"):
                    new_md["generation"] = int(md["generation"]) + 1
        finalizers = list(md.get("finalizers") or ())
        wanted_finalizers = gc_finalizers(finalizers, options)
        update_finalizers = wanted_finalizers != finalizers and set(wanted_finalizers) != set(finalizers)
        if graceful or finalizers or update_finalizers:
            if update_finalizers:
                finalizers = wanted_finalizers
                if finalizers:
                    new_md["finalizers"] = finalizers
                else:
                    new_md.pop("finalizers", None)
            if finalizers or (graceful and new_md.get("deletionGracePeriodSeconds")):
                if not graceful:
                    # markAsDeleting: finalizers pending, nothing graceful to wait for.
                    if not md.get("deletionTimestamp") and md.get("generation"):
                        new_md["generation"] = int(md["generation"]) + 1
                    now = ctx.now()
                    if not md.get("deletionTimestamp") or md["deletionTimestamp"] > now:
                        new_md["deletionTimestamp"] = now
                    new_md["deletionGracePeriodSeconds"] = 0
                new = dict(obj)
                new["metadata"] = new_md
                if new == obj:
                    return obj
                if opts.dry_run:
                    return new
                try:
                    return await ctx.store.update(rt.key, new, expected_rv=apimeta.resource_version(obj))
                except ConflictError:
                    raise  # delete() re-reads and retries
                except NotFoundError:
                    raise errors.not_found(rt.plural, rt.group, name) from None
        if opts.dry_run:
            return self.deleted_answer(obj)
        try:
            deleted = await ctx.store.delete(rt.key, md.get("namespace") or "", name,
                                             expected_uid=md.get("uid"))
        except NotFoundError:
            raise errors.not_found(rt.plural, rt.group, name) from None
        strategy.after_delete(deleted)
        return self.deleted_answer(deleted)

    def deleted_answer(self, obj: Obj) -> Obj:
        """What a DELETE answers: the object (``ReturnDeletedObject``) or a Status naming it."""
        rt = self.rt
        if self.strategy.return_deleted_object:
            return obj
        md = obj["metadata"]
        details: Obj = {"name": md["name"]}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        details["uid"] = md.get("uid")
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    async def delete_collection(self, namespace: str | None, *, label_selector: str | None = None,
                                field_selector: str | None = None, options: Obj | None = None,
                                opts: RequestOptions) -> Obj:
        rt = self.rt
        await self.ctx.ready()
        if "deletecollection" not in rt.verbs:
            raise errors.method_not_allowed("deletecollection", rt.plural, rt.group)
        options = delete_options(options, opts)
        predicate, _ = selection_predicate(rt, label_selector, field_selector)
        result = self.ctx.store.list(rt.key, namespace=namespace if rt.namespaced else None, predicate=predicate)
        deleted: list[Obj] = []
        for obj in result.items:
            md = obj["metadata"]
            try:
                await self.delete(md.get("namespace") or "", md["name"], options=dict(options), opts=opts)
            except errors.ApiError as e:
                if e.code != 404:
                    raise
            deleted.append(obj)
        return {"kind": rt.list_kind, "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(self.ctx.store.current_rv())}, "items": deleted}

    # -- watch ------------------------------------------------------------------------------------

    def watch_batches(self, namespace: str | None, *, label_selector: str | None = None,
                      field_selector: str | None = None, resource_version: str | None = None,
                      allow_bookmarks: bool = False, send_initial_events: bool | None = None,
                      timeout_seconds: float | None = None, resource_version_match: str | None = None
                      ) -> watching.Batches:
        return watching.watch_batches(
            self.ctx, self.rt, namespace, label_selector=label_selector, field_selector=field_selector,
            resource_version=resource_version, allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events, timeout_seconds=timeout_seconds,
            resource_version_match=resource_version_match)

    def predicate(self, label_selector: str | None, field_selector: str | None
                  ) -> tuple[Predicate | None, str | None]:
        return selection_predicate(self.rt, label_selector, field_selector)


# ---------------------------------------------------------------------------------------------
# helpers


def _check_patched_name(obj: Obj, name: str) -> None:
    patched_name = field_of(obj["metadata"], "name") or ""
    if patched_name != name:
        raise errors.bad_request(f"the name of the object ({patched_name}) does not match the name on the "
                                 f"URL ({name})")


def _is_field_conflict(error: errors.ApiError) -> bool:
    """An apply conflict between field managers (retrying cannot help), not a stale write."""
    causes = (error.status.get("details") or {}).get("causes") or ()
    return any(c.get("reason") == "FieldManagerConflict" for c in causes)
