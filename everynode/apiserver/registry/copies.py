"""The private copies a write's pipeline works on: a patch result's, and an in-process caller's
uncopied body's (``RequestOptions.borrowed``).

Why a module of its own: decoding, defaulting, admission and the strategy change the object they
are given in place, so every update and patch works on a copy — and copying all of it was once the
largest part of a status write.  These functions copy only what the pipeline can change and keep
the stored object's own sub-objects where it cannot, by identity, which the type check,
managedFields and structural sharing then skip.  They run for every update and patch, so they
are compiled (compiled.py) with the rest of the write path; the generic registry that calls them
is subclassed per resource and stays interpreted.
"""

from __future__ import annotations

from typing import Any

from everynode.api import meta as apimeta
from everynode.api.meta import field_of

Obj = dict[str, Any]


def borrowed_copy(body: Any, old: Obj | None, *, restored: tuple[str, ...], status_write: bool) -> Any:
    """A private copy of a caller's uncopied update body (``RequestOptions.borrowed``).

    The in-process DaemonSet controller writes its status as ``{**cached, "status": new}``: the
    top level and status are its own, the rest is the very stored object it read.  Copying all
    of it (the client's former deep copy) cost more than the rest of the write, and the copy
    then defeated every identity shortcut after it (the type check, managedFields and
    structural sharing compared the copied spec and metadata with the stored ones in full).
    The same rules as for a patch result (:func:`private_copy`) apply to what the body shares
    with ``old``; everything else is the caller's and is copied deep, because decoding (which
    drops unknown fields anywhere) and defaulting change it in place.  For a status write, a
    top-level value that is ``old``'s own is copied one level (``metadata``) or replaced by the
    placeholder of a restored field (``spec``), exactly as a status patch leaves them."""
    if old is None or not isinstance(body, dict):
        return apimeta.deep_copy(body)
    if not status_write:
        return private_copy(body, old, restored=restored)
    return status_write_copy(body, old, restored=restored, own_private=False)


def private_copy(patched: Any, old: Obj, *, restored: tuple[str, ...], status_write: bool = False) -> Any:
    """A copy of a patch result that the write pipeline may mutate, leaving out what it would
    copy for nothing.

    Patch results share the subtrees a patch left alone with the (immutable) stored object, and
    decoding, defaults, admission and the strategy change their input in place, so the result
    must be copied.  A full deep copy of a pod status heartbeat copied the whole spec and every
    managedFields tree; two parts the patch left untouched (the very objects of ``old``) are
    therefore not copied:

    * top-level fields in ``restored`` (:meth:`Strategy.restored_fields`), which the strategy
      resets to the stored value before anything reads them: an empty object stands in for them
      at the same position (so the key order is unchanged), and whatever defaulting adds to it
      is discarded with it;
    * ``metadata.managedFields``, which no stage mutates and which the store replaces by the
      stored entries (``record_managed_fields``): the stored list itself is kept.

    A ``status_write`` (``*/status``) is copied one level deep only — the object and each of its
    top-level objects (``metadata``, ``status``, ...), the restored ones as above: on that path
    every stage changes those levels only (the strategy keeps system metadata, owner references
    and the spec; defaults set top-level status fields such as a node's ``allocatable``;
    decoding drops unknown fields, which only the patch's own fresh containers can hold).  So
    what the patch left alone stays the very object of ``old``, and the type check,
    managedFields and structural sharing skip it by identity instead of comparing copies.
    """
    if not isinstance(patched, dict):
        return apimeta.deep_copy(patched)  # not an object: decoding rejects it
    if status_write:
        return status_write_copy(patched, old, restored=restored, own_private=True)
    shell = dict(patched)
    for key in restored:
        if key in shell and key in old and shell[key] is old[key]:
            shell[key] = None
    md = shell.get("metadata")
    managed = md.get("managedFields") if isinstance(md, dict) else None
    keep_managed = managed is not None and managed is field_of(old.get("metadata"), "managedFields")
    if keep_managed and isinstance(md, dict):
        shell["metadata"] = dict(md, managedFields=None)
    copy: Obj = apimeta.deep_copy(shell)
    for key in restored:
        if key in shell and shell[key] is None and patched[key] is not None:
            copy[key] = {}
    if keep_managed:
        copy["metadata"]["managedFields"] = managed
    return copy


def status_write_copy(body: Obj, old: Obj, *, restored: tuple[str, ...], own_private: bool) -> Obj:
    """The copy a ``*/status`` write's pipeline may change, one level deep where it can be.

    A top-level value that is ``old``'s own is replaced by a placeholder when it is restored
    (the strategy puts the stored one back; whatever defaulting adds is discarded with it), else
    copied one level.  Another restored value is copied deep (defaults change it).  Any other
    value is copied one level when what lies below its top is private to the request
    (``own_private``: a patch result's fresh containers) and deep otherwise (a borrowed body's
    are its caller's, and decoding drops unknown fields anywhere)."""
    out: Obj = {}
    for key, value in body.items():
        untouched = value is not None and key in old and value is old[key]
        if key in restored:
            out[key] = {} if untouched else apimeta.deep_copy(value)
        elif untouched or own_private:
            out[key] = dict(value) if type(value) is dict else value
        else:
            out[key] = apimeta.deep_copy(value)
    return out
