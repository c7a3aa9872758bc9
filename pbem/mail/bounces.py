"""Bounces: which of our mails could not be delivered, to whom, and why.

Detection is flufl.bounce's (Mailman's detectors: RFC 3464 DSNs and the
known MTA formats: Postfix, Exim, qmail, Exchange, ...), which sorts the
failed recipients into permanent (a hard bounce) and temporary (delayed, a
soft bounce). This module adds what flufl.bounce does not do: *which mail*
bounced, so the server can tell the game and the seat, and why.

The bounced mail is named by

* its Message-ID, found in the attached original (message/rfc822), in the
  returned headers (text/rfc822-headers), in a copy of it quoted in the text
  (qmail, older Exim), or in the bounce's own In-Reply-To / References;
* a VERP return path ``bluff+b.<token>@domain``: with ``[smtp] verp = true``
  each mail leaves with its own envelope sender, and the bounce comes back to
  that address (pbem.outbox keeps the token in the mail's outbox row).

Matching the names to an outbox row is pbem.outbox's (``bounced_mail``); a
name nobody sent matches nothing, so a forged bounce marks nobody.
"""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import Message
from email.parser import HeaderParser

from pbem.mail.headers import as_text, read_mail_header

__all__ = ["VERP_TAG", "Bounce", "bounce_scan", "new_bounce_token", "read_bounce",
           "verp_address", "verp_tokens"]

#: The detail that marks a VERP return path: bluff+b.<token>@domain
VERP_TAG = "b"
#: Only this much of a bounce is read (the failure report comes before the original),
#: and only when it has the shape of a bounce: the standard library's parser and the
#: detectors cost time per line and per part, and recurse per nested multipart.
MAX_SCAN_BYTES = 131_072
MAX_SCAN_LINES = 5_000
MAX_SCAN_MULTIPARTS = 20      # "boundary=" parameters (a DSN has two or three)
MAX_SCAN_DELIMITERS = 200     # lines that begin with "--" (boundaries, separators)
MAX_REASON_CHARS = 300
_MAX_TEXT_LINES = 400        # lines of a text part looked at for a reason or quoted headers
_TOKEN = re.compile(r"[a-z0-9]{8,40}")
# our own Message-IDs are printable ASCII: an id of other characters names no mail of ours
_MSG_ID = re.compile(r"<[!-;=?-~]{1,250}@[!-;=?-~]{1,250}>")
_QUOTED_MSG_ID = re.compile(r"^\s*message-id:\s*(<[^<>\s]+>)", re.IGNORECASE | re.MULTILINE)
_SMTP_REPLY = re.compile(r"\b[45]\d\d[ -]|#?\b[45]\.\d{1,3}\.\d{1,3}\b")
_ADDRESS = re.compile(r"[^@\s<>]+@[^@\s<>]+")
_ENVELOPE_HEADERS = ("Delivered-To", "X-Original-To", "Envelope-To", "X-Envelope-To", "To")


@dataclass(frozen=True)
class Bounce:
    """What a bounce says: the failed addresses, and the names of the mail that bounced."""

    permanent: frozenset[str]
    temporary: frozenset[str]
    message_ids: tuple[str, ...] = ()
    verp_tokens: tuple[str, ...] = ()
    reasons: dict[str, str] = field(default_factory=dict)

    @property
    def addresses(self) -> frozenset[str]:
        return self.permanent | self.temporary

    def is_permanent(self, address: str) -> bool:
        return address.lower() in self.permanent

    def reason(self, address: str) -> str:
        return self.reasons.get(address.lower()) or next(iter(self.reasons.values()), "") or \
            "no reason given"


# --------------------------------------------------------------------------- VERP


def new_bounce_token() -> str:
    """A random token for a VERP return path (64 bits, lower-case hex)."""
    return secrets.token_hex(8)


def verp_address(address: str, token: str) -> str:
    """``local+b.<token>@domain`` for the server's ``local@domain``."""
    local, at, domain = address.rpartition("@")
    if not at or not local or not _TOKEN.fullmatch(token):
        raise ValueError(f"cannot make a VERP address of {address!r} and {token!r}")
    return f"{local}+{VERP_TAG}.{token}@{domain}"


def verp_tokens(msg: Message, own_address: str) -> tuple[str, ...]:
    """The tokens of the VERP addresses of ``own_address`` this mail was delivered to."""
    local, _, domain = own_address.lower().rpartition("@")
    # the whole local part: "xbluff+b.<token>" is somebody else's address
    pattern = re.compile(rf"(?<![\w.!#$%&'*+/=?^`{{|}}~-]){re.escape(local)}\+{VERP_TAG}\."
                         rf"([a-z0-9]+)@{re.escape(domain)}(?![\w.-])", re.IGNORECASE)
    found: list[str] = []
    for name in _ENVELOPE_HEADERS:
        for value in msg.get_all(name) or []:
            for token in pattern.findall(str(value)):
                token = token.lower()
                if _TOKEN.fullmatch(token) and token not in found:
                    found.append(token)
    return tuple(found)


# --------------------------------------------------------------------------- reading


def read_bounce(raw: bytes, own_address: str) -> Bounce | None:
    """The bounce in ``raw``, or None when it reports no failed recipient."""
    # flufl.bounce takes about 0.1 s to import: loaded when a bounce comes, not at start-up
    from flufl.bounce import all_failures
    scan = bounce_scan(raw)
    if scan is None:
        return None
    msg = message_from_bytes(scan, policy=policy.compat32)
    try:
        temporary, permanent = all_failures(msg)
    except Exception:  # noqa: BLE001 - a detector tripped over a mangled mail: unreadable
        return None
    own = own_address.lower()
    hard = frozenset(a for a in map(_address, permanent) if _ADDRESS.fullmatch(a) and a != own)
    soft = frozenset(a for a in map(_address, temporary)
                     if _ADDRESS.fullmatch(a) and a != own) - hard
    if not hard and not soft:
        return None
    return Bounce(permanent=hard, temporary=soft, message_ids=_bounced_ids(msg),
                  verp_tokens=verp_tokens(msg, own_address),
                  reasons=_reasons(msg, hard | soft))


_LINE_END = re.compile(rb"\r\n|\r|\n")
_DELIMITER_LINE = re.compile(rb"(?<![^\r\n])--")


def bounce_scan(raw: bytes) -> bytes | None:
    """The part of ``raw`` that is read for a bounce: its first MAX_SCAN_BYTES, cut after
    MAX_SCAN_LINES lines; None when its header has a field over its cap
    (pbem.mail.headers) or it has more multiparts or "--" lines than a bounce has (then
    it is not read as one)."""
    head = read_mail_header(raw)
    if head.cut is not None or any(f.over is not None for f in head.fields):
        return None
    scan = raw[:MAX_SCAN_BYTES]
    for count, found in enumerate(_LINE_END.finditer(scan), start=1):
        if count >= MAX_SCAN_LINES:
            scan = scan[:found.end()]
            break
    if scan.lower().count(b"boundary=") > MAX_SCAN_MULTIPARTS:
        return None
    if len(_DELIMITER_LINE.findall(scan)) > MAX_SCAN_DELIMITERS:
        return None
    return scan


def _address(value: bytes | str) -> str:
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else as_text(value)
    return text.strip().strip("<>").strip().lower()


def _walk(msg: Message) -> list[Message]:
    """Every part, the parts of attached messages included, at most 200 of them."""
    parts: list[Message] = []
    for part in msg.walk():
        parts.append(part)
        if len(parts) >= 200:
            break
    return parts


def _text_of(part: Message) -> str:
    try:
        payload = part.get_payload(decode=True)
    except (ValueError, LookupError, TypeError):   # a mangled transfer encoding
        return ""
    if not isinstance(payload, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return payload.decode(charset, "replace")
    except LookupError:
        return payload.decode("utf-8", "replace")


def _ids_in(value: object) -> list[str]:
    return _MSG_ID.findall(as_text(str(value or "")))


def _bounced_ids(msg: Message) -> tuple[str, ...]:
    """The Message-IDs the bounce names for the mail that bounced, most trusted first."""
    ids: list[str] = []
    own = set(_ids_in(msg.get("Message-ID")))
    for part in _walk(msg):
        ctype = part.get_content_type()
        if ctype == "message/rfc822" and part.is_multipart():
            for inner in part.get_payload():
                if isinstance(inner, Message):
                    ids += _ids_in(inner.get("Message-ID"))
        elif ctype in ("text/rfc822-headers", "message/rfc822-headers"):
            text = _text_of(part) if not part.is_multipart() else \
                "\n".join(str(block) for block in part.get_payload())
            ids += _ids_in(HeaderParser(policy=policy.compat32).parsestr(
                text, headersonly=True).get("Message-ID"))
    for part in _walk(msg):   # a copy of the mail quoted in the text (qmail, old Exim)
        if part.get_content_maintype() == "text" and part.get_content_type() != \
                "text/rfc822-headers":
            head = "\n".join(_text_of(part).splitlines()[:_MAX_TEXT_LINES * 2])
            ids += [i for m in _QUOTED_MSG_ID.findall(head) for i in _ids_in(m)]
    ids += _ids_in(msg.get("In-Reply-To")) + _ids_in(msg.get("References"))
    return tuple(dict.fromkeys(i for i in ids if i not in own))


def _reasons(msg: Message, addresses: frozenset[str]) -> dict[str, str]:
    """address -> why it failed: the DSN's Status and Diagnostic-Code, else a line of text."""
    reasons: dict[str, str] = {}
    for part in _walk(msg):
        if part.get_content_type() != "message/delivery-status" or not part.is_multipart():
            continue
        for block in part.get_payload():
            if not isinstance(block, Message):
                continue
            recipient = _address(str(block.get("Final-Recipient", "")).rpartition(";")[2])
            original = _address(str(block.get("Original-Recipient", "")).rpartition(";")[2])
            status = " ".join(str(block.get("Status", "")).split())
            diagnostic = " ".join(str(block.get("Diagnostic-Code", "")).split())
            diagnostic = diagnostic.partition(";")[2].strip() or diagnostic
            text = "; ".join(x for x in (f"status {status}" if status else "", diagnostic) if x)
            for address in (recipient, original):
                if address in addresses and text:
                    reasons.setdefault(address, _short(text))
    missing = [a for a in addresses if a not in reasons]
    if missing:
        line = _reason_line(msg, missing)
        for address in missing:
            if line:
                reasons[address] = line
    return reasons


def _reason_line(msg: Message, addresses: list[str]) -> str:
    """The first line of the bounce's text that reads like an SMTP error (else one that
    names the address), for the formats without a delivery-status part."""
    naming = previous = ""
    for part in _walk(msg):
        if part.get_content_type() != "text/plain":
            continue
        for line in _text_of(part).splitlines()[:_MAX_TEXT_LINES]:
            line = " ".join(line.split())
            names = any(a in line.lower() for a in addresses)
            if _SMTP_REPLY.search(line):
                # a bare code ("<host #5.1.1>") reads better with the sentence above it
                if len(line) < 60 and previous:
                    return _short(f"{previous} {line}")
                return _short(line)
            if not naming and names:
                naming = line
            if line:
                previous = "" if names else line
        break   # the first text part is the explanation; later ones are the original
    return _short(naming)


def _short(text: str) -> str:
    text = "".join(c if c.isprintable() else " " for c in as_text(text)).strip()
    return text if len(text) <= MAX_REASON_CHARS else text[:MAX_REASON_CHARS - 3] + "..."
