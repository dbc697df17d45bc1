"""The client interface every controller uses, whatever the transport.

Controllers talk to the API only through this interface (DESIGN.md), never to storage, so the
same controller runs inside ``everynode up`` (in-process transport: direct calls into the
API service, no encoding) and against any cluster (HTTP transport from a kubeconfig).

Conventions:
* ``resource`` is what kubectl takes: the registry's canonical name (``pods``, ``nodes``,
  ``daemonsets.apps``, ``leases.coordination.k8s.io``, ``events`` ...), a kind (``DaemonSet``), a
  plural or singular with or without its group (``daemonsets``) or a short name (``ds``).  Every
  transport resolves it with :func:`resolve_resource` (one table: the api layer's registry);
  an unknown name is the 404 the server gives for a path it does not serve.
* ``namespace`` is ``""`` for cluster-scoped resources; in ``list``/``watch`` ``None`` means
  all namespaces.
* Objects are plain dicts.  Objects *returned* may be shared with a cache (in-process): treat
  them as read-only and ``deep_copy`` before changing.
* Errors are raised as :class:`everynode.api.errors.ApiError` carrying the server's Status, for
  both transports (``e.code == 404``, ``e.reason == "Conflict"`` ...).
* ``patch_type`` is one of ``"json"`` (RFC 6902), ``"merge"`` (RFC 7386), ``"strategic"``,
  ``"apply"`` (server-side apply; needs ``field_manager``).
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from typing import Any

from everynode.api import errors
from everynode.api.registry import ResourceType, resource

Obj = dict[str, Any]


def resolve_resource(name: str) -> ResourceType:
    """The served resource a client's ``resource`` argument names (see the conventions above)."""
    try:
        return resource(name)
    except KeyError:
        raise errors.path_not_found() from None


def delete_options(*, grace_period_seconds: int | None = None, propagation_policy: str | None = None,
                   preconditions: dict[str, str] | None = None, dry_run: bool = False) -> Obj:
    """The DeleteOptions body of a delete, as client-go sends it (unset options left out)."""
    options: Obj = {"kind": "DeleteOptions", "apiVersion": "v1"}
    if grace_period_seconds is not None:
        options["gracePeriodSeconds"] = grace_period_seconds
    if propagation_policy is not None:
        options["propagationPolicy"] = propagation_policy
    if preconditions:
        options["preconditions"] = dict(preconditions)
    if dry_run:
        options["dryRun"] = ["All"]
    return options


PATCH_CONTENT_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "apply": "application/apply-patch+yaml",
}


class Client(abc.ABC):
    @abc.abstractmethod
    async def get(self, resource: str, name: str, *, namespace: str = "", subresource: str | None = None) -> Obj: ...

    @abc.abstractmethod
    async def list(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, resource_version: str | None = None) -> Obj:
        """A List object: ``{"kind": "PodList", "metadata": {"resourceVersion", "continue"?}, "items": [...]}``."""

    @abc.abstractmethod
    async def create(self, resource: str, obj: Obj, *, namespace: str | None = None, dry_run: bool = False,
                     field_manager: str | None = None, handed_over: bool = False, typed: bool = False) -> Obj:
        """``namespace`` defaults to ``obj.metadata.namespace``.  ``handed_over``: the caller made
        ``obj`` for this request alone and does not use it afterwards but to send it again (an
        Event), so an in-process server may change it and keep it, without copying it first.
        ``typed``: the caller vouches that ``obj`` holds no badly typed value and no unknown field,
        as a Go client's struct cannot (the Event recorder, which checks what it puts in), so an
        in-process server need not search it for them (``RequestOptions.typed``)."""

    @abc.abstractmethod
    async def update(self, resource: str, obj: Obj, *, subresource: str | None = None, dry_run: bool = False,
                     field_manager: str | None = None) -> Obj:
        """PUT; ``obj.metadata.resourceVersion`` (if set) is the CAS precondition."""

    async def update_status(self, resource: str, obj: Obj) -> Obj:
        return await self.update(resource, obj, subresource="status")

    @abc.abstractmethod
    async def patch(self, resource: str, name: str, patch: Any, *, namespace: str = "", patch_type: str = "merge",
                    subresource: str | None = None, field_manager: str | None = None, force: bool | None = None,
                    dry_run: bool = False) -> Obj: ...

    @abc.abstractmethod
    async def delete(self, resource: str, name: str, *, namespace: str = "", grace_period_seconds: int | None = None,
                     propagation_policy: str | None = None, preconditions: dict[str, str] | None = None,
                     dry_run: bool = False) -> Obj:
        """Returns what the server returns: the object (possibly with deletionTimestamp) or a Status."""

    @abc.abstractmethod
    async def delete_collection(self, resource: str, *, namespace: str | None = None,
                                label_selector: str | None = None, field_selector: str | None = None) -> Obj: ...

    @abc.abstractmethod
    async def create_subresource(self, resource: str, name: str, subresource: str, body: Obj, *,
                                 namespace: str = "") -> Obj:
        """POST to a subresource: ``pods/binding``, ``pods/eviction``."""

    @abc.abstractmethod
    def watch(self, resource: str, *, namespace: str | None = None, label_selector: str | None = None,
              field_selector: str | None = None, resource_version: str | None = None,
              allow_bookmarks: bool = True, timeout_seconds: int | None = None,
              send_initial_events: bool | None = None) -> AsyncIterator[Obj]:
        """Yields ``{"type": "ADDED"|"MODIFIED"|"DELETED"|"BOOKMARK", "object": {...}}``.

        An ``ERROR`` event in the stream (e.g. 410 Expired) is raised as ApiError instead."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        pass

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
