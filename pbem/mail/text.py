"""Pure text helpers for inbound mail: HTML to text, and format=flowed undone.

Both public functions are total: whatever string they get, they return a value and never
raise.  Nothing here touches MIME; :mod:`pbem.mail.body` does that and calls these.  The
new text of a reply is found by :mod:`pbem.mail.newtext` (re-exported here).

Line numbering convention: the lines of a text are ``text.splitlines()``, numbered from 1.
"""

from __future__ import annotations

import html as html_mod
import re

from pbem.mail.newtext import BodyLine, new_text_lines

__all__ = ["BodyLine", "html_to_text", "new_text_lines", "unflow"]


# ---------------------------------------------------------------------------------------------
# HTML -> text
# ---------------------------------------------------------------------------------------------

# Elements whose whole content is never shown.
_DROP_TAGS = frozenset(
    {
        "script", "style", "title", "template", "noscript", "iframe", "object", "embed",
        "svg", "math", "canvas", "audio", "video", "select", "datalist", "head", "meta", "link",
    }
)
# Elements that start and end a line of their own.
_BLOCK_TAGS = frozenset(
    {
        "p", "div", "li", "tr", "table", "tbody", "thead", "tfoot", "caption", "ul", "ol",
        "dl", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "hr",
        "section", "article", "header", "footer", "address", "center", "form", "fieldset",
        "figure", "figcaption", "main", "nav", "aside", "body", "html", "details", "summary",
        "legend", "listing", "plaintext", "xmp",
    }
)
_CELL_TAGS = frozenset({"td", "th"})
# ids at which a reply's own text ends: the element and everything after it is the original.
_STOP_IDS = frozenset(
    {
        "divrplyfwdmsg",  # Outlook (web / 365): header block of the quoted original
        "appendonsend",  # Outlook: marker just before that block
        "stopspelling",  # Outlook.com / Hotmail: <hr id="stopSpelling">
        "mail-editor-reference-message-container",  # new Outlook
    }
)
# class names whose element (and content) is quoted material to drop.
_DROP_CLASS_PREFIXES = ("gmail_quote", "yahoo_quoted")
MAX_QUOTE_MARKS = 10  # "> " marks written for nested quotes, at most
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)
_WS_RUN = re.compile(r"[ \t\n\r\f\v]+")


class _Writer:
    """Accumulates rendered lines; quote depth gives a ``> `` prefix per level."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.cur: list[str] = []
        self.depth = 0
        self.pre = 0

    def _has_content(self) -> bool:
        return any(piece.strip() for piece in self.cur)

    def emit(self) -> None:
        line = "".join(self.cur).replace("\xa0", " ")
        line = line.rstrip() if self.pre else line.strip()
        # a quote is a quote at any depth: past a few levels the marks only cost memory
        # (15,000 nested blockquotes would make gigabytes of "> ")
        prefix = "> " * min(self.depth, MAX_QUOTE_MARKS)
        self.lines.append((prefix + line).rstrip())
        self.cur = []

    def text(self, s: str) -> None:
        s = s.translate(_ZERO_WIDTH)
        if not s:
            return
        if self.pre:
            parts = s.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            self.cur.append(parts[0])
            for part in parts[1:]:
                self.emit()
                self.cur.append(part)
            return
        s = _WS_RUN.sub(" ", s)
        if not self.cur or "".join(self.cur).endswith((" ", "\xa0")):
            s = s.lstrip(" ")
        if s:
            self.cur.append(s)

    def hard_break(self) -> None:
        self.emit()

    def soft_break(self) -> None:
        if self._has_content():
            self.emit()
        else:
            self.cur = []

    def result(self) -> str:
        self.soft_break()
        out: list[str] = []
        for line in self.lines:
            # collapse runs of blank lines, and drop leading/trailing blank lines
            if not line.strip() and (not out or not out[-1].strip()):
                continue
            out.append(line)
        while out and not out[-1].strip():
            out.pop()
        return "\n".join(out)


def _classes(tag: object) -> list[str]:
    get = getattr(tag, "get", None)
    if get is None:
        return []
    value = get("class")
    if value is None:
        return []
    if isinstance(value, str):
        return value.split()
    return [str(v) for v in value]


def _attr(tag: object, name: str) -> str:
    get = getattr(tag, "get", None)
    if get is None:
        return ""
    value = get(name)
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return " ".join(str(v) for v in value)


def _is_indent_blockquote(tag: object) -> bool:
    """Gmail/Outlook use a borderless <blockquote> for the "indent" button: that is the
    writer's own text, not a quote."""
    if _attr(tag, "type").strip().lower() == "cite":
        return False
    if any(c.startswith(_DROP_CLASS_PREFIXES) for c in _classes(tag)):
        return False
    style = re.sub(r"\s+", "", _attr(tag, "style").lower())
    return "border:none" in style


_BORDER_TOP = re.compile(r"border-top(-style)?:[^;]*\bsolid\b")
# "From:" in the languages of Windows Mail and Outlook, and any "<word>:" opening the block
_LABEL = re.compile(r"^\s*[^\W\d_][^\W\d]{1,20}\s*[:：]")
HEADER_PEEK_NODES = 12  # nodes of a bordered div looked at for its "From:" label


def _is_bordered_header(tag: object) -> bool:
    """Windows Mail and some Outlooks put the original's From/Sent/To block in a <div>
    with a solid top border (no blockquote, no <hr>): that div begins the quote."""
    style = re.sub(r"\s+", "", _attr(tag, "style").lower())
    if "solid" not in style or not _BORDER_TOP.search(style):
        return False
    seen = ""
    # the first few nodes only, walked by hand (bs4's descendants first finds the last
    # one): a hostile mail's many nested bordered divs cost no full walk each
    todo = list(reversed(getattr(tag, "contents", [])[:HEADER_PEEK_NODES]))
    for _ in range(HEADER_PEEK_NODES):
        if not todo:
            break
        node = todo.pop()
        if isinstance(node, str):
            seen += str(node)
            if seen.strip():
                break
            continue
        todo.extend(reversed(getattr(node, "contents", [])[:HEADER_PEEK_NODES]))
    return bool(_LABEL.match(seen.replace("\xa0", " ")))


def _mark_dropped_quote(w: _Writer, reading: bool) -> None:
    """A quote the HTML drops whole leaves one quoted line "> ..." in a mail read for its
    new text, so that the reading says it ignored a quote (pbem.mail.newtext)."""
    if not reading:
        return
    w.soft_break()
    w.depth += 1
    w.text("...")
    w.soft_break()
    w.depth -= 1


def _render(html: str, stop_at_header_div: bool) -> str:
    # bs4 is imported on the first HTML mail, not at start-up: it is heavy (about 0.1 s),
    # and plain-text mail and every command of the CLI never need it
    from bs4 import BeautifulSoup
    from bs4.element import (
        CData,
        Comment,
        Declaration,
        Doctype,
        NavigableString,
        PageElement,
        ProcessingInstruction,
        Script,
        Stylesheet,
        Tag,
        TemplateString,
    )

    skip_strings = (
        Comment, CData, Declaration, Doctype, ProcessingInstruction, Script, Stylesheet,
        TemplateString,
    )
    soup = BeautifulSoup(html, "html.parser")
    w = _Writer()
    # explicit stack (no recursion, so arbitrarily deep HTML is fine)
    todo: list[tuple[bool, PageElement]] = [(False, c) for c in reversed(soup.contents)]
    while todo:
        leaving, node = todo.pop()
        if isinstance(node, NavigableString):
            if not isinstance(node, skip_strings):
                w.text(str(node))
            continue
        if not isinstance(node, Tag):
            continue
        name = (node.name or "").lower()
        if leaving:
            if name == "blockquote" and not _is_indent_blockquote(node):
                w.soft_break()
                w.depth = max(0, w.depth - 1)
            elif name == "pre":
                w.soft_break()
                w.pre = max(0, w.pre - 1)
            elif name in _BLOCK_TAGS:
                w.soft_break()
            continue
        if _attr(node, "id").strip().lower() in _STOP_IDS:
            _mark_dropped_quote(w, stop_at_header_div)
            break
        if stop_at_header_div and name == "div" and _is_bordered_header(node):
            _mark_dropped_quote(w, stop_at_header_div)
            break
        if name in _DROP_TAGS:
            continue
        if any(c.lower().startswith(_DROP_CLASS_PREFIXES) for c in _classes(node)):
            _mark_dropped_quote(w, stop_at_header_div)
            continue
        if name == "br":
            w.hard_break()
            continue
        if name == "blockquote" and not _is_indent_blockquote(node):
            w.soft_break()
            w.depth += 1
        elif name == "pre":
            w.soft_break()
            w.pre += 1
        elif name in _BLOCK_TAGS:
            w.soft_break()
        elif name in _CELL_TAGS:
            if w._has_content():
                w.text(" ")
        todo.append((True, node))
        todo.extend((False, c) for c in reversed(node.contents))
    return w.result()


_TAG_RE = re.compile(r"<[^>]*>")
_DROP_BLOCK_RE = re.compile(r"<(script|style)\b.*?(</\1\s*>|\Z)", re.IGNORECASE | re.DOTALL)


def _crude_html_to_text(html: str) -> str:
    """Last resort when the parser fails: strip tags with regexes."""
    try:
        s = _DROP_BLOCK_RE.sub(" ", html)
        s = re.sub(r"<\s*(br|/p|/div|/li|/tr|p|div|li|tr)\b[^>]*>", "\n", s, flags=re.IGNORECASE)
        s = _TAG_RE.sub("", s)
        s = html_mod.unescape(s).replace("\xa0", " ")
        return "\n".join(line.strip() for line in s.splitlines())
    except Exception:
        return ""


def html_to_text(html: str, *, stop_at_header_div: bool = False) -> str:
    """Render an HTML mail body as plain text.

    Block elements (``p``, ``div``, ``li``, ``tr``, ...) and ``<br>`` give line breaks,
    scripts and styles are dropped, entities are decoded.  Quoted material is marked or
    dropped so that :func:`new_text_lines` ignores it: ``<blockquote>`` content becomes
    ``> ``-quoted lines, Gmail's ``div.gmail_quote`` is dropped, and Outlook's
    ``#divRplyFwdMsg`` / ``#appendonsend`` and everything after it are dropped; with
    ``stop_at_header_div`` (a mail read for its new text), so are a ``<div>`` with a solid
    top border that opens with a "From:" label in any language (Windows Mail, some
    Outlooks: the original's header block) and everything after it.  Never raises.
    """
    try:
        if not isinstance(html, str):
            html = str(html)
        return _render(html, stop_at_header_div)
    except Exception:  # includes RecursionError from a pathological document
        return _crude_html_to_text(html if isinstance(html, str) else "")


# ---------------------------------------------------------------------------------------------
# format=flowed (RFC 3676)
# ---------------------------------------------------------------------------------------------


def unflow(text: str, delsp: bool = False) -> str:
    """Undo ``format=flowed`` soft line breaks (RFC 3676).  Never raises."""
    try:
        out: list[str] = []
        para: list[str] | None = None
        para_depth = 0
        for raw in text.splitlines():
            depth = len(raw) - len(raw.lstrip(">"))
            body = raw[depth:]
            if body.startswith(" "):  # space-stuffing
                body = body[1:]
            is_sig = body == "-- "
            flowed = body.endswith(" ") and not is_sig
            if para is not None and depth != para_depth:
                out.append(_quote_prefix(para_depth) + "".join(para))
                para = None
            if flowed:
                piece = body[:-1] if delsp else body
                if para is None:
                    para, para_depth = [piece], depth
                else:
                    para.append(piece)
                continue
            if para is not None:
                para.append(body)
                out.append(_quote_prefix(para_depth) + "".join(para))
                para = None
            else:
                out.append(_quote_prefix(depth) + body)
        if para is not None:
            out.append(_quote_prefix(para_depth) + "".join(para))
        return "\n".join(out)
    except Exception:
        return text if isinstance(text, str) else ""


def _quote_prefix(depth: int) -> str:
    return ">" * depth + " " if depth else ""
