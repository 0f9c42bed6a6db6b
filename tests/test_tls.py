"""Elastic connections over real TLS (issue 27), against each test node (9.2.8 and 8.15.5).

The integ-test distribution has no security module, so each test puts a TLS-terminating proxy
(:class:`test_store_elastic.StandIn`: Python's ``ssl`` server socket, forwarding every request to
the node and recording it) in front of the node, with a certificate authority made in the test by
the ``cryptography`` package. The server presents its certificate and the CA (as an
Elasticsearch 8+ node does), so both pins work: the CA's SHA-256 fingerprint — what
Elasticsearch prints at first start — and the server certificate's.

- a CA file (``ESRAG_ES_CA_CERTS``) and the fingerprint (``ESRAG_ES_SSL_ASSERT_FINGERPRINT``)
  each connect: ``esrag ingest`` and ``esrag search`` work through the proxy;
- a wrong fingerprint, an unknown CA, plain HTTP to the TLS port and HTTPS to the plain node each
  fail with ONE line naming the setting to fix;
- ``esrag doctor`` shows the TLS and authentication mode, never the secret.
"""

from __future__ import annotations

import datetime
import hashlib
import ipaddress
import json
import shutil
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from esrag.stores.elastic import ElasticStore
from paths import LARAVEL
from serve_helpers import run_cli
from test_store_elastic import StandIn, fresh_alias

SECRET = "SECRET-API-KEY-XYZ"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _sign(subject: str, issuer: str, key, issuer_key, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        builder = builder.add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        builder = builder.add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _sha256(cert: x509.Certificate, colons: bool = False) -> str:
    digest = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest()
    return ":".join(digest[i : i + 2] for i in range(0, 64, 2)).upper() if colons else digest


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> dict[str, object]:
    """A CA, a server certificate for 127.0.0.1 signed by it (chain file: server + CA, as an
    Elasticsearch node presents), and the fingerprints."""
    d = tmp_path_factory.mktemp("tls")
    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca = _sign("esrag test CA", "esrag test CA", ca_key, ca_key, ca=True)
    server = _sign("127.0.0.1", "esrag test CA", server_key, ca_key, ca=False)
    (d / "ca.pem").write_bytes(_pem(ca))
    (d / "chain.pem").write_bytes(_pem(server) + _pem(ca))
    (d / "server.key").write_bytes(
        server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return {
        "dir": d,
        "ca": d / "ca.pem",
        "chain": d / "chain.pem",
        "key": d / "server.key",
        "ca_sha256": _sha256(ca, colons=True),
        "server_sha256": _sha256(server),
    }


@pytest.fixture(scope="module")
def docs(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("tlsdocs") / "laravel"
    folder.mkdir()
    for name in ("queues.md", "scheduling.md"):
        shutil.copy(LARAVEL / name, folder / name)
    return folder


def one_error_line(proc) -> str:
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 1 and len(lines) == 1 and lines[0].startswith("Error: "), proc.stderr
    assert SECRET not in proc.stderr and SECRET not in proc.stdout
    return lines[0]


@pytest.mark.integration
def test_ingest_and_search_through_tls_with_the_ca_file_and_with_the_fingerprint(es_url, tls, docs, tmp_path):
    alias = fresh_alias()
    try:
        with StandIn(es_url, tls=(tls["chain"], tls["key"])) as proxy:
            base = {"ESRAG_ES_URL": proxy.url, "ESRAG_INDEX": alias, "ESRAG_ES_API_KEY": SECRET, "ESRAG_DB": str(tmp_path / "x.db")}
            assert proxy.url.startswith("https://")
            with_ca = {**base, "ESRAG_ES_CA_CERTS": str(tls["ca"])}
            summary = json.loads(run_cli(["ingest", str(docs), "--json"], with_ca).stdout)
            assert summary["files"] == 2 and summary["chunks_new"] > 10 and summary["failures"] == []
            hits = json.loads(run_cli(["search", "retry failed jobs", "--json", "-k", "3"], with_ca).stdout)
            assert hits[0]["source_path"] == "queues.md"
            assert any(p.startswith("/_bulk") for _, p, _ in proxy.requests)  # the ingest went through the proxy
            for fingerprint in (tls["ca_sha256"], tls["server_sha256"]):  # the CA's (as ES prints it) or the certificate's
                pinned = {**base, "ESRAG_ES_SSL_ASSERT_FINGERPRINT": fingerprint}
                again = json.loads(run_cli(["search", "retry failed jobs", "--json", "-k", "3"], pinned).stdout)
                assert [h["id"] for h in again] == [h["id"] for h in hits]
            doctor = run_cli(["doctor", "--json"], {**base, "ESRAG_ES_SSL_ASSERT_FINGERPRINT": tls["ca_sha256"]}, check=False)
            rows = {r["name"]: r for r in json.loads(doctor.stdout)}
            assert rows["tls"]["status"] == "ok" and "pinned by SHA-256 fingerprint" in rows["tls"]["detail"]
            assert rows["authentication"]["detail"] == "API key (ESRAG_ES_API_KEY)" and rows["connectivity"]["status"] == "ok"
            rows = {r["name"]: r for r in json.loads(run_cli(["doctor", "--json"], with_ca, check=False).stdout)}
            assert rows["tls"]["detail"] == f"TLS, certificate verified against the CA file {tls['ca']} (ESRAG_ES_CA_CERTS)"
            assert SECRET not in doctor.stdout + doctor.stderr
    finally:
        ElasticStore(es_url, alias).drop()


@pytest.mark.integration
def test_tls_faults_fail_with_one_line_naming_the_setting(es_url, tls, tmp_path):
    alias = fresh_alias()
    with StandIn(es_url, tls=(tls["chain"], tls["key"])) as proxy:
        base = {"ESRAG_ES_URL": proxy.url, "ESRAG_INDEX": alias, "ESRAG_ES_API_KEY": SECRET, "ESRAG_DB": str(tmp_path / "x.db")}
        wrong = one_error_line(run_cli(["status"], {**base, "ESRAG_ES_SSL_ASSERT_FINGERPRINT": "ab" * 32}, check=False))
        assert "does not match ESRAG_ES_SSL_ASSERT_FINGERPRINT" in wrong and tls["server_sha256"] in wrong
        unknown = one_error_line(run_cli(["status"], base, check=False))  # no CA file: the system's CAs do not know it
        assert "unknown authority" in unknown and "set ESRAG_ES_CA_CERTS" in unknown
        plain = one_error_line(run_cli(["status"], {**base, "ESRAG_ES_URL": proxy.url.replace("https://", "http://")}, check=False))
        assert "write https:// in ESRAG_ES_URL" in plain
        bad = one_error_line(run_cli(["status"], {**base, "ESRAG_ES_SSL_ASSERT_FINGERPRINT": "12:34"}, check=False))
        assert bad.startswith("Error: ESRAG_ES_SSL_ASSERT_FINGERPRINT: expected a SHA-256 fingerprint")
        # verification switched off: it connects, and doctor says so as a warning
        off = run_cli(["doctor", "--json"], {**base, "ESRAG_ES_VERIFY_CERTS": "false"}, check=False)
        rows = {r["name"]: r for r in json.loads(off.stdout)}
        assert rows["tls"]["status"] == "warn" and "WITHOUT certificate verification" in rows["tls"]["detail"]
        assert rows["connectivity"]["status"] == "ok"
    tls_to_plain = one_error_line(
        run_cli(
            ["status"], {**base, "ESRAG_ES_URL": es_url.replace("http://", "https://"), "ESRAG_ES_CA_CERTS": str(tls["ca"])}, check=False
        )
    )
    assert "does not speak TLS" in tls_to_plain and "use http:// in ESRAG_ES_URL" in tls_to_plain


def test_cloud_id_names_the_deployment_and_conflicts_with_a_url():
    import base64

    from esrag.config import Settings
    from esrag.errors import ConfigError

    cloud_id = "docs:" + base64.b64encode(b"eu-west-1.aws.found.io:443$abc123$kib456").decode()
    store = ElasticStore.from_settings(Settings(es_cloud_id=cloud_id, es_api_key=SECRET))
    assert store.url == "https://abc123.eu-west-1.aws.found.io:443" and store.authentication == "API key (ESRAG_ES_API_KEY)"
    assert store.tls == "TLS, certificate verified against the system's trusted CAs (certifi)" and SECRET not in repr(store)
    assert Settings(es_cloud_id=cloud_id).store_name == "elastic"
    with pytest.raises(ConfigError, match="set ESRAG_ES_URL or ESRAG_ES_CLOUD_ID, not both"):
        ElasticStore.from_settings(Settings(es_cloud_id=cloud_id, es_url="http://127.0.0.1:9200"))
    with pytest.raises(ConfigError, match="ESRAG_ES_CLOUD_ID is not an Elastic Cloud ID") as info:
        ElasticStore.from_settings(Settings(es_cloud_id="nonsense"))
    assert "nonsense" not in str(info.value)
