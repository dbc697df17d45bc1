"""Service-account tokens: the signing key, TokenRequest's JWTs and their authentication.

Upstream: ``pkg/serviceaccount/{jwt.go,claims.go}`` (the token generator and the validator of
bound tokens), ``pkg/registry/core/serviceaccount/storage/token.go`` (TokenRequest) and
``staging/src/k8s.io/apiserver/pkg/authentication/authenticator`` (who a bearer token is).

Choices and their reasons:

* **ES256 over a P-256 key** (upstream accepts RS256 and ES256 for service-account keys): the
  key is generated in about a millisecond at first start, so start-up stays fast; it is kept
  as ``sa.key`` (PKCS#8 PEM, 0600) beside the TLS material in the data dir, so tokens issued
  before a restart stay valid after it.  ``--in-memory`` keeps it in memory only.
* **The claims upstream's generator writes**: ``iss`` (kubeadm's issuer
  ``https://kubernetes.default.svc.cluster.local``), ``sub`` ``system:serviceaccount:NS:NAME``,
  ``aud`` (the API audiences when the request names none), ``exp``, ``iat``, ``nbf``, ``jti``
  and the private ``kubernetes.io`` claim (namespace, serviceaccount name/uid, and the bound
  pod, secret or node with the pod's node).  The header names the key (``kid`` = the base64url
  SHA-256 of the public key's DER, as ``keyIDFromPublicKey``).
* **Authentication checks what upstream's validator checks**: signature, issuer (a JWT of
  another issuer is not ours: the request falls through to "Unauthorized"), audience, expiry
  and not-before (no leeway), and that the service account — and a bound pod or secret —
  still exists with the uid in the token.  Every failure is a bare 401 ``Unauthorized``, the
  only answer kube-apiserver gives; the reason goes to the log.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature

from everynode.api import rbac
from everynode.api.rbac import UserInfo
from everynode.storage.base import Store

Obj = dict[str, Any]
log = logging.getLogger(__name__)

ISSUER = "https://kubernetes.default.svc.cluster.local"
API_AUDIENCES = (ISSUER,)
KEY_FILE = "sa.key"
ALGORITHM = "ES256"
_COORDINATE_BYTES = 32  # P-256

# TokenRequest (pkg/apis/authentication/validation, v1 defaults)
DEFAULT_EXPIRATION_SECONDS = 3600
MIN_EXPIRATION_SECONDS = 600
MAX_EXPIRATION_SECONDS = 1 << 32
BOUND_KINDS = {"Pod": "pods", "Secret": "secrets", "Node": "nodes"}

# user.Info extra keys the service-account authenticator sets (serviceaccount/util.go)
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"


class InvalidToken(Exception):
    """A token of ours that does not authenticate (the request is answered 401)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def load_or_create_key(directory: Path | None) -> ec.EllipticCurvePrivateKey:
    """The signing key: read from ``directory/sa.key``, or generated (and written 0600 there)."""
    if directory is not None:
        path = directory / KEY_FILE
        if path.exists():
            key = serialization.load_pem_private_key(path.read_bytes(), password=None)
            if isinstance(key, ec.EllipticCurvePrivateKey):
                return key
            log.warning("%s is not an EC key: replacing it (earlier tokens stop working)", path)
    key = ec.generate_private_key(ec.SECP256R1())
    if directory is not None:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        fd = os.open(directory / KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
    return key


@dataclass(frozen=True)
class BoundObject:
    """What a token is bound to: a pod (with its node), a secret or a node."""

    kind: str
    name: str
    uid: str
    node_name: str = ""
    node_uid: str = ""


class TokenIssuer:
    """Signs and verifies service-account JWTs with one key."""

    def __init__(self, key: ec.EllipticCurvePrivateKey, *, issuer: str = ISSUER,
                 audiences: tuple[str, ...] = API_AUDIENCES) -> None:
        self._key = key
        self._public = key.public_key()
        self.issuer = issuer
        self.audiences = audiences
        der = self._public.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.key_id = _b64(hashlib.sha256(der).digest())
        self._header = _b64(orjson.dumps({"alg": ALGORITHM, "kid": self.key_id}))

    # -- issuing ------------------------------------------------------------------------------

    def claims(self, service_account: Obj, *, audiences: list[str], now: int, expiration_seconds: int,
               bound: BoundObject | None = None) -> Obj:
        """``serviceaccount.Claims``: the registered and private claims of a token."""
        md = service_account["metadata"]
        kube: Obj = {"namespace": md["namespace"],
                     "serviceaccount": {"name": md["name"], "uid": md.get("uid") or ""}}
        if bound is not None:
            ref = {"name": bound.name, "uid": bound.uid}
            if bound.kind == "Pod":
                kube["pod"] = ref
                if bound.node_name:
                    kube["node"] = {"name": bound.node_name, "uid": bound.node_uid}
            elif bound.kind == "Secret":
                kube["secret"] = ref
            else:
                kube["node"] = ref
        return {
            "aud": list(audiences), "exp": now + expiration_seconds, "iat": now, "iss": self.issuer,
            "jti": str(uuid.uuid4()), "kubernetes.io": kube, "nbf": now,
            "sub": rbac.service_account_username(md["namespace"], md["name"]),
        }

    def sign(self, claims: Mapping[str, Any]) -> str:
        signing_input = f"{self._header}.{_b64(orjson.dumps(claims))}"
        der = self._key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        raw = r.to_bytes(_COORDINATE_BYTES, "big") + s.to_bytes(_COORDINATE_BYTES, "big")
        return f"{signing_input}.{_b64(raw)}"

    # -- verifying ----------------------------------------------------------------------------

    def verified_claims(self, token: str) -> Obj | None:
        """The claims of a well-signed token of this issuer; None for a token that is not ours
        (not a JWT, another issuer or key); :class:`InvalidToken` for a bad one of ours."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            header = orjson.loads(_unb64(parts[0]))
            claims = orjson.loads(_unb64(parts[1]))
            signature = _unb64(parts[2])
        except (ValueError, orjson.JSONDecodeError):
            return None
        if not isinstance(header, dict) or not isinstance(claims, dict) or claims.get("iss") != self.issuer:
            return None
        if header.get("alg") != ALGORITHM or len(signature) != 2 * _COORDINATE_BYTES:
            raise InvalidToken("invalid signature")
        r = int.from_bytes(signature[:_COORDINATE_BYTES], "big")
        s = int.from_bytes(signature[_COORDINATE_BYTES:], "big")
        try:
            self._public.verify(encode_dss_signature(r, s), f"{parts[0]}.{parts[1]}".encode(),
                                ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise InvalidToken("invalid signature") from None
        return claims

    def authenticate(self, token: str, store: Store, *, now: float,
                     audiences: tuple[str, ...] | None = None) -> UserInfo | None:
        """The service account a bearer token names (``validator.Validate``), or None when the
        token is not one of this issuer's; :class:`InvalidToken` when it is but fails.
        ``audiences``: whom the token must be for (the API server's by default)."""
        claims = self.verified_claims(token)
        if claims is None:
            return None
        aud = claims.get("aud")
        token_audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        wanted = self.audiences if audiences is None else audiences
        if not set(token_audiences) & set(wanted):
            raise InvalidToken(f"token audiences {token_audiences!r} is invalid for the target audiences "
                               f"{list(wanted)!r}")
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not isinstance(exp, int | float) or now >= exp:
            raise InvalidToken("service account token has expired")
        if isinstance(nbf, int | float) and now < nbf:
            raise InvalidToken("service account token is not valid yet")
        kube = claims.get("kubernetes.io")
        if not isinstance(kube, dict):
            raise InvalidToken("service account token claims are not complete")
        namespace = kube.get("namespace") or ""
        sa_ref = kube.get("serviceaccount") or {}
        name = sa_ref.get("name") or ""
        if claims.get("sub") != rbac.service_account_username(namespace, name):
            raise InvalidToken("service account token claims do not match")
        sa = store.get("serviceaccounts", namespace, name)
        if sa is None or sa["metadata"].get("deletionTimestamp"):
            raise InvalidToken(f"service account {namespace}/{name} has been deleted")
        if (sa["metadata"].get("uid") or "") != sa_ref.get("uid"):
            raise InvalidToken(f"service account UID ({sa['metadata'].get('uid')}) does not match claim "
                               f"({sa_ref.get('uid')})")
        extra: dict[str, tuple[str, ...]] = {}
        if claims.get("jti"):
            extra[CREDENTIAL_ID_KEY] = (f"JTI={claims['jti']}",)
        for kind, resource in (("pod", "pods"), ("secret", "secrets")):
            ref = kube.get(kind)
            if not isinstance(ref, dict):
                continue
            obj = store.get(resource, namespace, ref.get("name") or "")
            if obj is None or obj["metadata"].get("deletionTimestamp") or obj["metadata"].get("uid") != ref.get("uid"):
                raise InvalidToken(f"{kind} {namespace}/{ref.get('name')} bound to the token has been deleted")
            if kind == "pod":
                extra[POD_NAME_KEY] = (ref.get("name") or "",)
                extra[POD_UID_KEY] = (ref.get("uid") or "",)
        node = kube.get("node")
        if isinstance(node, dict):
            extra[NODE_NAME_KEY] = (node.get("name") or "",)
            extra[NODE_UID_KEY] = (node.get("uid") or "",)
        user = rbac.service_account_user(namespace, name, uid=sa["metadata"].get("uid") or "")
        return UserInfo(user.name, user.groups, user.uid, extra)
