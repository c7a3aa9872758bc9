"""DKIM: every mail that leaves is signed, and the signature holds where it arrives.

The real-mail tests send through the test mail stack (SMTP relay into Dovecot),
fetch the mails back over IMAP and verify them with dkimpy's verifier, the DNS
lookup answered by the test from the key it made.
"""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from email import message_from_bytes, policy
from pathlib import Path
from typing import Any

import dkim
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.config import ConfigError, load_settings
from pbem.mail.compose import build_mail
from pbem.mail.dkim import (
    SIGNED_HEADERS,
    DkimError,
    DkimSigner,
    generate_key,
    public_key_b64,
    txt_value,
)
from pbem.runner.server import Server, dkim_signer
from testkit.desk import Clock, deliver, mail, started_game
from testkit.desk import make_server as desk_server
from testkit.e2e import REFEREE_KEY
from testkit.stack import stack_settings

KEY = generate_key()   # one 2048-bit key for the module (a new one costs ~50 ms)


def dns_for(selector: str, domain: str, pem: bytes = KEY) -> Any:
    """A dnsfunc for dkim.verify that knows one record: the public half of pem."""
    record = txt_value(public_key_b64(pem)).encode()

    def lookup(name: bytes, timeout: int = 5) -> bytes | None:
        return record if name == f"{selector}._domainkey.{domain}.".encode() else None
    return lookup


def a_mail(**kw: Any) -> bytes:
    args: dict[str, Any] = {
        "from_addr": "bluff@bluff.test", "from_name": "Bluff referee",
        "to_addrs": ["p1@bluff.test"], "subject": "[bluff g1] turn 3 report",
        "text": "Your dice: 1 3 3 5 *\n", "html": "<p>Your dice</p>",
        "message_id": "<pbem.report.1@bluff.test>", "in_reply_to": "<a@client.example>",
        "references": ["<a@client.example>"]}
    return build_mail(**{**args, **kw})


# --------------------------------------------------------------------------- signing


def test_a_signed_mail_verifies_and_names_the_relay_safe_headers() -> None:
    signed = DkimSigner("s1", "bluff.test", KEY).sign(a_mail())
    assert signed.startswith(b"DKIM-Signature: ")
    assert dkim.verify(signed, dnsfunc=dns_for("s1", "bluff.test"))
    sig = message_from_bytes(signed, policy=policy.compat32)["DKIM-Signature"]
    tags = dict(t.strip().split("=", 1) for t in " ".join(sig.split()).split(";") if "=" in t)
    assert tags["c"] == "relaxed/relaxed" and tags["d"] == "bluff.test" and tags["s"] == "s1"
    signed_names = [h.strip() for h in tags["h"].split(":")]
    assert set(signed_names) <= set(SIGNED_HEADERS)
    assert {"from", "to", "subject", "date", "message-id", "in-reply-to", "references",
            "mime-version", "content-type", "auto-submitted"} == set(signed_names)
    assert signed_names.count("from") == 2   # oversigned


@pytest.mark.parametrize("tamper", [
    lambda m: m.replace(b"Your dice: 1 3 3 5", b"Your dice: 6 6 6 6"),
    lambda m: m.replace(b"turn 3 report", b"turn 4 report"),
    lambda m: m.replace(b"\r\nTo: p1@bluff.test", b"\r\nTo: p2@bluff.test"),
    lambda m: m.replace(b"\r\nSubject:", b"\r\nFrom: Mallory <m@evil.example>\r\nSubject:"),
], ids=["body", "subject", "to", "second-from"])
def test_a_tampered_mail_fails(tamper: Any) -> None:
    signed = DkimSigner("s1", "bluff.test", KEY).sign(a_mail())
    changed = tamper(signed)
    assert changed != signed
    assert not dkim.verify(changed, dnsfunc=dns_for("s1", "bluff.test"))


def test_what_relays_do_keeps_the_signature() -> None:
    """Trace headers on top, re-folded and re-spaced headers, trailing blanks, LF ends."""
    signed = DkimSigner("s1", "bluff.test", KEY).sign(a_mail())
    relayed = (b"Received: from relay.example by mx.example; Tue, 3 Dec 2024 10:00:00 +0000\r\n"
               b"X-Spam-Status: No\r\n" + signed)
    relayed = relayed.replace(b"Subject: [bluff g1] turn 3 report",
                              b"Subject:  [bluff g1]\r\n\tturn 3 report")
    relayed = relayed.replace(b"\r\n\r\n", b"  \r\n\r\n", 1)
    assert dkim.verify(relayed.replace(b"\r\n", b"\n"), dnsfunc=dns_for("s1", "bluff.test"))


def test_the_wrong_key_in_dns_fails() -> None:
    signed = DkimSigner("s1", "bluff.test", KEY).sign(a_mail())
    assert not dkim.verify(signed, dnsfunc=dns_for("s1", "bluff.test", generate_key(1024)))


@settings(max_examples=25, deadline=None)
@given(subject=st.text(min_size=0, max_size=80),
       body=st.text(min_size=0, max_size=400),
       name=st.text(max_size=30))
def test_any_composed_mail_signs_and_verifies(subject: str, body: str, name: str) -> None:
    raw = a_mail(subject=subject, text=body, html=None, from_name=name)
    assert dkim.verify(DkimSigner("s1", "bluff.test", KEY).sign(raw),
                       dnsfunc=dns_for("s1", "bluff.test"))


def test_bad_keys_and_names_are_refused_with_a_reason() -> None:
    with pytest.raises(DkimError, match="not an RSA key"):
        DkimSigner("s1", "bluff.test", b"-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END")
    with pytest.raises(DkimError, match="selector"):
        DkimSigner("s 1", "bluff.test", KEY)
    with pytest.raises(DkimError, match="domain"):
        DkimSigner("s1", "bluff..test", KEY)


# --------------------------------------------------------------------------- settings


def test_dkim_settings_from_file_and_environment(tmp_path: Path) -> None:
    (tmp_path / "dkim.pem").write_bytes(KEY)
    toml = tmp_path / "pbem.toml"
    toml.write_text('[server]\naddress = "bluff@bluff.test"\n'
                    '[dkim]\nselector = "s1"\nprivate_key_file = "dkim.pem"\n')
    signer = dkim_signer(load_settings(toml, env={}))
    assert signer is not None and signer.domain == "bluff.test" and signer.private_pem == KEY
    other = generate_key(1024)
    from_env = dkim_signer(load_settings(
        toml, env={"PBEM_DKIM_PRIVATE_KEY": other.decode()}))
    assert from_env is not None and from_env.private_pem == other
    (tmp_path / "elsewhere.pem").write_bytes(other)
    from_file = dkim_signer(load_settings(
        toml, env={"PBEM_DKIM_PRIVATE_KEY_FILE": str(tmp_path / "elsewhere.pem")}))
    assert from_file is not None and from_file.private_pem == other


@pytest.mark.parametrize("dkim_section, message", [
    ('selector = "s1"\nprivate_key_file = "missing.pem"\n', "cannot read private_key_file"),
    ('selector = "s1"\n', "set private_key_file"),
    ('selector = "s1"\nprivate_key = "-----BEGIN"\n', "not in pbem.toml"),
    ('selector = "s1"\nprivate_key_file = "junk.pem"\n', "not an RSA key"),
])
def test_a_bad_dkim_setting_stops_the_server_with_a_reason(tmp_path: Path, dkim_section: str,
                                                           message: str) -> None:
    (tmp_path / "junk.pem").write_text("not a key")
    toml = tmp_path / "pbem.toml"
    toml.write_text(f'[server]\ndatabase = "sqlite:///{tmp_path / "db.sqlite"}"\n'
                    f'[dkim]\n{dkim_section}')
    with pytest.raises(ConfigError, match=message):
        Server(load_settings(toml, env={}))


# --------------------------------------------------------------------------- keygen


def test_keygen_writes_a_private_key_and_prints_the_record_that_verifies(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "pbem.cli", "dkim", "keygen", "--selector", "s1",
                          "--domain", "bluff.test"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=60, check=False)
    assert run.returncode == 0, run.stderr
    key_file = tmp_path / "dkim-s1.bluff.test.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert "s1._domainkey.bluff.test. IN TXT" in run.stdout
    zone = re.search(r"IN TXT \( (.*) \)", run.stdout)
    assert zone is not None
    strings = re.findall(r'"([^"]*)"', zone.group(1))
    assert all(len(s) <= 255 for s in strings)
    record = "".join(strings).encode()
    assert record.startswith(b"v=DKIM1; k=rsa; p=")

    def lookup(name: bytes, timeout: int = 5) -> bytes | None:
        return record if name == b"s1._domainkey.bluff.test." else None
    signed = DkimSigner("s1", "bluff.test", key_file.read_bytes()).sign(a_mail())
    assert dkim.verify(signed, dnsfunc=lookup)

    before = key_file.read_bytes()
    again = subprocess.run([sys.executable, "-m", "pbem.cli", "dkim", "keygen", "--selector",
                            "s1", "--domain", "bluff.test"], cwd=tmp_path, capture_output=True,
                           text=True, timeout=60, check=False)
    assert again.returncode == 1 and "never overwritten" in again.stderr
    assert key_file.read_bytes() == before


# --------------------------------------------------------------------------- real mail


def test_eml_outbox_mails_are_signed(tmp_path: Path) -> None:
    (tmp_path / "dkim.pem").write_bytes(KEY)
    server = desk_server(tmp_path, Clock(), dkim=load_settings(
        _toml(tmp_path, "example.org"), env={}).dkim)
    started_game(server)
    server.send()
    files = sorted((tmp_path / "outbox").glob("*.eml"))
    assert len(files) >= 5
    for f in files:
        assert dkim.verify(f.read_bytes(), dnsfunc=dns_for("s1", "example.org")), f.name


def _toml(tmp_path: Path, domain: str) -> Path:
    toml = tmp_path / "dkim.toml"
    toml.write_text(f'[server]\naddress = "bluff@{domain}"\n[dkim]\nselector = "s1"\n'
                    f'private_key_file = "{tmp_path / "dkim.pem"}"\n')
    return toml


@pytest.mark.mailstack
def test_mail_fetched_back_from_dovecot_verifies_and_fails_once_tampered(
        mailstack: Any, tmp_path: Path) -> None:
    for user in ("bluff", "referee", "p1", "p2"):
        mailstack.clear(user)
    (tmp_path / "dkim.pem").write_bytes(KEY)
    domain = mailstack.domain
    server = Server(stack_settings(mailstack, f"sqlite:///{tmp_path / 'pbem.db'}", REFEREE_KEY,
                                   dkim=load_settings(_toml(tmp_path, domain), env={}).dkim))
    mailstack.deliver("bluff", _order_mail(mailstack, "p1", "HELP"),
                      mail_from=mailstack.address("p1"))
    mailstack.deliver("bluff", _order_mail(mailstack, "referee", f"KEY {REFEREE_KEY}", "LIST"),
                      mail_from=mailstack.address("referee"))
    report = server.tick()
    assert report.sent == 2, report
    fetched = mailstack.wait_for("p1", 1) + mailstack.wait_for("referee", 1)
    lookup = dns_for("s1", domain)
    for raw in fetched:
        assert b"\nReceived: " in raw.replace(b"\r\n", b"\n")   # it went through the relay
        assert dkim.verify(raw, dnsfunc=lookup)
        body_changed = re.sub(rb"(\r?\n\r?\n)(.)", rb"\1X\2", raw, count=1)
        assert body_changed != raw and not dkim.verify(body_changed, dnsfunc=lookup)
        subject_changed = raw.replace(b"Subject: ", b"Subject: Re: ", 1)
        assert not dkim.verify(subject_changed, dnsfunc=lookup)


def _order_mail(stack: Any, user: str, *lines: str) -> bytes:
    raw = mail(stack.address(user), "\n".join(lines) + "\n")
    return raw.replace(b"To: bluff@example.org", f"To: {stack.address('bluff')}".encode())


def test_unsigned_without_dkim_settings(tmp_path: Path) -> None:
    server = desk_server(tmp_path, Clock())
    assert server.signer is None
    deliver(server, mail("p1@example.org", "HELP"))
    server.send()
    files = list((tmp_path / "outbox").glob("*.eml"))
    assert files and all(b"DKIM-Signature" not in f.read_bytes() for f in files)
