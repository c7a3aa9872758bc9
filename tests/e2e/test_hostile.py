"""Promise 3, hostile and broken mail: whatever arrives, the server does not
crash, applies nothing from a mail it cannot read (nor from the quoted part of
a reply), answers each mail from a person once with a clear message, and
holds its size limit before parsing anything.

- every file of tests/corpus/ through the referee;
- replies quoting a whole report (orders in the quote) in the styles of
  Gmail, Outlook, Apple Mail, Thunderbird and German clients, text and HTML,
  with signatures;
- hypothesis: random structures, encodings, charsets, headers and lines;
- 20 MB attachments (over the real IMAP server too), a 20 MB header block,
  10,000 lines, a 100,000-character line, 1,000 nested multiparts.
"""

from __future__ import annotations

import base64
import json
import quopri
import time
from datetime import timedelta
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from sqlmodel import Session, select

import pbem.runner.triage
from pbem.demo.robot_client import parse_mail
from pbem.games.records import find_game
from pbem.games.turn_in_play import pending_orders
from pbem.mail.read import read_message
from pbem.runner.server import Server
from pbem.store.models import InboundMail, OutboundMail
from pbem.store.work import Work
from testkit.desk import make_server as desk_server
from testkit.stack import stack_settings
from testkit.stored import inbound_rows, outbound_rows
from tests.runner.test_referee import (
    PLAYERS,
    REFEREE_KEY,
    Clock,
    key_and_seat,
    outbox,
    started_game,
)

CORPUS = Path(__file__).parents[1] / "corpus"
P1 = PLAYERS[0]
ME = "bluff@example.org"


def make_server(tmp_path: Path, clock: Clock, **extra) -> Server:
    return desk_server(tmp_path, clock, address=ME, referee_key=REFEREE_KEY, **extra)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def server(tmp_path: Path, clock: Clock) -> Server:
    s = make_server(tmp_path, clock)
    started_game(s)
    return s


def deliver(server: Server, raw: bytes) -> Any:
    """Store and handle ``raw``; its stored row (inbound_mail's columns and raw)."""
    assert server.referee.store_inbound(raw, source="smtp")
    server.referee.process_pending()
    return inbound_rows(server.engine)[-1]


def answers_to(server: Server, row: Any) -> list[Any]:
    return outbound_rows(server.engine, OutboundMail.inbound_id == row.id)


def orders(server: Server) -> dict[int, dict]:
    with Work(server.engine) as session:
        return {seat: json.loads(o.move_json) for seat, o in
                pending_orders(session, find_game(session, "g1")).items()}


def text_of(answer: Any) -> str:
    body = parse_mail(answer.raw).get_body(("plain",))
    assert body is not None
    return " ".join(body.get_content().split())


# --------------------------------------------------------------------------- the corpus


@pytest.fixture(scope="module")
def corpus_server(tmp_path_factory) -> tuple[Server, Clock]:
    clock = Clock()
    s = make_server(tmp_path_factory.mktemp("corpus"), clock)
    started_game(s)
    return s, clock


@pytest.mark.parametrize("path", sorted(CORPUS.glob("*.eml")), ids=lambda p: p.name)
def test_every_corpus_mail_is_handled_and_answered_once_or_never(corpus_server,
                                                                  path: Path) -> None:
    server, clock = corpus_server
    clock.now += timedelta(days=1)     # each corpus sender may get its one answer a day
    raw = path.read_bytes()
    before = orders(server)
    row = deliver(server, raw)
    assert row.status == "done", row.outcome
    msg = read_message(raw, own_addresses=[ME])
    answers = answers_to(server, row)
    if msg.automatic or msg.from_addr is None:
        assert answers == [] and row.outcome and row.outcome.startswith("ignored")
    else:
        (answer,) = answers
        assert json.loads(answer.rcpts_json) == [msg.from_addr]
        if msg.message_id:
            assert "".join(str(parse_mail(answer.raw)["In-Reply-To"]).split()) == \
                msg.message_id
        assert "nothing was applied" in text_of(answer) or "orders" in text_of(answer)
    assert orders(server) == before       # strangers' mail never changes a game


# --------------------------------------------------------------------------- replies


def quote(text: str) -> str:
    return "".join(f"> {line}\n" if line else ">\n" for line in text.splitlines())


INJECTED = "BID 9 fives\nCHALLENGE\nEXPOSE 3 3\n"   # as if an earlier mail said so
WHO = "Bluff referee <bluff@example.org>"
HEADER_BLOCK = (f"From: {WHO}\nSent: Tuesday, December 1, 2026 12:00 PM\nTo: {P1}\n"
                "Subject: [bluff g1] turn 1 report\n\n")


def text_styles(original: str) -> dict[str, str]:
    o = INJECTED + original
    return {
        "gmail": f"\n\nOn Tue, 1 Dec 2026 at 12:00, {WHO} wrote:\n{quote(o)}",
        "outlook": "\n\n________________________________\n" + HEADER_BLOCK + o,
        "outlook-original": "\n\n-----Original Message-----\n" + HEADER_BLOCK + o,
        "apple": f"\n\n> On 1 Dec 2026, at 12:00, {WHO} wrote:\n>\n{quote(o)}",
        "thunderbird-signature": f"\n-- \nAnn Example\nBID 7 fives\n\nOn 01.12.26 12:00, "
                                 f"Bluff referee wrote:\n{quote(o)}",
        "german": f"\n\nAm Di., 1. Dez. 2026 um 12:00 Uhr schrieb {WHO}:\n{quote(o)}",
        "bottom-post": None,   # built below: the quote first, the new text after it
    }


def html_styles(original_html: str) -> dict[str, str]:
    injected = "".join(f"<p>{line}</p>" for line in INJECTED.splitlines())
    return {
        "gmail-html": (
            '<div dir="ltr">{new}<br></div><br><div class="gmail_quote"><div dir="ltr" '
            f'class="gmail_attr">On Tue, Dec 1, 2026 at 12:00 PM Bluff referee &lt;'
            f'bluff@example.org&gt; wrote:<br></div><blockquote class="gmail_quote" '
            f'style="margin:0 0 0 .8ex;border-left:1px #ccc solid;padding-left:1ex">'
            f"{injected}{original_html}</blockquote></div>"),
        "outlook-html": (
            '<html><body><div>{new}</div><div id="appendonsend"></div>'
            '<hr style="display:inline-block;width:98%" tabindex="-1"><div id="divRplyFwdMsg" '
            'dir="ltr"><font face="Calibri, sans-serif" style="font-size:11pt"><b>From:</b> '
            "Bluff referee &lt;bluff@example.org&gt;<br><b>Sent:</b> Tuesday, December 1, "
            f"2026 12:00 PM<br><b>To:</b> {P1}<br><b>Subject:</b> [bluff g1] turn 1 report"
            f"</font><div>&nbsp;</div></div><div>{injected}{original_html}</div></body></html>"),
        "apple-html": (
            '<html><body dir="auto"><div>{new}</div><div><br><blockquote type="cite">'
            f"On 1 Dec 2026, at 12:00, Bluff referee &lt;bluff@example.org&gt; wrote:<br><br>"
            f"{injected}{original_html}</blockquote></div></body></html>"),
    }


def reply(report: EmailMessage, body: str, *, html: bool = False) -> bytes:
    msg = EmailMessage()
    msg["From"] = P1
    msg["To"] = ME
    msg["Subject"] = "Re: " + str(report["Subject"])
    msg["Message-ID"] = make_msgid(domain="example.org")
    msg["In-Reply-To"] = report["Message-ID"]
    msg["References"] = report["Message-ID"]
    msg.set_content(body, subtype="html" if html else "plain")
    return msg.as_bytes(policy=policy.SMTP)


def test_orders_in_the_quoted_report_never_count(server: Server) -> None:
    (report,) = [m for m in outbox(server, P1) if "report" in str(m["Subject"])]
    original = report.get_body(("plain",)).get_content()
    original_html = report.get_body(("html",)).get_content()
    _, seat = key_and_seat(server, P1)
    bodies: list[tuple[str, str, bool]] = []
    for style, tail in text_styles(original).items():
        if tail is None:
            bodies.append((style, quote(INJECTED + original) + "\n{new}\n", False))
        else:
            bodies.append((style, "{new}" + tail, False))
    for style, html in html_styles(original_html).items():
        bodies.append((style, html, True))
    for n, (style, body, html) in enumerate(bodies, start=1):
        quantity = 1 + n % 9
        new = f"Hello!{'<br>' if html else chr(10)}BID {quantity} twos"
        row = deliver(server, reply(report, body.replace("{new}", new), html=html))
        assert row.outcome and row.outcome.startswith("order accepted"), (style, row.outcome)
        assert orders(server)[seat] == {"bid": {"quantity": quantity, "face": 2}}, style
        (answer,) = answers_to(server, row)
        assert f"BID {quantity} twos" in text_of(answer)
    # a reply with nothing new but thanks takes no order from the quote either
    for style, body, html in bodies:
        raw = reply(report, body.replace("{new}", "Thanks, still thinking."), html=html)
        row = deliver(server, raw)
        assert row.outcome and row.outcome.startswith("refused: I found no order"), (
            style, row.outcome)
    assert orders(server)[seat] == {"bid": {"quantity": 1 + len(bodies) % 9, "face": 2}}


# --------------------------------------------------------------------------- unreadable


def test_nothing_is_applied_from_what_cannot_be_read(server: Server) -> None:
    key, _ = key_and_seat(server, P1)
    orders_text = f"GAME g1\nKEY {key}\nBID 1 two\n"
    shapes: dict[str, EmailMessage] = {}
    m = EmailMessage()
    m.set_content("My orders are attached.")
    m.add_attachment(orders_text.encode(), maintype="text", subtype="plain",
                     filename="orders.txt")
    shapes["attachment"] = m
    m = EmailMessage()
    m.set_content(b"\x89PNG" + orders_text.encode(), maintype="image", subtype="png")
    shapes["image-only"] = m
    m = EmailMessage()
    m.set_content(f"<html><head><script>{orders_text}</script><style>{orders_text}</style>"
                  f"</head><body><p>hi</p><!-- {orders_text} --></body></html>", subtype="html")
    shapes["html-script"] = m
    m = EmailMessage()
    m.set_content(b"-----BEGIN PGP MESSAGE-----\n" + orders_text.encode(),
                  maintype="application", subtype="pgp-encrypted")
    shapes["encrypted"] = m
    for name, msg in shapes.items():
        msg["From"], msg["To"], msg["Subject"] = P1, ME, name
        msg["Message-ID"] = make_msgid(domain="example.org")
        row = deliver(server, msg.as_bytes(policy=policy.SMTP))
        assert row.outcome and row.outcome.startswith("refused"), (name, row.outcome)
        assert len(answers_to(server, row)) == 1
    assert orders(server) == {}


# --------------------------------------------------------------------------- sizes


def big_mail(sender: str, body: str, attachment_bytes: int) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, ME, "big"
    msg["Message-ID"] = make_msgid(domain="example.org")
    msg.set_content(body)
    msg.add_attachment(b"\0" * attachment_bytes, maintype="application",
                       subtype="octet-stream", filename="scan.bin")
    return msg.as_bytes(policy=policy.SMTP)


@pytest.fixture
def size_spy(monkeypatch) -> list[int]:
    """The size of every mail the referee parses (the limit must hold before that)."""
    seen: list[int] = []
    real = pbem.runner.triage.read_message

    def spy(raw, **kw):
        seen.append(len(raw))
        return real(raw, **kw)
    monkeypatch.setattr(pbem.runner.triage, "read_message", spy)
    return seen


def test_a_20_mb_mail_is_not_parsed_and_its_orders_not_applied(server: Server,
                                                               size_spy) -> None:
    key, _ = key_and_seat(server, P1)
    raw = big_mail(P1, f"GAME g1\nKEY {key}\nBID 1 two\n", 20_000_000)
    assert len(raw) > 20_000_000
    row = deliver(server, raw)
    assert row.truncated and row.size == len(raw) and len(row.raw) < 2_000
    assert size_spy and max(size_spy) <= server.settings.max_mail_bytes
    assert orders(server) == {}
    (answer,) = answers_to(server, row)
    assert "larger than 10,000,000 bytes" in text_of(answer)


def test_a_20_mb_header_block_is_cut_before_parsing(server: Server, size_spy) -> None:
    raw = (f"From: {P1}\r\nTo: {ME}\r\nSubject: x\r\nMessage-ID: <huge-head@example.org>\r\n"
           .encode() + b"X-Filler: " + b"a" * 20_000_000 + b"\r\n\r\nBID 1 two\r\n")
    row = deliver(server, raw)
    assert row.truncated and len(row.raw) <= 300_000
    assert max(size_spy) <= 300_000
    assert row.status == "done"


def test_a_20_mb_mail_over_the_real_imap_server(mailstack, tmp_path: Path, size_spy) -> None:
    mailstack.clear("bluff")
    mailstack.clear("p1")
    server = Server(stack_settings(mailstack, f"sqlite:///{tmp_path / 'pbem.db'}", REFEREE_KEY,
                                   smtp=False, outbox_dir=tmp_path / "out"))
    mailstack.append("bluff", big_mail(mailstack.address("p1"), "HELP\n", 20_000_000))
    report = server.tick()
    assert report.fetched == 1 and report.processed == 1 and report.sent == 1
    assert max(size_spy) < 10_000
    (answer,) = list((tmp_path / "out").glob("*.eml"))
    assert b"larger than" in answer.read_bytes()


def test_10000_lines_are_refused_quickly_with_a_clear_answer(server: Server) -> None:
    key, _ = key_and_seat(server, P1)
    body = f"GAME g1\nKEY {key}\nBID 1 two\n" + "".join(
        f"line {i}: a long rambling letter\n" for i in range(10_000))
    started = time.thread_time()   # CPU: a stalled machine must not fail the test
    row = deliver(server, EmailMessage_bytes(P1, body))
    assert time.thread_time() - started < 5
    assert orders(server) == {}
    (answer,) = answers_to(server, row)
    assert len(answer.raw) < 100_000
    assert "10,003 lines" in text_of(answer) and "at most 300" in text_of(answer)


def test_a_100000_character_line_is_cut_in_the_answer(server: Server) -> None:
    row = deliver(server, EmailMessage_bytes(P1, "BID 3 " + "sevens" * 20_000 + "\n"))
    (answer,) = answers_to(server, row)
    assert len(answer.raw) < 50_000 and row.outcome and row.outcome.startswith("refused")


def test_a_thousand_nested_multiparts(server: Server) -> None:
    parts = [f"Content-Type: multipart/mixed; boundary=b{i}\r\n\r\n--b{i}\r\n"
             for i in range(1000)]
    closing = "".join(f"\r\n--b{i}--\r\n" for i in reversed(range(1000)))
    raw = (f"From: {P1}\r\nTo: {ME}\r\nMessage-ID: <nested@example.org>\r\nMIME-Version: 1.0"
           "\r\n" + "".join(parts) + "Content-Type: text/plain\r\n\r\nBID 1 two" + closing)
    row = deliver(server, raw.encode())
    assert row.status == "done"
    assert len(answers_to(server, row)) == 1
    assert orders(server) == {}


def EmailMessage_bytes(sender: str, body: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = sender, ME, "orders"
    msg["Message-ID"] = make_msgid(domain="example.org")
    msg.set_content(body)
    return msg.as_bytes(policy=policy.SMTP)


# --------------------------------------------------------------------------- properties

LINES = ["BID 1 two", "bid 2 threes", "BID 3 sevens", "BDI 5 4", "CHALLENGE", "EXPOSE 3",
         "GAME g1", "GAME nosuch", "KEY wrong-key", "HELP", "STATUS", "TURN 1", "TURN 9",
         "> BID 5 5", "-- ", "On Mon, 1 Dec 2026, Bluff referee wrote:", "Thanks!", ""]
SENDERS = [P1, P1.upper(), PLAYERS[1], "stranger@elsewhere.example", "", "not an address",
           f"Eve <{P1}>, other@x.example", "mailer-daemon@example.org", ME]
EXTRA_HEADERS = [{}, {"Auto-Submitted": "auto-replied"}, {"Auto-Submitted": "no"},
                 {"Precedence": "bulk"}, {"In-Reply-To": "<forged@example.org>"},
                 {"Content-Type": "multipart/mixed"}, {"Content-Transfer-Encoding": "base64"}]


@st.composite
def hostile_mails(draw: st.DrawFn, key: str, token: str) -> bytes:
    lines = draw(st.lists(st.one_of(st.sampled_from([*LINES, f"KEY {key}"]),
                                    st.text(max_size=30)), max_size=10))
    sender = draw(st.sampled_from(SENDERS))
    headers = dict(draw(st.sampled_from(EXTRA_HEADERS)))
    if draw(st.booleans()):
        headers["In-Reply-To"] = token
    if draw(st.integers(0, 3)) == 0:   # now and then the genuine article, in a hostile shape
        sender, headers = P1, {"In-Reply-To": token}
        lines = [line for line in lines if not line.strip()] + ["Hi", "BID 2 threes"]
    body = "\n".join(lines)
    head = [f"From: {sender}", f"To: {ME}", "Subject: " + draw(st.text(max_size=20))]
    if draw(st.booleans()):
        head.append(f"Message-ID: <{draw(st.integers(0, 10**12))}.{time.time_ns()}@x.example>")
    head += [f"{k}: {v}" for k, v in headers.items()]
    shape = draw(st.sampled_from(["plain", "html", "base64", "qp", "latin1", "bogus-charset",
                                  "alternative", "raw-bytes"]))
    data = body.encode("utf-8", "surrogatepass")
    if shape == "plain":
        head.append("Content-Type: text/plain; charset=utf-8")
    elif shape == "html":
        head.append("Content-Type: text/html; charset=utf-8")
        data = "".join(f"<p>{line}</p>" for line in lines).encode("utf-8", "surrogatepass")
    elif shape == "base64":
        head += ["Content-Type: text/plain; charset=utf-8", "Content-Transfer-Encoding: base64"]
        data = base64.encodebytes(data)
    elif shape == "qp":
        head += ["Content-Type: text/plain; charset=utf-8",
                 "Content-Transfer-Encoding: quoted-printable"]
        data = quopri.encodestring(data)
    elif shape == "latin1":
        head.append("Content-Type: text/plain; charset=iso-8859-1")
        data = body.encode("latin-1", "replace")
    elif shape == "bogus-charset":
        head.append("Content-Type: text/plain; charset=x-" + draw(st.sampled_from(
            ["klingon", "utf-99", '"; boundary=x'])))
    elif shape == "alternative":
        head.append('Content-Type: multipart/alternative; boundary="zz"')
        data = (b"--zz\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + data +
                b"\r\n--zz\r\nContent-Type: text/html\r\n\r\n<p>" + data + b"</p>\r\n--zz--\r\n")
    else:
        data = draw(st.binary(max_size=200)) + data
    return "\r\n".join(head).encode("utf-8", "surrogatepass") + b"\r\n\r\n" + data


def test_hostile_mail_never_crashes_never_lets_anyone_in_and_is_answered_once(
        tmp_path: Path) -> None:
    clock = Clock()
    server = make_server(tmp_path, clock)
    started_game(server)
    key, seat = key_and_seat(server, P1)
    (report,) = [m for m in outbox(server, P1) if "report" in str(m["Subject"])]
    token = str(report["Message-ID"])
    known = {p.lower() for p in PLAYERS}
    seen: set[str] = set()

    def plain(sender: str, *lines: str, **headers: str) -> bytes:
        head = [f"From: {sender}", f"To: {ME}", "Subject: Re: turn 1",
                *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items())]
        return ("\r\n".join(head) + "\r\n\r\n" + "\r\n".join(lines) + "\r\n").encode()

    # one mail of each outcome always, whatever the draws (40 drew no refusal now and then)
    @settings(max_examples=40, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(raw=hostile_mails(key, token))
    @example(raw=plain(P1, "BID 2 threes", In_Reply_To=token))            # order accepted
    @example(raw=plain(P1, "BID 3 sevens", In_Reply_To=token))            # refused
    @example(raw=plain("mailer-daemon@example.org", "BID 2 threes"))      # ignored
    def check(raw: bytes) -> None:
        clock.now += timedelta(hours=2)      # no sender limit builds up between examples
        before = orders(server)
        if not server.referee.store_inbound(raw, source="smtp"):
            return                               # the same bytes again: stored once
        server.referee.process_pending()
        with Session(server.engine) as session:
            row = session.exec(select(InboundMail).order_by(InboundMail.id.desc())).first()
            assert row is not None
        assert row.status == "done", row.outcome           # never an internal error
        seen.add((row.outcome or "").split(":")[0].split(" (")[0])
        msg = read_message(raw, own_addresses=[ME])
        answers = answers_to(server, row)
        for answer in answers:                               # only ever to the sender
            assert json.loads(answer.rcpts_json) == [msg.from_addr]
        if msg.automatic or msg.from_addr is None or msg.from_addr == ME:
            assert answers == []
        elif msg.from_addr in known:
            assert len(answers) == 1, row.outcome
        else:
            assert len(answers) <= 1
        may_act = msg.from_addr == P1 and (key in msg.text or token == msg.in_reply_to
                                           or token in msg.references)
        if not may_act:
            assert orders(server) == before                 # nobody let in
        if not msg.readable:
            assert orders(server) == before

    check()
    # the examples reached every kind of outcome, so the properties were not vacuous
    assert {"order accepted", "refused", "ignored"} <= seen, seen


# --------------------------------------------------------------------------- injection

EVIL_NAMES = ["=?utf-8?q?=0D=0ABcc:_evil@example.net?=", "<script>alert(1)</script>",
              'Bob"><img src=x onerror=alert(1)>', "Eve\r\nBcc: evil@example.net",
              "Mallory\u2028Cc: evil@example.net"]
HEADERS_ALLOWED = {"from", "to", "subject", "date", "message-id", "in-reply-to", "references",
                   "auto-submitted", "x-pbem-loop", "mime-version", "content-type",
                   "content-transfer-encoding"}


def assert_clean(raw: bytes) -> None:
    """One recipient, only our own headers, no markup from anyone in the HTML."""
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert head.isascii()
    names = [line.split(b":", 1)[0].decode().lower() for line in head.split(b"\r\n")
             if line and line[:1] not in (b" ", b"\t")]
    assert set(names) <= HEADERS_ALLOWED, names
    assert len(names) == len(set(names))
    msg = parse_mail(raw)
    assert len(msg.get_all("To")) == 1 and len(msg["To"].addresses) == 1
    assert "evil" not in str(msg["To"]) and "\n" not in str(msg["Subject"])
    html = msg.get_body(("html",))
    if html is not None:
        content = html.get_content().lower()
        assert "<script" not in content and "<img" not in content


def test_names_and_table_talk_cannot_inject_headers_or_markup(tmp_path: Path,
                                                              clock: Clock) -> None:
    server = make_server(tmp_path, clock)
    server.referee.admin(["NEWGAME", "g1", "SEED", "3"])
    for email, name in zip(PLAYERS, EVIL_NAMES):
        server.referee.admin(["ADD", "g1", email, *name.split(" ")])
    server.referee.admin(["START", "g1"])
    key, _ = key_and_seat(server, P1)
    said = "<script>alert('say')</script> Bcc: evil@example.net =?utf-8?q?=0D=0A?= " * 142
    assert len(said) > 10_000
    body = f"GAME g1\nKEY {key}\nSAY {said}\n"
    row = deliver(server, EmailMessage_bytes(P1, body))     # P1's name is an encoded word
    assert row.outcome and "said" in row.outcome and "(cut)" in row.outcome, row.outcome
    key2, _ = key_and_seat(server, PLAYERS[1])                # P2's name is a script tag
    row = deliver(server, EmailMessage_bytes(PLAYERS[1], f"GAME g1\nKEY {key2}\nSAY hi\n"))
    assert row.outcome and "said" in row.outcome, row.outcome
    server.referee.admin(["PROCESS", "g1"])            # the next report shows the talk
    sent = outbound_rows(server.engine)
    kinds = {m.kind for m in sent}
    assert {"report", "talk"} <= kinds, kinds
    for m in sent:
        assert_clean(m.raw)
    talk = [m for m in sent if m.kind == "talk"]
    assert len(talk) == 8
    turn2 = [m for m in sent if m.kind == "report" and m.turn == 2]
    shown = parse_mail(turn2[0].raw).get_body(("html",)).get_content()
    assert "&lt;script&gt;alert(" in shown and "&lt;/script&gt;" in shown   # escaped, shown
    text = text_of(talk[0])
    assert "cut at 2,000 characters" in text
    assert len(parse_mail(talk[0].raw).get_body(("plain",)).get_content()) < 4_000


NAMES = st.one_of(st.text(max_size=60), st.sampled_from(EVIL_NAMES),
                  st.builds(lambda a, b: f"{a}=?utf-8?q?{b}?=", st.text(max_size=10),
                            st.sampled_from(["=0D=0ABcc:_x@y", "=0ATo:_x@y", "hi"])))


@settings(max_examples=40, deadline=None)
@given(name=NAMES, said=st.text(max_size=300))
def test_any_name_or_talk_makes_a_clean_mail(name: str, said: str) -> None:
    """The compose and render layer alone: whatever a name or a SAY holds."""
    from pbem.mail.compose import build_mail, make_message_id
    from pbem.render.reports import Renderer
    renderer = Renderer()
    text, html = renderer.render("notice", {"subject": f"table talk from {name}",
                                            "paragraphs": [f"{name} says:", said],
                                            "game": "g1"})
    raw = build_mail(from_addr=ME, from_name=name, to_addrs=[P1],
                     subject=f"[bluff g1] table talk from {name}", text=text, html=html,
                     message_id=make_message_id("example.org", "talk"),
                     loop_header=("X-Pbem-Loop", ME))
    assert_clean(raw)
    import markupsafe

    from pbem.text.usertext import shown
    shown_said = shown(said)   # as typed, but for bidi controls and control characters
    assert str(markupsafe.escape(shown_said)).strip()[:50] in html or not shown_said.strip()
    assert shown_said == said or said not in text + html
