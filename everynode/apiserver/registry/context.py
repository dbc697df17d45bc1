"""What every resource's REST storage shares: the store, the clock, admission, the watch
bookmark interval and the start-up gate.

Why one object: upstream gives each ``genericregistry.Store`` its storage, the admission chain and
the server's options at construction; here every resource's storage holds this one context, so a
change made after construction (tests shorten ``bookmark_interval`` on the facade) is seen by all.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from everynode.apiserver.admission import Admission
from everynode.apiserver.authorization import AlwaysAllow, Authorizer
from everynode.apiserver.serviceaccount_tokens import TokenIssuer, load_or_create_key
from everynode.clock import Clock
from everynode.storage.base import Store


async def _no_gate() -> None:
    return None


@dataclass(slots=True)
class ServerContext:
    store: Store
    clock: Clock
    admission: Admission
    bookmark_interval: float = 60.0
    ready: Callable[[], Awaitable[None]] = _no_gate
    """Awaited by every request before it reads or writes: the built-in objects are seeded."""
    authorizer: Authorizer = field(default_factory=AlwaysAllow)
    """``--authorization``: what the HTTP layer and the review resources ask."""
    tokens: TokenIssuer = field(default_factory=lambda: TokenIssuer(load_or_create_key(None)))
    """Signs TokenRequest's service-account tokens and authenticates them."""
    managed_fields: bool = True
    """Whether writes keep ``metadata.managedFields``.  False only in ``plan``'s copy: nothing
    there reads them (its controllers, scheduler, kubelets, ``why`` and the answer never do, and
    no request in it applies server-side), and working them out was about a tenth of a rollout's
    instructions.  Without them the copy keeps none: a body's are dropped, not stored."""

    def now(self) -> str:
        return self.clock.rfc3339()
