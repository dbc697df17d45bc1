"""The namespace controller: empties a terminating namespace, then finalizes it.

Upstream: ``pkg/controller/namespace`` (``deletion/namespaced_resources_deleter.go``).  A
namespace deleted through the API gets a deletionTimestamp and phase ``Terminating``; the API
server refuses new content in it.  This controller deletes every namespaced object in it (a
deletecollection per resource, which leaves graceful pods terminating), re-checks until nothing
is left, and then removes the ``kubernetes`` finalizer through the ``finalize`` subresource;
the API server deletes the namespace once its finalizers are gone.
"""

from __future__ import annotations

import asyncio
import logging

from everynode.api import registry
from everynode.api.errors import ApiError
from everynode.client.base import Client
from everynode.client.informer import SharedInformerFactory
from everynode.client.workqueue import WorkQueue
from everynode.clock import Clock

log = logging.getLogger(__name__)

FINALIZER = "kubernetes"
RECHECK_SECONDS = 1.0


class NamespaceController:
    def __init__(self, client: Client, *, informers: SharedInformerFactory, clock: Clock) -> None:
        self.client = client
        self.clock = clock
        self._informer = informers.informer("namespaces")
        self._informer.add_handler(
            on_add=self._enqueue,
            on_update=lambda old, new: self._enqueue(new),
        )
        self.queue: WorkQueue = WorkQueue(name="namespace")
        self._task: asyncio.Task[None] | None = None
        # Resources listed once: every namespaced kind except events (they go last, like upstream's
        # deleter which keeps events until the end so the deletion stays observable).
        namespaced = [rt for rt in registry.RESOURCES if rt.namespaced and "deletecollection" in rt.verbs]
        self._resources = [rt.key for rt in namespaced if rt.kind != "Event"] + [
            rt.key for rt in namespaced if rt.kind == "Event"]

    def _enqueue(self, ns: dict) -> None:
        if ns["metadata"].get("deletionTimestamp"):
            self.queue.add(ns["metadata"]["name"])

    async def start(self) -> None:
        self._informer.start()
        await self._informer.wait_synced()
        self._task = asyncio.create_task(self._worker(), name="namespace-controller")

    async def stop(self) -> None:
        self.queue.shutdown()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def _worker(self) -> None:
        while True:
            name = await self.queue.get()
            if name is None:
                return
            try:
                done = await self.sync(name)
                self.queue.forget(name)
                if not done:
                    self.queue.add_after(name, RECHECK_SECONDS)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                log.debug("namespace %s: %s", name, exc)
                self.queue.add_rate_limited(name)
            finally:
                self.queue.done(name)

    async def sync(self, name: str) -> bool:
        """One pass; True when the namespace is finalized (or gone)."""
        ns = self._informer.get(name)
        if ns is None or not ns["metadata"].get("deletionTimestamp"):
            return True
        remaining = 0
        for resource in self._resources:
            try:
                await self.client.delete_collection(resource, namespace=name)
                left = await self.client.list(resource, namespace=name, limit=1)
            except ApiError as e:
                if e.code in (404, 405):
                    continue
                raise
            remaining += len(left.get("items") or ())
        if remaining:
            return False
        finalizers = [f for f in (ns.get("spec") or {}).get("finalizers") or () if f != FINALIZER]
        body = {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": name, "resourceVersion": ns["metadata"].get("resourceVersion")},
            "spec": {"finalizers": finalizers},
        }
        try:
            await self.client.update("namespaces", body, subresource="finalize")
        except ApiError as e:
            if e.code == 404:
                return True
            if e.code == 409:
                return False
            raise
        return True
