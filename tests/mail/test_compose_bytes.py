"""build_mail writes MIME by hand (pbem.mail.mimeout): what a reader gets back is what
the standard library's EmailMessage made of the same input (kept here as the oracle),
for any text, and the bytes are safe for SMTP (ASCII, CRLF, short lines)."""

from __future__ import annotations

import email
import email.policy
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from email.headerregistry import Address
from email.message import EmailMessage, MIMEPart
from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from pbem.mail.compose import MAX_REFERENCES, build_mail, clean_header_value, make_message_id

FROM = "bluff@pbem.example.org"
WHEN = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)


def stdlib_mail(*, from_addr: str, to_addrs: list[str], subject: str, text: str,
                html: str | None, attachments: Sequence[tuple[str, str, bytes]],
                message_id: str, in_reply_to: str | None, references: Sequence[str],
                auto_submitted: str | None, loop_header: tuple[str, str] | None,
                extra_headers: dict[str, str], date: datetime, from_name: str | None) -> bytes:
    """The build_mail of before (EmailMessage), for the inputs this test makes."""
    def ids(raw: Sequence[str]) -> list[str]:
        out: list[str] = []
        for mid in (clean_header_value(r).strip() for r in raw):
            mid = mid if mid.startswith("<") else f"<{mid}>"
            if re.fullmatch(r"<[^<>\s\x00-\x1f\x7f]+>", mid) and "=?" not in mid \
                    and mid not in out:
                out.append(mid)
        return out

    msg = EmailMessage(policy=email.policy.SMTP)
    name = " ".join(clean_header_value(from_name).split()) if from_name else ""
    msg["From"] = Address(display_name=name, addr_spec=from_addr)
    msg["To"] = [Address(addr_spec=a) for a in to_addrs]
    msg["Subject"] = " ".join(clean_header_value(subject).split())
    msg["Date"] = email.utils.format_datetime(date)
    msg["Message-ID"] = message_id
    if in_reply_to and ids([in_reply_to]):
        msg["In-Reply-To"] = ids([in_reply_to])[0]
    if ids(references):
        msg["References"] = " ".join(ids(references)[-MAX_REFERENCES:])
    if auto_submitted:
        msg["Auto-Submitted"] = clean_header_value(auto_submitted).strip()
    if loop_header:
        msg[loop_header[0]] = clean_header_value(loop_header[1]).strip()
    for key, value in extra_headers.items():
        msg[key] = clean_header_value(value).strip()
    msg.set_content(text, subtype="plain", charset="utf-8", cte="quoted-printable")
    if html is not None:
        msg.add_alternative(html, subtype="html", charset="utf-8", cte="quoted-printable")
    for filename, mime_type, data in attachments:
        maintype, _, subtype = mime_type.partition("/")
        msg.add_attachment(data, maintype=maintype, subtype=subtype,
                           filename=" ".join(clean_header_value(filename).split())
                           or "attachment")
    return msg.as_bytes(policy=email.policy.SMTP)


def parse(raw: bytes) -> EmailMessage:
    msg = email.message_from_bytes(raw, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


def text_of(part: MIMEPart | None) -> str | None:
    if part is None:
        return None
    content = part.get_content()
    assert isinstance(content, str)
    return content.replace("\r\n", "\n")


def reading(raw: bytes) -> dict[str, Any]:
    """What a reader of the mail sees."""
    msg = parse(raw)
    sender = msg["From"].addresses[0]
    return {
        "headers": sorted(k.lower() for k in msg),
        "subject": str(msg["Subject"]),
        "from": (sender.display_name, sender.addr_spec),
        "to": [a.addr_spec for a in msg["To"].addresses],
        "date": str(msg["Date"]),
        "ids": [str(msg[h]) if msg[h] is not None else None
                for h in ("Message-ID", "In-Reply-To", "References")],
        "others": [(k.lower(), str(v)) for k, v in msg.items() if k.lower().startswith("x-")
                   or k.lower() == "auto-submitted"],
        "type": msg.get_content_type(),
        "tree": [p.get_content_type() for p in msg.walk()],
        "text": text_of(msg.get_body(preferencelist=("plain",))),
        "html": text_of(msg.get_body(preferencelist=("html",))),
        "attachments": [(a.get_filename(), a.get_content_type(), a.get_payload(decode=True))
                        for a in msg.iter_attachments()],
        "defects": [type(d).__name__ for p in msg.walk() for d in p.defects],
    }


def lines_are_smtp_safe(raw: bytes) -> None:
    assert raw.isascii()
    assert raw.endswith(b"\r\n")
    assert b"\r" not in raw.replace(b"\r\n", b"") and b"\n" not in raw.replace(b"\r\n", b"")
    head, body = raw.split(b"\r\n\r\n", 1)
    assert max(map(len, head.split(b"\r\n"))) <= 998
    assert max(map(len, body.split(b"\r\n"))) <= 78
    for line in raw.split(b"\r\n"):
        assert not line.startswith(b"From "), line
        assert line != b".", line
    for line in head.split(b"\r\n")[1:]:
        assert not line.startswith((b" ", b"\t")) or line.strip(), "a blank folded line"


INJECTIONS = ["\r\nBcc: x@y", "\nBcc: x@y", "\r\n\r\nBody: x", "x@y, z@w", "\u2028Bcc: x@y",
              "\x85Bcc: x@y", "=?utf-8?q?a=0D=0ABcc:_x@y?=", '"q" <x@y>', "\\", "  ", "\t"]
typed = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=150),
    st.text(alphabet="ab ö★\"\\.@<>(),;:", max_size=120),
    st.builds(lambda a, inj, b: a + inj + b, st.text(max_size=40), st.sampled_from(INJECTIONS),
              st.text(max_size=40)),
    st.sampled_from(["x" * 80, "x" * 1500]),
)
body_line = st.one_of(
    st.text(max_size=120),
    st.sampled_from(["From here", "From ", ".", "..", " . ", "-- ", "x" * 3000, "a\tb ",
                     "=?utf-8?b?w7Y=?=", "--=_pbem_x", "=3D", "ö" * 500, "\x0c", "\x00"]),
)
body_text = st.builds(lambda lines, ends: "".join(a + b for a, b in zip(lines, ends)),
                      st.lists(body_line, max_size=12),
                      st.lists(st.sampled_from(["\n", "\r\n", "\r", ""]), min_size=12,
                               max_size=12))
addresses = st.lists(st.sampled_from(["ann@example.com", "bob@example.net",
                                      "d.e+bluff@mail.example.co.uk", "x_y@q.test"]),
                     min_size=1, max_size=4, unique=True)
attachment = st.tuples(typed, st.sampled_from(["application/json", "text/markdown",
                                               "image/png", "application/octet-stream"]),
                       st.binary(max_size=3000))


@settings(max_examples=300, deadline=None)
@given(subject=typed, from_name=typed, note=typed, text=body_text,
       html=st.none() | body_text, attachments=st.lists(attachment, max_size=3),
       to=addresses, auto=st.sampled_from([None, "auto-replied", "auto-generated"]))
@example(subject="Zoë ★ " * 40, from_name="Schiedsrichter Jürgen", note="a  ö  b",
         text="From here\n.\nx\n", html="<p>★</p>",
         attachments=[("RECORD.json", "application/json", b"{}")],
         to=["ann@example.com"], auto="auto-replied")
def test_a_reader_sees_what_the_standard_library_made(
        subject: str, from_name: str, note: str, text: str, html: str | None,
        attachments: list[tuple[str, str, bytes]], to: list[str], auto: str | None) -> None:
    args: dict[str, Any] = dict(
        from_addr=FROM, to_addrs=to, subject=subject, text=text, html=html,
        attachments=attachments, message_id=make_message_id("pbem.example.org", "report"),
        in_reply_to="<p@example.com>", references=["<o@example.com>", "<p@example.com>"],
        auto_submitted=auto, loop_header=("X-Pbem-Loop", FROM),
        extra_headers={"X-PBEM-Note": note}, date=WHEN, from_name=from_name)
    raw = build_mail(**args)
    lines_are_smtp_safe(raw)
    ours, theirs = reading(raw), reading(stdlib_mail(**args))
    assert ours["defects"] == []
    # the standard library may add or drop a space where encoded words meet
    for key in ("subject", "others"):
        assert "".join(str(ours.pop(key)).split()) == "".join(str(theirs.pop(key)).split())
    (our_name, our_addr), (their_name, their_addr) = ours.pop("from"), theirs.pop("from")
    assert our_addr == their_addr and "".join(our_name.split()) == "".join(their_name.split())
    theirs["defects"] = []
    assert ours == theirs
    # ... and ours comes back exactly
    msg = parse(raw)
    assert str(msg["Subject"]) == " ".join(clean_header_value(subject).split())
    assert str(msg["X-PBEM-Note"]) == clean_header_value(note).strip()
    name = " ".join(clean_header_value(from_name).split())
    if all(len(word.encode()) <= 45 for word in name.split()):
        assert msg["From"].addresses[0].display_name == name
    lines = text.encode().splitlines()
    assert ours["text"] == b"\n".join(lines).decode() + "\n"


@settings(max_examples=100, deadline=None)
@given(name=typed)
def test_any_attachment_name_comes_back(name: str) -> None:
    raw = build_mail(from_addr=FROM, to_addrs=["ann@example.com"], subject="s", text="t",
                     attachments=[(name, "application/json", b"{}")],
                     message_id="<a@b.test>", date=WHEN)
    lines_are_smtp_safe(raw)
    (att,) = parse(raw).iter_attachments()
    expected = " ".join(clean_header_value(name).split()) or "attachment"
    # Python's reader takes <...> off a parameter value (email.utils.unquote)
    assert att.get_filename() == email.utils.unquote(expected).strip()
    assert att.get_content() == b"{}"


@given(st.lists(st.sampled_from([b".", b"..", b"\r\n", b"\n", b"\r", b"a", b" ", b"\x00"]),
                max_size=40).map(b"".join))
@example(b".")
@example(b"\r\n.\r\n")
def test_dot_stuffing_is_smtplibs(raw: bytes) -> None:
    """The sender's dot-stuffing is smtplib's (its regular expression: the oracle)."""
    import smtplib

    from pbem.mail.smtp_out import dot_stuffed
    assert dot_stuffed(raw) == smtplib._quote_periods(raw)


def whole_text_qp(text: str) -> bytes:
    """qp_body as it was: the whole text through b2a_qp at once (the oracle)."""
    import binascii

    from pbem.mail.mimeout import _DOT_LINE, _FROM_LINE
    lines = text.encode("utf-8", "replace").splitlines()
    encoded = binascii.b2a_qp(b"\r\n".join(lines) + b"\r\n", istext=True)
    if b"\nFrom " in encoded or encoded.startswith(b"From "):
        encoded = _FROM_LINE.sub(b"=46rom ", encoded)
    if b"\n.\r" in encoded:
        encoded = _DOT_LINE.sub(b"=2E", encoded)
    return encoded


@settings(max_examples=500, deadline=None)
@given(text=body_text | st.text(alphabet=" \t.=aö\n\r", max_size=300))
@example(text="")
@example(text="x" * 74 + " \n" + "y" * 75 + "\t\n.")
@example(text="x" * 75 + "=\n" + " " * 200)
@example(text="x" * 75 + "From here\n" + "y" * 75 + ".\nFrom\n.\n")   # after soft breaks
def test_qp_line_by_line_is_the_whole_texts(text: str) -> None:
    """qp_body encodes (and remembers) line by line: the same bytes as the whole text
    through b2a_qp at once, trailing white space, soft breaks and lone dots included."""
    from pbem.mail.mimeout import qp_body
    assert qp_body(text) == whole_text_qp(text)
    assert qp_body(text) == whole_text_qp(text)      # and again, from the memo
