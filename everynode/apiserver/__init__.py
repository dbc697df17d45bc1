"""Layer 3: the Kubernetes REST surface — semantics (service) and HTTP transport (http)."""

from __future__ import annotations

from everynode.clock import Clock
from everynode.storage.base import Store


def build_service(store: Store, clock: Clock | None = None):  # noqa: ANN201 - avoids importing at package load
    """An :class:`~everynode.apiserver.service.ApiService` over ``store`` (real time by default)."""
    from everynode.apiserver.service import ApiService

    return ApiService(store, clock=clock or Clock())
