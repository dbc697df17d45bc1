"""The simulated kubelet honours what a pod mounts and refers to, and records upstream's container
events (in virtual time, against the in-process API)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from everynode.virtualtime import run_virtual
from tests.integration.test_kubelet import Cluster, container, eventually

Obj = dict[str, Any]


async def make_pod(c: Cluster, name: str, *, volumes: list[Obj] | None = None, env: list[Obj] | None = None,
                   env_from: list[Obj] | None = None, image: str = "nginx:1.27",
                   annotations: dict[str, str] | None = None) -> Obj:
    ctr: Obj = {"name": "c", "image": image}
    if env:
        ctr["env"] = env
    if env_from:
        ctr["envFrom"] = env_from
    spec: Obj = {"containers": [ctr]}
    if volumes:
        spec["volumes"] = volumes
    md: Obj = {"name": name, "namespace": "default", "annotations": annotations or {}}
    return await c.client.create("pods", {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})


async def events_of(c: Cluster, pod: str) -> list[Obj]:
    await c.kubelet.recorder.flush()
    items = (await c.client.list("events", namespace="default"))["items"]
    return [e for e in items if e["involvedObject"].get("name") == pod and e["source"]["component"] == "kubelet"]


async def configmap(c: Cluster, name: str, data: dict[str, str]) -> None:
    await c.client.create("configmaps", {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": name, "namespace": "default"}, "data": data})


def waiting(pod: Obj) -> tuple[str, str]:
    if not (pod.get("status") or {}).get("containerStatuses"):
        return "", ""
    w = container(pod)["state"].get("waiting") or {}
    return w.get("reason", ""), w.get("message", "")


def test_missing_configmap_volume_keeps_the_pod_creating_until_it_is_applied() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await make_pod(c, "p", volumes=[{"name": "config", "configMap": {"name": "app"}}])
            await asyncio.sleep(30)
            pod = await c.get_pod("p")
            assert pod["status"]["phase"] == "Pending"
            assert waiting(pod)[0] == "ContainerCreating"
            failed = [e for e in await events_of(c, "p") if e["reason"] == "FailedMount"]
            assert failed and failed[0]["type"] == "Warning"
            assert failed[0]["message"] == 'MountVolume.SetUp failed for volume "config" : configmap "app" not found'
            assert failed[0]["source"] == {"component": "kubelet", "host": "w1"}
            assert failed[0]["count"] > 3  # retried with the back-off, aggregated into one Event
            assert c.kubelet.objects.waiting == 1
            await configmap(c, "app", {"k": "v"})

            async def running() -> bool:
                return (await c.get_pod("p"))["status"]["phase"] == "Running"

            await eventually(running, timeout=5)  # at once, not at the next back-off step (up to 2m2s)
            assert c.kubelet.objects.waiting == 0

    run_virtual(main())


def test_optional_and_present_sources_mount_and_missing_keys_fail() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await configmap(c, "have", {"a": "1"})
            await make_pod(c, "ok", volumes=[
                {"name": "opt", "configMap": {"name": "nope", "optional": True}},
                {"name": "have", "configMap": {"name": "have", "items": [{"key": "a", "path": "a"}]}},
                {"name": "scratch", "emptyDir": {}}])
            await make_pod(c, "badkey", volumes=[
                {"name": "have", "configMap": {"name": "have", "items": [{"key": "zz", "path": "z"}]}}])
            await make_pod(c, "proj", volumes=[{"name": "p", "projected": {"sources": [
                {"secret": {"name": "s1"}}, {"serviceAccountToken": {"path": "token"}}]}}])

            async def settled() -> bool:
                return (await c.get_pod("ok"))["status"].get("phase") == "Running"

            await eventually(settled)
            await asyncio.sleep(5)
            assert (await c.get_pod("badkey"))["status"]["phase"] == "Pending"
            msgs = {e["message"] for e in await events_of(c, "badkey") if e["reason"] == "FailedMount"}
            assert msgs == {'MountVolume.SetUp failed for volume "have" : '
                            "configmap references non-existent config key: zz"}
            msgs = {e["message"] for e in await events_of(c, "proj") if e["reason"] == "FailedMount"}
            assert msgs == {'MountVolume.SetUp failed for volume "p" : [secret "s1" not found, '
                            'failed to fetch token: serviceaccounts "default" not found]'}

    run_virtual(main())


def test_env_reference_errors_are_create_container_config_errors() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await make_pod(c, "nocm", env=[{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}])
            await make_pod(c, "optional", env=[{"name": "X", "valueFrom": {
                "secretKeyRef": {"name": "s", "key": "k", "optional": True}}}])

            async def config_error() -> bool:
                return waiting(await c.get_pod("nocm"))[0] == "CreateContainerConfigError"

            await eventually(config_error)
            pod = await c.get_pod("nocm")
            assert waiting(pod) == ("CreateContainerConfigError", 'configmap "cm" not found')
            assert pod["status"]["phase"] == "Pending" and pod["status"].get("podIP")
            assert (await c.get_pod("optional"))["status"]["phase"] == "Running"
            await configmap(c, "cm", {"other": "1"})

            async def key_missing() -> bool:
                return waiting(await c.get_pod("nocm"))[1] == "couldn't find key k in ConfigMap default/cm"

            await eventually(key_missing, timeout=5)
            failed = [e for e in await events_of(c, "nocm") if e["reason"] == "Failed"]
            assert {e["message"] for e in failed} == {'Error: configmap "cm" not found',
                                                      "Error: couldn't find key k in ConfigMap default/cm"}
            assert all(e["involvedObject"]["fieldPath"] == "spec.containers{c}" for e in failed)
            await c.client.patch("configmaps", "cm", {"data": {"k": "v"}}, namespace="default")

            async def running() -> bool:
                return (await c.get_pod("nocm"))["status"]["phase"] == "Running"

            await eventually(running, timeout=5)
            resolved = json.loads((await c.get_pod("nocm"))["metadata"]["annotations"]["everynode.io/resolved-env"])
            assert resolved == {"c": {"X": "v"}}

    run_virtual(main())


def test_environment_from_configmaps_is_resolved_and_secret_values_never_recorded() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await configmap(c, "settings", {"LEVEL": "debug", "MODE": "a"})
            await c.client.create("secrets", {"apiVersion": "v1", "kind": "Secret", "data": {"pw": "c2VjcmV0"},
                                              "metadata": {"name": "creds", "namespace": "default"}})
            await make_pod(c, "p", env_from=[{"configMapRef": {"name": "settings"}, "prefix": "APP_"}],
                           env=[{"name": "APP_MODE", "value": "b"},
                                {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "pw"}}},
                                {"name": "ONE", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "LEVEL"}}}])

            async def recorded() -> bool:
                return "everynode.io/resolved-env" in ((await c.get_pod("p"))["metadata"].get("annotations") or {})

            await eventually(recorded)
            pod = await c.get_pod("p")
            resolved = json.loads(pod["metadata"]["annotations"]["everynode.io/resolved-env"])
            assert resolved == {"c": {"APP_LEVEL": "debug", "APP_MODE": "b", "ONE": "debug"}}
            log = c.kubelet.container_log(pod, "c")
            assert log is not None
            assert "secret" not in " ".join(text for _, text in log[1])

    run_virtual(main())


def test_container_events_as_a_kubelet_records_them() -> None:
    async def main() -> None:
        async with Cluster() as c:
            await c.node("w1")
            await make_pod(c, "cached")
            await make_pod(c, "latest", image="busybox")
            await make_pod(c, "crash", annotations={"everynode.io/behavior": "crash-loop"})

            async def started() -> bool:
                phases = [(await c.get_pod(n))["status"].get("phase") for n in ("cached", "latest")]
                return phases == ["Running", "Running"]

            await eventually(started)
            await asyncio.sleep(15)
            got = [(e["type"], e["reason"], e["message"]) for e in await events_of(c, "cached")]
            assert got == [("Normal", "Pulled", 'Container image "nginx:1.27" already present on machine'),
                           ("Normal", "Created", "Created container: c"),
                           ("Normal", "Started", "Started container c")]
            ev = (await events_of(c, "cached"))[0]
            assert ev["reportingComponent"] == "kubelet" and ev["reportingInstance"] == "w1"
            assert ev["involvedObject"]["fieldPath"] == "spec.containers{c}"
            reasons = [e["reason"] for e in await events_of(c, "latest")]
            assert reasons[:2] == ["Pulling", "Pulled"]
            pulled = (await events_of(c, "latest"))[1]["message"]
            assert pulled.startswith('Successfully pulled image "busybox" in 1s (1s including waiting). Image size: ')
            crash = {e["reason"]: e for e in await events_of(c, "crash")}
            pod = await c.get_pod("crash")
            assert crash["BackOff"]["type"] == "Warning"
            assert crash["BackOff"]["message"] == f"Back-off restarting failed container c in pod crash_default({pod['metadata']['uid']})"
            assert crash["Started"]["count"] >= 2  # restarted after the back-off
            await c.client.delete("pods", "cached", namespace="default")
            await asyncio.sleep(1)
            assert ("Normal", "Killing", "Stopping container c") in [
                (e["type"], e["reason"], e["message"]) for e in await events_of(c, "cached")]

    run_virtual(main())
