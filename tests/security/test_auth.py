"""Auth attack: missing, wrong and garbled credentials on every kind of endpoint.

kube-apiserver's rule (pkg/kubeapiserver/authenticator/config.go): a request that presents no
bearer token is anonymous, and anonymous users may only read the public-info paths (``/healthz``,
``/livez``, ``/readyz``, ``/version``); a request that presents a *wrong* token is never treated
as anonymous — it gets 401 everywhere, probes included.  Every 401 is the same Status, and
nothing is written."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from tests.security.conftest import TOKEN
from tests.support.raw_https import raw_request

UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "Unauthorized", "reason": "Unauthorized", "code": 401}

CM = b'{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}'
ENDPOINTS = [  # (method, path, body, content type): discovery, openapi, CRUD, watch, subresources, metrics
    ("GET", "/", b"", ""), ("GET", "/api", b"", ""), ("GET", "/api/v1", b"", ""), ("GET", "/apis", b"", ""),
    ("GET", "/apis/apps/v1", b"", ""), ("GET", "/openapi/v2", b"", ""), ("GET", "/openapi/v3", b"", ""),
    ("GET", "/openapi/v3/apis/apps/v1", b"", ""), ("GET", "/api/v1/namespaces", b"", ""),
    ("GET", "/api/v1/namespaces/default/configmaps", b"", ""),
    ("POST", "/api/v1/namespaces/default/configmaps", CM, "application/json"),
    ("GET", "/api/v1/namespaces/default/configmaps/x", b"", ""),
    ("PUT", "/api/v1/namespaces/default/configmaps/x", CM, "application/json"),
    ("PATCH", "/api/v1/namespaces/default/configmaps/x", b"{}", "application/merge-patch+json"),
    ("PATCH", "/api/v1/namespaces/default/configmaps/x?fieldManager=a", CM, "application/apply-patch+yaml"),
    ("DELETE", "/api/v1/namespaces/default/configmaps/x", b"", ""),
    ("DELETE", "/api/v1/namespaces/default/configmaps", b"", ""),
    ("GET", "/api/v1/namespaces/default/configmaps?watch=true", b"", ""),
    ("GET", "/api/v1/watch/namespaces/default/pods", b"", ""),
    ("GET", "/apis/apps/v1/daemonsets?watch=1&resourceVersion=0", b"", ""),
    ("GET", "/apis/apps/v1/namespaces/default/daemonsets/x/status", b"", ""),
    ("PATCH", "/apis/apps/v1/namespaces/default/daemonsets/x/status", b"{}", "application/merge-patch+json"),
    ("POST", "/api/v1/namespaces/default/pods/p/binding", b"{}", "application/json"),
    ("POST", "/api/v1/namespaces/default/pods/p/eviction", b"{}", "application/json"),
    ("GET", "/api/v1/nodes/n/status", b"", ""), ("GET", "/metrics", b"", ""), ("GET", "/nonexistent", b"", ""),
]
PUBLIC = [("GET", path, b"", "") for path in ("/healthz", "/livez", "/readyz", "/readyz/ping", "/version")]

WRONG = {  # a bearer token is presented, and it is not ours
    "wrong": b"Bearer wrong-token",
    "prefix": f"Bearer {TOKEN[:-1]}".encode(),
    "suffix": f"Bearer {TOKEN}x".encode(),
    "lower-case scheme": b"bearer wrong",
    "huge": b"Bearer " + b"A" * 7000,
    "invalid utf-8": b"Bearer \xff\xfe\xe9" + TOKEN.encode(),
}
ANONYMOUS = {  # no bearer token presented at all
    "missing": None,
    "empty": b"",
    "bare scheme": b"Bearer",
    "empty token": b"Bearer ",
    "basic": b"Basic " + base64.b64encode(f"admin:{TOKEN}".encode()),
    "tab, not space": f"Bearer\t{TOKEN}".encode(),
}


async def _assert_401(served: Any, method: str, path: str, body: bytes, content_type: str,
                      authorization: bytes | None) -> None:
    handle, context = served
    headers = {"Content-Type": content_type} if content_type else None
    code, head, payload = await raw_request(handle.port, context, method, path, body=body,
                                            authorization=authorization, headers=headers)
    assert code == 401, (method, path, authorization, code, payload[:200])
    assert b"content-type: application/json" in head.lower()
    assert json.loads(payload) == UNAUTHORIZED


@pytest.mark.parametrize("variant", sorted(WRONG))
async def test_a_wrong_token_is_401_everywhere_probes_included(served: Any, variant: str) -> None:
    for method, path, body, content_type in ENDPOINTS + PUBLIC:
        await _assert_401(served, method, path, body, content_type, WRONG[variant])


@pytest.mark.parametrize("variant", sorted(ANONYMOUS))
async def test_no_token_is_401_except_on_the_public_info_paths(served: Any, variant: str) -> None:
    handle, context = served
    for method, path, body, content_type in ENDPOINTS:
        await _assert_401(served, method, path, body, content_type, ANONYMOUS[variant])
    for method, path, _, _ in PUBLIC:
        code, _, _ = await raw_request(handle.port, context, method, path, authorization=ANONYMOUS[variant])
        assert code == 200, (path, variant)


@pytest.mark.parametrize("authorization", [b"Bearer \xff\xfe\x00abc", b"\x00\x01", f"Bearer {TOKEN}\x00".encode()])
async def test_control_bytes_in_the_header_are_refused_before_anything_runs(served: Any, authorization: bytes) -> None:
    handle, context = served
    for method, path, body, content_type in ENDPOINTS + PUBLIC:
        headers = {"Content-Type": content_type} if content_type else None
        code, _, _ = await raw_request(handle.port, context, method, path, body=body,
                                       authorization=authorization, headers=headers)
        assert code in (400, 401), (path, code)


async def test_nothing_was_written_and_the_right_token_still_works(served: Any) -> None:
    handle, context = served
    for authorization in [*WRONG.values(), *ANONYMOUS.values()]:
        for method, path, body, content_type in ENDPOINTS:
            if method in ("POST", "PUT", "PATCH"):
                await _assert_401(served, method, path, body, content_type, authorization)
    code, _, payload = await raw_request(handle.port, context, "GET", "/api/v1/namespaces/default/configmaps",
                                         authorization=f"Bearer {TOKEN}".encode())
    assert code == 200 and json.loads(payload)["items"] == []
    # upstream takes the second space-separated field as the token
    code, _, _ = await raw_request(handle.port, context, "GET", "/api", authorization=f"Bearer {TOKEN} x".encode())
    assert code == 200
