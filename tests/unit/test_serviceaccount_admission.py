"""The ServiceAccount admission plugin: the account a pod names must exist (``default`` is
waited for), and the projected ``kube-api-access-*`` volume with its mounts, as upstream adds
them."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from everynode.api import errors
from everynode.api.registry import resource
from everynode.apiserver.admission import TOKEN_MOUNT_PATH, Admission, token_volume_source, with_token_volume
from everynode.storage.memory import MemoryStore

Obj = dict[str, Any]
PODS = resource("pods")


def _pod(**spec: Any) -> Obj:
    base: Obj = {"containers": [{"name": "c", "image": "i"}]}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}, "spec": base}


async def _admission(*accounts: Obj) -> Admission:
    store = MemoryStore()
    for sa in accounts:
        await store.create("serviceaccounts", sa)
    return Admission(store, service_accounts=True)


def _sa(name: str = "default", **fields: Any) -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": "ns"}, **fields}


def test_the_volume_and_mounts_are_upstreams() -> None:
    pod = _pod(initContainers=[{"name": "init", "image": "i"}])
    before = copy.deepcopy(pod)
    out = with_token_volume(pod)
    assert pod == before  # the input is not changed
    volume = out["spec"]["volumes"][-1]
    assert volume["name"].startswith("kube-api-access-") and len(volume["name"]) == len("kube-api-access-") + 5
    assert volume["projected"] == token_volume_source()
    assert token_volume_source()["sources"][0] == {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
    for key in ("containers", "initContainers"):
        assert out["spec"][key][0]["volumeMounts"] == [
            {"mountPath": TOKEN_MOUNT_PATH, "name": volume["name"], "readOnly": True}]


def test_a_container_with_something_at_the_token_path_is_left_alone() -> None:
    mine = {"mountPath": TOKEN_MOUNT_PATH, "name": "mine"}
    pod = _pod(containers=[{"name": "c", "image": "i", "volumeMounts": [mine]}])
    assert with_token_volume(pod) is pod


def test_an_existing_token_volume_is_reused() -> None:
    pod = _pod(volumes=[{"name": "kube-api-access-abcde", "projected": token_volume_source()}])
    out = with_token_volume(pod)
    assert [v["name"] for v in out["spec"]["volumes"]] == ["kube-api-access-abcde"]
    assert out["spec"]["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-abcde"


async def test_a_missing_account_is_refused_in_upstreams_words() -> None:
    admission = await _admission()
    with pytest.raises(errors.ApiError) as e:
        await admission.pod_service_account(PODS, _pod(serviceAccountName="nope"))
    assert e.value.code == 403
    assert e.value.status["message"] == ('pods "p" is forbidden: error looking up service account ns/nope: '
                                         'serviceaccount "nope" not found')


@pytest.mark.parametrize(("pod_says", "account_says", "mounted"), [
    (None, None, True), (False, None, False), (None, False, False), (True, False, True), (False, True, False),
])
async def test_automount(pod_says: bool | None, account_says: bool | None, mounted: bool) -> None:
    sa = _sa() if account_says is None else _sa(automountServiceAccountToken=account_says)
    admission = await _admission(sa)
    pod = _pod() if pod_says is None else _pod(automountServiceAccountToken=pod_says)
    assert (await admission.pod_service_account(PODS, pod) is not None) is mounted


async def test_the_accounts_image_pull_secrets_are_copied() -> None:
    admission = await _admission(_sa(imagePullSecrets=[{"name": "reg"}]))
    pod = _pod()
    await admission.pod_service_account(PODS, pod)
    assert pod["spec"]["imagePullSecrets"] == [{"name": "reg"}]


async def test_off_by_default_and_for_mirror_pods() -> None:
    assert await Admission(MemoryStore()).pod_service_account(PODS, _pod()) is None
    admission = await _admission()
    mirror = _pod()
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    assert await admission.pod_service_account(PODS, mirror) is None
