"""Which storage serves which resource: the built-in table and run-time registration.

Why a table of storages: kube-apiserver installs one REST storage per resource
(``pkg/controlplane/.../storageprovider``: ``NewREST`` of each ``pkg/registry/<group>/<resource>``)
and dispatches every request to it.  Here every resource of ``api.registry`` gets a
:class:`ResourceStore`; the ones with rules of their own are listed in :func:`builtin_stores`
with their strategy (or storage subclass), and every other kind is served by the generic store
with no rules.  Adding a kind without rules is therefore only its ``api.registry`` entry; a kind
with rules adds one strategy module under ``registry/<group>/`` and one line here.  Resources
defined at run time (CustomResourceDefinitions) are added with :meth:`Registry.register` and
removed with :meth:`Registry.unregister`.
"""

from __future__ import annotations

from collections.abc import Iterator

from everynode.api import errors
from everynode.api.registry import RESOURCES, ResourceType, resource
from everynode.apiserver.clusterip import ClusterIPAllocator
from everynode.apiserver.registry.apiextensions.customresourcedefinition import CustomResourceDefinitionStore
from everynode.apiserver.registry.apiregistration.apiservice import APIServiceStrategy
from everynode.apiserver.registry.apps.daemonset import DaemonSetStrategy
from everynode.apiserver.registry.apps.deployment import DeploymentStrategy
from everynode.apiserver.registry.apps.replicaset import ReplicaSetStrategy
from everynode.apiserver.registry.apps.scale import ScalableStore
from everynode.apiserver.registry.authentication.reviews import AuthenticationReviewStore
from everynode.apiserver.registry.authorization.reviews import ReviewStore
from everynode.apiserver.registry.batch.job import JobStrategy
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.core.componentstatus import ComponentStatusStore
from everynode.apiserver.registry.core.namespace import NamespaceStore
from everynode.apiserver.registry.core.pod import PodStore
from everynode.apiserver.registry.core.service import ServiceStrategy
from everynode.apiserver.registry.core.serviceaccount import ServiceAccountStore
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.policy.poddisruptionbudget import PodDisruptionBudgetStrategy
from everynode.apiserver.registry.rbac.policy import PolicyBasedStore
from everynode.apiserver.registry.specstatus import BUILTIN_STRATEGIES, SpecStatusStrategy
from everynode.apiserver.registry.strategy import Strategy


def builtin_stores(ctx: ServerContext, *, cluster_ips: ClusterIPAllocator) -> list[ResourceStore]:
    """One storage per built-in resource, in ``api.registry`` order."""
    def with_strategy(name: str, strategy: Strategy) -> ResourceStore:
        return ResourceStore(resource(name), ctx, strategy)

    # Kinds whose only rules are upstream's strategy flags are declared here; kinds with
    # hooks have a module (namespace, pod, service under core/, daemonset under apps/).
    budgets = with_strategy("poddisruptionbudgets.policy", PodDisruptionBudgetStrategy())
    special = [
        NamespaceStore(resource("namespaces"), ctx),
        PodStore(resource("pods"), ctx, budgets=budgets),
        with_strategy("services", ServiceStrategy(cluster_ips)),
        with_strategy("daemonsets.apps", DaemonSetStrategy()),
        with_strategy("nodes", Strategy(keeps_status=True)),
        ServiceAccountStore(resource("serviceaccounts"), ctx),
        with_strategy("endpoints", Strategy(allow_create_on_update=True)),
        with_strategy("events", Strategy(allow_create_on_update=True)),
        with_strategy("events.events.k8s.io", Strategy(allow_create_on_update=True)),
        with_strategy("leases.coordination.k8s.io", Strategy(allow_create_on_update=True)),
        CustomResourceDefinitionStore(resource("customresourcedefinitions.apiextensions.k8s.io"), ctx),
        ScalableStore(resource("deployments.apps"), ctx, DeploymentStrategy()),
        ScalableStore(resource("replicasets.apps"), ctx, ReplicaSetStrategy()),
        *(ReviewStore(rt, ctx) for rt in RESOURCES if rt.group == "authorization.k8s.io"),
        *(PolicyBasedStore(rt, ctx) for rt in RESOURCES if rt.group == "rbac.authorization.k8s.io"),
        *(AuthenticationReviewStore(rt, ctx) for rt in RESOURCES if rt.group == "authentication.k8s.io"),
        budgets,
        with_strategy("jobs.batch", JobStrategy()),
    ]
    # The kinds of api/builtin_kinds.py: the shared spec/status strategy, or a module of their own.
    special += [with_strategy(key, SpecStatusStrategy(**params)) for key, params in BUILTIN_STRATEGIES.items()]
    special.append(with_strategy("apiservices.apiregistration.k8s.io", APIServiceStrategy()))
    special.append(ComponentStatusStore(resource("componentstatuses"), ctx))
    by_key = {s.rt.key: s for s in special}
    return [by_key.get(rt.key) or ResourceStore(rt, ctx) for rt in RESOURCES]


class Registry:
    """The storages of the served resources, by canonical resource name and version (a CRD
    serves one storage per served version, all over the same stored objects)."""

    def __init__(self, stores: list[ResourceStore]) -> None:
        self._stores: dict[tuple[str, str], ResourceStore] = {}
        for store in stores:
            self.register(store)

    def register(self, store: ResourceStore) -> None:
        """Serve a resource (a CRD's, once Established); replaces a storage of the same name."""
        self._stores[(store.rt.key, store.rt.version)] = store

    def unregister(self, rt: ResourceType) -> None:
        self._stores.pop((rt.key, rt.version), None)

    def storage(self, rt: ResourceType) -> ResourceStore:
        """The storage serving ``rt``; 404 for a resource nobody serves."""
        store = self._stores.get((rt.key, rt.version))
        if store is None:
            raise errors.path_not_found()
        return store

    def __iter__(self) -> Iterator[ResourceStore]:
        return iter(self._stores.values())

    def __contains__(self, rt: ResourceType) -> bool:
        return (rt.key, rt.version) in self._stores
