"""The API's semantics, independent of HTTP: what kube-apiserver does between decoding a request
and encoding the answer.

INTERFACE CONTRACT (signatures are fixed because the HTTP layer and the in-process client both
call them):

* Every method raises :class:`everynode.api.errors.ApiError` for every failure, in upstream's
  shape (404 NotFound, 409 AlreadyExists/Conflict, 422 Invalid with causes, 400 BadRequest,
  405, 410 Expired, 415 ...).  Nothing is stored when an error is raised.
* Objects returned are stored (shared, immutable) objects: callers must not mutate them.
* Objects returned carry ``kind`` and ``apiVersion``.
* ``namespace`` is ``""`` for cluster-scoped resources; for ``list``/``watch``/
  ``delete_collection`` ``None`` means all namespaces.
* Request bodies (``body``, ``patch``, ``options``) are *owned* by the service once passed: it
  may change them.  Callers that keep using them pass a copy (the in-process client does).

How a write flows (the order of ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers`` and
``registry/generic/registry/store.go``): decode (kind/apiVersion check, unknown fields per
``fieldValidation``, namespace match) → defaults (``api.defaults``) → admission (namespace
lifecycle, priority, default tolerations) → strategy (``apiserver.strategy``: uid, timestamps,
generation, status reset) → validation (``api.validation``; 422) → managed fields → store
(compare-and-swap on the resourceVersion).  An update that changes nothing is not written, as
etcd3's ``GuaranteedUpdate`` skips identical bytes: controllers may re-send the same status
freely.

Why no copies on reads: the store hands out its immutable objects; ``get``/``list`` return them
as they are, and a watch delivers the store's shared events (whose ``encoded`` cache the HTTP
layer fills once for all watchers).

Why writes compare with the stored object: most writes (lease renewals, status heartbeats)
change a few fields of a large object.  The unknown-field check skips subtrees equal to the
stored ones, a patch result is copied only where the pipeline may change it
(:func:`_private_copy`), and managedFields, validation and the no-op check all start from
equality with the stored object, so a write costs about what it changes.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from everynode.api import errors
from everynode.api import field as fielderr
from everynode.api import meta as apimeta
from everynode.api.defaults import apply_defaults
from everynode.api.fields import check_field_selector, selectable_fields
from everynode.api.registry import ResourceType, resource
from everynode.api.selectors import SelectorError, parse_field_selector, parse_label_selector
from everynode.api.typecheck import TypeProblem, check_object, go_decode_message, is_structural, smd_errors
from everynode.api.validation import (
    validate_create,
    validate_namespace_finalize,
    validate_status_update,
    validate_update,
)
from everynode.apiserver import strategy
from everynode.apiserver.admission import Admission, system_priority_classes
from everynode.apiserver.clusterip import (
    ClusterIPAllocator,
    assign_cluster_ip,
    carry_cluster_ip,
    release_cluster_ip,
    update_cluster_ip,
)
from everynode.apiserver.patch import (
    apply_json_patch,
    apply_merge_patch,
    apply_server_side,
    apply_strategic_merge_patch,
    record_managed_fields,
)
from everynode.clock import Clock, format_rfc3339, parse_rfc3339
from everynode.storage.base import (
    ConflictError,
    ExpiredError,
    KeyExistsError,
    NotFoundError,
    Predicate,
    Store,
    WatchEvent,
)

Obj = dict[str, Any]

NAMESPACES = resource("namespaces")
PRIORITY_CLASSES = resource("priorityclasses.scheduling.k8s.io")
SERVICES = resource("services")
SEED_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

GENERATE_NAME_ATTEMPTS = 8  # RetryGenerateName: a few attempts before giving up
MIN_WATCH_TIMEOUT = 1800.0  # --min-request-timeout; an unbounded watch ends after 1-2× this
INITIAL_EVENTS_END = "k8s.io/initial-events-end"
INITIAL_EVENTS_BATCH = 256  # synthetic ADDED events per watch batch (bounds one write's size)
PATCH_TYPES = ("json", "merge", "strategic", "apply")
FRESHNESS_WAIT = 3.0  # cacher.go: blockTimeout, how long a watch waits for a future resourceVersion
FRESHNESS_POLL = 0.05
PROPAGATION_POLICIES = ("Foreground", "Background", "Orphan")


@dataclass(slots=True)
class RequestOptions:
    """Per-request options from the query string / headers (or the in-process caller)."""

    dry_run: bool = False
    field_manager: str | None = None
    field_validation: str | None = None  # "Strict" | "Warn" | "Ignore" | None (= server default, Warn)
    force: bool = False  # server-side apply
    user: str = "admin"
    user_agent: str = ""
    warnings: list[str] = field(default_factory=list)  # filled by the service; sent as Warning headers


def _invalid(rt: ResourceType, name: str, errs: list[fielderr.FieldError]) -> errors.ApiError:
    return errors.invalid(rt.kind, rt.group, name, errs)


def _options_invalid(kind: str, errs: list[fielderr.FieldError]) -> errors.ApiError:
    """``errors.NewInvalid(GroupKind{meta.k8s.io, kind}, "", errs)`` for bad request options."""
    return errors.invalid(kind, "meta.k8s.io", "", errs)


def _parse_rv(text: str | None, *, what: str = "resourceVersion") -> int | None:
    if text in (None, ""):
        return None
    try:
        value = int(text)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise errors.bad_request(f"invalid resource version: {text}") from None
    if value < 0:
        raise errors.bad_request(f"invalid resource version: {text}")
    return value


def _cannot_be_handled(rt: ResourceType, body: Obj, message: str) -> str:
    """``transformDecodeError``: the decoder's error behind the kind and version the body named."""
    kind = body.get("kind") or rt.kind
    version = str(body.get("apiVersion") or rt.api_version).rpartition("/")[2]
    return f'{kind} in version "{version}" cannot be handled as a {rt.kind}: {message}'


def _type_error(rt: ResourceType, body: Obj, problem: TypeProblem, source: str) -> errors.ApiError:
    """A badly typed value, answered as kube-apiserver answers its decoder's error."""
    message = go_decode_message(problem)
    if source == "patch":  # patch.go: NewInvalid(GroupKind{}, "", [Invalid("patch", <patched object>, err)])
        cause = fielderr.invalid("patch", orjson.dumps(body).decode(), message)
        return errors.ApiError(errors.status(422, "Invalid", f' "" is invalid: {fielderr.aggregate([cause])}',
                                             {"causes": [cause.cause()]}))
    return errors.bad_request(_cannot_be_handled(rt, body, message))


def _typed_patch_error(rt: ResourceType, applied: Obj) -> errors.ApiError | None:
    """Server-side apply's typed conversion of the configuration (``ObjectToTyped``): unknown fields
    and wrong JSON kinds, in structured-merge-diff's words.  Upstream 1.33 returns this as a
    plain error (a 500 without a reason, kubernetes#122480); it is the client's mistake, so it
    is answered 400 BadRequest with upstream's message, as kubernetes#139255 proposes."""
    findings = check_object(rt.api_version, rt.kind, applied)
    if not findings.unknown and not any(is_structural(p) for p in findings.problems):
        return None
    md = applied.get("metadata") if isinstance(applied.get("metadata"), dict) else {}
    group, _, version = rt.api_version.rpartition("/")
    where = f"{md.get('namespace') or ''}/{md.get('name') or ''}; {group}/{version}, Kind={rt.kind}"
    return errors.bad_request(f"failed to create typed patch object ({where}): {smd_errors(findings)}")


def _too_large_rv(requested: int, current: int) -> errors.ApiError:
    return errors.ApiError(errors.status(
        504, "Timeout", f"Timeout: Too large resource version: {requested}, current: {current}",
        {"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
         "retryAfterSeconds": 1}))


def _manager(opts: RequestOptions) -> str:
    """``managerOrUserAgent``: the fieldManager, else the user agent up to its first ``/``."""
    if opts.field_manager:
        return opts.field_manager
    agent = opts.user_agent.split("/", 1)[0][:128]
    return agent or "unknown"


def _drop_path(obj: Any, path: str) -> None:
    """Remove a field named by a dotted path with ``[i]``/``[key]`` steps (unknown_fields' form)."""
    steps: list[str | int] = []
    i, n = 0, len(path)
    buf = ""
    while i < n:
        c = path[i]
        if c == ".":
            if buf:
                steps.append(buf)
            buf = ""
            i += 1
        elif c == "[":
            if buf:
                steps.append(buf)
            buf = ""
            j = path.index("]", i)
            inner = path[i + 1:j]
            steps.append(int(inner) if inner.isdigit() else inner)
            i = j + 1
        else:
            buf += c
            i += 1
    if buf:
        steps.append(buf)
    node = obj
    for step in steps[:-1]:
        if isinstance(node, list) and isinstance(step, int) and step < len(node):
            node = node[step]
        elif isinstance(node, dict) and str(step) in node:
            node = node[str(step)]
        else:
            return
    if isinstance(node, dict):
        node.pop(str(steps[-1]), None)


class ApiService:
    def __init__(self, store: Store, *, clock: Clock, bookmark_interval: float = 60.0) -> None:
        self.store = store
        self.clock = clock
        self.admission = Admission(store)
        self.cluster_ips = ClusterIPAllocator()
        self.bookmark_interval = bookmark_interval
        self._seeded = False
        self._seed_task: asyncio.Future[None] | None = None

    # -- start-up ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Create what every cluster has from the start (idempotent: a restart finds them).

        Called by the owner at start-up; every request also waits for it, so an in-process user
        that never calls it still sees the built-in namespaces and PriorityClasses."""
        if self._seed_task is None:
            self._seed_task = asyncio.ensure_future(self._seed())
        await asyncio.shield(self._seed_task)

    async def _seed(self) -> None:
        opts = RequestOptions(field_manager="kube-apiserver", field_validation="Ignore")
        self.cluster_ips.restore(ip for svc in self.store.list(SERVICES.key).items for ip in _cluster_ips(svc))
        for name in SEED_NAMESPACES:
            if self.store.get(NAMESPACES.key, "", name) is None:
                body = {"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": name}}
                await self._seed_one(NAMESPACES, body, opts)
        for pc in system_priority_classes():
            if self.store.get(PRIORITY_CLASSES.key, "", pc["metadata"]["name"]) is None:
                await self._seed_one(PRIORITY_CLASSES, pc, opts)
        if self.store.get(SERVICES.key, "default", "kubernetes") is None:
            await self._seed_one(SERVICES, {
                "kind": "Service", "apiVersion": "v1",
                "metadata": {"name": "kubernetes", "namespace": "default",
                             "labels": {"component": "apiserver", "provider": "kubernetes"}},
                "spec": {"clusterIP": self.cluster_ips.first_ip,
                         "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
                         "sessionAffinity": "None", "type": "ClusterIP"},
            }, opts)
        self._seeded = True

    async def _seed_one(self, rt: ResourceType, body: Obj, opts: RequestOptions) -> None:
        try:
            await self._create(rt, "", body, opts)
        except errors.ApiError as e:
            if e.code != 409:
                raise

    async def _ready(self) -> None:
        if not self._seeded:
            await self.start()

    def _now(self) -> str:
        return self.clock.rfc3339()

    # -- reads ------------------------------------------------------------------------------------

    async def get(self, rt: ResourceType, namespace: str, name: str, *, subresource: str | None = None) -> Obj:
        if subresource is not None and (subresource != "status" or rt.subresource("status") is None):
            raise errors.path_not_found()
        obj = self.store.get(rt.key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, name)
        return obj

    def predicate(self, rt: ResourceType, label_selector: str | None,
                  field_selector: str | None) -> tuple[Predicate | None, str | None]:
        """The object filter for selectors, plus the exact ``metadata.name`` asked for (if any).

        Raises 400 for selectors that do not parse or name unsupported fields."""
        labels = fields = None
        try:
            if label_selector:
                labels = parse_label_selector(label_selector)
                if labels.empty:
                    labels = None
            if field_selector:
                fields = parse_field_selector(field_selector)
                if fields.empty:
                    fields = None
                else:
                    check_field_selector(rt.key, fields)
        except SelectorError as e:
            raise errors.bad_request(str(e)) from None
        if labels is None and fields is None:
            return None, None
        exact_name = fields.exact_value("metadata.name") if fields is not None else None
        key = rt.key
        if fields is None:
            label_match = labels.matches  # type: ignore[union-attr]
            return (lambda obj: label_match(obj["metadata"].get("labels"))), exact_name
        field_match = fields.matches
        if labels is None:
            return (lambda obj: field_match(selectable_fields(key, obj))), exact_name
        label_match = labels.matches

        def both(obj: Obj) -> bool:
            return label_match(obj["metadata"].get("labels")) and field_match(selectable_fields(key, obj))

        return both, exact_name

    async def list(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, resource_version: str | None = None,
                   resource_version_match: str | None = None) -> Obj:
        await self._ready()
        self._check_list_options(resource_version, resource_version_match, continue_token)
        predicate, exact_name = self.predicate(rt, label_selector, field_selector)
        ns = namespace if rt.namespaced else None
        current = self.store.current_rv()
        requested = _parse_rv(resource_version)
        if requested is not None and requested > current:
            raise _too_large_rv(requested, current)
        if resource_version_match == "Exact" and requested is not None and requested != current:
            raise errors.gone(f"too old resource version: {requested} ({current})")
        md: Obj = {}
        if exact_name is not None and not continue_token and (ns is not None or not rt.namespaced):
            # One object by name: a lookup, not a scan (kubectl rollout status, delete --wait).
            obj = self.store.get(rt.key, ns or "", exact_name)
            items = [obj] if obj is not None and (predicate is None or predicate(obj)) else []
            md["resourceVersion"] = str(current)
        else:
            try:
                result = self.store.list(rt.key, namespace=ns, predicate=predicate,
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

    @staticmethod
    def _check_list_options(rv: str | None, match: str | None, continue_token: str | None) -> None:
        """``ValidateListOptions`` for a list."""
        errs: list[fielderr.FieldError] = []
        if match:
            if not rv:
                errs.append(fielderr.forbidden("resourceVersionMatch",
                                               "resourceVersionMatch is forbidden unless resourceVersion is provided"))
            if continue_token:
                errs.append(fielderr.forbidden("resourceVersionMatch",
                                               "resourceVersionMatch is forbidden when continue is provided"))
            if match not in ("Exact", "NotOlderThan"):
                errs.append(fielderr.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
            if match == "Exact" and rv == "0":
                errs.append(fielderr.forbidden("resourceVersionMatch",
                                               'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'))
        if errs:
            raise _options_invalid("ListOptions", errs)

    @staticmethod
    def _check_watch_options(match: str | None, send_initial_events: bool | None) -> None:
        """``validateWatchOptions``: ``sendInitialEvents`` goes with ``resourceVersionMatch=NotOlderThan``."""
        errs: list[fielderr.FieldError] = []
        if send_initial_events is not None and match != "NotOlderThan":
            errs.append(fielderr.forbidden("resourceVersionMatch",
                                           "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"))
        if match:
            if send_initial_events is None:
                errs.append(fielderr.forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden for watch "
                                                                      "unless sendInitialEvents is provided"))
            if match != "NotOlderThan":
                errs.append(fielderr.not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
        if errs:
            raise _options_invalid("ListOptions", errs)

    # -- decoding ---------------------------------------------------------------------------------

    def _decode(self, rt: ResourceType, namespace: str, body: Any, opts: RequestOptions, *,
                source: str = "body", known: Obj | None = None) -> Obj:
        """What the handler's decoder does: kind/apiVersion, types, unknown fields, namespace.

        ``source`` says what ``body`` is, because upstream words the errors by it: "body" (a
        create or update: Go's decoding errors behind ``DaemonSet in version "v1" cannot be
        handled as a DaemonSet: ``), "patch" (a patched object: 422 on ``patch``) or "apply"
        (the merge of an apply configuration that was checked before merging).  ``known`` is the
        stored object an update or patch starts from: the check skips the parts of ``body``
        equal to it (stored objects are clean)."""
        if not isinstance(body, dict):
            kind = "array" if isinstance(body, list) else type(body).__name__
            raise errors.bad_request(f"the object provided is unrecognized (must be of type {rt.kind}): "
                                     f"couldn't get version/kind; json parse error: json: cannot unmarshal "
                                     f"{kind} into Go value of type struct {{ APIVersion string "
                                     f'"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }}')
        kind = body.get("kind")
        api_version = body.get("apiVersion")
        if kind and kind != rt.kind:
            version = (api_version or rt.api_version).rpartition("/")[2]
            raise errors.bad_request(f'{kind} in version "{version}" cannot be handled as a {rt.kind}: '
                                     f"no kind \"{kind}\" is registered for version \"{api_version or rt.api_version}\"")
        if api_version and api_version != rt.api_version:
            raise errors.bad_request(f"the API version in the data ({api_version}) does not match the expected "
                                     f"API version ({rt.api_version})")
        findings = check_object(rt.api_version, rt.kind, body, known=known)
        if findings.problems:
            raise _type_error(rt, body, findings.problems[0], source)
        unknown = findings.unknown
        if unknown and opts.field_validation == "Strict":
            message = "strict decoding error: " + ", ".join(f'unknown field "{p}"' for p in unknown)
            raise errors.bad_request(_cannot_be_handled(rt, body, message) if source == "body" else message)
        if unknown and opts.field_validation != "Ignore":
            opts.warnings.extend(f'unknown field "{p}"' for p in unknown)
        for path in unknown:
            _drop_path(body, path)
        md = body.get("metadata")
        if md is None:
            md = {}
        # Canonical order, as Go serialises the struct: kind, apiVersion, metadata, the rest.
        obj: Obj = {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": md}
        for key, value in body.items():
            if key not in obj:
                obj[key] = value
        obj_ns = md.get("namespace") or ""
        if rt.namespaced:
            if not obj_ns:
                md["namespace"] = namespace
            elif namespace and obj_ns != namespace:
                raise errors.bad_request("the namespace of the provided object does not match the namespace "
                                         "sent on the request")
        elif obj_ns:
            md.pop("namespace", None)
        return obj

    # -- create -----------------------------------------------------------------------------------

    async def create(self, rt: ResourceType, namespace: str, body: Obj, *, opts: RequestOptions) -> Obj:
        await self._ready()
        return await self._create(rt, namespace, body, opts)

    async def _create(self, rt: ResourceType, namespace: str, body: Obj, opts: RequestOptions) -> Obj:
        if "create" not in rt.verbs:
            raise errors.method_not_allowed("create", rt.plural, rt.group)
        obj = self._decode(rt, namespace if rt.namespaced else "", body, opts)
        apply_defaults(rt.key, obj)
        return await self._create_new(rt, obj, opts)

    async def _create_new(self, rt: ResourceType, obj: Obj, opts: RequestOptions, *,
                          managed_fields_done: bool = False) -> Obj:
        """Admission → strategy → validation → store, for a decoded and defaulted object."""
        self.admission.check_namespace_for_create(rt, obj["metadata"].get("namespace") or "", obj)
        self.admission.admit_create(rt, obj)
        md = obj["metadata"]
        if md.get("resourceVersion"):
            raise errors.ApiError({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": "resourceVersion should not be set on objects to be created",
                                   "code": 500})
        now = self._now()
        strategy.prepare_for_create(rt, obj, now=now)
        generate = md.get("generateName") if not md.get("name") else None
        if generate:
            md["name"] = apimeta.generate_name(generate)
        errs = validate_create(rt.key, obj)
        if not errs and not md.get("name"):
            errs = [fielderr.required("metadata.name", "name or generateName is required")]
        if errs:
            raise _invalid(rt, md.get("name") or "", errs)
        if rt.key == SERVICES.key:
            assign_cluster_ip(self.cluster_ips, obj, dry_run=opts.dry_run)
        if not managed_fields_done:
            obj = record_managed_fields(None, obj, manager=_manager(opts), operation="Update", now=now,
                                        api_version=rt.api_version, kind=rt.kind)
        try:
            return await self._store_new(rt, obj, opts, generate)
        except BaseException:
            if rt.key == SERVICES.key and not opts.dry_run:
                release_cluster_ip(self.cluster_ips, obj)
            raise

    async def _store_new(self, rt: ResourceType, obj: Obj, opts: RequestOptions, generate: str | None) -> Obj:
        md = obj["metadata"]
        if opts.dry_run:
            if self.store.get(rt.key, md.get("namespace") or "", md["name"]) is not None and not generate:
                raise errors.already_exists(rt.plural, rt.group, md["name"])
            return obj
        for attempt in range(GENERATE_NAME_ATTEMPTS):
            try:
                return await self.store.create(rt.key, obj)
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

    def _check_subresource(self, rt: ResourceType, subresource: str | None, verb: str) -> None:
        if subresource is None:
            if verb not in rt.verbs:
                raise errors.method_not_allowed(verb, rt.plural, rt.group)
            return
        sub = rt.subresource(subresource)
        if sub is None:
            raise errors.path_not_found()
        if verb not in sub.verbs:
            raise errors.method_not_allowed(verb, f"{rt.plural}/{subresource}", rt.group)

    async def update(self, rt: ResourceType, namespace: str, name: str, body: Obj, *,
                     subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        """PUT.  Returns (object, created)."""
        await self._ready()
        self._check_subresource(rt, subresource, "update")
        ns = namespace if rt.namespaced else ""
        old = self.store.get(rt.key, ns, name)
        obj = self._decode(rt, ns, body, opts, known=old)
        body_name = obj["metadata"].get("name") or ""
        if body_name != name:
            raise errors.bad_request(f"the name of the object ({body_name}) does not match the name on the "
                                     f"URL ({name})")
        apply_defaults(rt.key, obj)
        if old is None:
            if subresource is not None or rt.key not in strategy.ALLOW_CREATE_ON_UPDATE:
                raise errors.not_found(rt.plural, rt.group, name)
            obj["metadata"].pop("resourceVersion", None)
            return await self._create_new(rt, obj, opts), True
        return await self._update_existing(rt, obj, old, subresource, opts), False

    async def _update_existing(self, rt: ResourceType, new: Obj, old: Obj, subresource: str | None,
                               opts: RequestOptions, *, managed_fields_done: bool = False) -> Obj:
        md = new["metadata"]
        name = old["metadata"]["name"]
        expected = _parse_rv(md.get("resourceVersion"))
        old_rv = apimeta.resource_version(old)
        if expected is not None and expected != old_rv:
            raise errors.stale(rt.plural, rt.group, name)
        release: list[str] = []
        if subresource is None:
            self.admission.admit_update(rt, new, old)
            if rt.key == SERVICES.key:
                carry_cluster_ip(new, old)
            strategy.prepare_for_update(rt, new, old)
            errs = validate_update(rt.key, new, old)
            if not errs and rt.key == SERVICES.key:
                release = update_cluster_ip(self.cluster_ips, new, old, dry_run=opts.dry_run)
        elif subresource == "status":
            strategy.prepare_for_status_update(rt, new, old)
            errs = validate_status_update(rt.key, new, old)
        else:  # namespaces/finalize
            strategy.prepare_for_finalize(new, old)
            errs = validate_namespace_finalize(new, old)
        if errs:
            raise _invalid(rt, name, errs)
        md["resourceVersion"] = old["metadata"].get("resourceVersion")
        if not managed_fields_done:
            if "managedFields" not in md and "managedFields" in old["metadata"]:
                md["managedFields"] = old["metadata"]["managedFields"]
            if new == old:
                return old  # nothing changed: no write, no event, same resourceVersion
            new = record_managed_fields(old, new, manager=_manager(opts), operation="Update", now=self._now(),
                                        api_version=rt.api_version, kind=rt.kind, subresource=subresource)
        if new == old:
            return old
        if opts.dry_run:
            return new
        try:
            stored = await self.store.update(rt.key, new, expected_rv=old_rv)
        except ConflictError:
            raise errors.stale(rt.plural, rt.group, name) from None
        except NotFoundError:
            raise errors.not_found(rt.plural, rt.group, name) from None
        for ip in release:
            self.cluster_ips.release(ip)
        if strategy.should_delete_during_update(rt, stored, old):
            try:
                deleted = await self.store.delete(rt.key, stored["metadata"].get("namespace") or "", name)
            except NotFoundError:
                return stored
            self._released(rt, deleted)
            return deleted
        return stored

    def _released(self, rt: ResourceType, deleted: Obj) -> None:
        """Resources held for an object that is now gone from the store."""
        if rt.key == SERVICES.key:
            release_cluster_ip(self.cluster_ips, deleted)

    # -- patch ------------------------------------------------------------------------------------

    async def patch(self, rt: ResourceType, namespace: str, name: str, patch: Any, patch_type: str, *,
                    subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        """patch_type: "json" | "merge" | "strategic" | "apply".  Returns (object, created)."""
        await self._ready()
        if patch_type not in PATCH_TYPES:
            raise errors.unsupported_media_type(patch_type)
        self._check_subresource(rt, subresource, "patch")
        errs: list[fielderr.FieldError] = []
        if patch_type == "apply" and not opts.field_manager:
            errs.append(fielderr.required("fieldManager", "is required for apply patch"))
        if patch_type != "apply" and opts.force:
            errs.append(fielderr.forbidden("force", "may not be specified for non-apply patch"))
        if errs:
            raise _options_invalid("PatchOptions", errs)
        ns = namespace if rt.namespaced else ""
        if patch_type == "apply":
            return await self._apply(rt, ns, name, patch, subresource, opts)
        for attempt in range(5):
            old = self.store.get(rt.key, ns, name)
            if old is None:
                raise errors.not_found(rt.plural, rt.group, name)
            if patch_type == "json":
                patched = apply_json_patch(old, patch)
            elif patch_type == "merge":
                patched = apply_merge_patch(old, patch)
            else:
                patched = apply_strategic_merge_patch(old, patch, api_version=rt.api_version, kind=rt.kind)
            patched = _private_copy(patched, old, restored=strategy.restored_fields(rt, subresource),
                                    status_write=subresource == "status")
            new = self._decode(rt, ns, patched, opts, source="patch", known=old)
            self._check_patched_name(new, name)
            apply_defaults(rt.key, new)
            explicit_rv = new["metadata"].get("resourceVersion") != old["metadata"].get("resourceVersion")
            try:
                return await self._update_existing(rt, new, old, subresource, opts), False
            except errors.ApiError as e:
                if e.reason != "Conflict" or explicit_rv or attempt == 4:
                    raise
                await asyncio.sleep(0)
        raise AssertionError("unreachable")

    @staticmethod
    def _check_patched_name(obj: Obj, name: str) -> None:
        patched_name = obj["metadata"].get("name") or ""
        if patched_name != name:
            raise errors.bad_request(f"the name of the object ({patched_name}) does not match the name on the "
                                     f"URL ({name})")

    async def _apply(self, rt: ResourceType, ns: str, name: str, applied: Any, subresource: str | None,
                     opts: RequestOptions) -> tuple[Obj, bool]:
        """Server-side apply: merge the configuration into the live object (or create it)."""
        if not isinstance(applied, dict):
            raise errors.bad_request("error decoding YAML: the apply configuration must be an object")
        config_md = applied.get("metadata") if isinstance(applied.get("metadata"), dict) else {}
        config_name = config_md.get("name") or ""
        if config_name != name:
            raise errors.bad_request(f"the name of the object ({config_name}) does not match the name on the "
                                     f"URL ({name})")
        typed_error = _typed_patch_error(rt, applied)
        if typed_error is not None:
            raise typed_error
        manager = opts.field_manager or _manager(opts)
        for attempt in range(5):
            old = self.store.get(rt.key, ns, name)
            if old is None and subresource is not None:
                raise errors.not_found(rt.plural, rt.group, name)
            merged = apply_server_side(old, applied, manager=manager, force=opts.force, now=self._now(),
                                       api_version=rt.api_version, kind=rt.kind, subresource=subresource)
            new = self._decode(rt, ns, merged, opts, source="apply", known=old)
            self._check_patched_name(new, name)
            apply_defaults(rt.key, new)
            if old is None:
                new["metadata"].pop("resourceVersion", None)
                return await self._create_new(rt, new, opts, managed_fields_done=True), True
            try:
                return await self._update_existing(rt, new, old, subresource, opts, managed_fields_done=True), False
            except errors.ApiError as e:
                if e.reason != "Conflict" or attempt == 4 or _is_field_conflict(e):
                    raise
                await asyncio.sleep(0)
        raise AssertionError("unreachable")

    # -- subresources: binding and eviction -------------------------------------------------------

    async def create_subresource(self, rt: ResourceType, namespace: str, name: str, subresource: str,
                                 body: Obj, *, opts: RequestOptions) -> tuple[int, Obj]:
        """pods/binding (201 + Status Success), pods/eviction (201 + Status Success or 429)."""
        await self._ready()
        self._check_subresource(rt, subresource, "create")
        if not isinstance(body, dict):
            raise errors.bad_request("the object provided is unrecognized")
        if rt.key == "pods" and subresource == "binding":
            await self._bind(namespace, name, body, opts)
        elif rt.key == "pods" and subresource == "eviction":
            await self._evict(namespace, name, body, opts)
        else:  # pragma: no cover - the registry lists no other creatable subresource
            raise errors.path_not_found()
        return 201, errors.success_status(201)

    async def _bind(self, namespace: str, name: str, binding: Obj, opts: RequestOptions) -> None:
        md = binding.get("metadata") if isinstance(binding.get("metadata"), dict) else {}
        if (md.get("name") or "") != name:
            raise errors.bad_request("name in URL does not match name in Binding object")
        target = binding.get("target") if isinstance(binding.get("target"), dict) else {}
        errs: list[fielderr.FieldError] = []
        if target.get("kind") not in (None, "", "Node"):
            errs.append(fielderr.not_supported("target.kind", target.get("kind"), ["Node", "<empty>"]))
        if not target.get("name"):
            errs.append(fielderr.required("target.name"))
        if errs:
            raise errors.ApiError(errors.status(500, "InternalError", fielderr.aggregate(errs)))
        node = target["name"]
        pods = resource("pods")
        for attempt in range(5):
            pod = self.store.get("pods", namespace, name)
            if pod is None:
                raise errors.not_found("pods", "", name)
            if md.get("uid") and md["uid"] != pod["metadata"].get("uid"):
                raise errors.conflict("pods/binding", "", name, f"Precondition failed: UID in precondition: "
                                      f"{md['uid']}, UID in object meta: {pod['metadata'].get('uid')}")
            if pod["metadata"].get("deletionTimestamp"):
                raise errors.conflict("pods/binding", "", name,
                                      f"pod {name} is being deleted, cannot be assigned to a host")
            spec = pod.get("spec") or {}
            if spec.get("nodeName"):
                raise errors.conflict("pods/binding", "", name,
                                      f'pod {name} is already assigned to node "{spec["nodeName"]}"')
            if spec.get("schedulingGates"):
                raise errors.conflict("pods/binding", "", name, f"pod {name} has non-empty .spec.schedulingGates")
            new = dict(pod)
            new["spec"] = dict(spec, nodeName=node)
            new_md = dict(pod["metadata"])
            if md.get("annotations"):
                new_md["annotations"] = dict(new_md.get("annotations") or {}, **md["annotations"])
            new["metadata"] = new_md
            new["status"] = _with_condition(pod.get("status") or {}, {"type": "PodScheduled", "status": "True"},
                                            self._now())
            new = record_managed_fields(pod, new, manager=_manager(opts), operation="Update", now=self._now(),
                                        api_version=pods.api_version, kind=pods.kind, subresource="binding")
            if opts.dry_run:
                return
            try:
                await self.store.update("pods", new, expected_rv=apimeta.resource_version(pod))
                return
            except ConflictError:
                if md.get("resourceVersion") or attempt == 4:
                    raise errors.stale("pods/binding", "", name) from None
            except NotFoundError:
                raise errors.not_found("pods", "", name) from None

    async def _evict(self, namespace: str, name: str, eviction: Obj, opts: RequestOptions) -> None:
        md = eviction.get("metadata") if isinstance(eviction.get("metadata"), dict) else {}
        if (md.get("name") or "") != name:
            raise errors.bad_request("name in URL does not match name in Eviction object")
        delete_options = eviction.get("deleteOptions")
        delete_options = dict(delete_options) if isinstance(delete_options, dict) else {}
        if opts.dry_run:
            delete_options["dryRun"] = ["All"]
        pods = resource("pods")
        pod = self.store.get("pods", namespace, name)
        if pod is None:
            raise errors.not_found("pods", "", name)
        if pod["metadata"].get("deletionTimestamp"):
            return  # already being deleted: nothing to check, nothing to do
        # No PodDisruptionBudgets are served, so every eviction is allowed.
        if not opts.dry_run:
            new = dict(pod)
            new["status"] = _with_condition(pod.get("status") or {}, {
                "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
                "message": "Eviction API: evicting"}, self._now())
            new["metadata"] = dict(pod["metadata"])
            try:
                await self._update_existing(pods, new, pod, "status",
                                            RequestOptions(field_manager="kube-apiserver", user=opts.user))
            except errors.ApiError as e:
                if e.code == 404:
                    return
                raise
        try:
            await self.delete(pods, namespace, name, options=delete_options, opts=opts)
        except errors.ApiError as e:
            if e.code != 404:
                raise

    # -- delete -----------------------------------------------------------------------------------

    def _delete_options(self, options: Obj | None, opts: RequestOptions) -> Obj:
        options = dict(options) if isinstance(options, dict) else {}
        errs: list[fielderr.FieldError] = []
        policy = options.get("propagationPolicy")
        if policy is not None:
            if options.get("orphanDependents") is not None:
                errs.append(fielderr.invalid("propagationPolicy", policy,
                                             "orphanDependents and deletionPropagation cannot be both set"))
            if policy not in PROPAGATION_POLICIES:
                errs.append(fielderr.not_supported("propagationPolicy", policy, list(PROPAGATION_POLICIES)))
        dry_run = options.get("dryRun") or []
        if isinstance(dry_run, str):
            dry_run = [dry_run]
        for i, value in enumerate(dry_run):
            if value != "All":
                errs.append(fielderr.not_supported(f"dryRun[{i}]" if len(dry_run) > 1 else "dryRun", value, ["All"]))
        grace = options.get("gracePeriodSeconds")
        if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int)):
            errs.append(fielderr.invalid("gracePeriodSeconds", grace, "must be an integer"))
        if errs:
            raise _options_invalid("DeleteOptions", errs)
        if dry_run:
            opts.dry_run = True
        if grace is not None and grace < 0:
            options["gracePeriodSeconds"] = 1
        return options

    def _check_preconditions(self, rt: ResourceType, obj: Obj, options: Obj) -> None:
        pre = options.get("preconditions")
        if not isinstance(pre, dict):
            return
        md = obj["metadata"]
        name = md["name"]

        def conflict(why: str) -> errors.ApiError:
            # Upstream names the kind here (Kind.group), not the resource as other conflicts do.
            resource_name = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
            details = {"name": name, "group": rt.group, "kind": rt.kind} if rt.group else {"name": name, "kind": rt.kind}
            return errors.ApiError(errors.status(
                409, "Conflict", f'Operation cannot be fulfilled on {resource_name} "{name}": {why}', details))

        uid = pre.get("uid")
        if uid and uid != md.get("uid"):
            raise conflict(f"the UID in the precondition ({uid}) does not match the UID in record ({md.get('uid')}). "
                           "The object might have been deleted and then recreated")
        rv = pre.get("resourceVersion")
        if rv and rv != md.get("resourceVersion"):
            raise conflict(f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in "
                           f"record ({md.get('resourceVersion')}). The object might have been modified")

    async def delete(self, rt: ResourceType, namespace: str, name: str, *, options: Obj | None = None,
                     opts: RequestOptions) -> tuple[int, Obj]:
        """Returns (http code, body): the object (200, or 202 while finalizers/graceful) or a Status."""
        await self._ready()
        self._check_subresource(rt, None, "delete")
        options = self._delete_options(options, opts)
        ns = namespace if rt.namespaced else ""
        obj = self.store.get(rt.key, ns, name)
        if obj is None:
            raise errors.not_found(rt.plural, rt.group, name)
        self.admission.check_delete(rt, name)
        self._check_preconditions(rt, obj, options)
        if rt.key == NAMESPACES.key:
            result = await self._delete_namespace(obj, options, opts)
        else:
            result = await self._delete_object(rt, obj, options, opts)
        code = 200
        if options.get("orphanDependents") is False and result.get("kind") != "Status" and \
                self.store.get(rt.key, ns, name) is not None:
            code = 202
        return code, result

    async def _delete_namespace(self, ns_obj: Obj, options: Obj, opts: RequestOptions) -> Obj:
        md = ns_obj["metadata"]
        if not md.get("deletionTimestamp"):
            new = dict(ns_obj)
            new_md = dict(md, deletionTimestamp=self._now())
            finalizers = list(md.get("finalizers") or ())
            orphan = _orphan_wanted(options, strategy.ORPHAN_FINALIZER in finalizers)
            if orphan is False and strategy.ORPHAN_FINALIZER in finalizers:
                finalizers.remove(strategy.ORPHAN_FINALIZER)
            elif orphan and strategy.ORPHAN_FINALIZER not in finalizers:
                finalizers.append(strategy.ORPHAN_FINALIZER)
            if finalizers:
                new_md["finalizers"] = finalizers
            else:
                new_md.pop("finalizers", None)
            new["metadata"] = new_md
            new["status"] = dict(ns_obj.get("status") or {}, phase="Terminating")
            if opts.dry_run:
                return new
            try:
                return await self.store.update(NAMESPACES.key, new, expected_rv=apimeta.resource_version(ns_obj))
            except ConflictError:
                raise errors.stale("namespaces", "", md["name"]) from None
        if (ns_obj.get("spec") or {}).get("finalizers"):
            return ns_obj  # the namespace controller finishes; deletion follows its finalize
        return await self._delete_object(NAMESPACES, ns_obj, options, opts)

    async def _delete_object(self, rt: ResourceType, obj: Obj, options: Obj, opts: RequestOptions) -> Obj:
        """``Store.Delete``: graceful deletion, GC finalizers, then removal from storage."""
        md = obj["metadata"]
        name = md["name"]
        grace = options.get("gracePeriodSeconds")
        graceful = False
        new_md = dict(md)
        if md.get("deletionTimestamp"):
            current = md.get("deletionGracePeriodSeconds")
            if strategy.graceful_delete_period(rt, obj, grace) is not None and current:
                if grace is None or grace >= current:
                    return self._deleted_answer(rt, obj)  # graceful deletion pending: nothing to change
                # Only a shorter grace period may be given; the deadline moves earlier.
                deadline = parse_rfc3339(md["deletionTimestamp"]) - current + grace
                new_md["deletionTimestamp"] = format_rfc3339(deadline)
                new_md["deletionGracePeriodSeconds"] = grace
                graceful = True
        else:
            period = strategy.graceful_delete_period(rt, obj, grace)
            if period is not None:
                graceful = True
                new_md["deletionTimestamp"] = format_rfc3339(self.clock.now() + period)
                new_md["deletionGracePeriodSeconds"] = period
                if md.get("generation"):
                    new_md["generation"] = int(md["generation"]) + 1
        finalizers = list(md.get("finalizers") or ())
        gc_finalizers = _gc_finalizers(finalizers, options)
        update_finalizers = gc_finalizers != finalizers and set(gc_finalizers) != set(finalizers)
        if graceful or finalizers or update_finalizers:
            if update_finalizers:
                finalizers = gc_finalizers
                if finalizers:
                    new_md["finalizers"] = finalizers
                else:
                    new_md.pop("finalizers", None)
            if finalizers or (graceful and new_md.get("deletionGracePeriodSeconds")):
                if not graceful:
                    # markAsDeleting: finalizers pending, nothing graceful to wait for.
                    if not md.get("deletionTimestamp") and md.get("generation"):
                        new_md["generation"] = int(md["generation"]) + 1
                    now = self._now()
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
                    return await self.store.update(rt.key, new, expected_rv=apimeta.resource_version(obj))
                except ConflictError:
                    raise errors.stale(rt.plural, rt.group, name) from None
                except NotFoundError:
                    raise errors.not_found(rt.plural, rt.group, name) from None
        if opts.dry_run:
            return self._deleted_answer(rt, obj)
        try:
            deleted = await self.store.delete(rt.key, md.get("namespace") or "", name,
                                              expected_uid=md.get("uid"))
        except NotFoundError:
            raise errors.not_found(rt.plural, rt.group, name) from None
        except ConflictError:
            raise errors.stale(rt.plural, rt.group, name) from None
        self._released(rt, deleted)
        return self._deleted_answer(rt, deleted)

    @staticmethod
    def _deleted_answer(rt: ResourceType, obj: Obj) -> Obj:
        if rt.key in strategy.RETURN_DELETED_OBJECT:
            return obj
        md = obj["metadata"]
        details: Obj = {"name": md["name"]}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        details["uid"] = md.get("uid")
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}

    async def delete_collection(self, rt: ResourceType, namespace: str | None, *,
                                label_selector: str | None = None, field_selector: str | None = None,
                                options: Obj | None = None, opts: RequestOptions) -> Obj:
        await self._ready()
        if "deletecollection" not in rt.verbs:
            raise errors.method_not_allowed("deletecollection", rt.plural, rt.group)
        options = self._delete_options(options, opts)
        predicate, _ = self.predicate(rt, label_selector, field_selector)
        result = self.store.list(rt.key, namespace=namespace if rt.namespaced else None, predicate=predicate)
        deleted: list[Obj] = []
        for obj in result.items:
            md = obj["metadata"]
            try:
                await self.delete(rt, md.get("namespace") or "", md["name"], options=dict(options), opts=opts)
            except errors.ApiError as e:
                if e.code != 404:
                    raise
            deleted.append(obj)
        return {"kind": rt.list_kind, "apiVersion": rt.api_version,
                "metadata": {"resourceVersion": str(self.store.current_rv())}, "items": deleted}

    # -- watch ------------------------------------------------------------------------------------

    def watch(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
              field_selector: str | None = None, resource_version: str | None = None,
              allow_bookmarks: bool = False, send_initial_events: bool | None = None,
              timeout_seconds: float | None = None, resource_version_match: str | None = None
              ) -> AsyncIterator[WatchEvent]:
        """Async iterator of ``storage.base.WatchEvent`` (type, object, rv, encoded-cache).

        Bad selectors raise ApiError here, before any event; a resourceVersion older than the
        history window yields one ERROR event (410 Expired) and ends, as upstream streams it."""
        batches = self.watch_batches(
            rt, namespace, label_selector=label_selector, field_selector=field_selector,
            resource_version=resource_version, allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events, timeout_seconds=timeout_seconds,
            resource_version_match=resource_version_match)
        return _one_by_one(batches)

    async def wait_for_resource_version(self, resource_version: str | None) -> None:
        """A watch from a resourceVersion the store has not reached yet waits for it up to
        :data:`FRESHNESS_WAIT` seconds (the cacher's ``waitUntilFreshAndBlock``), then fails with
        504 ``Too large resource version``.  Called before the watch stream starts, so the
        client gets the Status as the response, not as a stream event."""
        requested = _parse_rv(resource_version)
        if requested is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FRESHNESS_WAIT
        while (current := self.store.current_rv()) < requested:
            if loop.time() >= deadline:
                raise _too_large_rv(requested, current)
            await asyncio.sleep(FRESHNESS_POLL)

    def watch_batches(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
                      field_selector: str | None = None, resource_version: str | None = None,
                      allow_bookmarks: bool = False, send_initial_events: bool | None = None,
                      timeout_seconds: float | None = None, resource_version_match: str | None = None
                      ) -> AsyncIterator[list[WatchEvent]]:
        """:meth:`watch` in batches: each item is a non-empty list of the events that were ready
        together (in order), so that a transport can send them in one write.  Flattened, the
        batches are exactly :meth:`watch`'s events.  Errors are raised as in :meth:`watch`."""
        predicate, _ = self.predicate(rt, label_selector, field_selector)
        self._check_watch_options(resource_version_match, send_initial_events)
        requested = _parse_rv(resource_version)
        if send_initial_events is None:
            initial = requested is None or requested == 0
        else:
            initial = send_initial_events
        if timeout_seconds is None or timeout_seconds <= 0:
            timeout_seconds = MIN_WATCH_TIMEOUT * (1 + random.random())
        ns = namespace if rt.namespaced else None
        return self._watch_batches(rt, ns, predicate, requested, initial,
                                   bool(allow_bookmarks and send_initial_events), allow_bookmarks,
                                   float(timeout_seconds))

    async def _watch_batches(self, rt: ResourceType, ns: str | None, predicate: Predicate | None,
                             requested: int | None, initial: bool, end_bookmark: bool, bookmarks: bool,
                             timeout: float) -> AsyncIterator[list[WatchEvent]]:
        await self._ready()
        store = self.store
        initial_items: list[Obj] = []
        try:
            if initial:
                # List and open the watch with no await in between: nothing can slip through.
                result = store.list(rt.key, namespace=ns, predicate=predicate)
                initial_items = result.items
                since = result.rv
                watch = store.watch(rt.key, namespace=ns, predicate=predicate, since_rv=since)
            else:
                since = requested if requested else store.current_rv()
                watch = store.watch(rt.key, namespace=ns, predicate=predicate, since_rv=since)
        except ExpiredError as e:
            yield [WatchEvent("ERROR", errors.gone(str(e)).status, 0, rt.key)]
            return
        loop = asyncio.get_running_loop()
        timer = loop.call_later(timeout, watch.stop)
        try:
            for start in range(0, len(initial_items), INITIAL_EVENTS_BATCH):
                yield [WatchEvent("ADDED", obj, apimeta.resource_version(obj), rt.key)
                       for obj in initial_items[start:start + INITIAL_EVENTS_BATCH]]
            initial_items = []
            if end_bookmark:
                yield [self._bookmark(rt, since, initial_end=True)]
            wait = getattr(watch, "wait", None)
            drain = getattr(watch, "drain", None)
            if wait is None or drain is None:  # a Watch that only iterates
                async for event in _with_bookmarks(watch, self, rt, bookmarks):
                    yield [event]
                return
            if not bookmarks:
                while True:
                    await wait()
                    batch = drain()
                    if not batch:
                        return  # stopped
                    yield batch
            interval = self.bookmark_interval
            next_bookmark = loop.time() + interval
            while True:
                await wait(next_bookmark - loop.time())
                batch = drain()
                if batch:
                    yield batch
                    continue
                if watch.stopped:  # type: ignore[attr-defined]
                    return
                # Nothing queued and the deadline passed (a stale wake-up just loops).
                if loop.time() >= next_bookmark:
                    next_bookmark = loop.time() + interval
                    yield [self._bookmark(rt, store.current_rv())]
        finally:
            timer.cancel()
            watch.stop()

    @staticmethod
    def _bookmark(rt: ResourceType, rv: int, *, initial_end: bool = False) -> WatchEvent:
        md: Obj = {"resourceVersion": str(rv)}
        if initial_end:
            md["annotations"] = {INITIAL_EVENTS_END: "true"}
        return WatchEvent("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version, "metadata": md}, rv, rt.key)


# ---------------------------------------------------------------------------------------------
# helpers


async def _one_by_one(batches: AsyncIterator[list[WatchEvent]]) -> AsyncIterator[WatchEvent]:
    """The events of a batched watch one at a time; closing it closes the batches at once."""
    try:
        async for batch in batches:
            for event in batch:
                yield event
    finally:
        await batches.aclose()  # type: ignore[attr-defined]


async def _with_bookmarks(watch: Any, service: ApiService, rt: ResourceType,
                          bookmarks: bool) -> AsyncIterator[WatchEvent]:
    """Events of a Watch that offers only iteration, with a bookmark after each quiet interval."""
    iterator = watch.__aiter__()
    if not bookmarks:
        async for event in iterator:
            yield event
        return
    loop = asyncio.get_running_loop()
    next_bookmark = loop.time() + service.bookmark_interval
    pending: asyncio.Future[WatchEvent] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(iterator.__anext__())
            delay = next_bookmark - loop.time()
            done = (await asyncio.wait((pending,), timeout=delay))[0] if delay > 0 else set()
            if pending in done:
                try:
                    event = pending.result()
                except StopAsyncIteration:
                    return
                pending = None
                yield event
                continue
            next_bookmark = loop.time() + service.bookmark_interval
            yield service._bookmark(rt, service.store.current_rv())
    finally:
        if pending is not None:
            pending.cancel()


def _private_copy(patched: Obj, old: Obj, *, restored: tuple[str, ...], status_write: bool = False) -> Obj:
    """A copy of a patch result that the write pipeline may mutate, leaving out what it would
    copy for nothing.

    Patch results share the subtrees a patch left alone with the (immutable) stored object, and
    decoding, defaults, admission and the strategy change their input in place, so the result
    must be copied.  A full deep copy of a pod status heartbeat copied the whole spec and every
    managedFields tree; two parts the patch left untouched (the very objects of ``old``) are
    therefore not copied:

    * top-level fields in ``restored`` (:func:`strategy.restored_fields`), which the strategy
      resets to the stored value before anything reads them: an empty object stands in for them
      at the same position (so the key order is unchanged), and whatever defaulting adds to it
      is discarded with it;
    * ``metadata.managedFields``, which no stage mutates and which the service replaces by the
      stored entries (``record_managed_fields``): the stored list itself is kept.

    A ``status_write`` (``*/status``) is copied one level deep only — the object and each of its
    top-level objects (``metadata``, ``status``, ...), the restored ones as above: on that path
    every stage changes those levels only (the strategy keeps system metadata, owner references
    and the spec; defaults set top-level status fields such as a node's ``allocatable``;
    decoding drops unknown fields, which only the patch's own fresh containers can hold).  So
    what the patch left alone stays the very object of ``old``, and the type check,
    managedFields and structural sharing skip it by identity instead of comparing copies.
    """
    if not isinstance(patched, dict):
        return apimeta.deep_copy(patched)  # not an object: decoding rejects it
    if status_write:
        shallow = {key: dict(value) if type(value) is dict else value for key, value in patched.items()}
        for key in restored:  # as below: a placeholder when untouched, else a full copy (defaults change it)
            if key in shallow:
                value = patched[key]
                untouched = value is not None and key in old and value is old[key]
                shallow[key] = {} if untouched else apimeta.deep_copy(value)
        return shallow
    shell = dict(patched)
    for key in restored:
        if key in shell and key in old and shell[key] is old[key]:
            shell[key] = None
    md = shell.get("metadata")
    managed = md.get("managedFields") if isinstance(md, dict) else None
    keep_managed = managed is not None and managed is (old.get("metadata") or {}).get("managedFields")
    if keep_managed:
        shell["metadata"] = dict(md, managedFields=None)  # type: ignore[arg-type]
    copy: Obj = apimeta.deep_copy(shell)
    for key in restored:
        if key in shell and shell[key] is None and patched[key] is not None:
            copy[key] = {}
    if keep_managed:
        copy["metadata"]["managedFields"] = managed
    return copy


def _with_condition(status: Obj, condition: Obj, now: str) -> Obj:
    """``podutil.UpdatePodCondition``: replace the condition of that type, keeping the transition
    time when the status did not change."""
    status = dict(status)
    conditions = list(status.get("conditions") or ())
    full = {"type": condition["type"], "status": condition["status"], "lastProbeTime": None,
            "lastTransitionTime": now}
    for key in ("reason", "message"):
        if condition.get(key):
            full[key] = condition[key]
    for i, existing in enumerate(conditions):
        if isinstance(existing, dict) and existing.get("type") == condition["type"]:
            if existing.get("status") == condition["status"]:
                full["lastTransitionTime"] = existing.get("lastTransitionTime")
            conditions[i] = full
            break
    else:
        conditions.append(full)
    status["conditions"] = conditions
    return status


def _is_field_conflict(error: errors.ApiError) -> bool:
    """An apply conflict between field managers (retrying cannot help), not a stale write."""
    causes = (error.status.get("details") or {}).get("causes") or ()
    return any(c.get("reason") == "FieldManagerConflict" for c in causes)


def _cluster_ips(svc: Obj) -> list[str]:
    spec = svc.get("spec") or {}
    return list(spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []))


def _orphan_wanted(options: Obj, has_orphan: bool) -> bool:
    if options.get("orphanDependents") is not None:
        return bool(options["orphanDependents"])
    policy = options.get("propagationPolicy")
    if policy is not None:
        return policy == "Orphan"
    return has_orphan


def _gc_finalizers(finalizers: list[str], options: Obj) -> list[str]:
    """``deletionFinalizersForGarbageCollection`` with every kind's default policy being
    background cascading (``DeleteDependents`` through apps/v1, none elsewhere)."""
    orphan = strategy.ORPHAN_FINALIZER
    foreground = strategy.FOREGROUND_FINALIZER
    if options.get("orphanDependents") is not None:
        want_orphan = bool(options["orphanDependents"])
        want_foreground = False
    elif options.get("propagationPolicy") is not None:
        want_orphan = options["propagationPolicy"] == "Orphan"
        want_foreground = options["propagationPolicy"] == "Foreground"
    else:
        want_orphan = orphan in finalizers
        want_foreground = foreground in finalizers and not want_orphan
    out = [f for f in finalizers if f not in (orphan, foreground)]
    if want_orphan:
        out.append(orphan)
    if want_foreground:
        out.append(foreground)
    return out

