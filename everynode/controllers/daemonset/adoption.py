"""ControllerRef claiming (§4.6): adopt matching orphans, release owned objects that stopped
matching — for pods and ControllerRevisions alike.

Upstream: ``pkg/controller/controller_ref_manager.go`` (``ClaimObject``, ``AdoptPod`` /
``ReleasePod``, ``AdoptControllerRevision`` / ``ReleaseControllerRevision``,
``RecheckDeletionTimestamp``).  Both writes are strategic merge patches that carry the object's
UID as a precondition, so they cannot hit a recreated object of the same name:

* adopt:   ``{"metadata": {"ownerReferences": [<controller ref>], "uid": <object uid>}}``
* release: ``{"metadata": {"ownerReferences": [{"$patch": "delete", "uid": <owner uid>}], "uid": …}}``

Before the first adoption of a claim pass the owner is re-read live (not from the cache): if it is
gone, recreated (another UID) or being deleted, every adoption of the pass fails with upstream's
message.  Release failures with NotFound or Invalid are ignored (the object is gone or already
changed); adoption NotFound is ignored.

The caller decides *which* objects to look at: the controller passes only objects that changed
since the last sync (and every object of the namespace on its periodic full pass), which is what
keeps a steady-state sync independent of the cluster size.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

from everynode.api.errors import ApiError
from everynode.api.meta import controller_ref, field_of, make_controller_ref
from everynode.api.selectors import LabelSelector
from everynode.client.base import Client

Obj = dict[str, Any]

DAEMONSETS: Final = "daemonsets.apps"


class ClaimError(Exception):
    """One or more adoptions/releases failed (aggregated like ``utilerrors.NewAggregate``)."""

    def __init__(self, errors: list[Exception]):
        self.errors = errors
        super().__init__(aggregate_message(errors))


def aggregate_message(errors: list[Exception]) -> str:
    if len(errors) == 1:
        return str(errors[0])
    return "[" + ", ".join(str(e) for e in errors) + "]"


def adopt_patch(owner: Obj, obj: Obj, *, owner_kind: str = "DaemonSet") -> Obj:
    return {"metadata": {"ownerReferences": [make_controller_ref(owner, api_version="apps/v1", kind=owner_kind)],
                         "uid": field_of(obj["metadata"], "uid")}}


def release_patch(owner: Obj, obj: Obj) -> Obj:
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": field_of(owner["metadata"], "uid")}],
                         "uid": field_of(obj["metadata"], "uid")}}


class Claimer:
    """One claim pass for one owner (``ControllerRefManager``); create one per sync.

    The owner is a DaemonSet unless ``owner_resource``/``owner_kind`` say otherwise (the
    ReplicaSet and Deployment controllers claim with the same rules)."""

    def __init__(self, client: Client, owner: Obj, selector: LabelSelector, *,
                 owner_resource: str = DAEMONSETS, owner_kind: str = "DaemonSet") -> None:
        self.client = client
        self.owner = owner
        self.selector = selector
        self.owner_resource = owner_resource
        self.owner_kind = owner_kind
        self._can_adopt_error: Exception | None = None
        self._checked = False
        md = owner["metadata"]
        self.uid = md.get("uid")
        self.namespace = md.get("namespace") or ""
        self.owner_deleting = bool(md.get("deletionTimestamp"))

    async def _can_adopt(self) -> None:
        """``RecheckDeletionTimestamp`` with the live GET, once per pass."""
        if not self._checked:
            self._checked = True
            md = self.owner["metadata"]
            try:
                fresh = await self.client.get(self.owner_resource, md["name"], namespace=self.namespace)
                fmd: dict[str, Any] = fresh.get("metadata") or {}
                if fmd.get("uid") != self.uid:
                    raise ValueError(f"original {self.owner_kind} {self.namespace}/{md['name']} is gone: got uid "
                                     f"{fmd.get('uid')}, wanted {self.uid}")
                if fmd.get("deletionTimestamp"):
                    raise ValueError(f"{self.namespace}/{md['name']} has just been deleted at "
                                     f"{fmd['deletionTimestamp']}")
            except (ApiError, ValueError) as e:
                self._can_adopt_error = e
        if self._can_adopt_error is not None:
            raise self._can_adopt_error

    def classify(self, obj: Obj) -> str:
        """``"claimed"``, ``"release"``, ``"adopt"`` or ``"ignore"`` (no I/O)."""
        md: dict[str, Any] = obj.get("metadata") or {}
        ref = controller_ref(obj)
        if ref is not None:
            if ref.get("uid") != self.uid:
                return "ignore"
            if self.selector.matches(md.get("labels")):
                return "claimed"
            return "ignore" if self.owner_deleting else "release"
        if self.owner_deleting or not self.selector.matches(md.get("labels")):
            return "ignore"
        if md.get("deletionTimestamp"):
            return "ignore"
        if (md.get("namespace") or "") != self.namespace:
            return "ignore"
        return "adopt"

    async def claim(self, objects: Iterable[Obj], *, resource: str, kind: str,
                    on_adopted: Callable[[Obj], None] | None = None,
                    on_released: Callable[[Obj], None] | None = None) -> list[Obj]:
        """Claim ``objects``; returns the ones owned afterwards (adopted ones as patched).

        Raises :class:`ClaimError` after trying every object if any adopt/release failed.
        """
        claimed: list[Obj] = []
        errors: list[Exception] = []
        for obj in objects:
            action = self.classify(obj)
            if action == "claimed":
                claimed.append(obj)
            elif action == "adopt":
                try:
                    adopted = await self._adopt(obj, resource=resource, kind=kind)
                except ApiError as e:
                    if e.code == 404:
                        continue
                    errors.append(e)
                    continue
                except ValueError as e:
                    errors.append(e)
                    continue
                claimed.append(adopted)
                if on_adopted is not None:
                    on_adopted(adopted)
            elif action == "release":
                try:
                    released = await self.client.patch(resource, obj["metadata"]["name"], release_patch(self.owner, obj),
                                                       namespace=self.namespace, patch_type="strategic")
                except ApiError as e:
                    if e.code in (404, 422):
                        continue
                    errors.append(e)
                    continue
                if on_released is not None:
                    on_released(released)
        if errors:
            raise ClaimError(errors)
        return claimed

    async def _adopt(self, obj: Obj, *, resource: str, kind: str) -> Obj:
        md = obj["metadata"]
        try:
            await self._can_adopt()
        except (ApiError, ValueError) as e:
            raise ValueError(f"can't adopt {kind} {md.get('namespace') or ''}/{md['name']} ({md.get('uid')}): {e}") from e
        return await self.client.patch(resource, md["name"], adopt_patch(self.owner, obj, owner_kind=self.owner_kind),
                                       namespace=self.namespace, patch_type="strategic")


ClaimFunc = Callable[[Iterable[Obj]], Awaitable[list[Obj]]]
