"""The corpus of reply shapes (corpus.toml) made into reply mails to a real report: the
client's quote header, quoting style, signature, MIME shape and charset, the report's real
text (or HTML) as the quoted part, and the player's new text above it."""

from __future__ import annotations

import base64
import html as html_mod
import quopri
import re
import tomllib
from dataclasses import dataclass
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).parent / "corpus.toml"
ORDER = "BID 2 threes"
THANKS = "Thanks, and good luck to all of you!"


@dataclass(frozen=True)
class Variant:
    """What the player wrote: the new text, and an order put into the quoted report."""

    name: str
    new: tuple[str, ...]
    quoted_order: str | None = None


VARIANTS = (Variant("order", (ORDER,)), Variant("none", (THANKS,)),
            Variant("quoted", ("My order is in the report below.",), quoted_order=ORDER))


def shapes() -> list[dict[str, Any]]:
    with CORPUS.open("rb") as f:
        return list(tomllib.load(f)["shape"])


def _text_of(report: EmailMessage, subtype: str) -> str:
    part = report.get_body((subtype,))
    assert part is not None
    return str(part.get_content())


def _with_order(lines: list[str], order: str | None) -> list[str]:
    """The report's lines, with ``order`` among them (after its first lines) if given."""
    return lines if order is None else [*lines[:4], order, *lines[4:]]


def quote_text(report: EmailMessage, style: str, order: str | None) -> str:
    lines = _with_order(_text_of(report, "plain").splitlines(), order)
    if style == "gt":
        return "\n".join("> " + line if line else ">" for line in lines)
    return "\n".join(lines)


def quote_html(report: EmailMessage, style: str, order: str | None) -> str:
    if style in ("html", "plain"):
        html = _text_of(report, "html")
        found = re.search(r"<body[^>]*>(.*)</body>", html, re.DOTALL | re.IGNORECASE)
        inner = found.group(1) if found else html
        if order is not None:   # into the report's first block
            inner = re.sub(r"(</h1>|</p>)", rf"\1<p>{order}</p>", inner, count=1)
        return inner
    lines = _with_order(_text_of(report, "plain").splitlines(), order)
    return "<br>\n".join(html_mod.escape(line) for line in lines)


def _encoded(text: str, charset: str, cte: str) -> tuple[bytes, str]:
    data = text.replace("\n", "\r\n").encode(charset, "replace")
    if cte == "quoted-printable":
        return quopri.encodestring(data).replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"), cte
    if cte == "base64":
        return base64.encodebytes(data).replace(b"\n", b"\r\n"), cte
    return data, cte


def _flowed(text: str) -> str:
    """format=flowed as a client writes it: long lines broken after a space (RFC 3676)."""
    out: list[str] = []
    for line in text.split("\n"):
        prefix = re.match(r"^(>+ ?)?", line).group(0)   # type: ignore[union-attr]
        body = line[len(prefix):]
        while len(body) > 66 and " " in body[:66]:
            cut = body.rfind(" ", 0, 66) + 1
            out.append(prefix + body[:cut])
            body = body[cut:]
        out.append(prefix + body)
    return "\n".join(out)


def _part(ctype: str, text: str, shape: dict[str, Any]) -> bytes:
    charset, cte = shape["charset"], shape["cte"]
    flowed = "; format=flowed" if shape.get("flowed") and ctype == "text/plain" else ""
    if flowed:
        text = _flowed(text)
    data, cte = _encoded(text, charset, cte)
    return (f"Content-Type: {ctype}; charset=\"{charset}\"{flowed}\r\n"
            f"Content-Transfer-Encoding: {cte}\r\n\r\n").encode() + data


def _fill(template: str, **values: str) -> str:
    """The template with {name} put in (not str.format: a shape's CSS has braces)."""
    for name, value in values.items():
        template = template.replace("{" + name + "}", value)
    return template


def reply(shape: dict[str, Any], report: EmailMessage, variant: Variant, sender: str,
          ours: str) -> bytes:
    """The reply of shape's client from ``sender`` to ``report`` (from ``ours``)."""
    is_html = shape["mime"] == "html"
    new_text = "\n".join(variant.new)
    new_html = "".join(f"<div>{html_mod.escape(line)}</div>" for line in variant.new)
    text_body = _fill(shape["body"], new=new_html if is_html else new_text, ours=ours,
                      quote=(quote_html if is_html else quote_text)(
                          report, shape["quote"], variant.quoted_order))
    head = [f"From: Player <{sender}>", f"To: {ours}", f"Subject: Re: {report['Subject']}",
            f"Message-ID: {make_msgid(domain='client.example')}",
            f"In-Reply-To: {report['Message-ID']}", f"References: {report['Message-ID']}",
            f"Date: {format_datetime(report['Date'].datetime)}", "MIME-Version: 1.0"]
    if shape["mime"] == "alternative":
        html_body = _fill(shape["html"], new=new_html, ours=ours, quote=quote_html(
            report, "html" if shape["quote"] != "htmltext" else "htmltext",
            variant.quoted_order))
        body = (b"--alt-boundary\r\n" + _part("text/plain", text_body, shape) +
                b"\r\n--alt-boundary\r\n" + _part("text/html", html_body, shape) +
                b"\r\n--alt-boundary--\r\n")
        head.append('Content-Type: multipart/alternative; boundary="alt-boundary"')
        return "\r\n".join(head).encode() + b"\r\n\r\n" + body
    part = _part("text/html" if is_html else "text/plain", text_body, shape)
    return "\r\n".join(head).encode() + b"\r\n" + part
