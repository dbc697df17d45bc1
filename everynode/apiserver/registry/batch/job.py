"""Jobs: the generated selector and pod labels, generation, and a status only the status
subresource writes — ``pkg/registry/batch/job/strategy.go``.

Why the selector is generated at validation time: it is keyed by the Job's uid, which only
exists once ``BeforeCreate`` ran; upstream's ``Validate`` calls ``generateSelector`` for the same
reason.  Unless ``spec.manualSelector`` is true the template gets ``controller-uid``/``job-name``
and their ``batch.kubernetes.io/`` forms, and the selector becomes
``batch.kubernetes.io/controller-uid=<uid>`` (a selector the user wrote is replaced, as upstream
does).  ``JobStatus`` has only omitempty fields, so a new Job's status is ``{}``.

Left out: the default ``orphan`` propagation batch/v1 keeps for API deletes without options
(kubectl always sends ``propagationPolicy``).
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as fielderr
from everynode.api.registry import ResourceType
from everynode.api.validation.batch import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
)
from everynode.apiserver.registry.strategy import Strategy, bump_generation_on_spec_change, keep

Obj = dict[str, Any]


def generate_selector(job: Obj) -> None:
    """``generateSelector``: the template labels and the selector of a Job without a manual one."""
    md = job["metadata"]
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    uid, name = md.get("uid") or "", md.get("name") or ""
    template = spec.get("template")
    if not isinstance(template, dict):
        template = spec["template"] = {}
    tmd = template.get("metadata")
    if not isinstance(tmd, dict):
        tmd = template["metadata"] = {}
    labels = dict(tmd.get("labels") or {}) if isinstance(tmd.get("labels"), dict) else {}
    for label, value in ((LEGACY_CONTROLLER_UID_LABEL, uid), (LEGACY_JOB_NAME_LABEL, name),
                         (CONTROLLER_UID_LABEL, uid), (JOB_NAME_LABEL, name)):
        labels.setdefault(label, value)
    tmd["labels"] = labels
    spec["selector"] = {"matchLabels": {CONTROLLER_UID_LABEL: uid}}


class JobStrategy(Strategy):
    def __init__(self) -> None:
        super().__init__(keeps_status=True)

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        obj["status"] = {}

    def validate_create(self, rt: ResourceType, obj: Obj) -> list[fielderr.FieldError]:
        generate_selector(obj)
        return super().validate_create(rt, obj)

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        keep(new, old, "status")
        bump_generation_on_spec_change(new, old)
