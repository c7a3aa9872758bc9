"""The MIME structure of a mail, found within fixed bounds.

The standard library's feed parser works line by line and parses every part's
headers as it goes: a 10 MB mail of short lines or tiny parts costs seconds and
hundreds of megabytes.  Here the structure is found with a few searches in C
over the raw bytes, never copied: header blocks by :mod:`pbem.mail.headers`,
the parts of a multipart by one regular expression for its boundary.  At most
``MAX_PARTS`` parts are made and multiparts are split down to ``MAX_DEPTH``
levels; a part's payload is decoded only when asked for.

What counts as a header, a boundary, a preamble or a payload follows the feed
parser (so the reader reads what it read before): boundaries only at the start of
a line, the line break before a boundary belongs to it, a part without headers
is text, a multipart without a boundary or whose boundary never comes is one
broken part.  ``message/*`` parts are not opened.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from email.policy import compat32

from pbem.mail.headers import HeaderBlock, read_header_block, read_mail_header

__all__ = ["MAX_DEPTH", "MAX_PARTS", "Part", "parse_structure"]

MAX_DEPTH = 12  # multipart levels split below the top-level message
MAX_PARTS = 500  # parts made in all (one more is made to tell that there were more)
PART_HEADER_BYTES = 16_384  # a part's header block
PART_HEADER_FIELDS = 100

_CONTENT_FIELDS = ("content-type", "content-disposition", "content-transfer-encoding")
_LINE_END = re.compile(rb"(?:\r\n|\r|\n)\Z")


@dataclass(eq=False)
class Part:
    """One MIME part (the mail itself is the top one): its header, the bounds of its
    body in the mail's bytes, and, for a multipart that was split, its parts."""

    head: HeaderBlock
    data: bytes
    start: int
    end: int
    default_type: str = "text/plain"
    children: list[Part] = field(default_factory=list)
    too_deep: bool = False  # a multipart below MAX_DEPTH, not split
    _content: Message | None = field(default=None, repr=False)

    @property
    def over_cap(self) -> str | None:
        """Why this part's header cannot be read (cut short, or a Content-* field over
        its cap), or None."""
        if self.head.cut is not None:
            return self.head.cut
        for f in self.head.fields:
            if f.over is not None and f.name.lower() in _CONTENT_FIELDS:
                return f.over
        return None

    def content(self) -> Message:
        """A bare message holding this part's Content-* fields (within their caps): the
        standard library's reading of types and parameters, on bounded values."""
        if self._content is None:
            msg = Message(policy=compat32)
            msg.set_default_type(self.default_type)
            for f in self.head.fields:
                if f.over is None and f.name.lower() in _CONTENT_FIELDS:
                    msg.set_raw(f.name, f.value)
            self._content = msg
        return self._content

    def content_type(self) -> str:
        try:
            return str(self.content().get_content_type()).lower()
        except Exception:  # noqa: BLE001 - total: an unreadable type is the default type
            return self.default_type

    def param(self, name: str,
              header: str = "content-type") -> str | tuple[str | None, str | None, str] | None:
        try:
            value = self.content().get_param(name, header=header)
        except Exception:  # noqa: BLE001 - total: an unreadable parameter is no parameter
            return None
        return value if isinstance(value, (str, tuple)) else None

    def payload_bytes(self) -> bytes:
        """The body, decoded from its Content-Transfer-Encoding (as the standard library
        decodes it)."""
        body = Message(policy=compat32)
        encoding = self.content().get("Content-Transfer-Encoding")
        if encoding is not None:
            body["Content-Transfer-Encoding"] = str(encoding)
        body.set_payload(self.data[self.start:self.end].decode("ascii", "surrogateescape"))
        decoded = body.get_payload(decode=True)
        return decoded if isinstance(decoded, bytes) else b""

    def raw_body(self) -> bytes:
        return self.data[self.start:self.end]


@dataclass
class _Budget:
    parts: int = MAX_PARTS + 1


def parse_structure(data: bytes) -> Part:
    """The mail in ``data`` as a tree of parts, within the bounds above.  Never raises
    for any bytes (a block or part past a bound is left unsplit and says why)."""
    head = read_mail_header(data)
    top = Part(head, data, head.body_start, len(data))
    if head.cut is None:
        _split(top, 0, _Budget())
    return top


def _split(part: Part, depth: int, budget: _Budget) -> None:
    """Find the parts of a multipart, recursively (depth is at most MAX_DEPTH)."""
    if part.over_cap is not None or not part.content_type().startswith("multipart/"):
        return
    if depth >= MAX_DEPTH:
        part.too_deep = True
        return
    boundary = part.param("boundary")
    if not isinstance(boundary, str) or not boundary:
        return
    child_type = "message/rfc822" if part.content_type() == "multipart/digest" else "text/plain"
    for start, end in _regions(part.data, part.start, part.end, boundary):
        if budget.parts <= 0:
            return
        budget.parts -= 1
        head = read_header_block(part.data, start, end, max_bytes=PART_HEADER_BYTES,
                                 max_fields=PART_HEADER_FIELDS)
        child = Part(head, part.data, head.body_start if head.cut is None else end, end,
                     child_type)
        part.children.append(child)
        _split(child, depth + 1, budget)


def _regions(data: bytes, start: int, end: int, boundary: str) -> Iterator[tuple[int, int]]:
    """The (start, end) of each part between the boundary lines of data[start:end], in
    order; none when the boundary never comes at the start of a line."""
    dashed = b"--" + boundary.encode("ascii", "surrogateescape")
    literal = re.escape(dashed)
    # the literal first (a fast scan in C), then: at the start of a line, and the line
    # holds nothing else but "--" (the last boundary) and blanks
    delimiter = re.compile(literal + rb"(?<![^\r\n]" + literal + rb")(--)?[ \t]*+"
                           rb"(?:\r\n|\r|\n|\Z)")
    pos, opened = start, None
    for _ in range(MAX_PARTS + 2):
        found = delimiter.search(data, pos, end)
        if found is None:
            break
        if opened is not None:
            yield opened, _without_line_end(data, opened, found.start())
        if found.group(1):  # the closing boundary: the rest is the epilogue
            return
        opened = pos = found.end()
    else:
        return
    if opened is not None:
        yield opened, end  # the closing boundary never came


def _without_line_end(data: bytes, start: int, end: int) -> int:
    """end, less the line break just before it (it belongs to the boundary line)."""
    found = _LINE_END.search(data, max(start, end - 2), end)
    return found.start() if found is not None else end
