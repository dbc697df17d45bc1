"""CustomResourceDefinitions: their storage (``pkg/registry/customresourcedefinition``: strategy
and the two-step delete of ``etcd.go``) and their lifecycle — the naming, establishing and
finalizing controllers of ``pkg/controller/{status,establish,finalizer}`` and the serving of
``pkg/apiserver/customresource_handler.go``.

Why the lifecycle runs inside the storage rather than as controllers over informers: upstream's
apiextensions controllers live in the API server process and act on every CRD change within
milliseconds; here a CRD write calls :meth:`CustomResourceServing.sync` before it answers, so
``kubectl apply -f crd.yaml && kubectl apply -f cr.yaml`` works at once (the CRD is Established
and its versions routed by the time the first answer is back), without a race to wait out.
The rules are upstream's:

* **names** (``NamingConditionController``): each requested name (plural, singular, short
  names, kind, listKind) is accepted unless another CRD of the group has accepted it; a
  conflict is ``NamesAccepted=False`` with reason ``PluralConflict``/``SingularConflict``/
  ``ShortNamesConflict``/``KindConflict``/``ListKindConflict`` and ``"<name>" is already in use``;
  ``Established`` stays ``False``/``NotAccepted`` until all names are accepted, then becomes
  ``True``/``InitialNamesAccepted`` and the versions are served;
* **serving**: every served version gets a :class:`ResourceType` (from ``status.acceptedNames``)
  registered in ``api.registry`` (discovery, routing, name resolution) and a storage registered
  in the server's :class:`Registry`; its compiled schema, defaulter and printer columns are
  registered where the decoder, defaulting and tables look;
* **delete** (``etcd.go`` + ``finalizer`` controller): the first DELETE adds the
  ``customresourcecleanup.apiextensions.k8s.io`` finalizer and ``Terminating=True``
  (``InstanceDeletionPending``); the cleanup then deletes every custom object
  (``InstanceDeletionInProgress``; creates are refused meanwhile), waits for them to be gone
  (their own finalizers included), and removes the finalizer, which deletes the CRD; its
  resource is unregistered (404 afterwards);
* **restart**: the stored CRDs are served again at start-up, and an interrupted cleanup resumes.

CEL rules (``x-kubernetes-validations``) are stored and published but not evaluated: there is
no CEL interpreter among the dependencies, and refusing every CRD that has them would refuse
most real operators' CRDs (calico's, prometheus-operator's).  Silently accepting objects a
real server refuses would mislead, so every create or spec change of a CRD with CEL rules
answers with a Warning saying they are not enforced (kubectl prints it).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from everynode.api import errors
from everynode.api import field_errors as fielderr
from everynode.api import registry as apiregistry
from everynode.api import schema as apischema
from everynode.api.apiextensions import crd as crds
from everynode.api.apiextensions.jsonpath import find
from everynode.api.apiextensions.structural import apply_defaults, compile_node
from everynode.api.defaults import RUNTIME_DEFAULTERS
from everynode.api.registry import ResourceType, Subresource, version_rank
from everynode.apiserver import openapi, tables
from everynode.apiserver.registry.apiextensions.customresource import (
    Column,
    CustomResourceStore,
    ServedVersion,
)
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.generic import Created, ResourceStore
from everynode.apiserver.registry.options import RequestOptions
from everynode.apiserver.registry.strategy import (
    StatusStrategy,
    Strategy,
    keep,
)

if TYPE_CHECKING:
    from everynode.apiserver.registry.table import Registry

log = logging.getLogger(__name__)

Obj = dict[str, Any]

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"
CLEANUP_POLL = 0.05  # seconds between looks at the remaining custom objects of a terminating CRD


# --------------------------------------------------------------------------- strategy

class CustomResourceDefinitionStrategy(Strategy):
    """``customresourcedefinition.strategy``: status reset on create, generation on spec
    change, ``status.storedVersions`` kept, upstream's validation."""

    def __init__(self) -> None:
        super().__init__(keeps_status=True, subresources={"status": CustomResourceDefinitionStatusStrategy()})

    def prepare_for_create(self, obj: Obj) -> None:
        crds.default_crd(obj)
        obj["status"] = {"acceptedNames": {"kind": "", "plural": ""}, "conditions": [],
                         "storedVersions": [v for v in (crds.storage_version(obj),) if v]}
        obj["metadata"]["generation"] = 1

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        crds.default_crd(new)
        keep(new, old, "status")
        if new.get("spec") != old.get("spec"):
            new["metadata"]["generation"] = int(old["metadata"].get("generation") or 0) + 1
        storage = crds.storage_version(new)
        stored = list((new.get("status") or {}).get("storedVersions") or ())
        if storage and storage not in stored:
            new["status"] = dict(new.get("status") or {}, storedVersions=[*stored, storage])

    def validate_create(self, rt: ResourceType, obj: Obj) -> list[fielderr.FieldError]:
        return crds.validate_crd_create(obj)

    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[fielderr.FieldError]:
        return crds.validate_crd_update(new, old)


class CustomResourceDefinitionStatusStrategy(StatusStrategy):
    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[fielderr.FieldError]:
        return crds.validate_crd_status_update(new, old)


# --------------------------------------------------------------------------- storage

class CustomResourceDefinitionStore(ResourceStore):
    """The CRD storage; every write hands the CRD to :attr:`serving` before answering."""

    def __init__(self, rt: ResourceType, ctx: ServerContext) -> None:
        super().__init__(rt, ctx, CustomResourceDefinitionStrategy())
        self.serving: CustomResourceServing | None = None

    async def create_new(self, obj: Obj, opts: RequestOptions, *, managed_fields_done: bool = False,
                         on_created: Created | None = None) -> Obj:
        _warn_about_cel(obj, opts)
        created = await super().create_new(obj, opts, managed_fields_done=managed_fields_done, on_created=on_created)
        if not opts.dry_run and self.serving is not None:
            await self.serving.sync(created["metadata"]["name"])
        return created

    async def update_existing(self, new: Obj, old: Obj, subresource: str | None, opts: RequestOptions, *,
                              managed_fields_done: bool = False) -> Obj:
        if subresource is None and new.get("spec") != old.get("spec"):
            _warn_about_cel(new, opts)
        stored = await super().update_existing(new, old, subresource, opts, managed_fields_done=managed_fields_done)
        if not opts.dry_run and self.serving is not None and stored is not old:
            await self.serving.sync(old["metadata"]["name"])
        return stored

    async def _delete(self, obj: Obj, options: Obj, opts: RequestOptions) -> Obj:
        """The first DELETE: finalizer and Terminating condition (``etcd.go`` ``Delete``)."""
        md = obj["metadata"]
        if not md.get("deletionTimestamp") and not opts.dry_run:
            finalizers = list(md.get("finalizers") or ())
            if CLEANUP_FINALIZER not in finalizers:
                finalizers.append(CLEANUP_FINALIZER)
            new = dict(obj, metadata=dict(md, finalizers=finalizers))
            new["status"] = _with_condition(obj, "Terminating", "True", "InstanceDeletionPending",
                                            "CustomResourceDefinition marked for deletion; CustomResource "
                                            "deletion will begin soon", self.ctx.now())
            obj = await self.ctx.store.update(self.rt.key, new, expected_rv=int(md["resourceVersion"]))
        result = await self._delete_object(obj, options, opts)
        if self.serving is not None and not opts.dry_run:
            await self.serving.sync(md["name"])
        return result


CEL_WARNING = ("x-kubernetes-validations rules are stored and published but not evaluated by everynode "
               "(it has no CEL interpreter): objects that break them are accepted")


def _warn_about_cel(crd: Obj, opts: RequestOptions) -> None:
    """One Warning header when the CRD carries CEL rules this server does not enforce."""
    if _has_cel(crd.get("spec")) and CEL_WARNING not in opts.warnings:
        opts.warnings.append(CEL_WARNING)


def _has_cel(node: Any) -> bool:
    if isinstance(node, dict):
        return "x-kubernetes-validations" in node or any(_has_cel(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_cel(v) for v in node)
    return False


def _with_condition(crd: Obj, type_: str, status: str, reason: str, message: str, now: str) -> Obj:
    """``SetCRDCondition``: the transition time moves only when the status changes."""
    st = dict(crd.get("status") or {})
    conditions = [dict(c) for c in st.get("conditions") or ()]
    for c in conditions:
        if c.get("type") == type_:
            if c.get("status") != status:
                c["lastTransitionTime"] = now
            c.update(status=status, reason=reason, message=message)
            break
    else:
        conditions.append({"type": type_, "status": status, "lastTransitionTime": now, "reason": reason,
                           "message": message})
    st["conditions"] = conditions
    return st


# --------------------------------------------------------------------------- lifecycle & serving

class CustomResourceServing:
    """Names, establishing, serving and cleanup of every CRD of one server (module docstring)."""

    def __init__(self, ctx: ServerContext, registry: Registry, crd_rt: ResourceType) -> None:
        self.ctx = ctx
        self.registry = registry
        self.crd_rt = crd_rt
        self._served: dict[str, tuple[ResourceType, ...]] = {}  # CRD name → its registered versions
        self._cleanups: dict[str, asyncio.Task[None]] = {}
        self._syncing: set[str] = set()

    def _crd(self, name: str) -> Obj | None:
        return self.ctx.store.get(self.crd_rt.key, "", name)

    async def restore(self) -> None:
        """Serve the stored CRDs again (start-up)."""
        for crd in self.ctx.store.list(self.crd_rt.key).items:
            await self.sync(crd["metadata"]["name"])

    async def sync(self, name: str) -> None:
        """Bring one CRD's status and serving up to date with its stored state."""
        if name in self._syncing:
            return  # our own status writes come back here
        self._syncing.add(name)
        try:
            await self._sync(name)
        finally:
            self._syncing.discard(name)

    async def _sync(self, name: str) -> None:
        crd = self._crd(name)
        if crd is None:
            self._unserve(name)
            return
        if crd["metadata"].get("deletionTimestamp"):
            self._serve(crd)  # still served while its objects are deleted
            if name not in self._cleanups and CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or ()):
                self._cleanups[name] = asyncio.get_running_loop().create_task(self._cleanup(name))
            return
        status = self._names_and_conditions(crd)
        if status != crd.get("status"):
            crd = await self._write_status(crd, status)
            if crd is None:
                return
        if crds.is_established(crd):
            self._serve(crd)
        else:
            self._unserve(name)

    def _names_and_conditions(self, crd: Obj) -> Obj:
        """``calculateNamesAndConditions`` plus the establishing controller's step."""
        spec = crd.get("spec") or {}
        group = spec.get("group") or ""
        resources: set[str] = set()
        kinds: set[str] = set()
        for other in self.ctx.store.list(self.crd_rt.key).items:
            if other["metadata"]["name"] == crd["metadata"]["name"] or (other.get("spec") or {}).get("group") != group:
                continue
            accepted = (other.get("status") or {}).get("acceptedNames") or {}
            resources.update(n for n in (accepted.get("plural"), accepted.get("singular"), *(accepted.get("shortNames")
                                                                                           or ())) if n)
            kinds.update(n for n in (accepted.get("kind"), accepted.get("listKind")) if n)
        requested = spec.get("names") or {}
        accepted = dict((crd.get("status") or {}).get("acceptedNames") or {})
        new_names = dict(accepted)
        reason = message = ""

        def fresh(wanted: str, current: str, used: set[str]) -> str:
            return "" if wanted == current or wanted not in used else f'"{wanted}" is already in use'

        for key, used, why in (("plural", resources, "PluralConflict"), ("singular", resources, "SingularConflict")):
            problem = fresh(requested.get(key) or "", accepted.get(key) or "", used)
            if problem:
                reason, message = why, problem
            elif requested.get(key):
                new_names[key] = requested[key]
        wanted_short = list(requested.get("shortNames") or ())
        if wanted_short != list(accepted.get("shortNames") or ()):
            mine = set(accepted.get("shortNames") or ())
            problems = [p for s in wanted_short if s not in mine and (p := fresh(s, "", resources))]
            if problems:
                reason, message = "ShortNamesConflict", problems[0] if len(problems) == 1 else f"[{', '.join(problems)}]"
            elif wanted_short:
                new_names["shortNames"] = wanted_short
            else:
                new_names.pop("shortNames", None)
        for key, why in (("kind", "KindConflict"), ("listKind", "ListKindConflict")):
            problem = fresh(requested.get(key) or "", accepted.get(key) or "", kinds)
            if problem:
                reason, message = why, problem
            elif requested.get(key):
                new_names[key] = requested[key]
        if requested.get("categories"):
            new_names["categories"] = list(requested["categories"])
        else:
            new_names.pop("categories", None)
        now = self.ctx.now()
        status = dict(crd.get("status") or {}, acceptedNames=new_names)
        probe = dict(crd, status=status)
        if reason:
            status = _with_condition(probe, "NamesAccepted", "False", reason, message, now)
        else:
            status = _with_condition(probe, "NamesAccepted", "True", "NoConflicts", "no conflicts found", now)
        probe = dict(crd, status=status)
        established = crds.condition(crd, "Established")
        if established is None or established.get("status") != "True":
            if reason:
                status = _with_condition(probe, "Established", "False", "NotAccepted", "not all names are accepted",
                                         now)
            else:
                status = _with_condition(probe, "Established", "True", "InitialNamesAccepted",
                                         "the initial names have been accepted", now)
        if _same_conditions(status, crd.get("status") or {}):
            status["conditions"] = (crd.get("status") or {}).get("conditions")
        return status

    async def _write_status(self, crd: Obj, status: Obj) -> Obj | None:
        new = dict(crd, status=status)
        store = self.registry.storage(self.crd_rt)
        opts = RequestOptions(field_manager="kube-apiserver", field_validation="Ignore")
        try:
            return await store.update_existing(new, crd, "status", opts)
        except errors.ApiError as e:
            if e.code in (404, 409):
                return None
            raise

    # -- serving ----------------------------------------------------------------------------------

    def _serve(self, crd: Obj) -> None:
        name = crd["metadata"]["name"]
        accepted = (crd.get("status") or {}).get("acceptedNames") or {}
        if not accepted.get("plural") or not accepted.get("kind"):
            return
        spec = crd.get("spec") or {}
        group = spec.get("group") or ""
        namespaced = spec.get("scope") == "Namespaced"
        storage = crds.storage_version(crd)
        served = crds.served_versions(crd)
        if not served:
            self._unserve(name)
            return
        schemas = {f"{group}/{v['name']}": crds.version_schema(v) for v in served}
        rts: list[ResourceType] = []
        infos: list[ServedVersion] = []
        for version in served:
            subs = version.get("subresources") or {}
            kind = accepted["kind"]
            subresources: list[Subresource] = []
            if isinstance(subs.get("scale"), dict):
                subresources.append(Subresource("scale", "Scale", ("get", "patch", "update"),
                                                group="autoscaling", version="v1"))
            if isinstance(subs.get("status"), dict):
                subresources.append(Subresource("status", kind, ("get", "patch", "update")))
            rt = ResourceType(group, version["name"], kind, accepted["plural"],
                              accepted.get("singular") or kind.lower(), namespaced,
                              tuple(accepted.get("shortNames") or ()), tuple(accepted.get("categories") or ()),
                              subresources=tuple(subresources))
            columns = tuple(Column(name=str(c.get("name") or ""), type=str(c.get("type") or "string"),
                                   json_path=str(c.get("jsonPath") or ""), format=str(c.get("format") or ""),
                                   description=str(c.get("description") or ""), priority=int(c.get("priority") or 0))
                            for c in version.get("additionalPrinterColumns") or () if isinstance(c, dict))
            info = ServedVersion(rt=rt, storage_api_version=f"{group}/{storage}", schema=crds.version_schema(version),
                                 status=isinstance(subs.get("status"), dict),
                                 scale=subs["scale"] if isinstance(subs.get("scale"), dict) else None,
                                 columns=columns, schemas=schemas,
                                 terminating=functools.partial(self._terminating, name))
            rts.append(rt)
            infos.append(info)
        # Preferred version first: the highest-priority served version (kube-aware order).
        order = sorted(range(len(rts)), key=lambda i: version_rank(rts[i].version))
        rts = [rts[i] for i in order]
        infos = [infos[i] for i in order]
        previous = self._served.get(name)
        if previous is not None:
            self._unregister(previous)
        for rt, info in zip(rts, infos, strict=True):
            apischema.RUNTIME_KINDS[(rt.api_version, rt.kind)] = compile_node(info.schema)
            tables.RUNTIME_PRINTERS[(rt.key, rt.version)] = _printer(info.columns)
            openapi.RUNTIME_SCHEMAS[(rt.api_version, rt.kind)] = info.schema
            self.registry.register(CustomResourceStore(info, self.ctx))
        RUNTIME_DEFAULTERS[rts[0].key] = _defaulter(schemas)
        apiregistry.register_runtime(tuple(rts), owner=self)
        self._served[name] = tuple(rts)

    def close(self) -> None:
        """Stop serving every CRD (the server stops; the process may start another)."""
        for task in self._cleanups.values():
            task.cancel()
        for name in list(self._served):
            self._unserve(name)

    def _terminating(self, name: str) -> bool:
        crd = self._crd(name)
        c = crds.condition(crd, "Terminating") if crd is not None else None
        return c is not None and c.get("status") == "True"

    def _unserve(self, name: str) -> None:
        previous = self._served.pop(name, None)
        if previous is not None:
            self._unregister(previous)
            apiregistry.unregister_runtime(previous[0].key, owner=self)

    def _unregister(self, rts: tuple[ResourceType, ...]) -> None:
        for rt in rts:
            self.registry.unregister(rt)
            apischema.RUNTIME_KINDS.pop((rt.api_version, rt.kind), None)
            tables.RUNTIME_PRINTERS.pop((rt.key, rt.version), None)
            openapi.RUNTIME_SCHEMAS.pop((rt.api_version, rt.kind), None)
        RUNTIME_DEFAULTERS.pop(rts[0].key, None)

    # -- cleanup ----------------------------------------------------------------------------------

    async def _cleanup(self, name: str) -> None:
        """The finalizer controller: delete every custom object, then release the CRD."""
        try:
            crd = self._crd(name)
            if crd is None:
                return
            crd = await self._write_status(crd, _with_condition(crd, "Terminating", "True",
                                                                "InstanceDeletionInProgress",
                                                                "CustomResource deletion is in progress",
                                                                self.ctx.now())) or crd
            rts = self._served.get(name)
            if rts:
                store = self.registry.storage(rts[0])
                opts = RequestOptions(field_manager="kube-apiserver")
                for obj in self.ctx.store.list(rts[0].key).items:
                    md = obj["metadata"]
                    try:
                        await store.delete(md.get("namespace") or "", md["name"], options={}, opts=opts)
                    except errors.ApiError as e:
                        if e.code != 404:
                            raise
                while self.ctx.store.list(rts[0].key, limit=1).items:
                    await asyncio.sleep(CLEANUP_POLL)
            crd = self._crd(name)
            if crd is None:
                return
            crd = await self._write_status(crd, _with_condition(crd, "Terminating", "False",
                                                                "InstanceDeletionCompleted",
                                                                "removed all instances", self.ctx.now())) or crd
            md = crd["metadata"]
            new = dict(crd, metadata=dict(md, finalizers=[f for f in md.get("finalizers") or ()
                                                          if f != CLEANUP_FINALIZER]))
            if not new["metadata"]["finalizers"]:
                del new["metadata"]["finalizers"]
            await self.registry.storage(self.crd_rt).update_existing(
                new, crd, None, RequestOptions(field_manager="kube-apiserver"))
        except Exception:
            log.exception("cleaning up CustomResourceDefinition %s failed", name)
        finally:
            self._cleanups.pop(name, None)
            if self._crd(name) is None:
                self._unserve(name)


def _same_conditions(a: Obj, b: Obj) -> bool:
    def strip(st: Obj) -> list[tuple[Any, ...]]:
        return [(c.get("type"), c.get("status"), c.get("reason"), c.get("message")) for c in st.get("conditions") or ()]
    return strip(a) == strip(b)


def _defaulter(schemas: dict[str, Obj | None]) -> Any:
    def default(obj: Obj) -> None:
        apply_defaults(obj, schemas.get(obj.get("apiVersion") or ""))
    return default


def _printer(columns: tuple[Column, ...]) -> tables.Printer:
    """``tableconvertor``: NAME, then the version's printer columns (AGE when it has none)."""
    if not columns:
        columns = (Column(name="Age", type="date", json_path=".metadata.creationTimestamp"),)
    definitions = [tables.name_column()] + [
        {"name": c.name, "type": c.type, "format": c.format, "description": c.description, "priority": c.priority}
        for c in columns]

    def cells(obj: Mapping[str, Any], now: float) -> list[Any]:
        row: list[Any] = [(obj.get("metadata") or {}).get("name", "")]
        for c in columns:
            found = find(obj, c.json_path)
            row.append(_cell(c.type, found[0], now) if found else None)
        return row

    return (lambda: definitions), cells


def _cell(type_: str, value: Any, now: float) -> Any:
    """``cellForJSONValue`` (and the string printer for ``string`` columns)."""
    if value is None:
        return None
    if type_ == "date":
        t = tables.parse_time(value)
        return tables.human_duration(now - t) if t is not None else None
    if type_ == "integer":
        return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if type_ == "number":
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if type_ == "boolean":
        return value if isinstance(value, bool) else None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    return orjson.dumps(value).decode()
