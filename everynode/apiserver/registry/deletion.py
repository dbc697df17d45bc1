"""The rules of a DELETE that are the same for every resource: preconditions and the garbage
collector's finalizers (``orphan``, ``foregroundDeletion``) a delete's propagation policy asks for.

Why apart from the store: they are pure functions of the object and the ``DeleteOptions``, read
by the generic delete path and by the namespace storage (whose first delete only marks the
namespace Terminating).  Upstream: ``staging/src/k8s.io/apiserver/pkg/registry/generic/registry/
store.go`` (``deletionFinalizersForGarbageCollection``, ``shouldOrphanDependents``) and
``rest/delete.go`` (the precondition checks).
"""

from __future__ import annotations

from typing import Any

from everynode.api import errors
from everynode.api.registry import ResourceType
from everynode.apiserver.registry.strategy import FOREGROUND_FINALIZER, ORPHAN_FINALIZER

Obj = dict[str, Any]


def check_preconditions(rt: ResourceType, obj: Obj, options: Obj) -> None:
    """``DeleteOptions.preconditions``: 409 when the uid or resourceVersion named is not the stored one."""
    pre = options.get("preconditions")
    if not isinstance(pre, dict):
        return
    md = obj["metadata"]
    name = md["name"]

    def conflict(why: str) -> errors.ApiError:
        # Upstream names the kind here (Kind.group), not the resource as other conflicts do.
        resource_name = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
        details = {"name": name, "group": rt.group, "kind": rt.kind} if rt.group else {"name": name, "kind": rt.kind}
        return errors.ApiError(errors.status(
            409, "Conflict", f'Operation cannot be fulfilled on {resource_name} "{name}": {why}', details))

    uid = pre.get("uid")
    if uid and uid != md.get("uid"):
        raise conflict(f"the UID in the precondition ({uid}) does not match the UID in record ({md.get('uid')}). "
                       "The object might have been deleted and then recreated")
    rv = pre.get("resourceVersion")
    if rv and rv != md.get("resourceVersion"):
        raise conflict(f"the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in "
                       f"record ({md.get('resourceVersion')}). The object might have been modified")


def orphan_wanted(options: Obj, has_orphan: bool) -> bool:
    """``shouldOrphanDependents``: the options decide, else the ``orphan`` finalizer already there."""
    if options.get("orphanDependents") is not None:
        return bool(options["orphanDependents"])
    policy = options.get("propagationPolicy")
    if policy is not None:
        return bool(policy == "Orphan")
    return has_orphan


def gc_finalizers(finalizers: list[str], options: Obj) -> list[str]:
    """``deletionFinalizersForGarbageCollection`` with every kind's default policy being
    background cascading (``DeleteDependents`` through apps/v1, none elsewhere)."""
    orphan = ORPHAN_FINALIZER
    foreground = FOREGROUND_FINALIZER
    if options.get("orphanDependents") is not None:
        want_orphan = bool(options["orphanDependents"])
        want_foreground = False
    elif options.get("propagationPolicy") is not None:
        want_orphan = options["propagationPolicy"] == "Orphan"
        want_foreground = options["propagationPolicy"] == "Foreground"
    else:
        want_orphan = orphan in finalizers
        want_foreground = foreground in finalizers and not want_orphan
    out = [f for f in finalizers if f not in (orphan, foreground)]
    if want_orphan:
        out.append(orphan)
    if want_foreground:
        out.append(foreground)
    return out
