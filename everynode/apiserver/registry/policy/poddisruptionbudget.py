"""PodDisruptionBudgets: ``metadata.generation`` and a status only the status subresource
writes, as ``pkg/registry/policy/poddisruptionbudget/strategy.go`` keeps them.

Why the generation matters more here than elsewhere: the eviction subresource refuses to
decrement a budget whose ``status.observedGeneration`` is behind ``metadata.generation`` (429
"still being processed"), so a spec change must bump it and a status write must never touch it.
Create starts from the status Go serialises for an empty ``PodDisruptionBudgetStatus`` (its four
counters are not omitempty); a main-resource update keeps the stored status and bumps the
generation on any spec change; a ``/status`` write keeps the stored spec.
"""

from __future__ import annotations

from typing import Any

from everynode.apiserver.registry.strategy import Strategy, bump_generation_on_spec_change, keep

Obj = dict[str, Any]

EMPTY_STATUS: Obj = {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0}


class PodDisruptionBudgetStrategy(Strategy):
    def __init__(self) -> None:
        super().__init__(keeps_status=True)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        obj["status"] = dict(EMPTY_STATUS)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "status")
        bump_generation_on_spec_change(new, old)
