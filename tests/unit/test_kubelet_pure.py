"""Table tests of the kubelet simulation's pure parts: mount and env reference checks
(``mounts.py``), container events (``containerevents.py``), the container log (``containerlog.py``)
and the API server's log options and filters (``registry/core/pod/log.py``)."""

from __future__ import annotations

from typing import Any

import pytest

from everynode.api.errors import ApiError
from everynode.apiserver.registry.core.pod import log as podlog
from everynode.kubelet import containerevents, containerlog, mounts

Obj = dict[str, Any]

OBJECTS: dict[tuple[str, str, str], Obj] = {
    ("configmap", "ns", "cm"): {"data": {"a": "1"}, "binaryData": {"b": "AA=="}},
    ("secret", "ns", "s"): {"data": {"token": "eA=="}},
    ("serviceaccount", "ns", "default"): {},
}


def lookup(kind: str, namespace: str, name: str) -> Obj | None:
    return OBJECTS.get((kind, namespace, name))


def pod_with(volumes: list[Obj] | None = None, *, sa: str | None = None, container: Obj | None = None) -> Obj:
    spec: Obj = {"containers": [container or {"name": "c"}], "volumes": volumes or []}
    if sa:
        spec["serviceAccountName"] = sa
    return {"metadata": {"name": "p", "namespace": "ns"}, "spec": spec}


@pytest.mark.parametrize(("volume", "message", "waits"), [
    ({"name": "v", "configMap": {"name": "cm"}}, None, None),
    ({"name": "v", "configMap": {"name": "nope"}}, 'configmap "nope" not found', (("configmap", "nope"),)),
    ({"name": "v", "configMap": {"name": "nope", "optional": True}}, None, None),
    ({"name": "v", "configMap": {"name": "cm", "items": [{"key": "b", "path": "b"}]}}, None, None),
    ({"name": "v", "configMap": {"name": "cm", "items": [{"key": "z", "path": "z"}]}},
     "configmap references non-existent config key: z", (("configmap", "cm"),)),
    ({"name": "v", "configMap": {"name": "cm", "optional": True, "items": [{"key": "z", "path": "z"}]}}, None, None),
    ({"name": "v", "secret": {"secretName": "s"}}, None, None),
    ({"name": "v", "secret": {"secretName": "gone"}}, 'secret "gone" not found', (("secret", "gone"),)),
    ({"name": "v", "secret": {"secretName": "s", "items": [{"key": "x", "path": "x"}]}},
     "references non-existent secret key: x", (("secret", "s"),)),
    ({"name": "v", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}, {"downwardAPI": {}}]}},
     None, None),
    ({"name": "v", "projected": {"sources": [{"configMap": {"name": "x"}}, {"secret": {"name": "y"}}]}},
     '[configmap "x" not found, secret "y" not found]', (("configmap", "x"), ("secret", "y"))),
    ({"name": "v", "emptyDir": {}}, None, None),
    ({"name": "v", "hostPath": {"path": "/proc"}}, None, None),
])
def test_mount_failure(volume: Obj, message: str | None, waits: tuple[Any, ...] | None) -> None:
    got = mounts.mount_failure(pod_with([volume]), lookup)
    if message is None:
        assert got is None
    else:
        assert got is not None
        assert got[0] == "v"
        assert got[1] == mounts.Failure(message, waits)


def test_token_projection_needs_the_pods_service_account() -> None:
    pod = pod_with([{"name": "kube-api-access-x", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}],
                   sa="node-exporter")
    volume, failure = mounts.mount_failure(pod, lookup) or ("", None)
    assert failure is not None
    assert mounts.mount_message(volume, failure) == (
        'MountVolume.SetUp failed for volume "kube-api-access-x" : '
        'failed to fetch token: serviceaccounts "node-exporter" not found')
    assert failure.waits_for == (("serviceaccount", "node-exporter"),)


@pytest.mark.parametrize(("container", "message"), [
    ({"name": "c", "env": [{"name": "A", "value": "x"}]}, None),
    ({"name": "c", "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "a"}}}]}, None),
    ({"name": "c", "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "no", "key": "a"}}}]},
     'configmap "no" not found'),
    ({"name": "c", "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]},
     "couldn't find key k in ConfigMap ns/cm"),
    ({"name": "c", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}]},
     "couldn't find key k in Secret ns/s"),
    ({"name": "c", "env": [{"name": "A", "valueFrom": {"secretKeyRef": {"name": "x", "key": "k", "optional": True}}}]},
     None),
    ({"name": "c", "envFrom": [{"secretRef": {"name": "x"}}],
      "env": [{"name": "A", "valueFrom": {"configMapKeyRef": {"name": "no", "key": "a"}}}]}, 'secret "x" not found'),
    ({"name": "c", "envFrom": [{"configMapRef": {"name": "x", "optional": True}}]}, None),
])
def test_env_failure(container: Obj, message: str | None) -> None:
    got = mounts.env_failure(pod_with(container=container), container, lookup)
    assert (got.message if got else None) == message


def test_pods_without_references_cost_no_lookup() -> None:
    assert not mounts.refers_to_objects(pod_with([{"name": "v", "emptyDir": {}}]))
    assert mounts.refers_to_objects(pod_with([{"name": "v", "secret": {"secretName": "s"}}]))
    assert mounts.refers_to_objects(pod_with(container={"name": "c", "envFrom": [{"configMapRef": {"name": "x"}}]}))


@pytest.mark.parametrize(("container", "policy"), [
    ({"image": "nginx"}, "Always"), ({"image": "nginx:latest"}, "Always"), ({"image": "nginx:1.27"}, "IfNotPresent"),
    ({"image": "localhost:5000/app"}, "Always"), ({"image": "localhost:5000/app:v1"}, "IfNotPresent"),
    ({"image": "nginx@sha256:abc"}, "IfNotPresent"), ({"image": "nginx:1.27", "imagePullPolicy": "Always"}, "Always"),
])
def test_pull_policy_defaulting(container: Obj, policy: str) -> None:
    assert containerevents.pull_policy(container) == policy


@pytest.mark.parametrize(("seconds", "text"), [(0, "0s"), (0.25, "250ms"), (1, "1s"), (1.5, "1.5s"), (125, "2m5s")])
def test_go_duration(seconds: float, text: str) -> None:
    assert containerevents.go_duration(seconds) == text


def test_started_events() -> None:
    cached = containerevents.started({"name": "a", "image": "x:1"}, pull_seconds=1)
    assert [(e.type, e.reason, e.message, e.field_path) for e in cached] == [
        ("Normal", "Pulled", 'Container image "x:1" already present on machine', "spec.containers{a}"),
        ("Normal", "Created", "Created container: a", "spec.containers{a}"),
        ("Normal", "Started", "Started container a", "spec.containers{a}")]
    pulled = containerevents.started({"name": "i", "image": "x"}, pull_seconds=2, init=True)
    assert [e.reason for e in pulled] == ["Pulling", "Pulled", "Created", "Started"]
    assert pulled[1].message.startswith('Successfully pulled image "x" in 2s (2s including waiting). Image size: ')
    assert pulled[0].field_path == "spec.initContainers{i}"
    assert containerevents.killing({"name": "a"}).message == "Stopping container a"
    assert containerevents.restart_backoff({"name": "a"}, pod_name="p", namespace="n", uid="u").message == (
        "Back-off restarting failed container a in pod p_n(u)")


def status_pod(state: Obj, *, last: Obj | None = None, restarts: int = 0) -> Obj:
    cs = {"name": "c", "state": state, "lastState": last or {}, "restartCount": restarts, "containerID": "id-now"}
    return {"metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "w1", "containers": [{"name": "c", "image": "img:1"}]},
            "status": {"containerStatuses": [cs]}}


TERMINATED = {"terminated": {"exitCode": 1, "startedAt": "2025-01-01T00:00:00Z", "finishedAt": "2025-01-01T00:00:01Z",
                             "containerID": "id-old"}}


@pytest.mark.parametrize(("state", "last", "previous", "want"), [
    ({"running": {"startedAt": "2025-01-01T00:00:10Z"}}, None, False, ("id-now", True)),
    ({"waiting": {"reason": "CrashLoopBackOff"}}, TERMINATED, False, ("id-old", False)),
    ({"running": {"startedAt": "2025-01-01T00:00:10Z"}}, TERMINATED, True, ("id-old", False)),
    ({"running": {}}, None, True, 'previous terminated container "c" in pod "p" not found'),
    ({"waiting": {"reason": "ContainerCreating"}}, None, False,
     'container "c" in pod "p" is waiting to start: ContainerCreating'),
    ({"waiting": {"reason": "ErrImagePull"}}, None, False, 'container "c" in pod "p" is waiting to start: image can\'t be pulled'),
    ({"waiting": {"reason": "ImagePullBackOff"}}, None, False,
     'container "c" in pod "p" is waiting to start: trying and failing to pull image'),
])
def test_select_attempt(state: Obj, last: Obj | None, previous: bool, want: Any) -> None:
    pod = status_pod(state, last=last, restarts=1 if last else 0)
    if isinstance(want, str):
        with pytest.raises(ApiError) as err:
            containerlog.select_attempt(pod, "c", previous=previous)
        assert err.value.status["message"] == want and err.value.status["code"] == 400
    else:
        attempt = containerlog.select_attempt(pod, "c", previous=previous)
        assert (attempt.container_id, attempt.running) == want


def test_log_lines_of_a_crashed_run() -> None:
    pod = status_pod({"waiting": {"reason": "CrashLoopBackOff"}}, last=TERMINATED, restarts=1)
    attempt = containerlog.select_attempt(pod, "c", previous=True)
    lines = containerlog.log_lines(pod, "c", attempt, env={"NODE_NAME": "w1"}, behavior="crash-loop")
    assert [text for _, text in lines] == [
        'everynode: simulated container "c" started (attempt 0): image img:1, pod ns/p, node w1',
        "everynode: env NODE_NAME=w1",
        "everynode: exited with code 1 (everynode.io/behavior: crash-loop)"]
    assert lines[-1][0] == "2025-01-01T00:00:01Z"


def test_choose_container() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"initContainers": [{"name": "init"}],
                                               "containers": [{"name": "a"}, {"name": "b"}]}}
    with pytest.raises(ApiError) as err:
        podlog.choose_container(pod, "")
    assert err.value.status["message"] == "a container name must be specified for pod p, choose one of: [init a b]"
    with pytest.raises(ApiError) as err:
        podlog.choose_container(pod, "zz")
    assert err.value.status["message"] == "container zz is not valid for pod p"
    assert podlog.choose_container(pod, "init") == "init"
    assert podlog.choose_container({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "x"}]}}, "") == "x"


LINES = [("2025-01-01T00:00:00Z", "one"), ("2025-01-01T00:00:05Z", "two"), ("2025-01-01T00:00:10Z", "three")]
NOW = 1735689610.0  # 2025-01-01T00:00:10Z


@pytest.mark.parametrize(("query", "want"), [
    ({}, ["one", "two", "three"]),
    ({"tailLines": "2"}, ["two", "three"]),
    ({"tailLines": "0"}, []),
    ({"sinceSeconds": "6"}, ["two", "three"]),
    ({"sinceTime": "2025-01-01T00:00:06Z"}, ["three"]),
    ({"sinceSeconds": "6", "tailLines": "1"}, ["three"]),
])
def test_select_filters(query: dict[str, str], want: list[str]) -> None:
    opts = podlog.parse_options(query)
    assert [text for _, text in podlog.select(LINES, opts, now=NOW)] == want


@pytest.mark.parametrize(("query", "message"), [
    ({"tailLines": "-1"}, "tailLines: Invalid value: -1: must be greater than or equal to 0"),
    ({"limitBytes": "0"}, "limitBytes: Invalid value: 0: must be greater than 0"),
    ({"sinceSeconds": "x"}, 'sinceSeconds: Invalid value: "x": must be an integer'),
    ({"sinceSeconds": "1", "sinceTime": "2025-01-01T00:00:00Z"},
     "at most one of sinceTime or sinceSeconds may be specified"),
])
def test_bad_options(query: dict[str, str], message: str) -> None:
    with pytest.raises(ApiError) as err:
        podlog.parse_options(query)
    assert err.value.status["message"] == message


def test_timestamps_are_rfc3339_nano() -> None:
    assert podlog.encode(LINES[:1], timestamps=True) == b"2025-01-01T00:00:00.000000000Z one\n"
    assert podlog.encode(LINES[:1], timestamps=False) == b"one\n"
