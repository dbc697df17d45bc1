"""Kubernetes protobuf request bodies, with captures from kubectl 1.33 (kubectl-contract.md §8)."""

from __future__ import annotations

import pytest

from everynode.apiserver.protobuf import decode

CAPTURES = {
    # kubectl create namespace foo33 (the 56-byte capture of the contract)
    "namespace": ("6b3873000a0f0a02763112094e616d657370616365121d0a150a05666f6f333312001a0022002a003200380042"
                  "0012001a020a001a002200",
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "foo33"}, "spec": {}, "status": {}}),
    # kubectl create cm cm1 --from-literal=a=b --from-literal=c='<&>'
    "configmap": ("6b3873000a0f0a0276311209436f6e6669674d617012270a130a03636d3112001a0022002a00320038004200"
                  "12060a016112016212080a016312033c263e1a002200",
                  {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}, "data": {"a": "b", "c": "<&>"}}),
    # kubectl create secret generic s1 --from-literal=k=v
    "secret": ("6b3873000a0c0a0276311206536563726574121e0a120a02733112001a0022002a00320038004200"
               "12060a016b1201761a001a002200",
               {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"}, "data": {"k": "dg=="}}),
    # kubectl create sa sa1
    "serviceaccount": ("6b3873000a140a027631120e536572766963654163636f756e7412150a130a0373613112001a0022002a00"
                       "3200380042001a002200",
                       {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa1"}}),
}


@pytest.mark.parametrize("name", CAPTURES)
def test_kubectl_captures(name):
    hexdata, expected = CAPTURES[name]
    data = bytes.fromhex(hexdata)
    if name == "namespace":
        assert len(data) == 56
    assert decode(data) == expected


def _ld(field: int, payload: bytes) -> bytes:
    return bytes([field << 3 | 2, len(payload)]) + payload


def _envelope(api_version: str, kind: str, raw: bytes) -> bytes:
    tm = _ld(1, api_version.encode()) + _ld(2, kind.encode())
    return b"k8s\x00" + _ld(1, tm) + _ld(2, raw) + _ld(3, b"") + _ld(4, b"")


def test_delete_options_keeps_pointer_zero_values():
    raw = bytes([1 << 3, 0]) + _ld(4, b"Background") + _ld(5, b"All")
    assert decode(_envelope("v1", "DeleteOptions", raw)) == {
        "apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
        "propagationPolicy": "Background", "dryRun": ["All"]}
    assert decode(_envelope("v1", "DeleteOptions", b"")) == {"apiVersion": "v1", "kind": "DeleteOptions"}


def test_eviction_with_labels_owner_refs_and_time():
    owner = _ld(1, b"DaemonSet") + _ld(3, b"ne") + _ld(4, b"uid-1") + _ld(5, b"apps/v1") + bytes([6 << 3, 1])
    time = bytes([1 << 3]) + bytes([0x80, 0xE1, 0xEB, 0xD1, 0x06])  # 1765470208 seconds
    meta = (_ld(1, b"p1") + _ld(3, b"default") + _ld(11, _ld(1, b"app") + _ld(2, b"x"))
            + _ld(8, time) + _ld(13, owner) + bytes([7 << 3, 3]))
    raw = _ld(1, meta) + _ld(2, bytes([1 << 3, 30]))
    out = decode(_envelope("policy/v1", "Eviction", raw))
    assert out["metadata"]["labels"] == {"app": "x"}
    assert out["metadata"]["ownerReferences"] == [{"kind": "DaemonSet", "name": "ne", "uid": "uid-1",
                                                   "apiVersion": "apps/v1", "controller": True}]
    assert out["metadata"]["creationTimestamp"].endswith("Z")
    assert out["metadata"]["generation"] == 3
    assert out["deleteOptions"] == {"gracePeriodSeconds": 30}


def test_negative_int64():
    raw = bytes([1 << 3]) + bytes([0xFF] * 9 + [0x01])
    assert decode(_envelope("v1", "DeleteOptions", raw))["gracePeriodSeconds"] == -1


@pytest.mark.parametrize("data", [
    b"", b"k8s", b"{}", b"k8s\x00\x0a\x05ab",  # truncated
    b"k8s\x00\x0f", b"k8s\x00" + _ld(1, _ld(2, b"Pod")),  # bad wire type, unsupported kind
    _envelope("v1", "Namespace", _ld(1, b"\x0a\x02\xff\xfe")),  # invalid UTF-8
    _envelope("v1", "Namespace", bytes([1 << 3, 1])),  # metadata as varint
])
def test_garbage_raises_value_error(data):
    with pytest.raises(ValueError):
        decode(data)


def _pod_template(container: bytes) -> bytes:
    """A PodTemplateSpec: one container and an image pull secret (PodSpec fields 2 and 15)."""
    return _ld(2, _ld(2, container) + _ld(15, _ld(1, b"regcred")))


CONTAINER = _ld(1, b"c") + _ld(2, b"img") + _ld(6, bytes([3 << 3, 80]))  # containerPort 80
POD_SPEC_JSON = {"containers": [{"name": "c", "image": "img", "ports": [{"containerPort": 80}]}],
                 "imagePullSecrets": [{"name": "regcred"}]}


def test_one_pod_template_for_deployments_jobs_and_cronjobs():
    """A Deployment, a Job and a CronJob's Job template decode their pod templates alike (one
    table): the container's ports and the pod's imagePullSecrets are read in each."""
    template = _pod_template(CONTAINER)
    deployment = _ld(2, _ld(3, template))
    assert decode(_envelope("apps/v1", "Deployment", deployment))["spec"] == {"template": {"spec": POD_SPEC_JSON}}
    job_spec = _ld(6, template)
    assert decode(_envelope("batch/v1", "Job", _ld(2, job_spec)))["spec"] == {"template": {"spec": POD_SPEC_JSON}}
    cron = _ld(2, _ld(1, b"* * * * *") + _ld(5, _ld(2, job_spec)))
    assert decode(_envelope("batch/v1", "CronJob", cron))["spec"] == {
        "schedule": "* * * * *", "jobTemplate": {"spec": {"template": {"spec": POD_SPEC_JSON}}}}
