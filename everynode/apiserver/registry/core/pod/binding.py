"""``pods/binding``: the scheduler's write that assigns a pod to a node —
``pkg/registry/core/pod/storage/storage.go`` (``BindingREST``, ``assignPod``, ``setPodNodeAndMetadata``).

Why not an ordinary update: a binding sets ``spec.nodeName`` (which a pod update may not change),
merges the Binding's annotations and sets ``PodScheduled=True`` in one write, and refuses a pod
that is being deleted, already bound or still gated.  A concurrent write is retried on the fresh
pod unless the Binding named a resourceVersion (GuaranteedUpdate); errors name ``pods/binding``.
The pod's managedFields are not touched: upstream writes the bound pod straight to storage
(``GuaranteedUpdate``), below the handlers that track field managers, so a real pod shows no
``kube-scheduler`` entry for its binding.
"""

from __future__ import annotations

from typing import Any, Final

from everynode.api import errors
from everynode.api import field_errors as fielderr
from everynode.api import meta as apimeta
from everynode.api.registry import ResourceType
from everynode.apiserver.registry.context import ServerContext
from everynode.apiserver.registry.core.pod.strategy import with_condition
from everynode.apiserver.registry.options import RequestOptions
from everynode.storage.base import ConflictError, NotFoundError

Obj = dict[str, Any]

BIND_ATTEMPTS: Final = 5


async def bind(ctx: ServerContext, pods: ResourceType, namespace: str, name: str, binding: Obj,
               opts: RequestOptions) -> None:
    md: Obj = binding["metadata"] if isinstance(binding.get("metadata"), dict) else {}
    if (md.get("name") or "") != name:
        raise errors.bad_request("name in URL does not match name in Binding object")
    target: Obj = binding["target"] if isinstance(binding.get("target"), dict) else {}
    errs: list[fielderr.FieldError] = []
    if target.get("kind") not in (None, "", "Node"):
        errs.append(fielderr.not_supported("target.kind", target.get("kind"), ["Node", "<empty>"]))
    if not target.get("name"):
        errs.append(fielderr.required("target.name"))
    if errs:
        raise errors.ApiError(errors.status(500, "InternalError", fielderr.aggregate(errs)))
    node = target["name"]
    for attempt in range(BIND_ATTEMPTS):
        pod = ctx.store.get("pods", namespace, name)
        if pod is None:
            raise errors.not_found("pods", "", name)
        if md.get("uid") and md["uid"] != pod["metadata"].get("uid"):
            raise errors.conflict("pods/binding", "", name, f"Precondition failed: UID in precondition: "
                                  f"{md['uid']}, UID in object meta: {pod['metadata'].get('uid')}")
        if pod["metadata"].get("deletionTimestamp"):
            raise errors.conflict("pods/binding", "", name,
                                  f"pod {name} is being deleted, cannot be assigned to a host")
        spec = pod.get("spec") or {}
        if spec.get("nodeName"):
            raise errors.conflict("pods/binding", "", name,
                                  f'pod {name} is already assigned to node "{spec["nodeName"]}"')
        if spec.get("schedulingGates"):
            raise errors.conflict("pods/binding", "", name, f"pod {name} has non-empty .spec.schedulingGates")
        new = dict(pod)
        new["spec"] = dict(spec, nodeName=node)
        new_md = dict(pod["metadata"])
        if md.get("annotations"):
            new_md["annotations"] = dict(new_md.get("annotations") or {}, **md["annotations"])
        new["metadata"] = new_md
        new["status"] = with_condition(pod.get("status") or {}, {"type": "PodScheduled", "status": "True"},
                                       ctx.now())
        if opts.dry_run:
            return
        try:
            await ctx.store.update("pods", new, expected_rv=apimeta.resource_version(pod))
            return
        except ConflictError:
            if md.get("resourceVersion") or attempt == BIND_ATTEMPTS - 1:
                raise errors.stale("pods/binding", "", name) from None
        except NotFoundError:
            raise errors.not_found("pods", "", name) from None
