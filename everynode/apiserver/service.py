"""The API's semantics, independent of HTTP: what kube-apiserver does between decoding a request
and encoding the answer.

INTERFACE CONTRACT (filled in by the apiserver work; signatures are fixed because the HTTP layer
and the in-process client both call them):

* Every method raises :class:`everynode.api.errors.ApiError` for every failure, in upstream's
  shape (404 NotFound, 409 AlreadyExists/Conflict, 422 Invalid with causes, 400 BadRequest,
  405, 410 Expired, 415 ...).  Nothing is stored when an error is raised.
* Objects returned are stored (shared, immutable) objects: callers must not mutate them.
* Objects returned carry ``kind`` and ``apiVersion``.
* ``namespace`` is ``""`` for cluster-scoped resources; for ``list``/``watch``/
  ``delete_collection`` ``None`` means all namespaces.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from everynode.api.registry import ResourceType
from everynode.clock import Clock
from everynode.storage.base import Store

Obj = dict[str, Any]


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


class ApiService:
    def __init__(self, store: Store, *, clock: Clock) -> None:
        self.store = store
        self.clock = clock

    async def get(self, rt: ResourceType, namespace: str, name: str, *, subresource: str | None = None) -> Obj:
        raise NotImplementedError

    async def list(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
                   field_selector: str | None = None, limit: int | None = None,
                   continue_token: str | None = None, resource_version: str | None = None,
                   resource_version_match: str | None = None) -> Obj:
        raise NotImplementedError

    async def create(self, rt: ResourceType, namespace: str, body: Obj, *, opts: RequestOptions) -> Obj:
        raise NotImplementedError

    async def create_subresource(self, rt: ResourceType, namespace: str, name: str, subresource: str,
                                 body: Obj, *, opts: RequestOptions) -> tuple[int, Obj]:
        """pods/binding (201 + Status Success), pods/eviction (201 + Status Success or 429)."""
        raise NotImplementedError

    async def update(self, rt: ResourceType, namespace: str, name: str, body: Obj, *,
                     subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        """PUT.  Returns (object, created)."""
        raise NotImplementedError

    async def patch(self, rt: ResourceType, namespace: str, name: str, patch: Any, patch_type: str, *,
                    subresource: str | None = None, opts: RequestOptions) -> tuple[Obj, bool]:
        """patch_type: "json" | "merge" | "strategic" | "apply".  Returns (object, created)."""
        raise NotImplementedError

    async def delete(self, rt: ResourceType, namespace: str, name: str, *, options: Obj | None = None,
                     opts: RequestOptions) -> tuple[int, Obj]:
        """Returns (http code, body): the object (200, or 202 while finalizers/graceful) or a Status."""
        raise NotImplementedError

    async def delete_collection(self, rt: ResourceType, namespace: str | None, *,
                                label_selector: str | None = None, field_selector: str | None = None,
                                options: Obj | None = None, opts: RequestOptions) -> Obj:
        raise NotImplementedError

    def watch(self, rt: ResourceType, namespace: str | None, *, label_selector: str | None = None,
              field_selector: str | None = None, resource_version: str | None = None,
              allow_bookmarks: bool = False, send_initial_events: bool | None = None,
              timeout_seconds: float | None = None) -> AsyncIterator[Any]:
        """Async iterator of ``storage.base.WatchEvent`` (type, object, rv, encoded-cache)."""
        raise NotImplementedError
