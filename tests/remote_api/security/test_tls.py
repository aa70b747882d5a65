"""TLS: the gateway serves https/wss with the operator's certificate, and clients verify it,
against a custom CA when given one. A throw-away CA and server certificate are made per run."""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from remote_api.client import Done, LinkClient, LinkRefused
from remote_api.config import TlsSection
from remote_api.credentials import TokenSource
from remote_api.shared.processes import free_port, running
from remote_api.tls import client_context
from tests.remote_api.harness import FAST, collect

from .conftest import HI, expected

BIN = Path(sys.executable).parent


@dataclass
class Pki:
    ca: Path
    cert: Path
    key: Path


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def make_pki(where: Path) -> Pki:
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = (x509.CertificateBuilder().subject_name(_name("Stella test CA")).issuer_name(_name("Stella test CA"))
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (x509.CertificateBuilder().subject_name(_name("stella gateway")).issuer_name(ca.subject)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                        x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    pki = Pki(where / "ca.pem", where / "gateway.pem", where / "gateway.key")
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    pki.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pki.key.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return pki


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.mark.parametrize("transport", ["websocket", "longpoll"])
def test_a_client_trusting_the_ca_pairs_and_chats_over_tls(secure_factory, fake_upstream, pki, transport):
    gw = secure_factory(tls=TlsSection(pki.cert, pki.key), verify=client_context(pki.ca))
    assert gw.url.startswith("https://")

    async def scenario():
        creds = await gw.pair()
        async with gw.client(creds, ca_file=pki.ca, transport=transport) as client:
            reply = await collect(client.chat(HI, max_tokens=10))
            return reply, client.status.transport

    reply, carried_by = asyncio.run(scenario())
    assert reply.text == expected(10) and isinstance(reply.end, Done) and carried_by == transport


def test_a_client_that_does_not_trust_the_certificate_stops_with_a_clear_message(secure_factory, fake_upstream,
                                                                                   pki):
    gw = secure_factory(tls=TlsSection(pki.cert, pki.key), verify=client_context(pki.ca))

    async def scenario():
        creds = await gw.pair()
        client = LinkClient(gw.url, FAST, credentials=TokenSource(creds, "fp-laptop"))  # the system's CAs only
        with pytest.raises(LinkRefused) as err:
            await client.connect(5)
        await client.close()
        return err.value

    refused = asyncio.run(scenario())
    assert refused.code == "untrusted_certificate"
    assert "not trusted" in str(refused) and "--ca-file" in str(refused)
    with pytest.raises(httpx.HTTPError):  # and nothing is served in clear on that port
        httpx.get(gw.url.replace("https", "http") + "/health", timeout=2)


def test_stella_server_serves_tls_and_stella_chat_verifies_it_with_ca_file(fake_upstream, pki, tmp_path):
    port = free_port()
    url = f"https://127.0.0.1:{port}"
    with running([str(BIN / "stella-server"), "serve", "--port", str(port), "--upstream", fake_upstream.url,
                  "--data-dir", str(tmp_path / "state"), "--tls-cert", str(pki.cert), "--tls-key", str(pki.key)],
                 url, timeout=60, grace=10, verify=client_context(pki.ca), stderr=subprocess.PIPE, text=True):
        health = subprocess.run([str(BIN / "stella-server"), "health", "--server", url, "--ca-file", str(pki.ca)],
                                capture_output=True, text=True, timeout=30)
        said = subprocess.run([str(BIN / "stella-chat"), "--server", url, "--ca-file", str(pki.ca), "--max-tokens",
                               "6", "Hi"], capture_output=True, text=True, timeout=30)
        untrusted = subprocess.run([str(BIN / "stella-chat"), "--server", url, "Hi"], capture_output=True, text=True,
                                   timeout=30)
    assert health.returncode == 0 and "ok" in health.stdout
    assert said.returncode == 0, said.stderr
    assert said.stdout.strip() == expected(6).strip()
    assert untrusted.returncode == 5 and "not trusted" in untrusted.stderr

