"""Creates answered from a template (apiserver/registry/templates.py) make exactly what the full
pipeline makes.

Each scenario sends the same requests to two fresh API services with the same seeded randomness
(uids, generated names) and clock: once as served, once with the shortcut off, and compares every
answer — the created object's JSON bytes or the error's Status — and every warning, in order.
The served run must have used the shortcut, or the comparison would prove nothing."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import pytest

from everynode.api.errors import ApiError
from everynode.api.registry import resource
from everynode.apiserver.service import ApiService, RequestOptions
from everynode.clock import Clock
from everynode.storage.memory import MemoryStore
from tests.support.golden_converge import seeded_draws

PODS = resource("pods")
NAMESPACES = resource("namespaces")
PRIORITY_CLASSES = resource("priorityclasses.scheduling.k8s.io")
SERVICE_ACCOUNTS = resource("serviceaccounts")

Step = Callable[[ApiService], Awaitable[Any]]


class FixedClock(Clock):
    def now(self) -> float:
        return 1_767_225_600.0


@contextmanager
def _seeded(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    rng = random.Random(7)
    with seeded_draws(rng):
        yield


def pinned(node: Any, *, first: bool = False, namespace: str = "default", **extra: Any) -> dict[str, Any]:
    """A DaemonSet's pod for ``node`` (the pin first in its spec, or last as the controller puts it)."""
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    spec: dict[str, Any] = {"containers": [{"name": "agent", "image": "registry.example/agent:1"}],
                            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                                             "effect": "NoExecute"}]}
    spec = {"affinity": affinity, **spec} if first else {**spec, "affinity": affinity}
    spec.update(extra)
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "agent-", "namespace": namespace, "labels": {"app": "agent"},
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent",
                                              "uid": "ds-uid", "controller": True, "blockOwnerDeletion": True}]},
            "spec": spec}


def create(body: dict[str, Any], namespace: str = "default", **options: Any) -> Step:
    async def step(service: ApiService) -> Any:
        opts = RequestOptions(**options)
        try:
            obj = await service.create(PODS, namespace, orjson.loads(orjson.dumps(body)), opts=opts)
        except ApiError as e:
            return ["error", e.status, opts.warnings]
        return ["created", obj, opts.warnings]
    return step


def write(rt: Any, body: dict[str, Any], namespace: str = "") -> Step:
    async def step(service: ApiService) -> Any:
        name = body["metadata"]["name"]
        if service.store.get(rt.key, namespace, name) is None:
            return ["setup", await service.create(rt, namespace, dict(body), opts=RequestOptions())]
        obj, _ = await service.update(rt, namespace, name, dict(body), opts=RequestOptions())
        return ["setup", obj]
    return step


def delete_namespace(name: str) -> Step:
    async def step(service: ApiService) -> Any:
        _code, obj = await service.delete(NAMESPACES, "", name, opts=RequestOptions())
        return ["setup", obj]
    return step


async def _run(steps: list[Step], monkeypatch: pytest.MonkeyPatch, *, shortcut: bool,
               service_accounts: bool = False, managed_fields: bool = True) -> tuple[list[bytes], int]:
    with _seeded(monkeypatch):
        service = ApiService(MemoryStore(), clock=FixedClock(), service_account_admission=service_accounts,
                             managed_fields=managed_fields)
        shortcuts = service.storage(PODS).templates
        assert shortcuts is not None
        if not shortcut:
            service.storage(PODS).templates = None
        await service.start()
        answers = [orjson.dumps(await step(service)) for step in steps]
    # answered from a template: an object, or an error of the pod's own fields
    return answers, shortcuts.answered if shortcut else 0


async def _same_as_the_full_pipeline(steps: list[Step], monkeypatch: pytest.MonkeyPatch, *,
                                     service_accounts: bool = False, managed_fields: bool = True) -> int:
    served, replayed = await _run(steps, monkeypatch, shortcut=True, service_accounts=service_accounts,
                                  managed_fields=managed_fields)
    full, none = await _run(steps, monkeypatch, shortcut=False, service_accounts=service_accounts,
                            managed_fields=managed_fields)
    assert none == 0
    for i, (got, want) in enumerate(zip(served, full, strict=True)):
        assert got == want, f"answer {i} differs:\nshortcut: {got.decode()}\nfull:     {want.decode()}"
    return replayed


async def test_a_daemonsets_pods_are_the_full_pipelines(monkeypatch: pytest.MonkeyPatch) -> None:
    steps = [create(pinned(f"worker-{i}")) for i in range(6)]
    assert await _same_as_the_full_pipeline(steps, monkeypatch) == 5


async def test_a_server_keeping_no_managed_fields_still_answers_from_the_template(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # (plan's copy: context.py ``managed_fields``)
    steps = [create(pinned(f"worker-{i}")) for i in range(6)]
    assert await _same_as_the_full_pipeline(steps, monkeypatch, managed_fields=False) == 5
    served, _ = await _run(steps, monkeypatch, shortcut=True, managed_fields=False)
    for answer in served:
        kind, obj, _warnings = orjson.loads(answer)
        assert kind == "created" and "managedFields" not in obj["metadata"]


async def test_pods_the_shortcut_must_not_answer_get_the_full_pipelines_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    bad_operator = pinned("w")
    bad_operator["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"][0]["matchFields"][0]["operator"] = "Gt"
    unknown = pinned("w")
    unknown["spec"]["affinity"]["bogus"] = True
    named = pinned("w")
    named["metadata"]["name"] = "agent-fixed"
    steps = [
        create(pinned("worker-1")),
        create(pinned("worker-2")),
        create(bad_operator),  # a validation error in the pod's own field
        create(unknown),  # pruned with a warning
        create(unknown, field_validation="Strict"),  # refused
        create(pinned(7)),  # badly typed
        create(pinned("Not_A_Node")),  # an invalid node name in the pin
        create(pinned("worker-3", nodeName="worker-3")),  # pinned by nodeName: the full way
        create(named),
        create(pinned("worker-4", first=True)),  # the pin in another place: another template
        create(pinned("worker-5", first=True)),
        create({k: v for k, v in pinned("x").items() if k != "spec"} | {"spec": {"containers": [
            {"name": "agent", "image": "registry.example/agent:1"}]}}),  # no pin at all
        create(pinned("worker-6"), dry_run=True),
        create(pinned("worker-7"), field_manager="someone-else"),
        create(pinned("worker-8"), namespace="missing"),
        create(pinned("worker-9")),
    ]
    assert await _same_as_the_full_pipeline(steps, monkeypatch) == 5


async def test_admission_inputs_written_between_creates_are_taken_into_account(monkeypatch: pytest.MonkeyPatch) -> None:
    default_class = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                     "metadata": {"name": "everyone"}, "value": 1000, "globalDefault": True}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}
    steps = [
        create(pinned("worker-1")),
        create(pinned("worker-2")),
        write(PRIORITY_CLASSES, default_class),
        create(pinned("worker-3")),
        create(pinned("worker-4")),
        write(NAMESPACES, namespace),
        create(pinned("worker-5", namespace="doomed"), namespace="doomed"),
        create(pinned("worker-6", namespace="doomed"), namespace="doomed"),
        delete_namespace("doomed"),  # it has a pod: Terminating
        create(pinned("worker-7", namespace="doomed"), namespace="doomed"),
    ]
    assert await _same_as_the_full_pipeline(steps, monkeypatch) == 4  # the last one: an error


async def test_service_account_admission_and_its_token_volume(monkeypatch: pytest.MonkeyPatch) -> None:
    def account(secrets: list[str]) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": "default"},
                "imagePullSecrets": [{"name": s} for s in secrets]}

    steps = [
        write(SERVICE_ACCOUNTS, account(["one"]), "default"),
        create(pinned("worker-1")),
        create(pinned("worker-2")),
        create(pinned("worker-3")),
        write(SERVICE_ACCOUNTS, account(["two"]), "default"),
        create(pinned("worker-4")),
        create(pinned("worker-5")),
    ]
    assert await _same_as_the_full_pipeline(steps, monkeypatch, service_accounts=True) == 3
