"""The rules of system metadata and the field-keeping helper that every update runs, compiled.

Why apart from ``strategy.py``: ``rest.BeforeUpdate`` (what no client can change) and ``keep``
run on every update (a status write keeps the spec and the owner references), and the strategy
module stays interpreted, because the kinds' strategies derive from its classes and override
their class attributes, which a compiled class would not see.  Called from the compiled write
path, an interpreted function costs a Python frame per call; these two were three of a pod's
twenty-four such calls in ``api_floor``.  ``before_create`` stays in ``strategy.py``: it draws
the uid through ``api.meta``'s module attribute, which ``plan`` and the golden converge replace
with a seeded one (compiled code would call the original).

Upstream: ``staging/src/k8s.io/apiserver/pkg/registry/rest/update.go`` (``BeforeUpdate``).
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]


def before_update(new: Obj, old: Obj) -> None:
    """What ``BeforeUpdate`` forces from the stored object whatever the client sent."""
    md = new["metadata"]
    old_md = old["metadata"]
    if "generation" in old_md:
        md["generation"] = old_md["generation"]
    else:
        md.pop("generation", None)
    if not md.get("uid"):
        md["uid"] = old_md.get("uid")
    if old_md.get("creationTimestamp"):
        md["creationTimestamp"] = old_md["creationTimestamp"]
    # A deletion timestamp is only ever set by DELETE; an update can neither add nor remove it.
    if old_md.get("deletionTimestamp"):
        md["deletionTimestamp"] = old_md["deletionTimestamp"]
    else:
        md.pop("deletionTimestamp", None)
    if old_md.get("deletionGracePeriodSeconds") is not None:
        md["deletionGracePeriodSeconds"] = old_md["deletionGracePeriodSeconds"]
    else:
        md.pop("deletionGracePeriodSeconds", None)
    md.pop("selfLink", None)


def keep(new: Obj, old: Obj, key: str) -> None:
    """``new[key]`` becomes the stored value (absent when the stored object has none)."""
    if key in old:
        new[key] = old[key]
    else:
        new.pop(key, None)
