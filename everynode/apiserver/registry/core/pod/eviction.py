"""``pods/eviction``: a delete that a disruption budget may refuse —
``pkg/registry/core/pod/storage/eviction.go`` (1.33).

The order of upstream's ``EvictionREST.Create``:

1. The Eviction's name must be the URL's; the request's ``dryRun`` and the body's
   ``deleteOptions.dryRun`` are merged (both set and different: 400).
2. A pod that is Pending, Succeeded, Failed or already being deleted is deleted at once, with no
   budget consulted: it disrupts nothing that is running.  Unless the caller gave a
   resourceVersion precondition, the delete is made conditional on the version just read
   (not for terminal or terminating pods), and a conflict re-reads and tries again.
3. Otherwise every PodDisruptionBudget of the namespace whose selector matches the pod is
   looked at (an empty or missing selector matches nothing here, unlike in the disruption
   controller — upstream's rule): more than one is a 500; none lets the eviction through.
4. A pod that is not Ready does not count as healthy, so evicting it costs the budget nothing:
   it is allowed when the budget's ``unhealthyPodEvictionPolicy`` is ``AlwaysAllow``, or (the
   default ``IfHealthyBudget``) when the budget currently has all the healthy pods it needs —
   the delete is then conditional on the pod's resourceVersion, and a conflict (the pod became
   Ready meanwhile) answers 429.
5. Else the budget is checked and decremented (``checkAndDecrement``): a status older than the
   spec (``observedGeneration`` behind) is a 429 "still being processed"; ``disruptionsAllowed``
   0 is the 429 kubectl drain retries on, with the cause "The disruption budget X needs N healthy
   pods and has M currently"; else ``disruptionsAllowed`` is decremented and the pod recorded in
   ``disruptedPods`` (the disruption controller stops counting it as healthy) by a status update
   on the budget's resourceVersion, retried on conflict with a fresh read.  Dry runs stop before
   the write.
6. The pod gets the ``DisruptionTarget`` condition (``EvictionByEvictionAPI``, written as
   kube-apiserver through ``pods/status``) and is deleted with the Eviction's ``deleteOptions``.

The decisions are pure functions (:func:`budgets_for`, :func:`can_ignore_budgets`,
:func:`unhealthy_pod_may_go`, :func:`decremented`) so they are table-tested apart from storage.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from everynode.api import errors
from everynode.api.meta import deep_copy
from everynode.api.pod import is_pod_ready
from everynode.api.selectors import SelectorError, label_selector_from_dict
from everynode.apiserver.registry.core.pod.strategy import with_condition
from everynode.apiserver.registry.options import RequestOptions

if TYPE_CHECKING:
    from everynode.apiserver.registry.generic import ResourceStore

Obj = dict[str, Any]

EVICTION_RETRIES = 20  # upstream's EvictionsRetry: 20 steps …
EVICTION_RETRY_DELAY = 0.5  # … 500 ms apart
MAX_DISRUPTED_POD_SIZE = 2000
VIOLATION = "Cannot evict pod as it would violate the pod's disruption budget."
MULTIPLE_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"


# --------------------------------------------------------------------------- pure decisions

def can_ignore_budgets(pod: Obj) -> bool:
    """``canIgnorePDB``: Pending, terminal or terminating pods are deleted without a budget check."""
    phase = (pod.get("status") or {}).get("phase")
    return phase in ("Pending", "Succeeded", "Failed") or bool(pod["metadata"].get("deletionTimestamp"))


def enforces_resource_version(pod: Obj) -> bool:
    """``shouldEnforceResourceVersion``: not for terminal or terminating pods."""
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not pod["metadata"].get("deletionTimestamp")


def budgets_for(pod: Obj, budgets: list[Obj]) -> list[Obj]:
    """``getPodDisruptionBudgets``: the budgets of the pod's namespace selecting it; a missing,
    empty or invalid selector matches nothing."""
    labels = pod["metadata"].get("labels") or {}
    namespace = pod["metadata"].get("namespace")
    out = []
    for pdb in budgets:
        if pdb["metadata"].get("namespace") != namespace:
            continue
        try:
            selector = label_selector_from_dict((pdb.get("spec") or {}).get("selector"))
        except SelectorError:
            continue
        if selector.empty or not selector.matches(labels):
            continue
        out.append(pdb)
    return out


def unhealthy_pod_may_go(pod: Obj, pdb: Obj) -> bool:
    """An unready pod is evicted without decrementing the budget (``AlwaysAllow``, or a budget
    that has the healthy pods it wants — ``IfHealthyBudget``, the default)."""
    if is_pod_ready(pod):
        return False
    if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = pdb.get("status") or {}
    desired = int(status.get("desiredHealthy") or 0)
    return int(status.get("currentHealthy") or 0) >= desired and desired > 0


def too_many_requests(name: str) -> errors.ApiError:
    """``createTooManyRequestsError``: the budget's status is not current yet."""
    err = errors.too_many_requests(VIOLATION, 10)
    err.status["details"]["causes"] = [{"reason": DISRUPTION_BUDGET_CAUSE,
                                        "message": f"The disruption budget {name} is still being processed by the server."}]
    return err


def decremented(pdb: Obj, pod_name: str, *, now: str, dry_run: bool) -> Obj | None:
    """``checkAndDecrement``: the budget's new status with one disruption spent on ``pod_name``
    (None for a dry run, which writes nothing), or the ApiError refusing it."""
    md = pdb["metadata"]
    name = md["name"]
    status = pdb.get("status") or {}
    if int(status.get("observedGeneration") or 0) < int(md.get("generation") or 0):
        raise too_many_requests(name)
    allowed = int(status.get("disruptionsAllowed") or 0)
    if allowed < 0:
        raise errors.forbidden("poddisruptionbudget", "policy", name, "pdb disruptions allowed is negative")
    if len(status.get("disruptedPods") or {}) > MAX_DISRUPTED_POD_SIZE:
        raise errors.forbidden("poddisruptionbudget", "policy", name,
                               "DisruptedPods map too big - too many evictions not confirmed by PDB controller")
    if allowed == 0:
        err = errors.too_many_requests(VIOLATION)
        err.status["details"] = {"causes": [{
            "reason": DISRUPTION_BUDGET_CAUSE,
            "message": f"The disruption budget {name} needs {int(status.get('desiredHealthy') or 0)} healthy pods "
                       f"and has {int(status.get('currentHealthy') or 0)} currently"}]}
        raise err
    if dry_run:
        return None
    new = dict(status)
    new["disruptionsAllowed"] = allowed - 1
    if allowed - 1 == 0:
        new["conditions"] = _insufficient(status.get("conditions"), int(status.get("observedGeneration") or 0), now)
    disrupted = dict(status.get("disruptedPods") or {})
    disrupted[pod_name] = now
    new["disruptedPods"] = disrupted
    return new


def _insufficient(conditions: list[Obj] | None, observed_generation: int, now: str) -> list[Obj]:
    """``UpdateDisruptionAllowedCondition`` for a budget now allowing nothing."""
    cond: Obj = {"type": "DisruptionAllowed", "status": "False", "reason": "InsufficientPods", "message": ""}
    if observed_generation:
        cond["observedGeneration"] = observed_generation
    out: list[Obj] = []
    for existing in conditions or ():
        if existing.get("type") == "DisruptionAllowed":
            transition = existing.get("lastTransitionTime") if existing.get("status") == "False" else None
            out.append({**existing, **cond, "lastTransitionTime": transition or now})
            cond = {}
        else:
            out.append(existing)
    if cond:
        out.append({**cond, "lastTransitionTime": now})
    return out


def _merged_dry_run(delete_options: Obj, opts: RequestOptions) -> Obj:
    """``propagateDryRun``."""
    request = ["All"] if opts.dry_run else []
    body = delete_options.get("dryRun") or []
    if not body:
        if request:
            delete_options["dryRun"] = request
        return delete_options
    if request and list(body) != request:
        raise errors.bad_request(f"Non-matching dry-run options in request and content: {request} and {list(body)}")
    return delete_options


def _rv_precondition(options: Obj) -> str | None:
    pre = options.get("preconditions")
    return pre.get("resourceVersion") if isinstance(pre, dict) else None


def _with_rv_precondition(options: Obj, rv: str) -> Obj:
    out = dict(options)
    out["preconditions"] = {**(options.get("preconditions") or {}), "resourceVersion": rv}
    return out


# --------------------------------------------------------------------------- the subresource

async def evict(pods: ResourceStore, namespace: str, name: str, eviction: Obj, opts: RequestOptions, *,
                budgets: ResourceStore | None = None) -> None:
    md: Obj = eviction["metadata"] if isinstance(eviction.get("metadata"), dict) else {}
    if (md.get("name") or "") != name:
        raise errors.bad_request("name in URL does not match name in Eviction object")
    raw_options = eviction.get("deleteOptions")
    original = _merged_dry_run(dict(raw_options) if isinstance(raw_options, dict) else {}, opts)
    dry_run = bool(original.get("dryRun"))
    caller_rv = _rv_precondition(original)

    # 2. pods a budget does not protect
    pod: Obj = {}
    for attempt in range(EVICTION_RETRIES):
        pod = await pods.get(namespace, name)
        if not can_ignore_budgets(pod):
            break
        options = original
        if enforces_resource_version(pod) and caller_rv is None:
            options = _with_rv_precondition(original, pod["metadata"]["resourceVersion"])
        try:
            await _delete(pods, pod, options, opts, dry_run=dry_run)
            return
        except errors.ApiError as e:
            if e.code != 409 or caller_rv is not None or attempt == EVICTION_RETRIES - 1:
                raise
        await asyncio.sleep(EVICTION_RETRY_DELAY)

    # 3.-5. the budget
    unhealthy_goes = False
    pdb_name = ""
    if budgets is not None:
        listed = await budgets.list(namespace)
        matching = budgets_for(pod, listed["items"])
        if len(matching) > 1:
            raise errors.ApiError({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                                   "message": MULTIPLE_BUDGETS, "code": 500})
        if matching:
            pdb = matching[0]
            pdb_name = pdb["metadata"]["name"]
            unhealthy_goes = unhealthy_pod_may_go(pod, pdb)
            if not unhealthy_goes:
                await _spend_disruption(budgets, pdb, name, dry_run=dry_run, opts=opts)

    # 6. the delete
    options = original
    if unhealthy_goes:
        options = _with_rv_precondition(original, pod["metadata"]["resourceVersion"])
    try:
        await _delete(pods, pod, options, opts, dry_run=dry_run)
    except errors.ApiError as e:
        if e.code == 409 and unhealthy_goes and caller_rv is None:
            raise too_many_requests(pdb_name) from None
        raise


async def _spend_disruption(budgets: ResourceStore, pdb: Obj, pod_name: str, *, dry_run: bool,
                            opts: RequestOptions) -> None:
    """Check and decrement, retried on conflict with a fresh read of the budget."""
    namespace, name = pdb["metadata"]["namespace"], pdb["metadata"]["name"]
    for attempt in range(EVICTION_RETRIES):
        if attempt:
            await asyncio.sleep(EVICTION_RETRY_DELAY)
            pdb = await budgets.get(namespace, name)
        status = decremented(pdb, pod_name, now=budgets.ctx.now(), dry_run=dry_run)
        if status is None:
            return
        new = deep_copy(pdb)
        new["status"] = status
        try:
            await budgets.update_existing(new, pdb, "status", RequestOptions(field_manager="kube-apiserver",
                                                                             user=opts.user))
            return
        except errors.ApiError as e:
            if e.code != 409:
                raise
    raise errors.ApiError(errors.status(504, "Timeout",
                                        f'couldn\'t update PodDisruptionBudget "{name}" due to conflicts',
                                        {"retryAfterSeconds": 10}))


async def _delete(pods: ResourceStore, pod: Obj, options: Obj, opts: RequestOptions, *, dry_run: bool) -> None:
    """``addConditionAndDeletePod``: the DisruptionTarget condition, then the delete (a caller's
    resourceVersion precondition moves to the version the condition write produced)."""
    namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    if not dry_run and not pod["metadata"].get("deletionTimestamp"):
        precondition = _rv_precondition(options)
        if precondition is not None and precondition != pod["metadata"].get("resourceVersion"):
            raise errors.stale("pods", "", name)
        new = dict(pod)
        new["status"] = with_condition(pod.get("status") or {}, {
            "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting"}, pods.ctx.now())
        new["metadata"] = dict(pod["metadata"])
        try:
            updated = await pods.update_existing(new, pod, "status",
                                                 RequestOptions(field_manager="kube-apiserver", user=opts.user))
        except errors.ApiError as e:
            if e.code == 404:
                return
            raise
        if precondition is not None:
            options = _with_rv_precondition(options, updated["metadata"]["resourceVersion"])
    try:
        await pods.delete(namespace, name, options=options, opts=opts)
    except errors.ApiError as e:
        if e.code != 404:
            raise
