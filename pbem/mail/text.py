"""Pure text helpers for inbound mail: HTML to text, and finding the new text of a reply.

Both public functions are total: whatever string they get, they return a value and never
raise.  Nothing here touches MIME; :mod:`pbem.mail.read` does that and calls these.

Line numbering convention: the lines of a text are ``text.splitlines()``, numbered from 1.

Just over 400 lines: the HTML walker and the quote finder share the line model above.
"""

from __future__ import annotations

import html as html_mod
import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["BodyLine", "html_to_text", "new_text_lines", "unflow"]


@dataclass(frozen=True)
class BodyLine:
    number: int  # 1-based line number in the extracted text (error messages quote the line)
    text: str  # the line, stripped of trailing whitespace


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


def _render(html: str) -> str:
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
            break
        if name in _DROP_TAGS:
            continue
        if any(c.lower().startswith(_DROP_CLASS_PREFIXES) for c in _classes(node)):
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


def html_to_text(html: str) -> str:
    """Render an HTML mail body as plain text.

    Block elements (``p``, ``div``, ``li``, ``tr``, ...) and ``<br>`` give line breaks,
    scripts and styles are dropped, entities are decoded.  Quoted material is marked or
    dropped so that :func:`new_text_lines` ignores it: ``<blockquote>`` content becomes
    ``> ``-quoted lines, Gmail's ``div.gmail_quote`` is dropped, and Outlook's
    ``#divRplyFwdMsg`` / ``#appendonsend`` and everything after it are dropped.
    Never raises.
    """
    try:
        if not isinstance(html, str):
            html = str(html)
        return _render(html)
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


# ---------------------------------------------------------------------------------------------
# New text of a reply
# ---------------------------------------------------------------------------------------------

_QUOTED = re.compile(r"^\s*>")
_SIG_SEP = re.compile(r"^\s*--\s*$")

# "On <date>, <name> wrote:" and friends: opener word ... closing phrase.
_ATTRIBUTION = [
    re.compile(r"^\s*On\s.{0,400}\bwrote\s*:\s*$", re.IGNORECASE),  # en (Gmail/Apple/Tb)
    re.compile(r"^\s*Am\s.{0,400}\bschrieb\b.{0,300}:\s*$", re.IGNORECASE),  # de
    re.compile(r"^\s*Le\s.{0,400}\ba\s+[ée]crit\s*:\s*$", re.IGNORECASE),  # fr
    re.compile(r"^\s*El\s.{0,400}\bescribi[óo]\s*:\s*$", re.IGNORECASE),  # es
    re.compile(r"^\s*Em\s.{0,400}\bescreveu\s*:\s*$", re.IGNORECASE),  # pt
    re.compile(r"^\s*Il\s.{0,400}\bha\s+scritto\s*:\s*$", re.IGNORECASE),  # it
    re.compile(r"^\s*Op\s.{0,400}\bschreef\b.{0,300}:\s*$", re.IGNORECASE),  # nl
]
_ATTRIBUTION_OPENER = re.compile(r"^\s*(On|Am|Le|El|Em|Il|Op)\s", re.IGNORECASE)
# "Name wrote:" / "Name schrieb am ...:" without an opener: only an attribution when quoted
# text follows it.
_WEAK_ATTRIBUTION = re.compile(
    r"^.{1,300}\b(wrote|schrieb|a\s+[ée]crit|escribi[óo]|escreveu|ha\s+scritto|schreef)\b.{0,300}:\s*$",
    re.IGNORECASE,
)
# Lines from which everything is the forwarded / original message.
_ORIGINAL_MARKER = re.compile(
    r"^\s*-{2,}\s*(original message|ursprüngliche nachricht|message d'origine|"
    r"message original|forwarded message|weitergeleitete nachricht|mensaje original|"
    r"mensagem original|messaggio originale|oorspronkelijk bericht|doorgestuurd bericht)"
    r"\s*-{2,}\s*$",
    re.IGNORECASE,
)
_FORWARD_MARKER = re.compile(
    r"^\s*(begin forwarded message|anfang der weitergeleiteten nachricht|"
    r"début du message réexpédié|inizio messaggio inoltrato)\s*:\s*$",
    re.IGNORECASE,
)
_UNDERSCORES = re.compile(r"^\s*_{10,}\s*$")
# Outlook-style header block of the original message (a few common languages).
_HDR_FROM = re.compile(r"^\s*\*?(From|Von|De|Van|Da|Från|Fra)\s*:\*?\s*\S", re.IGNORECASE)
_HDR_SENT = re.compile(
    r"^\s*\*?(Sent|Date|Gesendet|Datum|Envoyé|Enviado|Fecha|Verzonden|Inviato|Skickat|Sendt)"
    r"\s*:\*?", re.IGNORECASE
)
_HDR_TO = re.compile(
    r"^\s*\*?(To|Subject|An|Betreff|À|A|Para|Objet|Asunto|Aan|Onderwerp|Oggetto|Till|Ämne|Til|Emne)"
    r"\s*:\*?", re.IGNORECASE
)
# Single-line mobile signatures, dropped on their own.
_MOBILE_SIG = re.compile(
    r"^\s*(sent from my\s.{1,60}|sent from (mail|outlook|yahoo mail) for\s.{1,40}|"
    r"get outlook for\s.{1,40}|von meinem\s.{1,40}\sgesendet|envoyé de mon\s.{1,40})\s*$",
    re.IGNORECASE,
)


def _next_nonblank(lines: list[str], start: int) -> int | None:
    for j in range(start, len(lines)):
        if lines[j].strip():
            return j
    return None


def _attribution_end(lines: list[str], i: int) -> int | None:
    """If a strong attribution (opener ... wrote:) starts at line i, possibly wrapped over
    up to three lines, return the index of its last line."""
    if not _ATTRIBUTION_OPENER.match(lines[i]):
        return None
    joined = ""
    for j in range(i, min(i + 3, len(lines))):
        if j > i and not lines[j].strip():
            return None
        joined = (joined + " " + lines[j].strip()) if joined else lines[j]
        if len(joined) > 500:
            return None
        if any(p.match(joined) for p in _ATTRIBUTION):
            return j
    return None


def _is_header_block(lines: list[str], i: int) -> bool:
    """A bare ``From: ...`` line followed within 4 lines by ``Sent:``/``Date:`` and
    ``To:``/``Subject:`` lines (Outlook, and localized variants)."""
    if not _HDR_FROM.match(lines[i]):
        return False
    window = lines[i + 1 : i + 5]
    return any(_HDR_SENT.match(x) for x in window) and any(_HDR_TO.match(x) for x in window)


def _scan(lines: list[str]) -> Iterator[int]:
    """Yield the indexes of the lines that are new text (blank ones included)."""
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if _SIG_SEP.match(line):
            return
        if _QUOTED.match(line):
            i += 1
            continue
        if _ORIGINAL_MARKER.match(line) or _FORWARD_MARKER.match(line):
            return
        if _UNDERSCORES.match(line):
            j = _next_nonblank(lines, i + 1)
            header_next = j is not None and j - i <= 3 and bool(
                _HDR_FROM.match(lines[j]) or _HDR_SENT.match(lines[j])
            )
            if header_next:
                return
        if _is_header_block(lines, i):
            return
        end = _attribution_end(lines, i)
        if end is not None:
            j = _next_nonblank(lines, end + 1)
            if j is not None and _QUOTED.match(lines[j]):
                i = end + 1  # drop the attribution; the quote goes by the '>' rule
                continue
            return  # the original follows unquoted: it is all old text
        if _WEAK_ATTRIBUTION.match(line) and len(line) <= 300:
            j = _next_nonblank(lines, i + 1)
            if j is not None and j <= i + 2 and _QUOTED.match(lines[j]):
                i += 1
                continue
        if _MOBILE_SIG.match(line):
            i += 1
            continue
        yield i
        i += 1


def new_text_lines(text: str) -> list[BodyLine]:
    """The lines a human newly typed in a mail body, with their line numbers.

    Drops ``>``-quoted lines, everything from a signature separator (``-- `` / ``--``) on,
    attribution lines (``On <date>, <name> wrote:``, ``Am ... schrieb ...:``,
    ``Le ... a écrit :``, possibly wrapped), the quoted original after Outlook's
    ``-----Original Message-----`` / underscore line / ``From:``-``Sent:``-``To:`` header
    block, forwarded messages, single-line mobile signatures and blank lines.  Line numbers
    are those of ``text.splitlines()`` (1-based).  Never raises.
    """
    try:
        if not isinstance(text, str):
            return []
        lines = text.splitlines()
        result: list[BodyLine] = []
        for idx in _scan(lines):
            stripped = lines[idx].rstrip()
            if stripped:
                result.append(BodyLine(idx + 1, stripped))
        return result
    except Exception:
        return []
