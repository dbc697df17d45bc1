"""TLS material and kubeconfig for the embedded API server."""

from __future__ import annotations

import base64
import stat

import yaml
from cryptography import x509

from everynode.apiserver import kubeconfig, tls


def sans(cert_pem: bytes) -> set[str]:
    cert = x509.load_pem_x509_certificate(cert_pem)
    ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(v) for v in ext.get_values_for_type(x509.IPAddress)} | set(ext.get_values_for_type(x509.DNSName))


def test_serving_certificate_names_loopback_and_bind_host(tmp_path):
    certs = tls.ensure_certs(tmp_path, hosts=["10.1.2.3", "api.example"])
    assert {"localhost", "127.0.0.1", "::1", "10.1.2.3", "api.example"} <= sans(certs.cert_pem)
    assert stat.S_IMODE((tmp_path / tls.CA_KEY).stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / tls.SERVING_KEY).stat().st_mode) == 0o600
    certs.server_context()  # loads


def test_material_is_reused_and_reissued_for_new_hosts(tmp_path):
    first = tls.ensure_certs(tmp_path, hosts=["127.0.0.1"])
    again = tls.ensure_certs(tmp_path, hosts=["127.0.0.1"])
    assert again == first
    moved = tls.ensure_certs(tmp_path, hosts=["10.9.9.9"])
    assert moved.ca_pem == first.ca_pem and moved.cert_pem != first.cert_pem
    assert "10.9.9.9" in sans(moved.cert_pem)


def test_in_memory_material(tmp_path):
    certs = tls.ensure_certs(None, hosts=["0.0.0.0"])
    assert "0.0.0.0" not in sans(certs.cert_pem)
    assert list(tmp_path.iterdir()) == []


def test_kubeconfig(tmp_path):
    path = kubeconfig.write_kubeconfig(tmp_path / "kc", server="https://127.0.0.1:6443", ca_pem=b"PEM", token="t")
    doc = yaml.safe_load(path.read_text())
    assert doc["current-context"] == "everynode"
    assert doc["clusters"][0]["cluster"] == {"server": "https://127.0.0.1:6443",
                                             "certificate-authority-data": base64.b64encode(b"PEM").decode()}
    assert doc["users"][0]["user"] == {"token": "t"}
    assert doc["contexts"][0]["context"] == {"cluster": "everynode", "user": "everynode", "namespace": "default"}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_only_the_ca_may_sign_certificates(tmp_path):
    certs = tls.ensure_certs(tmp_path)
    ca = x509.load_pem_x509_certificate(certs.ca_pem)
    serving = x509.load_pem_x509_certificate(certs.cert_pem)

    def ext(cert, kind):
        return cert.extensions.get_extension_for_class(kind).value

    assert ext(ca, x509.BasicConstraints).ca and not ext(serving, x509.BasicConstraints).ca
    assert (ext(ca, x509.KeyUsage).key_cert_sign, ext(ca, x509.KeyUsage).crl_sign) == (True, True)
    assert (ext(serving, x509.KeyUsage).key_cert_sign, ext(serving, x509.KeyUsage).crl_sign) == (False, False)
    assert ext(serving, x509.KeyUsage).digital_signature
    assert serving.issuer == ca.subject
    assert list(ext(serving, x509.ExtendedKeyUsage)) == [x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]
