"""Job validation (batch/v1).

Upstream: ``pkg/apis/batch/validation/validation.go`` (``ValidateJob``,
``validateGeneratedSelector``, ``ValidateJobSpec``, ``validateJobSpec``, ``ValidateJobSpecUpdate``,
``validateJobStatus``).  The generated selector and template labels come from the Job strategy
before validation (``registry/batch/job.py``, as upstream's ``Validate`` calls
``generateSelector``), so a Job without ``manualSelector`` always passes the selector checks
unless its template labels contradict them.

Left out: the pod-failure-policy rule details (the rules list is checked for its size only), the
per-index limits beyond their basic checks, and the mutable scheduling directives of a suspended
Job that never started (its template is immutable like any other Job's).
"""

from __future__ import annotations

from typing import Any

from everynode.api import field_errors as field
from everynode.api.field_errors import FieldError
from everynode.api.names import is_dns1123_label, name_is_dns_subdomain
from everynode.api.validation.meta import (
    as_dict,
    as_list,
    child,
    index,
    key,
    selector_matches,
    validate_immutable,
    validate_label_selector,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
    validate_status_counters,
)
from everynode.api.validation.pod import validate_pod_template_spec

Obj = dict[str, Any]

CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"

COMPLETION_MODES = ["NonIndexed", "Indexed"]
POD_REPLACEMENT_POLICIES = ["Failed", "TerminatingOrFailed"]
MAX_PARALLELISM_FOR_INDEXED_JOB = 100000
MAX_POD_FAILURE_POLICY_RULES = 20
JOB_STATUS_COUNTERS = ("active", "succeeded", "failed", "ready", "terminating")


def _validate_has_label(labels: Obj, path: str, name: str, expected: str) -> list[FieldError]:
    """``ValidateHasLabel``: the template carries ``name=expected``."""
    if name not in labels:
        return [field.required(key(child(path, "labels"), name), expected)]
    if labels[name] != expected:
        return [field.invalid(key(child(path, "labels"), name), labels, f"must be '{expected}'")]
    return []


def validate_generated_selector(job: Obj) -> list[FieldError]:
    spec = as_dict(job.get("spec"))
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    md = as_dict(job.get("metadata"))
    uid, name = str(md.get("uid") or ""), str(md.get("name") or "")
    labels = as_dict(as_dict(as_dict(spec.get("template")).get("metadata")).get("labels"))
    path = "spec.template.metadata"
    errs: list[FieldError] = []
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name,
                CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name}
    for label in (LEGACY_CONTROLLER_UID_LABEL, LEGACY_JOB_NAME_LABEL, CONTROLLER_UID_LABEL, JOB_NAME_LABEL):
        errs.extend(_validate_has_label(labels, path, label, expected[label]))
    if selector_matches(spec["selector"], expected) is False:
        errs.append(field.invalid("spec.selector", spec["selector"], "`selector` not auto-generated"))
    return errs


def validate_job_spec(spec: Any, path: str = "spec") -> list[FieldError]:
    sp = as_dict(spec)
    errs: list[FieldError] = []
    for name in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                 "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"):
        errs.extend(validate_nonnegative(sp.get(name), child(path, name)))
    if sp.get("maxFailedIndexes") is not None and sp.get("backoffLimitPerIndex") is None:
        errs.append(field.required(child(path, "backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
    mode = sp.get("completionMode")
    if mode is not None:
        if mode not in COMPLETION_MODES:
            errs.append(field.not_supported(child(path, "completionMode"), mode, COMPLETION_MODES))
        if mode == "Indexed":
            if sp.get("completions") is None:
                errs.append(field.required(child(path, "completions"), "when completion mode is Indexed"))
            parallelism = sp.get("parallelism")
            if isinstance(parallelism, int) and parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
                errs.append(field.invalid(child(path, "parallelism"), parallelism,
                                          f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} "
                                          "when completion mode is Indexed"))
    if mode is None or mode == "NonIndexed":
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if sp.get(name) is not None:
                errs.append(field.invalid(child(path, name), sp[name], "requires indexed completion mode"))
    failure_policy = sp.get("podFailurePolicy")
    if failure_policy is not None:
        rules = as_list(as_dict(failure_policy).get("rules"))
        if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
            errs.append(field.too_many(child(child(path, "podFailurePolicy"), "rules"), len(rules),
                                       MAX_POD_FAILURE_POLICY_RULES))
    replacement = sp.get("podReplacementPolicy")
    if replacement is not None:
        if failure_policy is not None:
            if replacement != "Failed":
                errs.append(field.not_supported(child(path, "podReplacementPolicy"), replacement, ["Failed"]))
        elif replacement not in POD_REPLACEMENT_POLICIES:
            errs.append(field.not_supported(child(path, "podReplacementPolicy"), replacement,
                                            POD_REPLACEMENT_POLICIES))
    template = as_dict(sp.get("template"))
    errs.extend(validate_pod_template_spec(template, child(path, "template")))
    restart_path = child(path, "template.spec.restartPolicy")
    restart = as_dict(template.get("spec")).get("restartPolicy") or ""
    if restart in ("Always", ""):
        errs.append(field.required(restart_path, 'valid values: "OnFailure", "Never"'))
    elif restart not in ("OnFailure", "Never"):
        errs.append(field.not_supported(restart_path, restart, ["OnFailure", "Never"]))
    elif failure_policy is not None and restart != "Never":
        errs.append(field.invalid(restart_path, restart, 'only "Never" is supported when podFailurePolicy is specified'))
    # ValidateJobSpec: the selector is required, valid, and selects the template.
    selector = sp.get("selector")
    if selector is None:
        errs.append(field.required(child(path, "selector")))
    else:
        errs.extend(validate_label_selector(selector, child(path, "selector")))
    template_labels = as_dict(template.get("metadata")).get("labels")
    if selector is not None and selector_matches(selector, template_labels) is False:
        errs.append(field.invalid(child(path, "template.metadata.labels"), as_dict(template_labels),
                                  "`selector` does not match template `labels`"))
    return errs


def validate_job_create(job: Obj) -> list[FieldError]:
    errs = validate_object_meta(job.get("metadata"), namespaced=True, name_fn=name_is_dns_subdomain)
    errs.extend(validate_generated_selector(job))
    errs.extend(validate_job_spec(job.get("spec")))
    spec = as_dict(job.get("spec"))
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and isinstance(completions, int) and completions > 0:
        name = str(as_dict(job.get("metadata")).get("name") or "")
        hostname = f"{name}-{completions - 1}"
        if is_dns1123_label(hostname):
            errs.append(field.invalid("metadata.name", name,
                                      f"will not able to create pod with invalid DNS label: {hostname}"))
    return errs


def _completions_update(new: Obj, old: Obj) -> list[FieldError]:
    """``validateCompletions``: immutable, except an Indexed Job scaled elastically (completions
    kept equal to parallelism)."""
    if new.get("completionMode") == "Indexed" and new.get("completions") == new.get("parallelism") \
            and old.get("completions") == old.get("parallelism"):
        return []
    return validate_immutable(new.get("completions"), old.get("completions"), "spec.completions")


def validate_job_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    spec, old_spec = as_dict(new.get("spec")), as_dict(old.get("spec"))
    errs.extend(validate_job_spec(spec))
    errs.extend(_completions_update(spec, old_spec))
    for name in ("selector", "template", "completionMode", "podFailurePolicy", "backoffLimitPerIndex"):
        errs.extend(validate_immutable(spec.get(name), old_spec.get(name), f"spec.{name}"))
    return errs


def validate_job_status_update(new: Obj, old: Obj) -> list[FieldError]:
    errs = validate_object_meta_update(new.get("metadata"), old.get("metadata"))
    status = as_dict(new.get("status"))
    errs.extend(validate_status_counters(status, JOB_STATUS_COUNTERS))
    uncounted = as_dict(status.get("uncountedTerminatedPods"))
    seen: set[str] = set()
    for kind in ("succeeded", "failed"):
        for i, uid in enumerate(as_list(uncounted.get(kind))):
            path = index(child("status.uncountedTerminatedPods", kind), i)
            if uid == "":
                errs.append(field.invalid(path, uid, "must not be empty"))
            elif uid in seen:
                errs.append(field.duplicate(path, uid))
            else:
                seen.add(uid)
    return errs
