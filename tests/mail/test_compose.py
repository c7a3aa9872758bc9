"""Tests of pbem.mail.compose: MIME structure, threading headers, header safety."""

from __future__ import annotations

import email
import email.policy
import json
import re
from collections import Counter
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage, MIMEPart
from email.utils import parsedate_to_datetime
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pbem.mail.compose import MAX_REFERENCES, build_mail, clean_header_value, make_message_id

DOMAIN = "pbem.example.org"
FROM = "bluff@pbem.example.org"
TO = ["ann@example.com", "bob@example.net"]
WHEN = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)


def parse(raw: bytes) -> EmailMessage:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


def mail(**overrides: Any) -> bytes:
    kw: dict[str, Any] = {
        "from_addr": FROM,
        "to_addrs": list(TO),
        "subject": "Bluff cup-1: turn 4",
        "text": "Turn 4 report.\nYour dice: ⚂ ★ ⚀\n",
        "message_id": "<pbem.report.abc@pbem.example.org>",
        "date": WHEN,
    }
    kw.update(overrides)
    return build_mail(**kw)


def body(part: MIMEPart | None) -> Any:
    """A part's decoded content; text with its CRLF line ends (as sent) made LF."""
    assert part is not None
    content = part.get_content()
    return content.replace("\r\n", "\n") if isinstance(content, str) else content


def header_names(msg: EmailMessage) -> Counter[str]:
    return Counter(k.lower() for k in msg)


# --------------------------------------------------------------------------
# Message-ID
# --------------------------------------------------------------------------


def test_make_message_id() -> None:
    assert (
        make_message_id(DOMAIN, "report", "cup-1.4.2") == "<pbem.report.cup-1.4.2@pbem.example.org>"
    )
    a, b = make_message_id(DOMAIN, "confirm"), make_message_id(DOMAIN, "confirm")
    assert a != b
    m = re.fullmatch(r"<pbem\.confirm\.([0-9a-f]{32})@pbem\.example\.org>", a)
    assert m, a
    # nothing unsafe gets into an id
    odd = make_message_id("bad domain>", "re port", "x@y <z>\r\n")
    assert re.fullmatch(r"<[^<>\s@]+@[^<>\s@]+>", odd), odd


def test_clean_header_value() -> None:
    assert clean_header_value("a\r\nBcc: x@y") == "a  Bcc: x@y"
    assert clean_header_value("a\x00b\x85c\u2028d\te") == "a b c d e"
    assert clean_header_value("Ünï ★") == "Ünï ★"


# --------------------------------------------------------------------------
# Structure
# --------------------------------------------------------------------------


def test_text_only() -> None:
    raw = mail()
    assert b"\r\n" in raw and b"\n" not in raw.replace(b"\r\n", b"")
    msg = parse(raw)
    assert msg.get_content_type() == "text/plain"
    assert msg.get_content_charset() == "utf-8"
    assert body(msg) == "Turn 4 report.\nYour dice: ⚂ ★ ⚀\n"


def test_text_and_html_alternative() -> None:
    html = "<html><body><p>Turn 4 &mdash; ★</p></body></html>"
    msg = parse(mail(html=html))
    assert msg.get_content_type() == "multipart/alternative"
    parts = list(msg.iter_parts())
    assert [p.get_content_type() for p in parts] == ["text/plain", "text/html"]
    assert all(p.get_content_charset() == "utf-8" for p in parts)
    assert body(parts[0]) == "Turn 4 report.\nYour dice: ⚂ ★ ⚀\n"
    assert body(parts[1]).rstrip("\n") == html
    preferred = msg.get_body(preferencelist=("html", "plain"))
    assert preferred is not None and preferred.get_content_type() == "text/html"


def test_json_attachment_wraps_in_mixed() -> None:
    record = json.dumps({"format": "pbem.bluff.record/1", "seed": "51e5"}).encode()
    msg = parse(
        mail(html="<p>final</p>", attachments=[("RECORD.json", "application/json", record)])
    )
    assert msg.get_content_type() == "multipart/mixed"
    alt, att = list(msg.iter_parts())
    assert alt.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in alt.iter_parts()] == ["text/plain", "text/html"]
    assert att.get_content_type() == "application/json"
    assert att.get_filename() == "RECORD.json"
    assert att.get_content_disposition() == "attachment"
    assert att.get_content() == record
    assert json.loads(att.get_content())["seed"] == "51e5"
    atts = list(msg.iter_attachments())
    assert len(atts) == 1


def test_attachment_without_html() -> None:
    msg = parse(
        mail(
            attachments=[
                ("a.json", "application/json", b"{}"),
                ("b.json", "application/json", b"[]"),
            ]
        )
    )
    assert msg.get_content_type() == "multipart/mixed"
    types = [p.get_content_type() for p in msg.iter_parts()]
    assert types == ["text/plain", "application/json", "application/json"]


def test_long_lines_are_safe_for_smtp() -> None:
    html = "<p>" + "<span style='x'>⚂</span>" * 400 + "</p>"
    raw = mail(text="x" * 3000 + "\n", html=html)
    assert max(len(line) for line in raw.split(b"\r\n")) <= 78
    msg = parse(raw)
    plain, rich = list(msg.iter_parts())
    assert body(plain) == "x" * 3000 + "\n"
    assert body(rich).rstrip("\n") == html


def test_trailing_space_of_signature_survives() -> None:
    msg = parse(mail(text="Report\n\n-- \nBluff referee\n"))
    assert body(msg) == "Report\n\n-- \nBluff referee\n"


# --------------------------------------------------------------------------
# Headers
# --------------------------------------------------------------------------


def test_basic_headers() -> None:
    msg = parse(mail(from_name="Bluff Referee"))
    assert msg["From"].addresses[0].addr_spec == FROM
    assert msg["From"].addresses[0].display_name == "Bluff Referee"
    assert [a.addr_spec for a in msg["To"].addresses] == TO
    assert msg["Subject"] == "Bluff cup-1: turn 4"
    assert msg["Message-ID"] == "<pbem.report.abc@pbem.example.org>"
    assert parsedate_to_datetime(msg["Date"]) == WHEN
    assert msg["Auto-Submitted"] == "auto-generated"
    assert msg["MIME-Version"] == "1.0"
    for absent in ("In-Reply-To", "References", "Cc", "Bcc", "X-Loop"):
        assert msg[absent] is None


def test_date_defaults_to_now_and_naive_is_utc() -> None:
    before = datetime.now(UTC).replace(microsecond=0)
    msg = parse(mail(date=None))
    assert before <= parsedate_to_datetime(msg["Date"]) <= before + timedelta(seconds=5)
    msg = parse(mail(date=datetime(2026, 12, 1, 18, 0)))
    assert parsedate_to_datetime(msg["Date"]) == WHEN


def test_threading_headers() -> None:
    refs = [f"<m{i}@example.com>" for i in range(30)]
    refs = refs + ["<m3@example.com>", "<m29@example.com>"]  # duplicates
    msg = parse(mail(in_reply_to="<m29@example.com>", references=refs))
    assert msg["In-Reply-To"] == "<m29@example.com>"
    got = str(msg["References"]).split()
    assert got == [f"<m{i}@example.com>" for i in range(10, 30)]
    assert len(got) == MAX_REFERENCES


def test_references_dedup_keeps_first_order() -> None:
    msg = parse(mail(references=["<b@x>", "<a@x>", "<b@x>", "<c@x>"]))
    assert str(msg["References"]).split() == ["<b@x>", "<a@x>", "<c@x>"]


def test_malformed_ids_from_players_are_dropped() -> None:
    msg = parse(mail(in_reply_to="<a b@x>\r\nBcc: evil@x", references=["junk <x", "<ok@x>"]))
    assert msg["In-Reply-To"] is None
    assert str(msg["References"]) == "<ok@x>"
    assert msg["Bcc"] is None


def test_auto_submitted_and_loop_header() -> None:
    msg = parse(mail(auto_submitted="auto-replied", loop_header=("X-Loop", FROM)))
    assert msg["Auto-Submitted"] == "auto-replied"
    assert msg["X-Loop"] == FROM
    msg = parse(mail(auto_submitted=None))
    assert msg["Auto-Submitted"] is None


def test_extra_headers() -> None:
    msg = parse(
        mail(
            extra_headers={
                "X-PBEM-Game": "cup-1",
                "X-PBEM-Turn": "4",
                "List-Id": "Bluff cup-1 <cup-1.pbem.example.org>",
            }
        )
    )
    assert msg["X-PBEM-Game"] == "cup-1" and msg["X-PBEM-Turn"] == "4"
    assert msg["List-Id"] == "Bluff cup-1 <cup-1.pbem.example.org>"


@pytest.mark.parametrize("name", ["Bcc", "to", "Subject", "Message-ID", "Bad Name", "X:Y", ""])
def test_extra_headers_cannot_set_core_or_bad_names(name: str) -> None:
    with pytest.raises(ValueError):
        mail(extra_headers={name: "x"})
    with pytest.raises(ValueError):
        mail(loop_header=(name, "x"))


@pytest.mark.parametrize(
    "bad",
    [
        "ann@example.com, evil@example.com",
        "Ann <ann@example.com>",
        "ann@example.com\r\nBcc: evil@x",
        "no-at-sign",
        "",
        "a@b@c",
    ],
)
def test_bad_addresses_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        mail(to_addrs=[bad])
    with pytest.raises(ValueError):
        mail(from_addr=bad)


def test_needs_a_recipient_and_a_message_id() -> None:
    with pytest.raises(ValueError):
        mail(to_addrs=[])
    with pytest.raises(ValueError):
        mail(message_id="not an id")


def test_non_ascii_name_and_subject_are_encoded() -> None:
    raw = mail(subject="Bluff: Zoë hat 4 Sterne ★ geboten", from_name="Schiedsrichter Jürgen")
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert head.isascii()
    assert b"=?utf-8?" in head
    msg = parse(raw)
    assert msg["Subject"] == "Bluff: Zoë hat 4 Sterne ★ geboten"
    assert msg["From"].addresses[0].display_name == "Schiedsrichter Jürgen"


def test_injection_in_subject_name_and_extra_header() -> None:
    evil = "Hello\r\nBcc: evil@example.org\r\n\r\nbody"
    msg = parse(mail(subject=evil, from_name=evil, extra_headers={"X-PBEM-Game": evil}))
    assert msg["Bcc"] is None
    assert header_names(msg) == Counter(
        {
            "from": 1,
            "to": 1,
            "subject": 1,
            "date": 1,
            "message-id": 1,
            "auto-submitted": 1,
            "x-pbem-game": 1,
            "mime-version": 1,
            "content-type": 1,
            "content-transfer-encoding": 1,
        }
    )
    assert msg["Subject"] == "Hello Bcc: evil@example.org body"
    assert [a.addr_spec for a in msg["To"].addresses] == TO
    assert body(msg) == "Turn 4 report.\nYour dice: ⚂ ★ ⚀\n"


# --------------------------------------------------------------------------
# Property: nothing typed adds a header or a recipient
# --------------------------------------------------------------------------

INJECTIONS = [
    "\r\nBcc: x@y",
    "\nBcc: x@y",
    "\rBcc: x@y",
    "\r\n\r\nBody: x",
    "x@y, z@w",
    "\u2028Bcc: x@y",
    "\x85Bcc: x@y",
    "=?utf-8?q?a=0D=0ABcc:_x@y?=",
    '"q" <x@y>',
    "\\",
]
typed = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=200),
    st.builds(
        lambda a, inj, b: a + inj + b,
        st.text(max_size=40),
        st.sampled_from(INJECTIONS),
        st.text(max_size=40),
    ),
)
EXPECTED_HEADERS = Counter(
    {
        "from": 1,
        "to": 1,
        "subject": 1,
        "date": 1,
        "message-id": 1,
        "in-reply-to": 1,
        "references": 1,
        "auto-submitted": 1,
        "x-loop": 1,
        "x-pbem-game": 1,
        "x-pbem-note": 1,
        "mime-version": 1,
        "content-type": 1,
    }
)


@settings(max_examples=300, deadline=None)
@given(
    subject=typed,
    from_name=typed,
    game=typed,
    note=typed,
    to=st.lists(
        st.sampled_from(
            ["ann@example.com", "bob@example.net", "cy@example.org", "d.e+bluff@mail.example.co.uk"]
        ),
        min_size=1,
        max_size=4,
        unique=True,
    ),
)
@example(
    subject="Turn 4\r\nBcc: x@y",
    from_name="Ref\r\nBcc: x@y",
    game="cup\r\nBcc: x@y",
    note="\r\n\r\nBcc: x@y",
    to=["ann@example.com"],
)
def test_typed_text_adds_no_header_and_no_recipient(
    subject: str, from_name: str, game: str, note: str, to: list[str]
) -> None:
    raw = build_mail(
        from_addr=FROM,
        to_addrs=to,
        subject=subject,
        text="report ⚂\n",
        html="<p>report</p>",
        message_id=make_message_id(DOMAIN, "report"),
        in_reply_to="<p@example.com>",
        references=["<p@example.com>"],
        loop_header=("X-Loop", FROM),
        extra_headers={"X-PBEM-Game": game, "X-PBEM-Note": note},
        date=WHEN,
        from_name=from_name,
    )
    head = raw.split(b"\r\n\r\n", 1)[0]
    assert head.isascii()
    msg = parse(raw)
    assert header_names(msg) == EXPECTED_HEADERS
    assert [a.addr_spec for a in msg["To"].addresses] == to
    assert [a.addr_spec for a in msg["From"].addresses] == [FROM]
    for absent in ("Cc", "Bcc", "Body", "Reply-To", "Sender"):
        assert msg[absent] is None
    assert msg.get_content_type() == "multipart/alternative"
    assert [p.get_content_type() for p in msg.iter_parts()] == ["text/plain", "text/html"]
    assert body(msg.get_body(preferencelist=("plain",))) == "report ⚂\n"

    # What was typed is still there, as text.  White space is compared
    # loosely: a long non-ASCII value is split into several RFC 2047 encoded
    # words, and where they meet the library may add or drop a space.
    def squeezed(s: str) -> str:
        return "".join(s.split())

    assert squeezed(str(msg["Subject"])) == squeezed(clean_header_value(subject))
    name = msg["From"].addresses[0].display_name
    assert squeezed(name) == squeezed(clean_header_value(from_name))
    assert squeezed(str(msg["X-PBEM-Game"])) == squeezed(clean_header_value(game))
    assert squeezed(str(msg["X-PBEM-Note"])) == squeezed(clean_header_value(note))
