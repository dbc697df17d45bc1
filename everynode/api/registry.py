"""The resources everynode serves: group, version, kind, plural, scope, short names, subresources.

One table drives discovery (aggregated and legacy), routing, the OpenAPI documents, storage
keys and the client's resource names (every form kubectl takes: kind, plural, short name), so adding a kind is one entry here (plus its defaulting,
validation and printer columns).  Values follow kube-apiserver 1.33's discovery documents.
"""

from __future__ import annotations

import re
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
    # Derived from the fields above, once: every request reads them, some several times.
    api_version: str = field(init=False, repr=False, compare=False)
    """``group/version`` (``version`` for the core group)."""
    key: str = field(init=False, repr=False, compare=False)
    """Canonical resource name: ``plural`` for core, ``plural.group`` otherwise (kubectl's form)."""
    _by_name: dict[str, Subresource] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__  # (frozen)
        setattr_(self, "api_version", f"{self.group}/{self.version}" if self.group else self.version)
        setattr_(self, "key", f"{self.plural}.{self.group}" if self.group else self.plural)
        setattr_(self, "_by_name", {sub.name: sub for sub in reversed(self.subresources)})

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def subresource(self, name: str) -> Subresource | None:
        return self._by_name.get(name)

    def base_path(self, namespace: str | None = None) -> str:
        prefix = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            return f"{prefix}/namespaces/{namespace}/{self.plural}"
        return f"{prefix}/{self.plural}"


_STATUS_VERBS = ("get", "patch", "update")


def _status(kind: str) -> Subresource:
    return Subresource("status", kind, _STATUS_VERBS)


def _scale() -> Subresource:
    """``<plural>/scale``: an ``autoscaling/v1`` Scale whatever the parent's group."""
    return Subresource("scale", "Scale", _STATUS_VERBS, group="autoscaling", version="v1")


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
                     Subresource("log", "Pod", ("get",)),
                     Subresource("exec", "PodExecOptions", ("create", "get")),
                     Subresource("attach", "PodAttachOptions", ("create", "get")),
                     Subresource("portforward", "PodPortForwardOptions", ("create", "get")),
                 )),
    ResourceType("", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceType("", "v1", "Service", "services", "service", True, ("svc",), ("all",),
                 verbs=("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"),
                 subresources=(_status("Service"),)),
    ResourceType("", "v1", "Endpoints", "endpoints", "endpoints", True, ("ep",)),
    ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True, ("cm",)),
    ResourceType("", "v1", "Secret", "secrets", "secret", True),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", "serviceaccount", True, ("sa",),
                 subresources=(Subresource("token", "TokenRequest", ("create",), group="authentication.k8s.io",
                                           version="v1"),)),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", "daemonset", True, ("ds",), ("all",),
                 subresources=(_status("DaemonSet"),)),
    ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", "controllerrevision", True),
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True),
    ResourceType("scheduling.k8s.io", "v1", "PriorityClass", "priorityclasses", "priorityclass", False, ("pc",)),
    ResourceType("events.k8s.io", "v1", "Event", "events", "event", True, ("ev",)),
    ResourceType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", "endpointslice", True),
    ResourceType("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions",
                 "customresourcedefinition", False, ("crd", "crds"), ("api-extensions",),
                 subresources=(_status("CustomResourceDefinition"),)),
    # Workloads (hand-written; upstream's discovery: status and an autoscaling/v1 Scale).
    ResourceType("apps", "v1", "Deployment", "deployments", "deployment", True, ("deploy",), ("all",),
                 subresources=(_scale(), _status("Deployment"))),
    ResourceType("apps", "v1", "ReplicaSet", "replicasets", "replicaset", True, ("rs",), ("all",),
                 subresources=(_scale(), _status("ReplicaSet"))),
    # rbac.authorization.k8s.io: no short names, no categories (kube-apiserver 1.33 discovery).
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings",
                 "clusterrolebinding", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True),
    # authorization.k8s.io: create-only, never stored (pkg/registry/authorization).
    ResourceType("authorization.k8s.io", "v1", "LocalSubjectAccessReview", "localsubjectaccessreviews",
                 "localsubjectaccessreview", True, verbs=("create",)),
    ResourceType("authorization.k8s.io", "v1", "SelfSubjectAccessReview", "selfsubjectaccessreviews",
                 "selfsubjectaccessreview", False, verbs=("create",)),
    ResourceType("authorization.k8s.io", "v1", "SelfSubjectRulesReview", "selfsubjectrulesreviews",
                 "selfsubjectrulesreview", False, verbs=("create",)),
    ResourceType("authorization.k8s.io", "v1", "SubjectAccessReview", "subjectaccessreviews",
                 "subjectaccessreview", False, verbs=("create",)),
    # authentication.k8s.io: create-only, never stored (pkg/registry/authentication).
    ResourceType("authentication.k8s.io", "v1", "SelfSubjectReview", "selfsubjectreviews", "selfsubjectreview",
                 False, verbs=("create",)),
    ResourceType("authentication.k8s.io", "v1", "TokenReview", "tokenreviews", "tokenreview", False,
                 verbs=("create",)),
    ResourceType("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", "poddisruptionbudget", True,
                 ("pdb",), subresources=(_status("PodDisruptionBudget"),)),
    ResourceType("batch", "v1", "Job", "jobs", "job", True, (), ("all",), subresources=(_status("Job"),)),
)

def names_of(rt: ResourceType) -> list[str]:
    """Every name kubectl accepts for ``rt`` (see :func:`_names`)."""
    return _names(rt)



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
    if found is None and _RUNTIME:
        found = _RUNTIME_BY_NAME.get(name) or _RUNTIME_BY_NAME.get(name.lower())
    if found is None:
        raise KeyError(f"unknown resource {name!r}")
    return found


def by_group_plural(group: str, plural: str) -> ResourceType | None:
    found = _BY_GROUP_PLURAL.get((group, plural))
    if found is None and _RUNTIME:
        return _RUNTIME_BY_GROUP_PLURAL.get((group, plural))
    return found


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    found = _BY_GVK.get((api_version, kind))
    if found is None and _RUNTIME:
        return _RUNTIME_BY_GVK.get((api_version, kind))
    return found


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
    for versions in _RUNTIME.values():  # a runtime resource's group: its preferred version's members
        rt = versions[0]
        if rt.group not in members:
            order.append(rt.group)
            members[rt.group] = []
        members[rt.group].append(rt)
    return [(g, members[g]) for g in order]


def core_resources() -> list[ResourceType]:
    return [rt for rt in RESOURCES if not rt.group]


# ---------------------------------------------------------------------------------------------
# resources defined at run time (the served versions of Established CustomResourceDefinitions)
#
# Why beside the static table rather than in it: RESOURCES and its indexes are built once at
# import and every request looks a built-in up with one dict probe; a runtime resource is only
# looked for when that probe misses, so serving CRDs costs built-in lookups nothing.  Each
# CRD registers all its served versions together (the preferred one first: what a bare name
# resolves to, as kubectl's RESTMapper picks the group's preferred version).  ``generation()``
# changes on every (un)registration, so documents derived from the served set (discovery,
# OpenAPI) can cache by it.

_RUNTIME: dict[str, tuple[ResourceType, ...]] = {}  # key (plural.group) → served versions, preferred first
_RUNTIME_OWNERS: dict[str, dict[int, tuple[ResourceType, ...]]] = {}  # key → owner id → its versions
_RUNTIME_BY_NAME: dict[str, ResourceType] = {}
_RUNTIME_BY_GROUP_PLURAL: dict[tuple[str, str], ResourceType] = {}
_RUNTIME_BY_VERSION: dict[tuple[str, str, str], ResourceType] = {}  # (group, version, plural)
_RUNTIME_BY_GVK: dict[tuple[str, str], ResourceType] = {}
_GENERATION = [0]


def _reindex_runtime() -> None:
    _RUNTIME_BY_NAME.clear()
    _RUNTIME_BY_GROUP_PLURAL.clear()
    _RUNTIME_BY_VERSION.clear()
    _RUNTIME_BY_GVK.clear()
    for versions in _RUNTIME.values():
        preferred = versions[0]
        _RUNTIME_BY_GROUP_PLURAL[(preferred.group, preferred.plural)] = preferred
        for rt in versions:
            _RUNTIME_BY_VERSION[(rt.group, rt.version, rt.plural)] = rt
            _RUNTIME_BY_GVK[(rt.api_version, rt.kind)] = rt
            if rt is preferred:
                names = _names(rt)
            else:  # another served version: only by its version-qualified names
                bare = (rt.plural, rt.singular, *rt.short_names, rt.kind.lower())
                names = [f"{n}.{rt.version}.{rt.group}" for n in bare]
            for name in names:
                _RUNTIME_BY_NAME.setdefault(name, rt)
    _GENERATION[0] += 1


def register_runtime(versions: tuple[ResourceType, ...], *, owner: object) -> None:
    """Serve the versions of one runtime resource (all share ``plural.group``) for ``owner``
    (the serving API server: several embedded clusters may live in one process, a test's);
    the latest registration of a resource is the one looked up."""
    if not versions:
        return
    key = versions[0].key
    _RUNTIME_OWNERS.setdefault(key, {})[id(owner)] = versions
    _RUNTIME[key] = versions
    _reindex_runtime()


def unregister_runtime(key: str, *, owner: object) -> None:
    owners = _RUNTIME_OWNERS.get(key)
    if owners is None or owners.pop(id(owner), None) is None:
        return
    if owners:
        _RUNTIME[key] = next(reversed(owners.values()))
    else:
        del _RUNTIME_OWNERS[key]
        _RUNTIME.pop(key, None)
    _reindex_runtime()


def runtime_resources() -> list[tuple[ResourceType, ...]]:
    """The runtime resources, each as its served versions (preferred first), in registration order."""
    return list(_RUNTIME.values())


def is_runtime(rt: ResourceType) -> bool:
    return rt.key in _RUNTIME and rt.key not in _BY_NAME


def generation() -> int:
    """Changes whenever the served set changes (a runtime resource registered or removed)."""
    return _GENERATION[0]


def by_version(group: str, version: str, plural: str) -> ResourceType | None:
    """The resource ``plural`` of ``group`` in exactly ``version`` (a CRD serves several)."""
    found = _BY_GROUP_PLURAL.get((group, plural))
    if found is not None:
        return found if found.version == version else None
    return _RUNTIME_BY_VERSION.get((group, version, plural))


def served_resources() -> list[ResourceType]:
    """Every served resource once (built-ins, then each runtime resource's preferred version)."""
    return [*RESOURCES, *(versions[0] for versions in _RUNTIME.values())]


_KUBE_VERSION = re.compile(r"v(\d+)(?:(alpha|beta)(\d+))?")


def version_rank(version: str) -> tuple[int, int, int, str]:
    """Sort key of ``version.CompareKubeAwareVersionStrings``: GA before beta before alpha,
    higher numbers first, then versions of no kube form alphabetically."""
    m = _KUBE_VERSION.fullmatch(version)
    if m is None:
        return (3, 0, 0, version)
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    return (stage, -int(m.group(1)), -int(m.group(3) or 0), "")
