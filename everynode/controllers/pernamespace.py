"""The shape shared by the controllers that keep one object in every namespace: the
ServiceAccount controller (``default``) and the root-CA publisher (``kube-root-ca.crt``).

Why one base: both upstream controllers (``pkg/controller/serviceaccount/serviceaccounts_controller.go``,
``pkg/controller/certificates/rootcacertpublisher/publisher.go``) are the same loop — a
namespace added or updated, or the object deleted or edited, queues the namespace; a pass
creates the object when it is missing (a namespace that is gone or terminating refuses the
create, which is not an error) and, for the publisher, repairs it when edited.  The subclass
says which resource and name, what the object should be, and whether a found one needs a repair.

The owned objects are watched through a ``metadata.name`` field selector: upstream's informers
watch every ServiceAccount and ConfigMap, which these controllers only ever look at one name of.

``start`` makes a first pass over every namespace before it returns (an awaited ``on_synced``
hook of the controller kit, before the worker starts), so that the control plane reports ready
only once every namespace that exists has its object (a DaemonSet's pods are refused by the
ServiceAccount admission plugin while ``default`` is missing).
"""

from __future__ import annotations

import logging
from typing import Any

from everynode.api.errors import ApiError
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.client.kit import ControllerKit, ControllerLifecycle
from everynode.clock import Clock

log = logging.getLogger(__name__)

Obj = dict[str, Any]


class PerNamespaceObjectController(ControllerLifecycle):
    """Keeps the object ``name`` of ``resource`` in every active namespace."""

    resource: str = ""
    name: str = ""
    queue_name: str = ""

    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock) -> None:
        self.client = client
        self.clock = clock
        self.syncs = 0
        self.kit = ControllerKit(self.queue_name, informers=informers)
        self._namespaces = self.kit.informer("namespaces")
        self._objects = self.kit.informer(self.resource, field_selector=f"metadata.name={self.name}")
        self.queue = self.kit.queue()
        self.kit.watch(self._namespaces, on_add=self._namespace_changed,
                       on_update=lambda _old, new: self._namespace_changed(new))
        self.kit.watch(self._objects, on_update=lambda _old, new: self._object_changed(new),
                       on_delete=self._object_changed)
        self.kit.on_synced(self._first_pass)
        self.kit.workers(self.queue, self.sync, on_error=self._failed)

    # -- what the subclass says ---------------------------------------------------------------

    def desired(self, namespace: str) -> Obj:
        """The object to create in ``namespace``."""
        raise NotImplementedError

    def repaired(self, existing: Obj) -> Obj | None:
        """The object to write instead of ``existing``, or None when it is as it should be."""
        return None

    # -- the loop -----------------------------------------------------------------------------

    def _namespace_changed(self, ns: Obj) -> None:
        self.queue.add(ns["metadata"]["name"])

    def _object_changed(self, obj: Obj) -> None:
        md = obj.get("metadata") or {}
        if md.get("name") == self.name and md.get("namespace"):
            self.queue.add(md["namespace"])

    async def _first_pass(self) -> None:
        """Every namespace once, before the workers start and before :meth:`start` returns."""
        for key in self._namespaces.keys():
            try:
                await self.sync(key)
            except ApiError as e:
                log.debug("%s: %s: %s", self.queue_name, key, e)
                self.queue.add_rate_limited(key)

    def _failed(self, key: Any, exc: Exception, _retried: bool) -> None:
        log.debug("%s: syncing namespace %s: %s", self.queue_name, key, exc)

    async def sync(self, namespace: str) -> None:
        """One pass over ``namespace`` (``syncNamespace``)."""
        self.syncs += 1
        ns = self._namespaces.get(namespace)
        if ns is None or ns["metadata"].get("deletionTimestamp") or \
                (ns.get("status") or {}).get("phase") == "Terminating":
            return
        existing = self._objects.get(f"{namespace}/{self.name}")
        if existing is None:
            try:
                await self.client.create(self.resource, self.desired(namespace), namespace=namespace)
            except ApiError as e:
                # Already there (the cache lags), or the namespace is gone or terminating.
                if e.code not in (403, 404, 409):
                    raise
            return
        repaired = self.repaired(existing)
        if repaired is not None:
            await self.client.update(self.resource, repaired)
