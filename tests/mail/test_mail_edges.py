"""The mail edges (IMAP in, SMTP out, embedded SMTP listener) against a real
Dovecot from the ``mailstack`` fixture and small aiosmtpd servers started here."""
from __future__ import annotations

import email
import os
import shutil
import smtplib
import socket
import ssl
import subprocess
import threading
import time
from email import policy
from email.message import EmailMessage
from pathlib import Path

import pytest
from aiosmtpd.smtp import AuthResult, LoginPassword

from pbem.mail.eml_out import EmlDirSender
from pbem.mail.errors import MailServiceUnavailable
from pbem.mail.imap import FetchedMail, ImapInbox
from pbem.mail.listener import ListenPolicy, MailListener
from pbem.mail.smtp_out import SendResult, SmtpSender
from testkit.net import free_ports
from testkit.smtp_relay import start_controller

pytestmark = pytest.mark.mailstack

SERVER = "bluff@bluff.test"
POLICY = ListenPolicy(addresses=[SERVER])


def make_msg(subject: str = "hello", body: str = "hi there\n", to: str = SERVER,
             sender: str = "p1@bluff.test", msgid: str | None = None) -> bytes:
    m = EmailMessage()
    m["From"] = sender
    m["To"] = to
    m["Subject"] = subject
    m["Message-ID"] = msgid or email.utils.make_msgid(domain="bluff.test")
    m.set_content(body)
    return m.as_bytes(policy=policy.SMTP)


def subject(raw: bytes) -> str:
    return str(email.message_from_bytes(raw)["Subject"])


@pytest.fixture
def box(mailstack):
    """An empty bluff@ mailbox and an ImapInbox on it."""
    mailstack.clear("bluff")

    def make(**kw) -> ImapInbox:
        kw.setdefault("timeout", 5)
        return ImapInbox(mailstack.imap_host, mailstack.imap_port, SERVER, "secret",
                         ssl=False, **kw)
    return make


def deliver(mailstack, *subjects: str, **kw) -> None:
    for s in subjects:
        mailstack.deliver(SERVER, make_msg(s, **kw))
    mailstack.wait_for("bluff", len(subjects))


# ------------------------------------------------------------------------- IMAP edge


def test_poll_stores_then_moves_to_done(mailstack, box):
    deliver(mailstack, "one", "two", "three")
    got: list[FetchedMail] = []
    assert box().poll(got.append) == 3
    assert [subject(m.raw) for m in got] == ["one", "two", "three"]
    assert all(not m.truncated and m.size == len(m.raw) for m in got)
    assert got[0].uidvalidity > 0 and [m.uid for m in got] == sorted(m.uid for m in got)
    assert mailstack.fetch_all("bluff") == []
    assert [subject(r) for r in mailstack.fetch_all("bluff", "pbem-done")] == \
        ["one", "two", "three"]
    c = mailstack.imap("bluff")  # BODY.PEEK: the moved mails are still unseen
    try:
        c.select_folder("pbem-done", readonly=True)
        assert c.search(["SEEN"]) == []
    finally:
        c.logout()


def test_a_move_left_to_a_thread_runs_while_the_caller_goes_on(mailstack, box, monkeypatch):
    """poll(move_later=True) returns once the mail is stored; its move out of the folder
    runs on (the tick handles the mail meanwhile), ``done`` comes after it, and the next
    poll waits for it."""
    from imapclient import IMAPClient
    deliver(mailstack, "one", "two")
    inbox = box(keep_open=60)
    moving, go = threading.Event(), threading.Event()
    real_move = IMAPClient.move

    def slow_move(client, *args, **kwargs):   # noqa: ANN001, ANN002, ANN003, ANN202
        moving.set()
        assert go.wait(10)
        return real_move(client, *args, **kwargs)
    monkeypatch.setattr(IMAPClient, "move", slow_move)
    done: list[str] = []
    got: list[FetchedMail] = []
    assert inbox.poll(got.append, move_later=True, done=lambda: done.append("done")) == 2
    assert [subject(m.raw) for m in got] == ["one", "two"]
    assert moving.wait(10) and done == []           # stored, and still moving
    assert len(mailstack.fetch_all("bluff")) == 2
    go.set()
    inbox.settle()
    assert done == ["done"]
    assert mailstack.fetch_all("bluff") == []
    assert [subject(r) for r in mailstack.fetch_all("bluff", "pbem-done")] == ["one", "two"]
    deliver(mailstack, "three")
    assert inbox.poll(got.append, move_later=True) == 1   # on the kept connection
    inbox.close()                                           # waits for its move
    assert [subject(r) for r in mailstack.fetch_all("bluff", "pbem-done")] == \
        ["one", "two", "three"]


def test_a_move_left_to_a_thread_that_fails_is_said_by_settle_and_redone_next_poll(
        mailstack, box, monkeypatch):
    """The mail of a failed move is stored: settle raises what the move met, the
    connection is dropped, and the next poll hands the same mail again and moves it."""
    from imapclient import IMAPClient
    deliver(mailstack, "one")
    inbox = box(keep_open=60)
    real_move = IMAPClient.move
    fail = [True]

    def move(client, *args, **kwargs):   # noqa: ANN001, ANN002, ANN003, ANN202
        if fail.pop() if fail else False:
            client.socket().shutdown(socket.SHUT_RDWR)   # the server went away mid-move
        return real_move(client, *args, **kwargs)
    monkeypatch.setattr(IMAPClient, "move", move)
    done: list[int] = []
    got: list[FetchedMail] = []
    assert inbox.poll(got.append, move_later=True, done=lambda: done.append(1)) == 1
    with pytest.raises(MailServiceUnavailable):
        inbox.settle()
    assert done == [1] and inbox._kept is None
    assert [subject(r) for r in mailstack.fetch_all("bluff")] == ["one"]
    inbox.settle()                                  # said once
    assert inbox.poll(got.append, move_later=True) == 1
    inbox.settle()
    assert [subject(m.raw) for m in got] == ["one", "one"]   # the caller stores it once
    assert mailstack.fetch_all("bluff") == []
    inbox.close()


def test_a_batch_is_stored_in_one_call_and_mail_by_mail_when_that_fails(mailstack, box):
    deliver(mailstack, "a", "bad", "c", "d")
    batches: list[list[str]] = []
    single: list[str] = []

    def store_batch(mails: list[FetchedMail]) -> None:
        batches.append([subject(m.raw) for m in mails])
        if "bad" in batches[-1]:
            raise RuntimeError("a concurrent store won the race")

    def store(m: FetchedMail) -> None:
        if subject(m.raw) == "bad":
            raise RuntimeError("disk full")
        single.append(subject(m.raw))

    inbox = box(done_folder="Archive")
    assert inbox.poll(store, batch=2, store_batch=store_batch) == 3
    assert batches == [["a", "bad"], ["c", "d"]]   # the second batch went in one call
    assert single == ["a"]                          # the failed one's, one by one
    assert [subject(r) for r in mailstack.fetch_all("bluff")] == ["bad"]
    assert sorted(subject(r) for r in mailstack.fetch_all("bluff", "Archive")) == ["a", "c", "d"]


def test_second_poll_fetches_nothing_new(mailstack, box):
    deliver(mailstack, "only")
    inbox = box()
    assert inbox.poll(lambda m: None) == 1
    seen: list[FetchedMail] = []
    assert inbox.poll(seen.append) == 0
    assert seen == []
    deliver(mailstack, "later")
    assert inbox.poll(seen.append) == 1
    assert [subject(m.raw) for m in seen] == ["later"]


def test_store_that_raises_leaves_mail_for_next_poll(mailstack, box):
    deliver(mailstack, "a", "bad", "c")
    stored: list[str] = []

    def flaky(m: FetchedMail) -> None:
        if subject(m.raw) == "bad":
            raise RuntimeError("disk full")
        stored.append(subject(m.raw))

    inbox = box(done_folder="Archive")
    assert inbox.poll(flaky, batch=2) == 2
    assert stored == ["a", "c"]
    assert [subject(r) for r in mailstack.fetch_all("bluff")] == ["bad"]
    assert len(mailstack.fetch_all("bluff", "Archive")) == 2
    assert inbox.poll(lambda m: stored.append(subject(m.raw))) == 1
    assert stored == ["a", "c", "bad"]
    assert mailstack.fetch_all("bluff") == []


def test_oversize_mail_is_fetched_header_only(mailstack, box):
    mailstack.deliver(SERVER, make_msg("small"))
    mailstack.deliver(SERVER, make_msg("big", body=("y" * 70 + "\n") * 100))
    mailstack.wait_for("bluff", 2)
    got: list[FetchedMail] = []
    assert box(max_bytes=2000).poll(got.append) == 2
    small, big = got
    assert not small.truncated and subject(small.raw) == "small"
    assert big.truncated and big.size > 2000
    assert subject(big.raw) == "big"
    assert big.raw.endswith(b"\r\n\r\n") and b"yyyy" not in big.raw
    assert len(mailstack.fetch_all("bluff", "pbem-done")) == 2


@pytest.mark.parametrize("drop, left_in_inbox", [({b"MOVE"}, 0), ({b"MOVE", b"UIDPLUS"}, 1)])
def test_poll_without_move_capability(mailstack, box, monkeypatch, drop, left_in_inbox):
    orig = ImapInbox._capabilities
    monkeypatch.setattr(ImapInbox, "_capabilities", lambda self, c: orig(self, c) - drop)
    deliver(mailstack, "m1", "m2")
    inbox = box()
    assert inbox.poll(lambda m: None) == 2
    assert inbox.poll(lambda m: None) == 0
    if left_in_inbox:  # no UIDPLUS either: flagged \Seen + $PbemDone, left in place
        c = mailstack.imap("bluff")
        try:
            c.select_folder("INBOX", readonly=True)
            assert len(c.search(["KEYWORD", "$PbemDone", "SEEN"])) == 2
        finally:
            c.logout()
    else:  # COPY + \Deleted + UID EXPUNGE
        assert mailstack.fetch_all("bluff") == []
        assert len(mailstack.fetch_all("bluff", "pbem-done")) == 2


def test_poll_raises_when_imap_down_and_recovers(mailstack, box):
    deliver(mailstack, "during outage")
    inbox = box()
    mailstack.stop_imap()
    try:
        with pytest.raises(MailServiceUnavailable):
            inbox.poll(lambda m: pytest.fail("nothing to store"))
    finally:
        mailstack.start_imap()
    inbox = box()  # the stack may have had to move to another port
    got: list[FetchedMail] = []
    assert inbox.poll(got.append) == 1
    assert subject(got[0].raw) == "during outage"


def test_a_kept_connection_serves_the_next_poll_and_is_replaced_when_dropped(
        mailstack, box, monkeypatch):
    inbox = box(keep_open=60)
    connects: list[int] = []
    real_connect = inbox._connect

    def counting_connect():
        connects.append(1)
        return real_connect()
    monkeypatch.setattr(inbox, "_connect", counting_connect)
    deliver(mailstack, "first")
    got: list[FetchedMail] = []
    assert inbox.poll(got.append) == 1 and len(connects) == 1
    deliver(mailstack, "second")
    assert inbox.poll(got.append) == 1 and len(connects) == 1      # no new login
    assert inbox._kept is not None
    inbox._kept.socket().shutdown(socket.SHUT_RDWR)   # dropped, as an idle server would
    deliver(mailstack, "third")
    assert inbox.poll(got.append) == 1 and len(connects) == 2      # reconnected at once
    assert [subject(m.raw) for m in got] == ["first", "second", "third"]
    inbox.close()
    assert inbox._kept is None
    assert box().poll(lambda m: pytest.fail("nothing left")) == 0


def test_a_kept_connection_polls_with_noop_and_remakes_a_deleted_done_folder(
        mailstack, box, monkeypatch):
    """A kept connection has the folder selected and has seen the done folder: its next
    poll asks NOOP (which is how a selected folder shows new mail), not SELECT and LIST
    again. A done folder deleted meanwhile is made again when the move says TRYCREATE."""
    inbox = box(keep_open=60)
    deliver(mailstack, "first")
    got: list[FetchedMail] = []
    assert inbox.poll(got.append) == 1
    client = inbox._kept
    assert client is not None
    asked: list[str] = []
    for name in ("select_folder", "noop", "folder_exists"):
        real = getattr(client, name)
        monkeypatch.setattr(client, name, lambda *a, _n=name, _r=real, **k: (
            asked.append(_n), _r(*a, **k))[1])
    deliver(mailstack, "second")
    assert inbox.poll(got.append) == 1
    assert asked == ["noop"]
    assert got[1].uidvalidity == got[0].uidvalidity

    other = mailstack.imap("bluff")
    try:
        other.delete_folder("pbem-done")
    finally:
        other.logout()
    deliver(mailstack, "third")
    assert inbox.poll(got.append) == 1
    assert [subject(m.raw) for m in got] == ["first", "second", "third"]
    assert mailstack.fetch_all("bluff") == []
    assert [subject(r) for r in mailstack.fetch_all("bluff", "pbem-done")] == ["third"]
    inbox.close()


def test_poll_raises_on_bad_login(mailstack):
    inbox = ImapInbox(mailstack.imap_host, mailstack.imap_port, SERVER, "wrong", ssl=False,
                      timeout=5)
    with pytest.raises(MailServiceUnavailable, match="login"):
        inbox.poll(lambda m: None)


# ------------------------------------------------------------------------- SMTP out


def test_smtp_sender_delivers_into_stack(mailstack):
    for u in ("p1", "p2", "p3"):
        mailstack.clear(u)
    with SmtpSender(mailstack.smtp_host, mailstack.smtp_port, timeout=5) as s:
        r1 = s.send(SERVER, ["p1@bluff.test", "p2@bluff.test"], make_msg("to both"))
        r2 = s.send(SERVER, ["p3@bluff.test", "ghost@bluff.test"], make_msg("one ghost"))
    assert r1 == SendResult(["p1@bluff.test", "p2@bluff.test"], {}, {})
    assert r2.accepted == ["p3@bluff.test"] and not r2.temporary
    assert r2.permanent["ghost@bluff.test"].startswith("550")
    assert subject(mailstack.wait_for("p1", 1)[0]) == "to both"
    assert subject(mailstack.wait_for("p2", 1)[0]) == "to both"
    assert subject(mailstack.wait_for("p3", 1)[0]) == "one ghost"


def test_lines_that_begin_with_a_dot_arrive_as_sent(mailstack):
    """DATA doubles a dot that begins a line and the server takes it off again: whatever
    the lines begin with, the mail arrives as it was sent (a dot alone on a line, one at
    the very start of the body, at its end, several in a row)."""
    mailstack.clear("p1")
    body = ".\r\n..two\r\n.three\r\nmiddle . dot\r\n.\r\n.."
    raw = (b"From: bluff@bluff.test\r\nTo: p1@bluff.test\r\nSubject: dots\r\n"
           b"Message-ID: <dots@bluff.test>\r\n\r\n" + body.encode())
    with SmtpSender(mailstack.smtp_host, mailstack.smtp_port, timeout=5) as s:
        assert s.send(SERVER, ["p1@bluff.test"], raw).accepted == ["p1@bluff.test"]
    got = mailstack.wait_for("p1", 1)[0]
    assert got.endswith(raw + b"\r\n")   # after the headers the relay adds; DATA ends a line


class Recorder:
    """aiosmtpd handler: records messages; RCPT to bad*@ -> 550, DATA -> self.data_reply."""

    def __init__(self, data_reply: str = "250 OK") -> None:
        self.data_reply = data_reply
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options):
        if address.startswith("bad"):
            return "550 5.1.1 no such user"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope):
        if self.data_reply.startswith("250"):
            self.messages.append((envelope.mail_from, list(envelope.rcpt_tos),
                                  envelope.original_content))
        return self.data_reply


@pytest.fixture
def smtpd():
    started = []

    def start(handler, **kw):
        ctl = start_controller(handler, **kw)
        started.append(ctl)
        return ctl
    yield start
    for ctl in started:
        ctl.stop()


@pytest.fixture(scope="module")
def cert(tmp_path_factory) -> tuple[Path, Path]:
    """Self-signed cert + key for 127.0.0.1 / localhost."""
    d = tmp_path_factory.mktemp("tls")
    crt, key = d / "cert.pem", d / "key.pem"
    try:
        import datetime
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        if not shutil.which("openssl"):
            why = "neither the cryptography package nor openssl is available"
            if os.environ.get("CI"):
                pytest.fail(why + " (CI must test TLS)")
            pytest.skip(why)
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
             "-nodes", "-days", "2", "-subj", "/CN=localhost", "-keyout", str(key),
             "-out", str(crt), "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"],
            check=True, capture_output=True)
        return crt, key
    pkey = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    c = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
         .public_key(pkey.public_key()).serial_number(x509.random_serial_number())
         .not_valid_before(now - datetime.timedelta(hours=1))
         .not_valid_after(now + datetime.timedelta(days=2))
         .add_extension(x509.SubjectAlternativeName(
             [x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]),
             critical=False)
         .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
         .sign(pkey, hashes.SHA256()))
    crt.write_bytes(c.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(pkey.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return crt, key


def _contexts(cert) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    crt, key = cert
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(crt, key)
    client = ssl.create_default_context(cafile=str(crt))
    return server, client


def _authenticator(server, session, envelope, mechanism, auth_data):
    ok = (isinstance(auth_data, LoginPassword)
          and auth_data.login == b"referee" and auth_data.password == b"s3cret")
    return AuthResult(success=ok, handled=False)  # handled=False: aiosmtpd answers 535


def test_smtp_sender_starttls_and_auth(smtpd, cert):
    server_ctx, client_ctx = _contexts(cert)
    rec = Recorder()
    ctl = smtpd(rec, tls_context=server_ctx, require_starttls=True,
                authenticator=_authenticator, auth_required=True, auth_require_tls=True)
    good = SmtpSender(ctl.hostname, ctl.port, starttls=True, username="referee",
                      password="s3cret", ssl_context=client_ctx, timeout=5)
    assert good.send(SERVER, ["p1@x.test"], make_msg("tls")).accepted == ["p1@x.test"]
    assert subject(rec.messages[0][2]) == "tls"
    wrong = SmtpSender(ctl.hostname, ctl.port, starttls=True, username="referee",
                       password="nope", ssl_context=client_ctx, timeout=5)
    assert "p1@x.test" in wrong.send(SERVER, ["p1@x.test"], b"Subject: x\r\n\r\nx").temporary
    plain = SmtpSender(ctl.hostname, ctl.port, timeout=5)  # server insists on STARTTLS
    assert "p1@x.test" in plain.send(SERVER, ["p1@x.test"], b"Subject: x\r\n\r\nx").temporary
    untrusted = SmtpSender(ctl.hostname, ctl.port, starttls=True, timeout=5)  # default CAs
    assert untrusted.send(SERVER, ["p1@x.test"], b"Subject: x\r\n\r\nx").temporary
    assert len(rec.messages) == 1


def test_smtp_sender_implicit_ssl(smtpd, cert):
    server_ctx, client_ctx = _contexts(cert)
    rec = Recorder()
    ctl = smtpd(rec, ssl_context=server_ctx)
    with SmtpSender(ctl.hostname, ctl.port, ssl=True, ssl_context=client_ctx, timeout=5) as s:
        assert s.send(SERVER, ["p2@x.test"], make_msg("ssl")).accepted == ["p2@x.test"]
    assert subject(rec.messages[0][2]) == "ssl"


def test_smtp_sender_refused_connection_is_temporary():
    port = free_ports(1)[0]
    r = SmtpSender("127.0.0.1", port, timeout=2).send(SERVER, ["a@x.test", "b@x.test"],
                                                      make_msg())
    assert r.accepted == [] and r.permanent == {}
    assert set(r.temporary) == {"a@x.test", "b@x.test"}


def test_smtp_sender_451_is_temporary(smtpd):
    ctl = smtpd(Recorder("451 4.3.0 try again later"))
    r = SmtpSender(ctl.hostname, ctl.port, timeout=5).send(SERVER, ["a@x.test"], make_msg())
    assert r.temporary == {"a@x.test": "451 4.3.0 try again later"} and not r.accepted


def test_smtp_sender_550_for_one_recipient(smtpd):
    rec = Recorder()
    ctl = smtpd(rec)
    with SmtpSender(ctl.hostname, ctl.port, timeout=5) as s:
        r = s.send(SERVER, ["good@x.test", "bad@x.test"], make_msg("partial"))
        r2 = s.send(SERVER, ["bad1@x.test", "bad2@x.test"], make_msg("none"))
        r3 = s.send(SERVER, ["good@x.test"], make_msg("after"))
    assert r.accepted == ["good@x.test"] and not r.temporary
    assert r.permanent == {"bad@x.test": "550 5.1.1 no such user"}
    assert r2.accepted == [] and set(r2.permanent) == {"bad1@x.test", "bad2@x.test"}
    assert r3.accepted == ["good@x.test"]
    assert [(m[1], subject(m[2])) for m in rec.messages] == \
        [(["good@x.test"], "partial"), (["good@x.test"], "after")]


def test_smtp_sender_reconnects_after_idle_drop(smtpd):
    rec = Recorder()
    ctl = smtpd(rec, timeout=0.2)  # server hangs up idle sessions after 0.2 s
    with SmtpSender(ctl.hostname, ctl.port, timeout=5) as s:
        assert s.send(SERVER, ["a@x.test"], make_msg("first")).accepted == ["a@x.test"]
        time.sleep(0.5)
        assert s.send(SERVER, ["a@x.test"], make_msg("second")).accepted == ["a@x.test"]
    assert [subject(m[2]) for m in rec.messages] == ["first", "second"]


def test_eml_dir_sender_writes_parseable_files(tmp_path):
    out = tmp_path / "outbox"
    raw = make_msg("by file", to="p4@bluff.test", msgid="<abc/../x y@bluff.test>")
    with EmlDirSender(out) as s:
        r1 = s.send(SERVER, ["p4@bluff.test", "p5@bluff.test"], raw)
        r2 = s.send(SERVER, ["p4@bluff.test"], raw)  # same name parts: must not overwrite
    assert r1.accepted == ["p4@bluff.test", "p5@bluff.test"] and r1.ok and r2.ok
    files = sorted(out.iterdir())
    assert len(files) == 2 and all(f.suffix == ".eml" for f in files)
    for f in files:
        assert "p4@bluff.test" in f.name and "/" not in f.name and " " not in f.name
        assert "abc_.._x_y@bluff.test" in f.name     # named by its Message-ID too
        assert f.read_bytes() == raw
        assert email.message_from_bytes(f.read_bytes())["Subject"] == "by file"


# ------------------------------------------------------------------------- listener


def test_listener_stores_and_answers_250():
    stored: list[tuple[bytes, str, list[str]]] = []
    with MailListener(lambda *a: stored.append(a), port=0, policy=POLICY) as lst:
        assert lst.port != 0
        with smtplib.SMTP("127.0.0.1", lst.port, timeout=5) as c:
            c.ehlo()
            c.mail("p1@bluff.test")
            c.rcpt(SERVER)
            code, _ = c.data(make_msg("via listener"))
        assert code == 250
        # the SmtpSender writes CRLF even for LF-only input
        r = SmtpSender("127.0.0.1", lst.port, timeout=5).send(
            "p2@bluff.test", [SERVER], b"Subject: lf only\n\nline\n")
        assert r.accepted == [SERVER]
    (raw, frm, rcpts), (raw2, _, _) = stored
    assert (frm, rcpts) == ("p1@bluff.test", [SERVER])
    assert subject(raw) == "via listener"
    assert raw2 == b"Subject: lf only\r\n\r\nline\r\n"


def test_listener_answers_451_when_store_raises():
    def broken(raw, frm, rcpts):
        raise OSError("database is locked")

    with MailListener(broken, port=0, policy=POLICY) as lst:
        r = SmtpSender("127.0.0.1", lst.port, timeout=5).send(SERVER, [SERVER], make_msg())
    assert r.temporary[SERVER].startswith("451 4.3.0")


def test_listener_rejects_oversize_with_552():
    stored = []
    with MailListener(lambda *a: stored.append(a), port=0, max_bytes=1000,
                      policy=POLICY) as lst:
        big = make_msg("big", body="z" * 5000)
        # smtplib announces SIZE=, so the refusal comes at MAIL FROM ...
        r = SmtpSender("127.0.0.1", lst.port, timeout=5).send(SERVER, [SERVER], big)
        assert r.permanent[SERVER].startswith("552")
        # ... and without SIZE= it comes after DATA
        with smtplib.SMTP("127.0.0.1", lst.port, timeout=5) as c:
            c.ehlo()
            c.mail(SERVER)
            c.rcpt(SERVER)
            code, _ = c.data(big)
        assert code == 552
    assert stored == []
