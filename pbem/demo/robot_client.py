"""A robot at the other end of the mail: reads a report mail, writes an order reply.

`pbem demo`, the end-to-end tests and the benchmark use it to play the
player's side exactly as a person would: from the report's report.json only.
``client_order_lines`` plays any game kind: the kind whose view format the
report.json names decides (``GameKind.client_order_lines``).
"""

from __future__ import annotations

import base64
import binascii
import json
import quopri
import random
import re
from dataclasses import dataclass
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from email.utils import make_msgid
from typing import Any

from pbem.kinds import kind_for_view

__all__ = ["ReadReport", "client_order_lines", "parse_mail", "read_report", "reply_to",
           "report_view"]


def parse_mail(raw: bytes) -> EmailMessage:
    msg = BytesParser(policy=policy.default).parsebytes(raw)
    assert isinstance(msg, EmailMessage)
    return msg


def report_view(msg: EmailMessage) -> dict[str, Any] | None:
    """The report.json attached to a report mail, or None for any other mail."""
    for part in msg.iter_attachments():
        if part.get_filename() == "report.json":
            data = part.get_payload(decode=True)
            if isinstance(data, bytes):
                view: dict[str, Any] = json.loads(data)
                return view
    return None


_BLANK = re.compile(rb"\r?\n\r?\n")
_HEADERS = BytesParser(policy=policy.default)
_REPORT_JSON = b'filename="report.json"'


@dataclass(frozen=True)
class ReadReport:
    """What a robot needs of a mail from the referee (see read_report)."""
    msg: EmailMessage                # the mail: its top-level header at least
    view: dict[str, Any] | None      # its report.json, None for any other mail
    text: str                        # its text part, to quote in a reply


def read_report(raw: bytes) -> ReadReport:
    """A report mail read the cheap way: its header, its report.json, its text part.

    A full MIME parse of a 30 kB report costs milliseconds (minutes for 50,000
    reports); this looks only for the two parts a reply needs, by their MIME
    boundaries. Any other mail, or a report of an unexpected shape, is parsed fully."""
    if _REPORT_JSON in raw:
        try:
            blank = _BLANK.search(raw)
            if blank is not None:
                msg = _HEADERS.parsebytes(raw[:blank.end()], headersonly=True)
                data = _part_body(raw, raw.index(_REPORT_JSON), blank.end())
                text = _part_body(raw, raw.lower().index(b"content-type: text/plain",
                                                          blank.end()), blank.end())
                assert isinstance(msg, EmailMessage)
                return ReadReport(msg, json.loads(data), text.decode("utf-8"))
        except (ValueError, binascii.Error, UnicodeDecodeError):
            pass   # not the shape the referee writes: the full parse below decides
    msg = parse_mail(raw)
    body = msg.get_body(("plain",))
    return ReadReport(msg, report_view(msg), str(body.get_content()) if body is not None else "")


def _part_body(raw: bytes, at: int, top: int) -> bytes:
    """The decoded body of the MIME part whose header holds offset at (past top)."""
    start = raw.rfind(b"\n--", top - 1, at)
    if start < 0:
        raise ValueError("not in a MIME part")
    line_end = raw.index(b"\n", start + 1)
    delimiter = b"\n" + raw[start + 1:line_end].rstrip(b"\r")
    blank = _BLANK.search(raw, at)
    if blank is None:
        raise ValueError("a part without a body")
    head = raw[line_end:blank.start()].lower()
    body = raw[blank.end():raw.index(delimiter, blank.start())]
    body = body[:-1] if body.endswith(b"\r") else body   # the CRLF before a delimiter is its own
    if b"content-transfer-encoding: base64" in head:
        return base64.b64decode(body, validate=False)
    if b"content-transfer-encoding: quoted-printable" in head:
        return quopri.decodestring(body.replace(b"\r\n", b"\n")).replace(b"\r\n", b"\n")
    return body.replace(b"\r\n", b"\n")


def client_order_lines(view: dict[str, Any], rng: random.Random,
                       level: str = "normal") -> list[str]:
    """The order lines a robot player sends in answer to its report.json, for every
    game kind (the view's "format" says which); [] when it has no move to make."""
    fmt = view.get("format")
    try:
        kind = kind_for_view(fmt)
    except KeyError:
        raise ValueError(f"a robot cannot play a report of format {fmt!r}") from None
    return kind.client_order_lines(view, rng, level)


def reply_to(report: EmailMessage, from_addr: str, body_lines: list[str], *,
             quote: bool = True, original: str | None = None) -> bytes:
    """A reply as a mail client writes it: threading headers, the original quoted below
    (original: the report's text when report is only its header, see read_report)."""
    reply = EmailMessage()
    reply["From"] = from_addr
    reply["To"] = str(report["From"])
    subject = str(report["Subject"] or "")
    reply["Subject"] = subject if subject.lower().startswith("re:") else f"Re: {subject}"
    reply["Message-ID"] = make_msgid(domain=from_addr.partition("@")[2] or "localhost")
    original_id = str(report["Message-ID"])
    reply["In-Reply-To"] = original_id
    refs = str(report.get("References") or "").split()
    reply["References"] = " ".join([*refs, original_id])
    text = "\n".join(body_lines) + "\n"
    if quote:
        if original is None:
            body = report.get_body(("plain",))
            original = body.get_content() if body is not None else ""
        text += "\nOn a turn day, the referee wrote:\n" + "".join(
            f"> {line}\n" for line in original.splitlines())
    reply.set_content(text)
    return reply.as_bytes(policy=policy.SMTP)
