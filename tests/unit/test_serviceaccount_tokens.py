"""Service-account tokens: signing and claims as upstream's generator writes them, and the
validator's checks (signature, issuer, audience, expiry, the account and bound pod still
there with the uid in the token)."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path
from typing import Any

import orjson
import pytest

from everynode.apiserver.serviceaccount_tokens import (
    ISSUER,
    KEY_FILE,
    BoundObject,
    InvalidToken,
    TokenIssuer,
    load_or_create_key,
)
from everynode.storage.memory import MemoryStore

Obj = dict[str, Any]
NOW = 1_800_000_000


def _sa(name: str = "node-exporter", namespace: str = "monitoring", uid: str = "u-1") -> Obj:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace, "uid": uid}}


def _payload(token: str) -> Obj:
    part = token.split(".")[1]
    return orjson.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def _header(token: str) -> Obj:
    part = token.split(".")[0]
    return orjson.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


@pytest.fixture
def issuer() -> TokenIssuer:
    return TokenIssuer(load_or_create_key(None))


async def _store(*objs: tuple[str, Obj]) -> MemoryStore:
    store = MemoryStore()
    for resource, obj in objs:
        await store.create(resource, obj)
    return store


def test_claims_are_upstreams(issuer: TokenIssuer) -> None:
    claims = issuer.claims(_sa(), audiences=[ISSUER], now=NOW, expiration_seconds=3600)
    assert claims["iss"] == ISSUER
    assert claims["sub"] == "system:serviceaccount:monitoring:node-exporter"
    assert claims["aud"] == [ISSUER]
    assert (claims["iat"], claims["nbf"], claims["exp"]) == (NOW, NOW, NOW + 3600)
    assert claims["kubernetes.io"] == {"namespace": "monitoring",
                                       "serviceaccount": {"name": "node-exporter", "uid": "u-1"}}
    assert claims["jti"]


def test_bound_pod_claims_name_the_pod_and_its_node(issuer: TokenIssuer) -> None:
    bound = BoundObject("Pod", "p", "pod-uid", "worker-1", "node-uid")
    kube = issuer.claims(_sa(), audiences=[ISSUER], now=NOW, expiration_seconds=600, bound=bound)["kubernetes.io"]
    assert kube["pod"] == {"name": "p", "uid": "pod-uid"}
    assert kube["node"] == {"name": "worker-1", "uid": "node-uid"}


def test_the_header_names_the_algorithm_and_key(issuer: TokenIssuer) -> None:
    token = issuer.sign(issuer.claims(_sa(), audiences=[ISSUER], now=NOW, expiration_seconds=600))
    assert _header(token) == {"alg": "ES256", "kid": issuer.key_id}
    assert _payload(token)["sub"] == "system:serviceaccount:monitoring:node-exporter"


async def test_a_valid_token_authenticates_as_the_service_account(issuer: TokenIssuer) -> None:
    store = await _store(("serviceaccounts", _sa()))
    token = issuer.sign(issuer.claims(_sa(), audiences=[ISSUER], now=NOW, expiration_seconds=600))
    user = issuer.authenticate(token, store, now=NOW + 1)
    assert user is not None
    assert user.name == "system:serviceaccount:monitoring:node-exporter"
    assert user.groups == ("system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated")
    assert user.uid == "u-1"


@pytest.mark.parametrize("case", ["expired", "not-yet", "deleted", "recreated", "audience", "signature"])
async def test_a_bad_token_of_ours_is_refused(issuer: TokenIssuer, case: str) -> None:
    sa = _sa(uid="other" if case == "recreated" else "u-1")
    store = await _store() if case == "deleted" else await _store(("serviceaccounts", sa))
    claims = issuer.claims(_sa(), audiences=["elsewhere"] if case == "audience" else [ISSUER], now=NOW,
                           expiration_seconds=600)
    token = issuer.sign(claims)
    if case == "signature":
        token = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    now = {"expired": NOW + 600, "not-yet": NOW - 1}.get(case, NOW + 1)
    with pytest.raises(InvalidToken):
        issuer.authenticate(token, store, now=now)


async def test_a_token_bound_to_a_deleted_pod_is_refused(issuer: TokenIssuer) -> None:
    store = await _store(("serviceaccounts", _sa()))
    token = issuer.sign(issuer.claims(_sa(), audiences=[ISSUER], now=NOW, expiration_seconds=600,
                                      bound=BoundObject("Pod", "gone", "pod-uid")))
    with pytest.raises(InvalidToken):
        issuer.authenticate(token, store, now=NOW + 1)


async def test_tokens_of_another_issuer_or_key_are_not_ours(issuer: TokenIssuer) -> None:
    store = await _store(("serviceaccounts", _sa()))
    other = TokenIssuer(load_or_create_key(None), issuer="https://elsewhere")
    token = other.sign(other.claims(_sa(), audiences=[ISSUER], now=NOW, expiration_seconds=600))
    assert issuer.authenticate(token, store, now=NOW + 1) is None
    assert issuer.authenticate("not-a-jwt", store, now=NOW) is None
    same_issuer_other_key = TokenIssuer(load_or_create_key(None))
    forged = same_issuer_other_key.sign(issuer.claims(_sa(), audiences=[ISSUER], now=NOW, expiration_seconds=600))
    with pytest.raises(InvalidToken):
        issuer.authenticate(forged, store, now=NOW + 1)


def test_the_key_is_kept_private_and_reused(tmp_path: Path) -> None:
    key = load_or_create_key(tmp_path / "pki")
    path = tmp_path / "pki" / KEY_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = load_or_create_key(tmp_path / "pki")
    assert TokenIssuer(again).key_id == TokenIssuer(key).key_id
