"""The registry's protocol: every served resource has a storage with upstream's strategy flags, and
a resource registered at run time (the shape a CRD will take) is served by the generic store
with its strategy's hooks called where ``registry/strategy.py`` says."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api import errors
from everynode.api.registry import RESOURCES, ResourceType, Subresource
from everynode.apiserver.registry.generic import ResourceStore
from everynode.apiserver.registry.specstatus import BUILTIN_STRATEGIES
from everynode.apiserver.registry.strategy import Finish, Strategy, bump_generation_on_spec_change
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore

Obj = dict[str, Any]

WIDGETS = ResourceType("example.com", "v1", "Widget", "widgets", "widget", True,
                       subresources=(Subresource("status", "Widget", ("get", "patch", "update")),))


class WidgetStrategy(Strategy):
    """Generation on spec changes, status kept on main writes, and a record of the storage hooks."""

    def __init__(self) -> None:
        super().__init__(keeps_status=True)
        self.calls: list[tuple[str, Any]] = []

    def prepare_for_create(self, obj: Obj) -> None:
        obj["metadata"]["generation"] = 1
        obj["status"] = {"phase": "New"}

    def prepare_for_update(self, new: Obj, old: Obj) -> None:
        super().prepare_for_update(new, old)
        bump_generation_on_spec_change(new, old)

    def begin_create(self, obj: Obj, *, dry_run: bool) -> Finish | None:
        name = obj["metadata"]["name"]

        def finish(success: bool) -> None:
            self.calls.append(("create", (name, success)))

        return finish

    def after_delete(self, obj: Obj) -> None:
        self.calls.append(("deleted", obj["metadata"]["name"]))


@pytest.fixture
def api() -> ApiService:
    return ApiService(MemoryStore(), clock=Clock())


@pytest.fixture
def widgets(api: ApiService) -> WidgetStrategy:
    strategy = WidgetStrategy()
    api.registry.register(ResourceStore(WIDGETS, api.context, strategy))
    return strategy


def widget(name: str, **fields: Any) -> Obj:
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}, **fields}


def test_every_served_resource_has_a_storage(api: ApiService) -> None:
    assert [s.rt for s in api.registry] == list(RESOURCES)


# upstream's strategy answers where they are not the default (False, False, False):
# AllowCreateOnUpdate, ReturnDeletedObject, status kept on main-resource writes
FLAGS = {
    "namespaces": (False, True, True),
    "nodes": (False, False, True),
    "pods": (False, True, True),
    "services": (True, True, True),
    "serviceaccounts": (True, True, False),
    "endpoints": (True, False, False),
    "events": (True, False, False),
    "events.events.k8s.io": (True, False, False),
    "leases.coordination.k8s.io": (True, False, False),
    "daemonsets.apps": (False, False, True),
    "customresourcedefinitions.apiextensions.k8s.io": (False, False, True),
    "deployments.apps": (False, False, True),
    "replicasets.apps": (False, False, True),
    "poddisruptionbudgets.policy": (False, False, True),
    "jobs.batch": (False, False, True),
    "apiservices.apiregistration.k8s.io": (False, False, True),
    # the kinds of api/builtin_kinds.py with a status subresource
    **{key: (False, False, True) for key, params in BUILTIN_STRATEGIES.items() if "empty_status" in params},
}


@pytest.mark.parametrize("rt", RESOURCES, ids=lambda rt: rt.key)
def test_strategy_flags_are_upstreams(api: ApiService, rt: ResourceType) -> None:
    strategy = api.storage(rt).strategy
    flags = (strategy.allow_create_on_update, strategy.return_deleted_object, strategy.keeps_status)
    assert flags == FLAGS.get(rt.key, (False, False, False))


async def test_a_resource_registered_at_run_time_is_served(api: ApiService, widgets: WidgetStrategy) -> None:
    opts = RequestOptions()
    created = await api.create(WIDGETS, "default", widget("w", spec={"size": 1}), opts=opts)
    assert created["metadata"]["generation"] == 1 and created["status"] == {"phase": "New"}
    assert widgets.calls == [("create", ("w", True))]
    patched, _ = await api.patch(WIDGETS, "default", "w", {"spec": {"size": 2}, "status": {"phase": "Hacked"}},
                                 "merge", opts=RequestOptions())
    assert patched["metadata"]["generation"] == 2 and patched["status"] == {"phase": "New"}
    status, _ = await api.patch(WIDGETS, "default", "w", {"spec": {"size": 3}, "status": {"phase": "Ready"}},
                                "merge", subresource="status", opts=RequestOptions())
    assert status["spec"] == {"size": 2} and status["status"] == {"phase": "Ready"}
    listed = await api.list(WIDGETS, "default")
    assert listed["kind"] == "WidgetList" and [o["metadata"]["name"] for o in listed["items"]] == ["w"]
    code, answer = await api.delete(WIDGETS, "default", "w", opts=RequestOptions())
    assert code == 200 and answer["kind"] == "Status" and answer["details"]["group"] == "example.com"
    assert widgets.calls[-1] == ("deleted", "w")


async def test_a_failed_create_finishes_what_begin_create_reserved(api: ApiService, widgets: WidgetStrategy) -> None:
    await api.create(WIDGETS, "default", widget("w"), opts=RequestOptions())
    with pytest.raises(errors.ApiError) as e:
        await api.create(WIDGETS, "default", widget("w"), opts=RequestOptions())
    assert e.value.code == 409
    assert widgets.calls == [("create", ("w", True)), ("create", ("w", False))]


async def test_after_delete_runs_when_the_last_finalizer_goes(api: ApiService, widgets: WidgetStrategy) -> None:
    await api.create(WIDGETS, "default", widget("w", metadata={"name": "w", "finalizers": ["example.com/keep"]}),
                     opts=RequestOptions())
    code, marked = await api.delete(WIDGETS, "default", "w", opts=RequestOptions())
    assert marked["metadata"]["deletionTimestamp"] and ("deleted", "w") not in widgets.calls
    await api.patch(WIDGETS, "default", "w", {"metadata": {"finalizers": None}}, "merge", opts=RequestOptions())
    assert widgets.calls[-1] == ("deleted", "w")
    assert api.store.get(WIDGETS.key, "default", "w") is None


async def test_an_unregistered_resource_is_not_found(api: ApiService, widgets: WidgetStrategy) -> None:
    await api.create(WIDGETS, "default", widget("w"), opts=RequestOptions())
    api.registry.unregister(WIDGETS)
    with pytest.raises(errors.ApiError) as e:
        await api.get(WIDGETS, "default", "w")
    assert e.value.code == 404
