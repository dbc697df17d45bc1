"""The resources everynode serves: group, version, kind, plural, scope, short names, subresources.

One table drives discovery (aggregated and legacy), routing, the OpenAPI documents, storage
keys and the client's resource names (every form kubectl takes: kind, plural, short name), so adding a kind is one entry here (plus its defaulting,
validation and printer columns).  Values follow kube-apiserver 1.33's discovery documents.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from everynode.api import builtin_kinds

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True, slots=True)
class Subresource:
    name: str
    kind: str
    verbs: tuple[str, ...]
    group: str | None = None  # None: the parent's group/version
    version: str | None = None


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    subresources: tuple[Subresource, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def key(self) -> str:
        """Canonical resource name: ``plural`` for core, ``plural.group`` otherwise (kubectl's form)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def subresource(self, name: str) -> Subresource | None:
        for sub in self.subresources:
            if sub.name == name:
                return sub
        return None

    def base_path(self, namespace: str | None = None) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{prefix}/namespaces/{namespace}/{self.plural}"
        return f"{prefix}/{self.plural}"


_STATUS_VERBS = ("get", "patch", "update")


def _status(kind: str) -> Subresource:
    return Subresource("status", kind, _STATUS_VERBS)


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType("", "v1", "Namespace", "namespaces", "namespace", False, ("ns",),
                 verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
                 subresources=(_status("Namespace"), Subresource("finalize", "Namespace", ("update",)))),
    ResourceType("", "v1", "Node", "nodes", "node", False, ("no",),
                 subresources=(_status("Node"),)),
    ResourceType("", "v1", "Pod", "pods", "pod", True, ("po",), ("all",),
                 subresources=(
                     Subresource("binding", "Binding", ("create",)),
                     Subresource("eviction", "Eviction", ("create",), group="policy", version="v1"),
                     _status("Pod"),
                 )),
    ResourceType("", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceType("", "v1", "Service", "services", "service", True, ("svc",), ("all",),
                 verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
                 subresources=(_status("Service"),)),
    ResourceType("", "v1", "Endpoints", "endpoints", "endpoints", True, ("ep",)),
    ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",)),
    ResourceType("", "v1", "Secret", "secrets", "secret", True),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",)),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, ("ds",), ("all",),
                 subresources=(_status("DaemonSet"),)),
    ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", True),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    ResourceType("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", False, ("pc",)),
    ResourceType("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", True),
)


def _from_discovery(declared: tuple[ResourceType, ...]) -> tuple[ResourceType, ...]:
    """The 1.33 built-in kinds of :mod:`everynode.api.builtin_kinds` not declared above by hand
    (a hand entry — a kind with rules of its own — always wins), in that table's order."""
    have = {(rt.api_version, rt.kind) for rt in declared}
    out: list[ResourceType] = []
    for api_version, kind, plural, namespaced, short_names, categories, subs, verbs in builtin_kinds.KINDS:
        if (api_version, kind) in have:
            continue
        group, _, version = api_version.rpartition("/")
        out.append(ResourceType(group, version, kind, plural, kind.lower(), namespaced, short_names, categories,
                                verbs=verbs or STANDARD_VERBS,
                                subresources=tuple(_status(kind) for name in subs if name == "status")))
    return tuple(out)


RESOURCES = RESOURCES + _from_discovery(RESOURCES)

def _names(rt: ResourceType) -> list[str]:
    """Every name kubectl accepts for ``rt``: plural, singular, short names and the kind (any
    case), each also qualified by its group (``daemonsets.apps``) and by version and group
    (``daemonsets.v1.apps``), as kubectl's RESTMapper resolves a resource argument."""
    bare = [rt.plural, rt.singular, *rt.short_names, rt.kind.lower()]
    if not rt.group:
        return [*bare, *(f"{n}.{rt.version}" for n in bare)]
    return [*bare, *(f"{n}.{rt.group}" for n in bare), *(f"{n}.{rt.version}.{rt.group}" for n in bare)]


def _by_name() -> dict[str, ResourceType]:
    """Name → resource; on a clash the earlier entry of RESOURCES wins, so the core group comes
    first (``events``, ``ev`` and ``Event`` are the core Event, as in kubectl)."""
    table: dict[str, ResourceType] = {rt.key: rt for rt in RESOURCES}
    for rt in RESOURCES:
        for name in _names(rt):
            table.setdefault(name, rt)
    return table


_BY_NAME: dict[str, ResourceType] = _by_name()
_BY_GROUP_PLURAL: dict[tuple[str, str], ResourceType] = {(rt.group, rt.plural): rt for rt in RESOURCES}
_BY_GVK: dict[tuple[str, str], ResourceType] = {(rt.api_version, rt.kind): rt for rt in RESOURCES}


def resource(name: str) -> ResourceType:
    """Look a resource up by any name kubectl takes for it: the canonical ``pods``,
    ``daemonsets.apps``, ``leases.coordination.k8s.io``; a kind (``DaemonSet``), a singular, a
    short name (``ds``), each optionally qualified (``ds.apps``, ``daemonsets.v1.apps``).

    One dict lookup for a name as written (every call of every client goes through here); the
    lower-cased retry only for kinds and other capitalised spellings."""
    found = _BY_NAME.get(name) or _BY_NAME.get(name.lower())
    if found is None:
        raise KeyError(f"unknown resource {name!r}")
    return found


def by_group_plural(group: str, plural: str) -> ResourceType | None:
    return _BY_GROUP_PLURAL.get((group, plural))


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    return _BY_GVK.get((api_version, kind))


def groups() -> list[tuple[str, list[ResourceType]]]:
    """Named API groups in serving order (core excluded), each with its resources."""
    order: list[str] = []
    members: dict[str, list[ResourceType]] = {}
    for rt in RESOURCES:
        if not rt.group:
            continue
        if rt.group not in members:
            order.append(rt.group)
            members[rt.group] = []
        members[rt.group].append(rt)
    return [(g, members[g]) for g in order]


def core_resources() -> list[ResourceType]:
    return [rt for rt in RESOURCES if not rt.group]
