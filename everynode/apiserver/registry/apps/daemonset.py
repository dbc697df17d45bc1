"""DaemonSets: ``metadata.generation`` and the ``deprecated.daemonset.template.generation``
annotation, as ``pkg/registry/apps/daemonset/strategy.go`` keeps them.

Why the annotation: apps/v1 has no ``spec.templateGeneration``; upstream's v1 conversion
(``pkg/apis/apps/v1/conversion.go``) parses the annotation into the internal field on the way in
and writes it back on the way out, so the v1 object shows it.  Create raises it to at least 1;
an update bumps it (and ``generation``) when the pod template changes, and only ``generation``
when the rest of the spec does.  The ``/status`` write keeps labels, annotations, finalizers and
owner references (``ResetObjectMetaForStatus``).
"""

from __future__ import annotations

from typing import Any

from everynode.apiserver.registry.strategy import StatusStrategy, Strategy, keep, reset_object_meta_for_status

Obj = dict[str, Any]

TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"

# A DaemonSet's status as ``apps.DaemonSetStatus{}`` serialises (the four non-omitempty fields).
_EMPTY_STATUS = {
    "currentNumberScheduled": 0,
    "numberMisscheduled": 0,
    "desiredNumberScheduled": 0,
    "numberReady": 0,
}


class DaemonSetStrategy(Strategy):
    def __init__(self) -> None:
        super().__init__(keeps_status=True, subresources={"status": DaemonSetStatusStrategy()})

    def prepare_for_create(self, obj: Obj) -> None:
        md = obj["metadata"]
        md["generation"] = 1
        obj["status"] = dict(_EMPTY_STATUS)
        # conversion.go: the annotation is parsed into spec.templateGeneration on the way in, and
        # PrepareForCreate raises it to at least 1.
        generation = _template_generation(md)
        _set_template_generation(md, max(generation, 1))

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "status")
        md = new["metadata"]
        generation = _template_generation(old["metadata"])
        new_spec = new.get("spec") or {}
        old_spec = old.get("spec") or {}
        if new_spec.get("template") != old_spec.get("template"):
            generation += 1
            md["generation"] = int(md.get("generation") or 0) + 1
        elif new_spec != old_spec:
            md["generation"] = int(md.get("generation") or 0) + 1
        _set_template_generation(md, generation)


class DaemonSetStatusStrategy(StatusStrategy):
    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        reset_object_meta_for_status(new["metadata"], old["metadata"])


def _template_generation(md: Obj) -> int:
    value = (md.get("annotations") or {}).get(TEMPLATE_GENERATION_ANNOTATION)
    if value is None:
        return 0
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def _set_template_generation(md: Obj, generation: int) -> None:
    annotations = dict(md.get("annotations") or {})
    annotations[TEMPLATE_GENERATION_ANNOTATION] = str(generation)
    md["annotations"] = annotations
