"""Creates of objects made from one template — a controller's pods — answered from the first
one's processing.

Why: a DaemonSet's pods are one template plus a few fields of their own (the node pin in
``spec.affinity``; the name, uid and timestamps the server gives), and a create spends most of
its time on the template: the type check, defaults, admission, validation, managedFields and
the structural sharing of the same containers, tolerations, labels and owner reference for the
thousandth time.  kube-apiserver does all of it per pod; so does everynode for the first pod of
a template.  For the next ones, the result of the first is reused for everything but their own
fields, which go through the very same checks one by one.

The equivalence this rests on: every stage of a pod create treats the template fields
(``Strategy.template_fields``: ``spec.affinity`` for pods) apart from the rest — the type check
and validation have no rule reading one together with anything else (the per-pod rules of
``typecheck._PER_OBJECT_FIELDS`` / ``validation.pod._PER_POD_FIELDS``), defaults and admission
do not read or write them, the initial status does not depend on them, and their managed fields
are their own members.  So the object the full pipeline would make for a body is the one made
for an earlier body with the same everything-else (same JSON text, same namespace, manager and
field validation mode, same admission inputs — ``Admission.create_inputs``), with the body's own
template fields put in at the same place and the per-object metadata (uid, creation time, name,
the managedFields time) drawn anew, in the same order as the pipeline draws them.

What is kept exact, and how:

* anything the shortcut cannot vouch for goes the full way: a body that names itself, pins a
  node (``nodeName`` has a rule with ``schedulingGates``), carries a resourceVersion or managed
  fields; a dry run; a first pod whose create failed or warned; a template field that the type
  check or validation finds anything in (the full pipeline then words the errors);
* per request, what depends on the cluster's state is asked again, in the pipeline's order:
  the namespace lifecycle check and the ServiceAccount plugin's look-up (which may wait for the
  account, as the pipeline does); what admission took from PriorityClasses and ServiceAccounts
  is only reused while none of them was written (``create_inputs``);
* the template's parts are the stored first pod's own (structurally shared) sub-objects: the
  store finds them by identity, and they are immutable, as every stored object is.

The golden converge (tests/integration/test_golden_converge.py) records every byte of a
DaemonSet's pods created this way; tests/unit/test_template_creates.py compares shortcut and
full pipeline pod by pod.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

import orjson

from everynode.api import errors
from everynode.api.meta import deep_copy, field_of, generate_name
from everynode.api.typecheck import check_object
from everynode.apiserver.admission import with_token_volume
from everynode.apiserver.patch.apply import created_entries, created_members, with_members, without_members
from everynode.apiserver.registry.options import RequestOptions, manager
from everynode.apiserver.registry.strategy import Strategy, before_create
from everynode.memo import remember

if TYPE_CHECKING:
    from everynode.apiserver.registry.generic import ResourceStore

Obj = dict[str, Any]
Created = Callable[[Obj, Obj], None]
"""Told of a successful create: the object as the pipeline made it (before the token volume) and as stored."""

_TEMPLATES_MAX: Final = 512  # templates remembered per resource (one per controller revision in use)


class Plan:
    """A create that may be answered from a template: its key and its own template fields.
    (A plain class: one is made per create, and a dataclass's ``__init__`` runs interpreted.)"""

    def __init__(self, key: tuple[Any, ...], fields: dict[str, Any], inputs: tuple[int, ...]) -> None:
        self.key = key
        self.fields = fields  # the body's template fields (absent ones are not in it)
        self.inputs = inputs  # Admission.create_inputs when the request came


@dataclass(slots=True)
class _Template:
    obj: Obj                # the first object as the pipeline made it (before the token volume)
    fields_v1: Obj | None   # its creator's managed fields without the template fields' members
    entry: Obj | None       # its managedFields entry (None: the server keeps none, context.py)
    # The managed fields of an object of this template, by the JSON text of its own template
    # fields' members: a DaemonSet's pods all pin their node the same way (the values are in an
    # atomic list), so the union with the template's tree, and its interning (a serialisation
    # of the whole tree), were the same work for every pod, a fifth of its create.
    joined: dict[bytes, Obj] = field(default_factory=dict)


_JOINED_MAX: Final = 64  # member sets remembered per template


class TemplateCreates:
    """The template shortcut of one resource's creates (only for strategies with
    ``template_fields``)."""

    def __init__(self, store: ResourceStore) -> None:
        # (Nothing outside storage may be reserved per object: a create reserving something in
        # Strategy.begin_create, as a Service's ClusterIP, takes the full way.)
        assert type(store.strategy).begin_create is Strategy.begin_create
        self.store = store
        self.fields = store.strategy.template_fields
        self.refusals = store.strategy.template_refusals
        self._templates: dict[tuple[Any, ...], _Template] = {}
        # Creates answered here (an object, or the refusal of the pod's own fields): for tests and
        # diagnostics, which cannot wrap :meth:`create` (compiled callers would not see it).
        self.answered = 0

    # -- which creates ----------------------------------------------------------------------------

    def plan(self, namespace: str, body: Any, opts: RequestOptions) -> Plan | None:
        """The key of a create (from its body as the client sent it), or None when the create
        must take the full way (module docstring)."""
        if opts.dry_run or type(body) is not dict:
            return None
        md = body.get("metadata")
        spec = body.get("spec")
        if type(md) is not dict or type(spec) is not dict or not md.get("generateName"):
            return None
        if "name" in md or "resourceVersion" in md or "managedFields" in md or \
                any(key in spec for key in self.refusals):
            return None
        inputs = self.store.ctx.admission.create_inputs(self.store.rt)
        if inputs is None:
            return None
        fields: dict[str, Any] = {}
        rest: dict[str, Any] = {}
        places: list[int] = []
        for i, (key, value) in enumerate(spec.items()):
            if key in self.fields:
                fields[key] = value
                places.append(i)
            else:
                rest[key] = value
        try:
            text = orjson.dumps({**body, "spec": rest})
        except TypeError:  # not JSON-shaped: the pipeline words what is wrong
            return None
        key = (namespace, manager(opts), opts.field_validation, inputs, tuple(fields), tuple(places), text)
        return Plan(key, fields, inputs)

    # -- the first pod ----------------------------------------------------------------------------

    def learner(self, plan: Plan, opts: RequestOptions) -> Created:
        """What the full pipeline tells of its create of ``plan``'s body: learnt unless the
        request warned."""
        def learn(made: Obj, created: Obj) -> None:
            if not opts.warnings:
                self.learn(plan, made, created)
        return learn

    def learn(self, plan: Plan, obj: Obj, stored: Obj) -> None:
        """Remember what the pipeline made of ``plan``'s body: ``obj`` after managedFields (and
        before the token volume), ``stored`` as the store kept it."""
        spec = obj.get("spec")
        if type(spec) is not dict:
            return
        entries = field_of(obj["metadata"], "managedFields") or []
        entry: Obj | None = None
        fields_v1: Obj | None = None
        if self.store.ctx.managed_fields or entries:
            if len(entries) != 1:
                return
            entry = entries[0]
            fields_v1 = entry["fieldsV1"]
            for key in self.fields:
                fields_v1 = without_members(fields_v1, ("spec", key))
        remember(self._templates, plan.key, _Template(_shared_with(obj, stored), fields_v1, entry),
                 limit=_TEMPLATES_MAX)

    # -- the next ones ----------------------------------------------------------------------------

    async def create(self, plan: Plan, opts: RequestOptions) -> Obj | None:
        """The object created for ``plan``'s body, or None when it must take the full way."""
        try:
            created = await self._create(plan, opts)
        except errors.ApiError:
            self.answered += 1
            raise
        if created is not None:
            self.answered += 1
        return created

    async def _create(self, plan: Plan, opts: RequestOptions) -> Obj | None:
        template = self._templates.get(plan.key)
        if template is None:
            return None
        store = self.store
        rt = store.rt
        ctx = store.ctx
        fields = deep_copy(plan.fields) if opts.borrowed else plan.fields  # (they will be stored)
        # decode: the template fields' types and unknown fields (the rest was clean)
        if fields and not opts.typed and check_object(rt.api_version, rt.kind, {"spec": fields}):
            return None
        obj = _copy_with(template.obj, fields)
        md = obj["metadata"]
        ctx.admission.check_namespace_for_create(rt, md.get("namespace") or "", obj)
        token_account = await ctx.admission.pod_service_account(rt, obj)
        if ctx.admission.create_inputs(rt) != plan.inputs:
            return None  # written while the look-up waited: admission would read them now
        now = ctx.now()
        before_create(rt, obj, now=now)
        md["name"] = generate_name(md["generateName"])
        errs = store.strategy.validate_create_per_object(rt, obj)
        if errs:  # all of the pipeline's errors: the rest passed its rules
            raise errors.invalid(rt.kind, rt.group, md["name"], errs)
        tree = template.fields_v1
        if tree is not None and template.entry is not None:
            if fields:
                members = created_members({"spec": fields}, api_version=rt.api_version, kind=rt.kind)
                seen = orjson.dumps(members)
                joined = template.joined.get(seen)
                if joined is None:
                    joined = remember(template.joined, seen, with_members(tree, members), limit=_JOINED_MAX)
                tree = joined
            # (the first pod's entry, made by apply.created_entries: the pods created within one
            # second over one tree share their list, as any created objects do)
            entry = template.entry
            md["managedFields"] = created_entries(entry["manager"], entry["operation"], entry["apiVersion"], now,
                                                  tree, entry.get("subresource"))
        if token_account is not None:
            obj = with_token_volume(obj)
        return await store.store_new(obj, opts, md["generateName"])


def _copy_with(obj: Obj, fields: dict[str, Any]) -> Obj:
    """A private shell of a template object (its top level, metadata and spec are new dicts, the
    rest shared) with ``fields`` as its spec's template fields, in their places, and without the
    name and managedFields the pipeline gives it last (in this order, after the generation)."""
    out = dict(obj)
    md = out["metadata"] = dict(obj["metadata"])
    del md["name"]
    md.pop("managedFields", None)
    spec = dict(obj["spec"])
    spec.update(fields)
    out["spec"] = spec
    return out


def _shared_with(obj: Obj, stored: Obj) -> Obj:
    """``obj`` with each of its top-level, metadata and spec values replaced by the stored
    object's at the same place when that one is the same JSON (the store's shared instance)."""
    out = _same_values(obj, stored)
    out["metadata"] = _same_values(obj["metadata"], stored.get("metadata"))
    if type(obj.get("spec")) is dict:
        out["spec"] = _same_values(obj["spec"], stored.get("spec"))
    return out


def _same_values(mine: Obj, theirs: Any) -> Obj:
    out = dict(mine)
    if type(theirs) is not dict:
        return out
    for key, value in mine.items():
        other = theirs.get(key)
        if other is not None and other is not value and type(other) in (dict, list) and \
                orjson.dumps(other) == orjson.dumps(value):
            out[key] = other
    return out
