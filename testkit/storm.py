"""Hostile header shapes, as a storm of broken and hostile mail brings them (issue 32).

Each entry of :data:`HOSTILE` is one category: a name and the raw header lines (bytes,
CRLF-terminated) it puts into a mail. :func:`storm_mail` wraps them into a whole mail
from a sender, with a Message-ID of its own unless the category brings one, so that a
test can send every category from a known address (and expect its answer) or from a
fresh stranger. The shapes are the storm's: raw 8-bit bytes in every header the server
reads, overlong headers, encoded words with bad charsets or that decode into line
breaks, NULs, bare CR and LF, headers that try to add a recipient.
"""

from __future__ import annotations

import itertools
import random

_ids = itertools.count(1)

HOSTILE: list[tuple[str, bytes]] = [
    ("8bit-message-id", b"Message-ID: <\xfcz015\xd4.a@f\xfczz.test>\r\n"),
    ("8bit-message-id-bare", b"Message-ID: \xc5\xc5\xc5@x.test\r\n"),
    ("8bit-references", b"References: <a\xc5b@x.test> <ok@x.test>\r\n"),
    ("8bit-in-reply-to", b"In-Reply-To: <\xe9\xff@x.test>\r\n"),
    ("8bit-subject", b"Subject: caf\xe9 \xff\xfe r\xc3\xa9sum\xc3\xa9\r\n"),
    ("8bit-display-name", b"From: \xc5ke \xff <{sender}>\r\n"),
    ("8bit-address", b"From: <\xe9t\xe9@x.test>\r\n"),
    ("8bit-charset", b"Content-Type: text/plain; charset=\"\xff\xfeutf\xc5\"\r\n"),
    ("8bit-filename", b"Content-Type: text/plain; name=\"\xe9t\xe9.txt\"\r\n"
                      b"Content-Disposition: inline; filename=\"\xe9t\xe9\xff.txt\"\r\n"),
    ("rfc2231-bad-charset", b"Content-Type: text/plain; charset=utf-8\r\n"
                            b"Content-Disposition: inline; filename*=x-nope''%FF%FE%00.txt\r\n"),
    ("8bit-received", b"Received: from h\xe9llo ([10.0.0.1]) by x\r\n"),
    ("8bit-auth-results", b"Authentication-Results: mx.test; dkim=pass header.d=\xe9.test\r\n"),
    ("overlong-subject", b"Subject: " + b"A" * 120_000 + b"\r\n"),
    ("overlong-references", b"References: " + b" ".join(
        f"<r{i}\xe9@x.test>".encode("latin-1") for i in range(9000)) + b"\r\n"),
    ("overlong-message-id", b"Message-ID: <" + b"\xe9" * 3000 + b"@x.test>\r\n"),
    ("many-references", b"References: " + b" ".join(
        f"<r{i}@x.test>".encode() for i in range(500)) + b"\r\n"),
    ("bad-charset-word", b"Subject: =?x-no-such-charset?q?caf=E9?= =?utf-8?b?////?=\r\n"),
    ("surrogate-word", b"Subject: =?utf-8?b?7aCA?= =?utf-16?b?ANg=?= =?utf-7?q?+2AA-?=\r\n"),
    ("crlf-word", b"Subject: =?utf-8?q?hi=0D=0ABcc:_evil@x.test?=\r\n"),
    ("crlf-word-name", b"From: =?utf-8?q?Ev=0D=0ABcc:_evil@x.test?= <{sender}>\r\n"),
    ("nul-subject", b"Subject: a\x00b\x00\x00c\r\n"),
    ("nul-message-id", b"Message-ID: <a\x00b@x.test>\r\n"),
    ("nul-references", b"References: <a\x00b@x.test>\r\n"),
    ("bare-cr-subject", b"Subject: a\rBcc: evil@x.test\r\n"),
    ("bare-lf-references", b"References: <a@x.test>\nBcc: evil@x.test\r\n"),
    ("crlf-in-id", b"In-Reply-To: <a@x.test>\r\nBcc: evil@x.test\r\n"),
    ("c1-controls", b"Subject: \xc2\x85\xc2\x9b31m\xe2\x80\xa8x\r\n"),
    ("bidi-name", b"From: \xe2\x80\xaeevil\xe2\x80\xac <{sender}>\r\n"),
]


def storm_mail(category: bytes, sender: str, body: str = "HELP",
               to: str = "bluff@example.org") -> bytes:
    """A whole mail from ``sender`` carrying ``category``'s header lines (a From, a
    Subject or a Message-ID it brings stands for the plain one)."""
    lines = category.replace(b"{sender}", sender.encode())
    names = {line.split(b":", 1)[0].strip().lower()
             for line in lines.split(b"\r\n") if b":" in line and line[:1] not in b" \t"}
    head = b""
    if b"from" not in names:
        head += f"From: Someone <{sender}>\r\n".encode()
    head += f"To: {to}\r\n".encode()
    if b"subject" not in names:
        head += b"Subject: storm\r\n"
    if b"message-id" not in names:
        head += f"Message-ID: <storm-{next(_ids)}@storm.test>\r\n".encode()
    if b"content-type" not in names:
        head += b"Content-Type: text/plain; charset=utf-8\r\n"
    return head + lines + b"\r\n" + body.encode() + b"\r\n"


def mutated(raw: bytes, rng: random.Random, times: int = 3) -> bytes:
    """``raw`` with a few random mutations: bytes flipped to 8-bit ones, NULs and bare
    line breaks put in, a span cut out or doubled, a hostile header line put in its
    header."""
    data = bytearray(raw)
    for _ in range(times):
        if not data:
            break
        at = rng.randrange(len(data))
        what = rng.randrange(6)
        if what == 0:
            data[at] = rng.choice([0x80, 0xC5, 0xE9, 0xFF, 0xFE, 0xD4])
        elif what == 1:
            data[at:at] = rng.choice([b"\x00", b"\r", b"\n", b"\r\n", b"\r\n\r\n", b"=?"])
        elif what == 2:
            data[at:at + rng.randrange(1, 40)] = b""
        elif what == 3:
            span = bytes(data[at:at + rng.randrange(1, 200)])
            data[at:at] = span * rng.randrange(1, 5)
        else:
            line = rng.choice(HOSTILE)[1].replace(b"{sender}", b"x@storm.test")
            end = data.find(b"\r\n\r\n")
            cut = rng.randrange(end + 2) if end > 0 else 0
            cut = data.rfind(b"\r\n", 0, cut) + 2 if cut else 0
            data[cut:cut] = line[:2000]
    return bytes(data)
