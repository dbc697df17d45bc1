"""Write the admin kubeconfig for the embedded API server.

What kubectl and the official clients need (kubectl-contract.md §1): an ``https://`` server URL
(tokens are only sent over TLS), the CA as ``certificate-authority-data`` so the server is
verified, a user with the bearer token, and a current context — named ``everynode``, with
namespace ``default`` — so no flags are needed.  Written atomically with mode 0600: it holds a
credential.
"""

from __future__ import annotations

import base64
import os
from pathlib import Path
from typing import Any

import yaml

NAME = "everynode"


def kubeconfig_dict(*, server: str, ca_pem: bytes | str, token: str, name: str = NAME,
                    namespace: str = "default") -> dict[str, Any]:
    ca = ca_pem.encode() if isinstance(ca_pem, str) else ca_pem
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {
            "server": server,
            "certificate-authority-data": base64.b64encode(ca).decode(),
        }}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": name, "namespace": namespace}}],
        "current-context": name,
        "preferences": {},
    }


def write_kubeconfig(path: Path | str, *, server: str, ca_pem: bytes | str, token: str, name: str = NAME,
                     namespace: str = "default") -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = yaml.safe_dump(kubeconfig_dict(server=server, ca_pem=ca_pem, token=token, name=name,
                                          namespace=namespace), sort_keys=False)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)
    return path
