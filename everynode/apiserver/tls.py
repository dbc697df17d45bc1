"""TLS material for the embedded API server: a private CA and a serving certificate.

Why TLS at all: client-go sends bearer tokens only over HTTPS (kubectl-contract.md §1), so the
token-protected API must speak TLS; the CA goes into the kubeconfig
(``certificate-authority-data``) so clients verify the server instead of skipping verification.

Choices: ECDSA P-256 keys (generated in milliseconds, accepted by Go, Python and every client
library); the serving certificate names ``localhost``, ``127.0.0.1``, ``::1`` and the bind host
as subjectAltNames (Go ignores the CN).  With a directory, everything is written there (keys
0600) and reused on restart — a kubeconfig written earlier stays valid — and the serving
certificate is reissued from the same CA when it no longer covers the requested hosts or is
near expiry.  Without a directory (``--in-memory``) the material lives only in memory.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
SERVING_CERT = "apiserver.crt"
SERVING_KEY = "apiserver.key"

CA_VALIDITY = datetime.timedelta(days=3650)
SERVING_VALIDITY = datetime.timedelta(days=365)
RENEW_BEFORE = datetime.timedelta(days=30)
DEFAULT_HOSTS = ("localhost", "127.0.0.1", "::1")


@dataclass(frozen=True)
class Certs:
    """PEM-encoded CA certificate, serving certificate (chain) and serving key."""

    ca_pem: bytes
    cert_pem: bytes
    key_pem: bytes

    def server_context(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        # ssl only loads a chain from files: use short-lived private temp files.
        with tempfile.TemporaryDirectory(prefix="everynode-tls-") as tmp:
            cert = Path(tmp) / "tls.crt"
            key = Path(tmp) / "tls.key"
            cert.write_bytes(self.cert_pem)
            key.write_bytes(self.key_pem)
            os.chmod(key, 0o600)
            ctx.load_cert_chain(cert, key)
        # Client certificates are asked for, not required: one the cluster CA signed
        # authenticates its subject (CN = user, O = groups), as kube-apiserver's
        # --client-ca-file does; a client without one goes on to the bearer token.
        ctx.verify_mode = ssl.CERT_OPTIONAL
        ctx.load_verify_locations(cadata=self.ca_pem.decode())
        return ctx

    def client_context(self) -> ssl.SSLContext:
        """A client context trusting only this CA (for tests and the HTTP client)."""
        return ssl.create_default_context(cadata=self.ca_pem.decode())


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _new_ca() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "everynode-ca")])
    cert = (_builder(subject=name, issuer=name, key=key, validity=CA_VALIDITY, ca=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return cert, key


def _builder(*, subject: x509.Name, issuer: x509.Name, key: ec.EllipticCurvePrivateKey,
             validity: datetime.timedelta, ca: bool) -> x509.CertificateBuilder:
    """What the CA and the serving certificate share: names, key, serial, validity from five
    minutes ago (clock skew), basic constraints, and a key usage that signs certificates only
    for the CA."""
    now = _now()
    return (x509.CertificateBuilder()
            .subject_name(subject).issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + validity)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=ca,
                                         crl_sign=ca, encipher_only=False, decipher_only=False), critical=True))


def _san_entries(hosts: list[str]) -> list[x509.GeneralName]:
    out: list[x509.GeneralName] = []
    seen: set[str] = set()
    for host in [*DEFAULT_HOSTS, *hosts]:
        host = host.strip("[]")
        if not host or host in seen or host in ("0.0.0.0", "::"):
            continue
        seen.add(host)
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            out.append(x509.DNSName(host))
    return out


def _new_serving(ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
                 hosts: list[str]) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    key = _new_key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "everynode-apiserver")])
    cert = (_builder(subject=subject, issuer=ca_cert.subject, key=key, validity=SERVING_VALIDITY, ca=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.SubjectAlternativeName(_san_entries(hosts)), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return cert, key


def _covers(cert: x509.Certificate, hosts: list[str]) -> bool:
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return False
    have = {str(v) for v in san.get_values_for_type(x509.IPAddress)}
    have |= set(san.get_values_for_type(x509.DNSName))
    wanted = set()
    for g in _san_entries(hosts):
        wanted.add(str(g.value))
    return wanted <= have and cert.not_valid_after_utc - RENEW_BEFORE > _now()


def _write(path: Path, data: bytes, *, private: bool) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    # Everything in the data dir is owner-only (storage/private.py); ``private`` says which files
    # hold secrets (the keys), the certificates are 0600 only because they live there.
    del private
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def client_certificate(directory: Path | str, *, user: str, groups: tuple[str, ...] = (),
                       validity: datetime.timedelta = SERVING_VALIDITY) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) of a client certificate for ``user`` in ``groups`` (subject CN
    and O, as upstream's x509 authenticator reads them), signed by the CA in ``directory``."""
    d = Path(directory)
    ca_cert = x509.load_pem_x509_certificate((d / CA_CERT).read_bytes())
    ca_key = serialization.load_pem_private_key((d / CA_KEY).read_bytes(), password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError(f"{d / CA_KEY}: expected an EC private key")
    key = _new_key()
    subject = x509.Name([*(x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups),
                         x509.NameAttribute(NameOID.COMMON_NAME, user)])
    cert = (_builder(subject=subject, issuer=ca_cert.subject, key=key, validity=validity, ca=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    return _cert_pem(cert), _key_pem(key)


def ensure_certs(directory: Path | str | None, *, hosts: list[str] | tuple[str, ...] = ()) -> Certs:
    """Load or create the CA and a serving certificate for ``hosts`` (plus the loopback names)."""
    hosts = list(hosts)
    if directory is None:
        ca_cert, ca_key = _new_ca()
        cert, key = _new_serving(ca_cert, ca_key, hosts)
        return Certs(_cert_pem(ca_cert), _cert_pem(cert), _key_pem(key))
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    ca_cert_path, ca_key_path = d / CA_CERT, d / CA_KEY
    if ca_cert_path.exists() and ca_key_path.exists():
        ca_cert = x509.load_pem_x509_certificate(ca_cert_path.read_bytes())
        loaded = serialization.load_pem_private_key(ca_key_path.read_bytes(), password=None)
        if not isinstance(loaded, ec.EllipticCurvePrivateKey):
            raise ValueError(f"{ca_key_path}: expected an EC private key")
        ca_key = loaded
    else:
        ca_cert, ca_key = _new_ca()
        _write(ca_key_path, _key_pem(ca_key), private=True)
        _write(ca_cert_path, _cert_pem(ca_cert), private=False)
    cert_path, key_path = d / SERVING_CERT, d / SERVING_KEY
    cert_pem = key_pem = None
    if cert_path.exists() and key_path.exists():
        existing = x509.load_pem_x509_certificate(cert_path.read_bytes())
        if existing.issuer == ca_cert.subject and _covers(existing, hosts):
            cert_pem, key_pem = cert_path.read_bytes(), key_path.read_bytes()
    if cert_pem is None or key_pem is None:
        cert, key = _new_serving(ca_cert, ca_key, hosts)
        cert_pem, key_pem = _cert_pem(cert), _key_pem(key)
        _write(key_path, key_pem, private=True)
        _write(cert_path, cert_pem, private=False)
    return Certs(_cert_pem(ca_cert), cert_pem, key_pem)
