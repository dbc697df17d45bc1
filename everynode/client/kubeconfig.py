"""Reading a kubeconfig into what the HTTP client needs: server, TLS material, credentials, namespace.

Why our own reader: the HTTP client needs only one context's cluster and user, resolved to bytes
and an :class:`ssl.SSLContext`; that is ~100 lines over PyYAML, with no second HTTP stack pulled in
(lightkube brings httpx).  Rules follow client-go's ``clientcmd`` loader:

* ``KUBECONFIG`` may list several files (``os.pathsep``); the first file that sets a map key wins,
  ``current-context`` is the first one set.  Without it, ``~/.kube/config``.
* Relative file paths (``certificate-authority``, ``client-certificate``, ``client-key``,
  ``tokenFile``) are relative to the kubeconfig file that mentions them.
* ``*-data`` fields are base64 PEM and win over the file variants.
* ``token`` wins over ``tokenFile``.  ``exec`` / ``auth-provider`` credential plugins are not
  supported here: a clear :class:`KubeconfigError` says so.
* In-cluster configuration (service-account token and CA, ``KUBERNETES_SERVICE_HOST``) is read by
  :func:`in_cluster`.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

SERVICE_ACCOUNT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")


class KubeconfigError(ValueError):
    pass


@dataclass(slots=True)
class ClusterAccess:
    """One resolved context: everything needed to talk to its API server."""

    server: str
    ca_data: bytes | None = None  # PEM
    insecure_skip_tls_verify: bool = False
    tls_server_name: str | None = None
    token: str | None = None
    token_file: str | None = None
    client_cert_data: bytes | None = None  # PEM
    client_key_data: bytes | None = None  # PEM
    username: str | None = None
    password: str | None = None
    namespace: str = "default"
    context: str | None = None

    def bearer_token(self) -> str | None:
        if self.token:
            return self.token
        if self.token_file:
            try:
                return Path(self.token_file).read_text().strip()
            except OSError as exc:
                raise KubeconfigError(f"cannot read token file {self.token_file}: {exc}") from None
        return None

    def ssl_context(self) -> ssl.SSLContext | bool:
        """An SSLContext for ``https`` servers (False: verification disabled; True: plain HTTP)."""
        if not self.server.startswith("https"):
            return True
        if self.insecure_skip_tls_verify:
            ctx: ssl.SSLContext = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        elif self.ca_data:
            ctx = ssl.create_default_context(cadata=self.ca_data.decode())
        else:
            ctx = ssl.create_default_context()
        if self.client_cert_data and self.client_key_data:
            _load_cert_chain(ctx, self.client_cert_data, self.client_key_data)
        return ctx


def _load_cert_chain(ctx: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # The ssl module loads key material from files only; use a private temporary directory.
    with tempfile.TemporaryDirectory(prefix="everynode-tls-") as tmp:
        cert_path = os.path.join(tmp, "client.crt")
        key_path = os.path.join(tmp, "client.key")
        for path, data in ((cert_path, cert), (key_path, key)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
        ctx.load_cert_chain(cert_path, key_path)


def default_paths() -> list[Path]:
    env = os.environ.get("KUBECONFIG")
    if env:
        return [Path(p).expanduser() for p in env.split(os.pathsep) if p]
    return [Path("~/.kube/config").expanduser()]


def _named(entries: Any, field: str, source: Path) -> dict[str, tuple[dict[str, Any], Path]]:
    out: dict[str, tuple[dict[str, Any], Path]] = {}
    for entry in entries or ():
        if isinstance(entry, dict) and isinstance(entry.get("name"), str):
            out[entry["name"]] = (entry.get(field) or {}, source)
    return out


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as exc:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {exc}") from None
    try:
        doc = yaml.load(text, Loader=_Loader) or {}
    except yaml.YAMLError as exc:
        raise KubeconfigError(f"invalid kubeconfig {path}: {exc}") from None
    if not isinstance(doc, dict):
        raise KubeconfigError(f"invalid kubeconfig {path}: not a mapping")
    return doc


def _data(entry: dict[str, Any], data_key: str, file_key: str, base: Path) -> bytes | None:
    if entry.get(data_key):
        try:
            return base64.b64decode(entry[data_key])
        except (ValueError, TypeError) as exc:
            raise KubeconfigError(f"invalid {data_key}: {exc}") from None
    if entry.get(file_key):
        p = Path(os.path.expanduser(entry[file_key]))
        if not p.is_absolute():
            p = base.parent / p
        try:
            return p.read_bytes()
        except OSError as exc:
            raise KubeconfigError(f"cannot read {file_key} {p}: {exc}") from None
    return None


def load(path: str | os.PathLike[str] | None = None, *, context: str | None = None) -> ClusterAccess:
    """Resolve ``context`` (default: ``current-context``) from ``path`` (default: $KUBECONFIG or
    ~/.kube/config) into a :class:`ClusterAccess`."""
    paths = [Path(path).expanduser()] if path is not None else [p for p in default_paths() if p.exists()]
    if not paths:
        raise KubeconfigError("no kubeconfig found (set KUBECONFIG or create ~/.kube/config)")
    clusters: dict[str, tuple[dict[str, Any], Path]] = {}
    users: dict[str, tuple[dict[str, Any], Path]] = {}
    contexts: dict[str, tuple[dict[str, Any], Path]] = {}
    current: str | None = None
    for p in paths:
        doc = _read(p)
        for target, key, field in ((clusters, "clusters", "cluster"), (users, "users", "user"),
                                   (contexts, "contexts", "context")):
            for name, value in _named(doc.get(key), field, p).items():
                target.setdefault(name, value)
        if current is None and doc.get("current-context"):
            current = str(doc["current-context"])
    ctx_name = context or current
    if not ctx_name:
        raise KubeconfigError("kubeconfig has no current-context and no context was given")
    if ctx_name not in contexts:
        raise KubeconfigError(f'context "{ctx_name}" does not exist')
    ctx, _ = contexts[ctx_name]
    cluster_name = ctx.get("cluster")
    if cluster_name not in clusters:
        raise KubeconfigError(f'cluster "{cluster_name}" of context "{ctx_name}" does not exist')
    cluster, cluster_src = clusters[cluster_name]
    user_name = ctx.get("user")
    user, user_src = users.get(user_name, ({}, paths[0])) if user_name else ({}, paths[0])
    if user.get("exec") or user.get("auth-provider"):
        raise KubeconfigError(f'user "{user_name}": exec and auth-provider credential plugins are not supported')
    server = cluster.get("server")
    if not server:
        raise KubeconfigError(f'cluster "{cluster_name}" has no server')
    token_file = user.get("tokenFile")
    if token_file and not os.path.isabs(os.path.expanduser(token_file)):
        token_file = str(user_src.parent / token_file)
    return ClusterAccess(
        server=str(server).rstrip("/"),
        ca_data=_data(cluster, "certificate-authority-data", "certificate-authority", cluster_src),
        insecure_skip_tls_verify=bool(cluster.get("insecure-skip-tls-verify")),
        tls_server_name=cluster.get("tls-server-name"),
        token=user.get("token"),
        token_file=token_file,
        client_cert_data=_data(user, "client-certificate-data", "client-certificate", user_src),
        client_key_data=_data(user, "client-key-data", "client-key", user_src),
        username=user.get("username"),
        password=user.get("password"),
        namespace=ctx.get("namespace") or "default",
        context=ctx_name,
    )


def in_cluster(sa_dir: Path = SERVICE_ACCOUNT_DIR) -> ClusterAccess:
    """``rest.InClusterConfig``: the pod's service account against ``KUBERNETES_SERVICE_HOST``."""
    host = os.environ.get("KUBERNETES_SERVICE_HOST")
    port = os.environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise KubeconfigError("not running in a cluster: KUBERNETES_SERVICE_HOST/PORT are not set")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    ca_path = sa_dir / "ca.crt"
    ns_path = sa_dir / "namespace"
    return ClusterAccess(
        server=f"https://{host}:{port}",
        ca_data=ca_path.read_bytes() if ca_path.exists() else None,
        token_file=str(sa_dir / "token"),
        namespace=ns_path.read_text().strip() if ns_path.exists() else "default",
    )
