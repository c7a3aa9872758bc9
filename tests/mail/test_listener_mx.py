"""The listener as an internet MX (item 4 of "Forged senders and an exposed listener"):
mail only for our own address, no open relay, a greeting without a software version,
STARTTLS with a configured certificate. Real SMTP on loopback against the listener."""

from __future__ import annotations

import logging
import smtplib
import socket
import ssl
import subprocess
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.mail.arrival_auth import strip_results
from pbem.mail.listener import ListenPolicy, MailListener
from pbem.mail.logstorm import StormFilter
from pbem.mail.recipients import RELAY_DENIED, UNKNOWN_USER, Recipients

OURS = "bluff@example.org"
POLICY = ListenPolicy(addresses=[OURS])
RELAY_FORMS = ["victim%evil.test@example.org", '"victim@evil.test"@example.org',
               "@example.org:victim@evil.test", "@example.org,@relay.test:victim@evil.test",
               "evil.test!victim@example.org", "evil.test!victim", "victim%evil.test",
               '"victim%evil.test"@example.org', "victim@[127.0.0.1]", "victim@evil.test"]


def rcpt_codes(addresses: list[str]) -> list[tuple[int, bytes]]:
    with MailListener(lambda *a: None, port=0, policy=POLICY) as lst, \
            smtplib.SMTP("127.0.0.1", lst.port, timeout=5) as c:
        c.ehlo("client.test")
        c.mail("someone@elsewhere.test")
        return [c.docmd(f"RCPT TO:<{a}>") for a in addresses]


def test_only_our_address_is_taken_and_relay_tricks_are_refused() -> None:
    answers = rcpt_codes([OURS, "Bluff@Example.ORG", "bluff+b.0a1b2c@example.org",
                          "nobody@example.org", "root@example.org"])
    assert [code for code, _ in answers] == [250, 250, 250, 550, 550]
    assert all(text.startswith(b"5.1.1") for _, text in answers[3:])
    for code, text in rcpt_codes(RELAY_FORMS[:9]):
        assert (code, text[:5]) in ((550, b"5.7.1"), (553, b"5.1.3")), (code, text)


def test_postmaster_of_our_domain_is_taken_as_rfc_5321_asks() -> None:
    answers = rcpt_codes(["postmaster@example.org", "Postmaster", "postmaster@evil.test"])
    assert [code for code, _ in answers] == [250, 250, 550]


def test_a_stranger_trying_many_recipients_is_cut_off() -> None:
    answers = rcpt_codes([f"victim{i}@evil.test" for i in range(11)])
    assert answers[-1][0] == 421
    with pytest.raises(smtplib.SMTPServerDisconnected):
        rcpt_codes([f"victim{i}@evil.test" for i in range(1000)])


def test_the_greeting_names_our_host_and_no_software_version() -> None:
    policy = ListenPolicy(addresses=[OURS], hostname="mx.example.org")
    with MailListener(lambda *a: None, port=0, policy=policy) as lst:
        with socket.create_connection(("127.0.0.1", lst.port), timeout=5) as s:
            banner = s.recv(200)
            s.sendall(b"EHLO client.test\r\n")
            ehlo = s.recv(200)
    assert banner == b"220 mx.example.org ESMTP\r\n"
    assert ehlo.startswith(b"250-mx.example.org\r\n")


@pytest.fixture(scope="module")
def cert(tmp_path_factory) -> tuple[Path, Path]:
    d = tmp_path_factory.mktemp("tls")
    crt, key = d / "cert.pem", d / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2", "-subj", "/CN=localhost",
                    "-keyout", str(key), "-out", str(crt),
                    "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
                   check=True, capture_output=True)
    return crt, key


def test_starttls_is_offered_and_required_before_mail(cert) -> None:
    stored: list[tuple[bytes, str, list[str]]] = []
    policy = ListenPolicy(addresses=[OURS], tls_cert=str(cert[0]), tls_key=str(cert[1]),
                          require_tls=True)
    with MailListener(lambda *a: stored.append(a), port=0, policy=policy) as lst, \
            smtplib.SMTP("127.0.0.1", lst.port, timeout=5) as c:
        c.ehlo("client.test")
        assert c.has_extn("starttls")
        assert c.docmd("MAIL FROM:<p1@example.net>")[0] == 530      # not before TLS
        c.starttls(context=ssl.create_default_context(cafile=str(cert[0])))
        c.ehlo("client.test")
        c.sendmail("p1@example.net", [OURS], b"Subject: secret\r\n\r\nKEY k\r\n")
    assert [s[0] for s in stored] == [b"Subject: secret\r\n\r\nKEY k\r\n"]


# --------------------------------------------------------------------- pure parts

domains = st.from_regex(r"[a-z][a-z0-9-]{0,10}\.(test|org)", fullmatch=True)
locals_ = st.from_regex(r"[a-z0-9._+-]{1,12}", fullmatch=True)


@given(locals_, domains)
def test_an_address_of_another_domain_is_a_relay_attempt(local: str, domain: str) -> None:
    ours = Recipients.of([OURS])
    expected = None if f"{local}@{domain}" == OURS else (
        UNKNOWN_USER if domain == "example.org" else RELAY_DENIED)
    assert ours.refusal(f"{local}@{domain}") == expected


@given(locals_, st.sampled_from("%!"), domains)
def test_percent_and_bang_hacks_are_relay_attempts(local: str, hack: str, domain: str) -> None:
    assert Recipients.of([OURS]).refusal(f"{local}{hack}{domain}@example.org") == RELAY_DENIED


fields = st.lists(st.tuples(st.sampled_from(["Authentication-Results", "From", "Subject",
                                             "authentication-results", "Received"]),
                            st.from_regex(r"[a-z ;=.]{0,20}", fullmatch=True),
                            st.booleans()), max_size=8)


@given(fields, st.binary(max_size=40))
def test_every_authentication_results_field_is_stripped_and_nothing_else(fields, body) -> None:
    head = b"".join(f"{n}: {v}\r\n".encode() + (b"\t folded\r\n" if fold else b"")
                    for n, v, fold in fields)
    raw = head + b"X-Last: 1\r\n\r\n" + body
    stripped = strip_results(raw)
    kept = b"".join(f"{n}: {v}\r\n".encode() + (b"\t folded\r\n" if fold else b"")
                    for n, v, fold in fields if n.lower() != "authentication-results")
    assert stripped == kept + b"X-Last: 1\r\n\r\n" + body


def test_a_log_storm_becomes_a_line_a_second_with_a_count() -> None:
    now = [0.0]
    storm = StormFilter(clock=lambda: now[0])
    record = logging.LogRecord("asyncio", logging.ERROR, "x", 1, "accept failed", (), None)
    passed = [storm.filter(record) for _ in range(1000)]
    now[0] = 1.5
    assert passed.count(True) == 1 and storm.filter(record)
    assert "999 more" in record.getMessage()


def test_a_client_past_its_mails_a_minute_is_told_to_come_back_later() -> None:
    """One client handed 4,000 mails at 361 a second; now, past the limit of its IP or its
    envelope sender, MAIL FROM gets 451 4.7.1 (a real MTA retries: slowed, not lost)."""
    policy = ListenPolicy(addresses=[OURS], mails_per_minute_per_ip=5,
                          mails_per_minute_per_sender=3)
    stored: list[object] = []
    with MailListener(lambda *a: stored.append(a), port=0, policy=policy) as lst, \
            smtplib.SMTP("127.0.0.1", lst.port, timeout=5) as c:
        c.ehlo("client.test")
        said = []
        for n in range(6):
            sender = "flood@elsewhere.test" if n < 4 else f"other{n}@elsewhere.test"
            code, text = c.docmd(f"MAIL FROM:<{sender}>")
            said.append((code, text[:5]))
            if code == 250:
                assert c.docmd(f"RCPT TO:<{OURS}>")[0] == 250
                c.data(b"From: " + sender.encode() + b"\r\nSubject: x\r\n\r\nHELP\r\n")
            else:
                c.rset()
    # the sender's 4th is refused (it still counts for the IP), so the IP's 6th is
    assert said == [(250, b"OK"), (250, b"OK"), (250, b"OK"), (451, b"4.7.1"),
                    (250, b"OK"), (451, b"4.7.1")], said
    assert len(stored) == 4
