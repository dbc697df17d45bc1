"""PodDisruptionBudget and Job validation with kube-apiserver's messages
(``pkg/apis/policy/validation``, ``pkg/apis/batch/validation``), through the same entry points
the API server uses."""

from __future__ import annotations

import copy

import pytest

from everynode.api.defaults import apply_defaults
from everynode.api.validation import validate_create, validate_update
from everynode.apiserver.registry.batch.job import generate_selector

PDB = "poddisruptionbudgets.policy"
JOBS = "jobs.batch"


def pdb(**spec) -> dict:
    return {"metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "web"}}, **spec}}


def messages(errs) -> list[str]:
    return [e.message() for e in errs]


def test_a_valid_budget() -> None:
    assert validate_create(PDB, pdb(minAvailable=2)) == []
    assert validate_create(PDB, pdb(maxUnavailable="50%")) == []


def test_both_bounds_set() -> None:
    errs = validate_create(PDB, pdb(minAvailable=1, maxUnavailable=1))
    assert len(errs) == 1 and errs[0].field == "spec"
    assert errs[0].message().endswith(": minAvailable and maxUnavailable cannot be both set")


@pytest.mark.parametrize(("spec", "expected"), [
    ({"minAvailable": -1}, ["spec.minAvailable: Invalid value: -1: must be greater than or equal to 0"]),
    ({"maxUnavailable": "120%"}, ['spec.maxUnavailable: Invalid value: "120%": must not be greater than 100%']),
    ({"minAvailable": "abc"}, ['spec.minAvailable: Invalid value: "abc": a valid percent string must be a numeric '
                               "string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation "
                               "is '[0-9]+%')"]),
    ({"unhealthyPodEvictionPolicy": "Sometimes"},
     ['spec.unhealthyPodEvictionPolicy: Unsupported value: "Sometimes": supported values: "AlwaysAllow", '
      '"IfHealthyBudget"']),
    ({"selector": {"matchExpressions": [{"key": "app", "operator": "In"}]}},
     ["spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or "
      "'NotIn'"]),
])
def test_bad_budgets(spec, expected) -> None:
    assert messages(validate_create(PDB, pdb(**spec))) == expected


def test_a_budget_spec_may_change() -> None:
    old = pdb(minAvailable=2)
    new = copy.deepcopy(old)
    new["spec"]["minAvailable"] = 1
    assert validate_update(PDB, new, old) == []


def job(restart: str | None = "Never", **spec) -> dict:
    template: dict = {"spec": {"containers": [{"name": "pi", "image": "perl"}]}}
    if restart is not None:
        template["spec"]["restartPolicy"] = restart
    obj = {"metadata": {"name": "pi", "namespace": "default", "uid": "u-1"}, "spec": {"template": template, **spec}}
    apply_defaults(JOBS, obj)
    generate_selector(obj)
    return obj


def test_job_defaults_and_generated_selector() -> None:
    obj = job()
    spec = obj["spec"]
    assert {k: spec[k] for k in ("completions", "parallelism", "backoffLimit", "completionMode", "suspend",
                                 "podReplacementPolicy", "manualSelector")} == {
        "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed", "suspend": False,
        "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": False}
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}
    assert spec["template"]["metadata"]["labels"] == {
        "controller-uid": "u-1", "job-name": "pi", "batch.kubernetes.io/controller-uid": "u-1",
        "batch.kubernetes.io/job-name": "pi"}
    assert validate_create(JOBS, obj) == []
    assert job(parallelism=3)["spec"].get("completions") is None  # only both unset default to 1


@pytest.mark.parametrize(("restart", "expected"), [
    ("Always", ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']),
    (None, ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']),
    ("OnFailure", []),
])
def test_job_restart_policy(restart, expected) -> None:
    assert messages(validate_create(JOBS, job(restart))) == expected


def test_job_numbers_and_modes() -> None:
    assert messages(validate_create(JOBS, job(parallelism=-1, backoffLimit=-2))) == [
        "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
        "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"]
    assert messages(validate_create(JOBS, job(completionMode="Sometimes"))) == [
        'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"']


def test_job_template_and_selector_are_immutable() -> None:
    old = job()
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "perl:5"
    assert [e.field for e in validate_update(JOBS, new, old)] == ["spec.template"]
    assert validate_update(JOBS, new, old)[0].detail == "field is immutable"
    new = copy.deepcopy(old)
    new["spec"]["completions"] = 3
    assert [e.field for e in validate_update(JOBS, new, old)] == ["spec.completions"]
    new = copy.deepcopy(old)
    new["spec"]["backoffLimit"] = 1  # mutable
    assert validate_update(JOBS, new, old) == []
