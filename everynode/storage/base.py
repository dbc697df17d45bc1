"""The storage interface every backend implements.

Semantics (kube-apiserver over etcd, simplified to one process):

* One global, strictly increasing integer resourceVersion across all resources.  Every write
  (create, update, delete) gets the next one; the object carries it as the *string*
  ``metadata.resourceVersion``.
* Stored objects are **immutable**: the store keeps the dict it was given (after setting the
  resourceVersion) and hands the same dict to every reader.  Callers must never mutate an object
  they passed in or got out; copy first (``everynode.api.meta.deep_copy``).  This is what keeps
  reads and watch fan-out free of copies (python-stack.md §2).
* ``update``/``delete`` take an optional expected resourceVersion (compare-and-swap): a mismatch
  raises :class:`ConflictError`.
* ``watch`` delivers events with rv > ``since_rv`` from a bounded history window; older than
  the window raises :class:`ExpiredError` (the API answers 410 Gone / ``Expired``).  Each event
  carries the previous state too, so a filtered watch can turn "stopped matching" into DELETED
  and "started matching" into ADDED, as the apiserver's watch cache does.
* Keys are ``(resource, namespace, name)`` with ``resource`` the registry's canonical name
  (``pods``, ``daemonsets.apps``) and ``namespace`` ``""`` for cluster-scoped objects.
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]


class StorageError(Exception):
    pass


class KeyExistsError(StorageError):
    pass


class NotFoundError(StorageError):
    pass


class ConflictError(StorageError):
    """The expected resourceVersion (or uid precondition) did not match the stored one."""


class ExpiredError(StorageError):
    """The requested resourceVersion is older than the watch history window."""

    def __init__(self, requested: int, oldest: int):
        self.requested = requested
        self.oldest = oldest
        super().__init__(f"too old resource version: {requested} ({oldest})")


@dataclass(slots=True)
class WatchEvent:
    type: str  # "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK"
    object: Obj
    rv: int
    resource: str = ""
    prev: Obj | None = None  # previous state for MODIFIED/DELETED (DELETED's object is the last state)
    # Encodings computed once and shared by every watcher (filled lazily by the HTTP layer).
    encoded: dict[str, bytes] = field(default_factory=dict)


@dataclass(slots=True)
class ListResult:
    items: list[Obj]
    rv: int  # the store's resourceVersion the list is consistent with
    continue_token: str | None = None
    remaining: int | None = None  # remainingItemCount when paginating


class Watch(abc.ABC):
    """An open watch: iterate for events; ``stop()`` ends the iteration."""

    @abc.abstractmethod
    def __aiter__(self) -> AsyncIterator[WatchEvent]: ...

    @abc.abstractmethod
    def stop(self) -> None: ...


class Store(abc.ABC):
    @abc.abstractmethod
    def current_rv(self) -> int:
        """The resourceVersion of the latest write (0 for an empty store)."""

    @abc.abstractmethod
    async def create(self, resource: str, obj: Obj) -> Obj:
        """Store a new object; raise KeyExistsError.  Returns the stored object (rv set)."""

    @abc.abstractmethod
    async def update(self, resource: str, obj: Obj, *, expected_rv: int | None = None) -> Obj:
        """Replace an existing object; raise NotFoundError / ConflictError."""

    @abc.abstractmethod
    async def delete(self, resource: str, namespace: str, name: str, *,
                     expected_rv: int | None = None, expected_uid: str | None = None) -> Obj:
        """Remove an object; returns its last state carrying the deletion's new resourceVersion."""

    @abc.abstractmethod
    def get(self, resource: str, namespace: str, name: str) -> Obj | None:
        """The stored object or None.  Never copies."""

    @abc.abstractmethod
    def list(self, resource: str, *, namespace: str | None = None, predicate: Predicate | None = None,
             limit: int | None = None, continue_token: str | None = None) -> ListResult:
        """Objects ordered by (namespace, name); ``namespace=None`` means all namespaces.

        With ``limit`` a page is returned plus an opaque continue token; an invalid or expired
        token raises ExpiredError (the API answers 410) or ValueError (400)."""

    @abc.abstractmethod
    def count(self, resource: str) -> int:
        """Number of objects of a resource (for metrics and benchmarks)."""

    @abc.abstractmethod
    def watch(self, resource: str, *, namespace: str | None = None, predicate: Predicate | None = None,
              since_rv: int | None = None) -> Watch:
        """Events of ``resource`` (all resources when ``resource == "*"``) after ``since_rv``
        (None: from now).  Raises ExpiredError when since_rv is older than the history window."""

    def writes(self, resource: str) -> int | None:
        """How many writes of ``resource`` this store has applied since it opened (None: not
        counted).  Only its changes matter: a reader that derived something from the objects of
        a resource knows it still holds while the count stays the same."""
        return None

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Flush and release resources."""
