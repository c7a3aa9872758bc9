"""Writing MIME by hand: header fields and bodies as bytes, CRLF line ends.

The small part of RFC 5322, 2045-2047 and 2231 that outgoing mail needs, written
directly (``email.message.EmailMessage`` and its header registry cost ~10x more):

- header fields folded before a space so that lines stay within 78 characters
  where the words allow (never past 998); folding only ever turns an existing
  space into CRLF + space, so unfolding gives back the exact value;
- non-ASCII text (and a word too long to fold) as RFC 2047 ``B`` encoded words of
  whole characters, each at most 75 characters; readers join adjacent encoded
  words without the space between them, so the text comes back exactly;
- bodies as quoted-printable (lines of at most 76 characters, ``=2E`` for a lone
  dot, ``=46rom`` for a line starting with "From ") or base64 (76 a line);
- attachment file names as a quoted string, or RFC 2231 ``filename*`` in parts.

The callers clean every value of control characters first (pbem.mail.compose).
"""

from __future__ import annotations

import binascii
import functools
import re
import secrets
from base64 import b64encode, encodebytes
from urllib.parse import quote

__all__ = ["address_field", "base64_body", "boundary", "encoded_words", "field",
           "filename_param", "phrase", "qp_body", "unstructured"]

MAX_LINE = 78          # where folding starts (RFC 5322 "SHOULD")
LONGEST_WORD = 900     # a word longer than this is encoded, to stay under 998 a line
_EW_BYTES = 45         # text bytes per encoded word: "=?utf-8?b?" + 60 + "?=" = 72 chars
_ATOMS = re.compile(r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~ -]+")   # atext and spaces
_FROM_LINE = re.compile(rb"^From ", re.MULTILINE)
_DOT_LINE = re.compile(rb"^\.(?=\r$)", re.MULTILINE)
_PCT_PARTS = re.compile(r"%[0-9A-F]{2}|[^%]")
_FILENAME_CHUNK = 50


def encoded_words(text: str) -> list[str]:
    """``text`` as RFC 2047 ``B`` encoded words (utf-8), none cutting a character."""
    data = text.encode("utf-8", "replace")
    words: list[str] = []
    i, end = 0, len(data)
    while i < end:
        j = min(i + _EW_BYTES, end)
        while j < end and (data[j] & 0xC0) == 0x80:   # not inside a character
            j -= 1
        words.append(f"=?utf-8?b?{b64encode(data[i:j]).decode('ascii')}?=")
        i = j
    return words


def field(name: str, tokens: list[str]) -> str:
    """``Name: tokens`` joined by single spaces, folded before a space when a line would
    pass 78 characters (an empty token, one more space, never starts a line)."""
    lines: list[str] = []
    line = f"{name}:"
    bare = True                  # nothing but the name on the line yet
    for tok in tokens:
        if not bare and tok and len(line) + 1 + len(tok) > MAX_LINE:
            lines.append(line)
            line = " " + tok
        else:
            line = f"{line} {tok}"
            bare = False
    lines.append(line)
    return "\r\n".join(lines) + "\r\n"


def unstructured(name: str, value: str) -> str:
    """An unstructured field (Subject, X-...): ASCII words as they are; each run of
    words with non-ASCII (or too long) in encoded words, the spaces inside the run
    encoded with it (a reader drops the space between two encoded words)."""
    tokens = value.split(" ")
    if value.isascii() and all(len(t) <= LONGEST_WORD for t in tokens):
        return field(name, tokens)
    out: list[str] = []
    run: list[str] = []
    for tok in tokens:
        if run and not tok or not tok.isascii() or len(tok) > LONGEST_WORD:
            run.append(tok)
            continue
        if run:
            out += encoded_words(" ".join(run))
            run = []
        out.append(tok)
    if run:
        out += encoded_words(" ".join(run))
    return field(name, out)


def _quoted(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def phrase(name: str) -> list[str]:
    """A display name (single spaces) as tokens: atoms, or a quoted string, or word by
    word: atoms, quoted strings and encoded words (Python's reader puts a space between
    two encoded words of a phrase, so a word has its own; only a word of more than 45
    bytes needs two)."""
    if name.isascii() and len(name) <= LONGEST_WORD:
        return name.split(" ") if _ATOMS.fullmatch(name) else _quoted(name).split(" ")
    tokens: list[str] = []
    for word in name.split(" "):
        if not word.isascii() or len(word) > LONGEST_WORD:
            tokens += encoded_words(word)
        else:
            tokens.append(word if _ATOMS.fullmatch(word) else _quoted(word))
    return tokens


def address_field(name: str, mailboxes: list[tuple[str, str]]) -> str:
    """``To: a@x, b@y`` or ``From: Name <a@x>``; addresses are checked addr-specs."""
    tokens: list[str] = []
    for i, (display, spec) in enumerate(mailboxes):
        last = i == len(mailboxes) - 1
        if display:
            tokens += phrase(display)
            tokens.append(f"<{spec}>" if last else f"<{spec}>,")
        else:
            tokens.append(spec if last else f"{spec},")
    return field(name, tokens)


def qp_body(text: str) -> bytes:
    """``text`` (utf-8) as quoted-printable with CRLF line ends; the text's line
    breaks (CR, LF or CRLF) become CRLF and it ends with one.

    Line by line, each line's encoding remembered (``_qp_line``): b2a_qp starts every
    line afresh, so the lines encoded one by one join to the bytes of the whole text
    encoded at once (tests/mail/test_compose_bytes.py), and a turn's reports share most
    of their lines (the rows every reader sees, the template's own text). What is done
    to the encoded text for a mbox reader and a lone dot is done to each line (``_qp``),
    so it is remembered too: searching a whole report for it cost as much as its lines'
    look-ups."""
    data = text.encode("utf-8", "replace")
    if b"\r" in data:
        lines = data.splitlines() or [b""]
    else:                     # split is the cheaper of the two (no test of each byte)
        lines = data.split(b"\n")
        if len(lines) > 1 and not lines[-1]:
            lines.pop()       # the text's last line break ends its last line
    return b"".join([_qp_line(line) if len(line) <= _REMEMBERED else _qp(line)
                     for line in lines])


def _qp(line: bytes) -> bytes:
    """One line (without its line break) as quoted-printable, ending in CRLF; each of its
    lines (soft breaks make several) that starts "From " written "=46rom " (mbox writers
    would make it ">From "), and one that is a lone dot after a soft line break (b2a_qp
    leaves it) "=2E"."""
    encoded = binascii.b2a_qp(line + b"\r\n", istext=True)
    if encoded.startswith(b"From ") or b"\nFrom " in encoded:
        encoded = _FROM_LINE.sub(b"=46rom ", encoded)
    if b"\n.\r" in encoded:
        encoded = _DOT_LINE.sub(b"=2E", encoded)
    return encoded


# the lines remembered: 1024 of at most 2 KB (a few MB), enough for a turn's reports of
# a game (each line of a report about a third longer encoded than read)
_REMEMBERED = 2048
_qp_line = functools.lru_cache(maxsize=1024)(_qp)


def base64_body(data: bytes) -> bytes:
    """``data`` in base64, 76 characters a line, CRLF line ends."""
    return encodebytes(data).replace(b"\n", b"\r\n")


def boundary() -> str:
    """A fresh multipart boundary; "=_" cannot occur in quoted-printable or base64."""
    return f"=_pbem_{secrets.token_hex(12)}"


def filename_param(filename: str) -> list[str]:
    """Content-Disposition parameter tokens naming ``filename``."""
    if (filename.isascii() and len(filename) <= _FILENAME_CHUNK
            and not any(c in filename for c in '"\\')):
        return [f'filename="{filename}"']
    parts = _PCT_PARTS.findall(quote(filename.encode("utf-8", "replace"), safe=""))
    chunks: list[str] = []
    chunk = ""
    for part in parts:
        if len(chunk) + len(part) > _FILENAME_CHUNK:
            chunks.append(chunk)
            chunk = ""
        chunk += part
    chunks.append(chunk)
    if len(chunks) == 1:
        return [f"filename*=utf-8''{chunks[0]}"]
    chunks[0] = "utf-8''" + chunks[0]
    return [f"filename*{n}*={c};" if n < len(chunks) - 1 else f"filename*{n}*={c}"
            for n, c in enumerate(chunks)]
