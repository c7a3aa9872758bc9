"""One rule for mail addresses, used where mail comes in and where it goes out.

The server acts on a sender's address and writes its answers to it, so what it
reads as a sender must be exactly what it can write to.  :func:`address_problem`
is that rule, for reading (:func:`parse_sender`, used by :mod:`pbem.mail.read`)
and for composing (:mod:`pbem.mail.compose`): a plain ASCII ``local@domain``:

- the local part a dot-atom (RFC 5322 atext and single dots), at most 64 characters;
- the domain a host name (letters, digits and hyphens in dot-separated labels);
- no space, control character, quote, bracket or encoded word, at most 254 characters.

Internationalised addresses (a non-ASCII local part or domain, RFC 6531 SMTPUTF8)
are not supported end to end, so they are refused here, at the edge: a mail from
``р1@bluff.test`` (a Cyrillic "р") is ignored with that reason instead of failing
later, when the answer to it cannot be written.

:func:`parse_sender` reads a From (or Reply-To) header the way a mail client shows
it: the sender is the address in angle brackets, never something that looks like
an address in the display name (``p3@bluff.test <evil@x.test>`` is from evil@x.test).
A header that does not name exactly one mailbox names no sender.  It is a single
pass over the header text, linear in its length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pbem.text.errors import PbemError

__all__ = ["Sender", "address_problem", "checked_address", "parse_sender"]

MAX_ADDRESS_CHARS = 254
MAX_LOCAL_PART_CHARS = 64
MAX_COMMENT_DEPTH = 20

_ATEXT = r"A-Za-z0-9!#$%&'*+/=?^_`{|}~-"
_LOCAL_PART = re.compile(rf"[{_ATEXT}]+(?:\.[{_ATEXT}]+)*")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_DOMAIN = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_SPACE_OR_CONTROL = re.compile(r"[\s\x00-\x1f\x7f]")


def address_problem(spec: str) -> str | None:
    """Why ``spec`` is not an address this server reads or writes; None when it is one."""
    if not spec:
        return "the address is empty"
    if not spec.isascii():
        return ("it has characters outside ASCII (internationalised addresses are not "
                "supported)")
    if _SPACE_OR_CONTROL.search(spec):
        return "it has a space or a control character"
    if "=?" in spec:
        return "it holds an encoded word"
    if spec.count("@") != 1:
        return "it is not of the form name@domain"
    if len(spec) > MAX_ADDRESS_CHARS:
        return f"it is longer than {MAX_ADDRESS_CHARS} characters"
    local, domain = spec.split("@")
    if len(local) > MAX_LOCAL_PART_CHARS:
        return f"its name part is longer than {MAX_LOCAL_PART_CHARS} characters"
    if not _LOCAL_PART.fullmatch(local):
        return "its name part (before the @) has characters or dots an address may not have"
    if not _DOMAIN.fullmatch(domain):
        return "its domain (after the @) is not a host name"
    return None


def checked_address(spec: str) -> str:
    """``spec`` without surrounding white space; ValueError if :func:`address_problem`
    finds one."""
    stripped = spec.strip()
    problem = address_problem(stripped)
    if problem is not None:
        raise ValueError(f"not a plain mail address: {spec!r} ({problem})")
    return stripped


@dataclass(frozen=True)
class Sender:
    """What an address header says about who sent a mail."""

    address: str | None  # the addr-spec, lowercased; None when there is none to act on
    display_name: str  # as written (quotes removed, encoded words not yet decoded)
    local_part: str  # of the addr-spec found, even a refused one, lowercased
    problem: str | None  # why address is None, in words for the log


@dataclass
class _Mailbox:
    """One comma-separated item of an address list, cut into its pieces."""

    before: list[str]  # display-name text (quoted strings unquoted), before any <...>
    written: list[str]  # the same as written (quotes kept): an addr-spec without <...>
    angles: list[str]  # the contents of each <...>
    after: list[str]  # text (not comments) after the first <...>
    comments: list[str]


class _Unreadable(PbemError):
    pass


def _scan_quoted(value: str, i: int) -> tuple[str, int]:
    """The quoted string starting at value[i] == '"': (its content unescaped, end index)."""
    out: list[str] = []
    i += 1
    while i < len(value):
        c = value[i]
        if c == "\\" and i + 1 < len(value):
            out.append(value[i + 1])
            i += 2
            continue
        if c == '"':
            return "".join(out), i + 1
        out.append(c)
        i += 1
    raise _Unreadable("a quoted string is not closed")


def _scan_comment(value: str, i: int) -> tuple[str, int]:
    """The comment starting at value[i] == '(' (nested, escapes): (its text, end index)."""
    depth, start = 0, i
    while i < len(value):
        c = value[i]
        if c == "\\":
            i += 2
            continue
        if c == "(":
            depth += 1
            if depth > MAX_COMMENT_DEPTH:
                raise _Unreadable("comments are nested too deeply")
        elif c == ")":
            depth -= 1
            if depth == 0:
                return value[start + 1:i], i + 1
        i += 1
    raise _Unreadable("a comment is not closed")


def _scan_angle(value: str, i: int) -> tuple[str, int]:
    """The angle address starting at value[i] == '<': (its content, end index)."""
    end = value.find(">", i + 1)
    if end < 0:
        raise _Unreadable("an address in angle brackets is not closed")
    inner = value[i + 1:end]
    if "<" in inner:
        raise _Unreadable("angle brackets are nested")
    return inner, end + 1


def _mailboxes(value: str) -> list[_Mailbox]:
    """Cut an address list into mailboxes, in one pass; _Unreadable for a group or
    unbalanced quotes, comments or brackets."""
    boxes = [_Mailbox([], [], [], [], [])]
    i = 0
    while i < len(value):
        box = boxes[-1]
        c = value[i]
        if c == '"':
            text, end = _scan_quoted(value, i)
            if box.angles:
                box.after.append(text)
            else:
                box.before.append(text)
                box.written.append(value[i:end])
            i = end
            continue
        if c == "(":
            text, i = _scan_comment(value, i)
            box.comments.append(text)
            continue
        if c == "<":
            text, i = _scan_angle(value, i)
            box.angles.append(text)
            continue
        if c == ",":
            boxes.append(_Mailbox([], [], [], [], []))
        elif c in ":;":
            raise _Unreadable("it is a group, not one sender")
        elif c in ">)":
            raise _Unreadable(f"it has a stray {c!r}")
        elif box.angles:
            box.after.append(c)
        else:
            box.before.append(c)
            box.written.append(c)
        i += 1
    return [b for b in boxes if b.angles or "".join(b.before).strip()]


def parse_sender(value: str | None) -> Sender:
    """Who an address header (From, Reply-To) names as its one sender.

    The address is the one in angle brackets when there is one (anything before it
    is the display name, whatever it looks like), else the whole header without its
    comments.  No sender (address None, with a problem) when the header is missing
    or empty, names several mailboxes or a group, has two angle addresses, text
    after the angle address, unbalanced quotes, comments or brackets, or when the
    address fails :func:`address_problem`.
    """
    if value is None or not value.strip():
        return Sender(None, "", "", "no sender address")
    flat = value.replace("\r", "").replace("\n", "")
    try:
        boxes = _mailboxes(flat)
    except _Unreadable as exc:
        return Sender(None, "", "", f"the sender's address cannot be read: {exc}")
    if not boxes:
        return Sender(None, "", "", "no sender address")
    if len(boxes) > 1:
        return Sender(None, "", "", "the mail names several senders")
    (box,) = boxes
    if len(box.angles) > 1:
        return Sender(None, "", "", "the sender's address cannot be read: it has two "
                                    "addresses in angle brackets")
    if box.angles:
        spec, display = box.angles[0].strip(), "".join(box.before).strip()
        if "".join(box.after).strip():
            return Sender(None, display, _local_part(spec),
                          "the sender's address cannot be read: there is text after it")
    else:
        spec, display = "".join(box.written).strip(), ""
    local = _local_part(spec)
    problem = address_problem(spec)
    if problem is not None:
        return Sender(None, display, local, f"the sender's address cannot be used: {problem}")
    return Sender(spec.lower(), display, local, None)


def _local_part(spec: str) -> str:
    return spec.rsplit("@", 1)[0].strip().strip('"').lower()
