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
  may change them.  Callers that keep using them pass a copy (the in-process client does).  A
  strategic merge patch is the exception: it is only read, and no part of it is kept (the merge
  cleans what it takes of it into new maps and lists), so it needs no copy.

Why a facade: kube-apiserver serves each resource with its own REST storage
(``apiserver/registry/``: the generic store, and per kind the strategy with its rules).  This
class keeps the one entry point both transports call — every method takes the resource type
first and hands the call to that resource's storage (``Registry.storage``) — and owns what
belongs to the server rather than to a resource: start-up (the built-in namespaces,
PriorityClasses and the ``kubernetes`` Service, and the ClusterIP allocator rebuilt from the
stored Services, as upstream's post-start hooks and repair controller do) and the wait for a
future resourceVersion before a watch.  How a write flows is described in
``apiserver/registry/generic.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from everynode.api import errors, rbac_bootstrap
from everynode.api.meta import deep_copy
from everynode.api.registry import ResourceType, resource
from everynode.apiserver.admission import Admission, system_priority_classes
from everynode.apiserver.authorization import ALWAYS_ALLOW, new_authorizer
from everynode.apiserver.clusterip import ClusterIPAllocator
from everynode.apiserver.registry import watch as watching
from everynode.apiserver.registry.apiextensions.customresourcedefinition import (
    CustomResourceDefinitionStore,
    CustomResourceServing,
)
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.core.service import cluster_ips_of
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.options import RequestOptions
from everynode.apiserver.registry.table import Registry, builtin_stores
from everynode.apiserver.serviceaccount_tokens import TokenIssuer, load_or_create_key
from everynode.clock import Clock
from everynode.compiled import mypyc_attr
from everynode.storage.base import Predicate, Store, WatchEvent

if TYPE_CHECKING:
    from everynode.apiserver.registry.core.pod.log import ContainerLogSource

__all__ = ["ApiService", "RequestOptions"]

Obj = dict[str, Any]

NAMESPACES: Final = resource("namespaces")
PRIORITY_CLASSES: Final = resource("priorityclasses.scheduling.k8s.io")
SERVICES: Final = resource("services")
CRDS: Final = resource("customresourcedefinitions.apiextensions.k8s.io")
CLUSTER_ROLES: Final = resource("clusterroles.rbac.authorization.k8s.io")
CLUSTER_ROLE_BINDINGS: Final = resource("clusterrolebindings.rbac.authorization.k8s.io")
SEED_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")


@mypyc_attr(native_class=False)  # an ordinary class with compiled methods: tests replace one on an instance
class ApiService:
    def __init__(self, store: Store, *, clock: Clock, bookmark_interval: float = 60.0,
                 authorization: str = ALWAYS_ALLOW, service_account_key_dir: Path | None = None,
                 service_account_admission: bool = False, managed_fields: bool = True) -> None:
        self.store = store
        self.clock = clock
        self.admission = Admission(store, service_accounts=service_account_admission)
        self.cluster_ips = ClusterIPAllocator()
        self.authorizer = new_authorizer(authorization, store)
        self.context = ServerContext(store=store, clock=clock, admission=self.admission,
                                     bookmark_interval=bookmark_interval, ready=self._ready,
                                     authorizer=self.authorizer,
                                     tokens=TokenIssuer(load_or_create_key(service_account_key_dir)),
                                     managed_fields=managed_fields)
        self.registry = Registry(builtin_stores(self.context, cluster_ips=self.cluster_ips))
        crd_store = self.registry.storage(CRDS)
        assert isinstance(crd_store, CustomResourceDefinitionStore)
        self.custom_resources = crd_store.serving = CustomResourceServing(self.context, self.registry, CRDS)
        # Who answers pods/{name}/log for the nodes (the kubelet simulation, wired by the control
        # plane); None: every node's kubelet is unreachable (registry/core/pod/log.py).
        self.container_logs: ContainerLogSource | None = None
        self._seeded = False
        self._seed_task: asyncio.Future[None] | None = None

    @property
    def bookmark_interval(self) -> float:
        """Seconds between watch bookmarks on a quiet watch (every resource's; set on ``context``)."""
        return self.context.bookmark_interval

    def storage(self, rt: ResourceType) -> ResourceStore:
        return self.registry.storage(rt)

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
        self.cluster_ips.restore(ip for svc in self.store.list(SERVICES.key).items for ip in cluster_ips_of(svc))
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
        await self.custom_resources.restore()  # serve the stored CRDs again
        # The bootstrap policy (upstream's rbac/bootstrap-roles post-start hook), with the
        # aggregated roles' rules already filled in since no aggregation controller runs.
        for rt, objs in ((CLUSTER_ROLES, rbac_bootstrap.cluster_roles(aggregated=True)),
                         (CLUSTER_ROLE_BINDINGS, rbac_bootstrap.cluster_role_bindings())):
            for obj in objs:
                if self.store.get(rt.key, "", obj["metadata"]["name"]) is None:
                    await self._seed_one(rt, obj, opts)
        self._seeded = True

    async def _seed_one(self, rt: ResourceType, body: Obj, opts: RequestOptions) -> None:
        try:
            await self.storage(rt).create_unguarded("", body, opts=opts)
        except errors.ApiError as e:
            if e.code != 409:
                raise

    def close(self) -> None:
        """Release what the service registered process-wide (the CRDs' served resources)."""
        self.custom_resources.close()

    async def _ready(self) -> None:
        if not self._seeded:
            await self.start()

    # -- reads ------------------------------------------------------------------------------------

    async def get(self, rt: ResourceType, namespace: str, name: str, *, subresource: str | None = None) -> Obj:
        return await self.storage(rt).get(namespace, name, subresource=subresource)

    def predicate(self, rt: ResourceType, label_selector: str | None,
                  field_selector: str | None) -> tuple[Predicate | None, str | None]:
        """The object filter for selectors, plus the exact ``metadata.name`` asked for (if any).

        Raises 400 for selectors that do not parse or name unsupported fields."""
        return self.storage(rt).predicate(label_selector, field_selector)

    async def list(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, resource_version: str | None = None,
                   resource_version_match: str | None = None) -> Obj:
        return await self.storage(rt).list(
            namespace, label_selector=label_selector, field_selector=field_selector, limit=limit,
            continue_token=continue_token, resource_version=resource_version,
            resource_version_match=resource_version_match)

    # -- writes -----------------------------------------------------------------------------------

    async def create(self, rt: ResourceType, namespace: str, body: Obj, *, opts: RequestOptions) -> Obj:
        store = self.storage(rt)
        if opts.borrowed and store.templates is None:
            # Only the generic create of template-made kinds copies a borrowed body itself.
            body = deep_copy(body)
            opts.borrowed = False
        return await store.create(namespace, body, opts=opts)

    async def update(self, rt: ResourceType, namespace: str, name: str, body: Obj, *,
                     subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        """PUT.  Returns (object, created)."""
        return await self.storage(rt).update(namespace, name, body, subresource=subresource, opts=opts)

    async def patch(self, rt: ResourceType, namespace: str, name: str, patch: Any, patch_type: str, *,
                    subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        """patch_type: "json" | "merge" | "strategic" | "apply".  Returns (object, created)."""
        return await self.storage(rt).patch(namespace, name, patch, patch_type, subresource=subresource, opts=opts)

    async def create_subresource(self, rt: ResourceType, namespace: str, name: str, subresource: str,
                                 body: Obj, *, opts: RequestOptions) -> tuple[int, Obj]:
        """pods/binding (201 + Status Success), pods/eviction (201 + Status Success or 429)."""
        return await self.storage(rt).create_subresource(namespace, name, subresource, body, opts=opts)

    async def delete(self, rt: ResourceType, namespace: str, name: str, *, options: Obj | None = None,
                     opts: RequestOptions) -> tuple[int, Obj]:
        """Returns (http code, body): the object (200, or 202 while finalizers/graceful) or a Status."""
        return await self.storage(rt).delete(namespace, name, options=options, opts=opts)

    async def delete_collection(self, rt: ResourceType, namespace: str | None, *,
                                label_selector: str | None = None, field_selector: str | None = None,
                                options: Obj | None = None, opts: RequestOptions) -> Obj:
        return await self.storage(rt).delete_collection(
            namespace, label_selector=label_selector, field_selector=field_selector, options=options, opts=opts)

    # -- watch ------------------------------------------------------------------------------------

    def watch(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
              field_selector: str | None = None, resource_version: str | None = None,
              allow_bookmarks: bool = False, send_initial_events: bool | None = None,
              timeout_seconds: float | None = None, resource_version_match: str | None = None
              ) -> AsyncIterator[WatchEvent]:
        """Async iterator of ``storage.base.WatchEvent`` (type, object, rv, encoded-cache).

        Bad selectors raise ApiError here, before any event; a resourceVersion older than the
        history window yields one ERROR event (410 Expired) and ends, as upstream streams it."""
        return watching.one_by_one(self.watch_batches(
            rt, namespace, label_selector=label_selector, field_selector=field_selector,
            resource_version=resource_version, allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events, timeout_seconds=timeout_seconds,
            resource_version_match=resource_version_match))

    async def wait_for_resource_version(self, resource_version: str | None) -> None:
        """A watch from a future resourceVersion waits for it (3 s), then fails with 504."""
        await watching.wait_for_resource_version(self.context, resource_version)

    def watch_batches(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
                      field_selector: str | None = None, resource_version: str | None = None,
                      allow_bookmarks: bool = False, send_initial_events: bool | None = None,
                      timeout_seconds: float | None = None, resource_version_match: str | None = None
                      ) -> watching.Batches:
        """:meth:`watch` in batches: each item is a non-empty list of the events that were ready
        together (in order), so that a transport can send them in one write.  Flattened, the
        batches are exactly :meth:`watch`'s events.  Errors are raised as in :meth:`watch`."""
        return self.storage(rt).watch_batches(
            namespace, label_selector=label_selector, field_selector=field_selector,
            resource_version=resource_version, allow_bookmarks=allow_bookmarks,
            send_initial_events=send_initial_events, timeout_seconds=timeout_seconds,
            resource_version_match=resource_version_match)
