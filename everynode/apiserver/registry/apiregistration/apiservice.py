"""APIServices: stored, and reported as a user of an everynode cluster should read them.

Why stored at all: manifests register aggregated APIs beside the Deployment that serves them
(metrics-server's ``v1beta1.metrics.k8s.io``), and ``kubectl apply`` of the whole file must
succeed.  everynode does not proxy to aggregated API servers, so what it says about them
must not pretend otherwise:

* the ``Available`` condition — kube-aggregator's ``AvailableConditionController`` keeps it —
  is ``True`` with reason ``Local`` for an APIService without ``spec.service`` (served by this
  server, as upstream reports its built-in group-versions), and ``False`` with reason
  ``FailedDiscoveryCheck`` (upstream's reason when the backend does not answer discovery) and a
  message saying why for one that names a Service; ``kubectl get apiservices`` shows
  ``False (FailedDiscoveryCheck)`` as on a cluster whose backend is down;
* the group-version it names is *not* added to discovery: kube-aggregator would list it and
  every ``kubectl`` command would then warn ``couldn't get resource list for
  metrics.k8s.io/v1beta1``; leaving it out keeps discovery clean for the group-versions that are
  really served.

The condition is set when the object is written (no controller runs for it); its
``lastTransitionTime`` is the object's creation time, kept while the condition stays the same.
"""

from __future__ import annotations

from typing import Any

from everynode.apiserver.registry.specstatus import ResetMetaStatusStrategy
from everynode.apiserver.registry.strategy import Strategy

Obj = dict[str, Any]


def available_condition(obj: Obj, *, since: str) -> dict[str, str]:
    spec = obj.get("spec") or {}
    if not spec.get("service"):
        return {"type": "Available", "status": "True", "lastTransitionTime": since, "reason": "Local",
                "message": "Local APIServices are always available"}
    gv = f"{spec.get('group') or ''}/{spec.get('version') or ''}"
    return {"type": "Available", "status": "False", "lastTransitionTime": since, "reason": "FailedDiscoveryCheck",
            "message": f"everynode does not proxy aggregated API servers: {gv} is not served"}


class APIServiceStrategy(Strategy):
    def __init__(self) -> None:
        super().__init__(keeps_status=True, subresources={"status": ResetMetaStatusStrategy()})

    def prepare_for_create(self, obj: Obj) -> None:
        since = obj["metadata"].get("creationTimestamp") or ""
        obj["status"] = {"conditions": [available_condition(obj, since=since)]}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        status = old.get("status") or {}
        previous = next((c for c in status.get("conditions") or () if c.get("type") == "Available"), None)
        since = old["metadata"].get("creationTimestamp") or ""
        condition = available_condition(new, since=since)
        if previous is not None and previous.get("status") == condition["status"]:
            condition["lastTransitionTime"] = previous.get("lastTransitionTime") or since
        new["status"] = {**status, "conditions": [condition]}
