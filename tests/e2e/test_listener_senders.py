"""Item 3 of "Forged senders and an exposed listener": with require_aligned, mail that
comes straight to the listener is judged by pbem's own SPF, DKIM and DMARC checks (a
DNS fixture on loopback answers them), never by an Authentication-Results header its
sender wrote. Real SMTP on loopback against the real listener."""

from __future__ import annotations

import smtplib
from collections.abc import Iterator
from pathlib import Path

import dkim
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from sqlmodel import Session

from pbem.config import ListenSettings, SecuritySettings
from pbem.mail.headers import read_mail_header
from pbem.mail.senderauth import check_sender
from pbem.runner.server import Server
from testkit.desk import PLAYERS, Clock, key_of, last_text, mail, make_server, started_game
from testkit.dnsfixture import DnsFixture
from testkit.stored import inbound_rows

MX = "mx.example.org"
P1 = PLAYERS[0]
FORGED = f"Authentication-Results: {MX}; dmarc=pass header.from=example.org\r\n".encode()
REFUSED = "could not be verified"


@pytest.fixture(scope="module")
def dkim_key() -> tuple[bytes, str]:
    """An RSA key (PEM) and its public half as a DKIM TXT record."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.DER,
                                           serialization.PublicFormat.SubjectPublicKeyInfo)
    import base64
    return pem, "v=DKIM1; k=rsa; p=" + base64.b64encode(public).decode()


@pytest.fixture
def served(tmp_path: Path, dkim_key: tuple[bytes, str]) -> Iterator[tuple[Server, int]]:
    records = {("example.org", "TXT"): ["v=spf1 ip4:127.0.0.2 -all"],
               ("_dmarc.example.org", "TXT"): ["v=DMARC1; p=reject"],
               ("s1._domainkey.example.org", "TXT"): [dkim_key[1]]}
    with DnsFixture(records) as dns:
        server = make_server(tmp_path, Clock(), security=SecuritySettings(True, MX),
                             listen=ListenSettings(port=0, dns_servers=[dns.server],
                                                   trusted_relays=["127.0.0.3"]))
        started_game(server)
        listener = server.listener()
        assert listener is not None
        with listener:
            yield server, listener.port


def order_mail(server: Server) -> bytes:
    return mail(P1, f"GAME g1\nKEY {key_of(server, P1)}\nSTATUS\n")


def deliver(port: int, raw: bytes, source: str = "127.0.0.1") -> None:
    with smtplib.SMTP("127.0.0.1", port, timeout=10, source_address=(source, 0)) as client:
        client.sendmail(P1, ["bluff@example.org"], raw)


def test_a_forged_authentication_results_header_does_not_pass(served) -> None:
    server, port = served
    deliver(port, FORGED + order_mail(server))
    server.referee.process_pending()
    assert REFUSED in last_text(server, P1)
    [raw] = [row.raw for row in inbound_rows(server.engine)]
    assert FORGED not in raw                                  # stripped on arrival
    assert raw.startswith(f"Authentication-Results: {MX};".encode())   # ours instead
    assert b"spf=fail" in raw and b"dmarc=fail" in raw


def test_our_own_dkim_and_spf_checks_pass_a_genuine_mail(served, dkim_key) -> None:
    server, port = served
    signed = order_mail(server)
    signed = dkim.sign(signed, b"s1", b"example.org", dkim_key[0],
                       include_headers=[b"from", b"subject", b"message-id"]) + signed
    deliver(port, FORGED + signed)                 # DKIM pass, from an IP SPF does not list
    deliver(port, order_mail(server), source="127.0.0.2")    # SPF pass, no signature
    server.referee.process_pending()
    with Session(server.engine) as session:
        raws = [row.raw for row in inbound_rows(session)]
    verdicts = [check_sender(read_mail_header(raw), P1, MX) for raw in raws]
    assert [v.aligned for v in verdicts] == [True, True], verdicts
    assert b"dkim=pass" in raws[0] and b"spf=pass" in raws[1]
    assert REFUSED not in last_text(server, P1)


def test_a_trusted_relays_header_is_kept_and_nobody_elses(served) -> None:
    server, port = served
    deliver(port, FORGED + order_mail(server), source="127.0.0.3")   # our own MTA
    deliver(port, FORGED + order_mail(server), source="127.0.0.4")   # a stranger
    with Session(server.engine) as session:
        raws = [row.raw for row in inbound_rows(session)]
    assert [check_sender(read_mail_header(raw), P1, MX).aligned for raw in raws] == [True, False]
