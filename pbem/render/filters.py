"""The Jinja2 filters and globals of the mail templates (pbem.render.environment installs
them): dice and their pictures, bids, chances, times, wrapped text, look-ups, and the
``seen_by`` join of a shared part for its reader. Most are pure and remembered
(pbem.render.memo): a turn's reports ask the same things over and over."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

import markupsafe

from pbem.render.memo import remembered
from pbem.text.usertext import shown
from pbem.text.wording import ENGLISH, Message, Translator, _, _n, percent

# Faces 1-5 are the die pictures U+2680..U+2684; the star replaces the 6.
DIE_PICTURES: dict[str, str] = {
    "1": "\u2680",
    "2": "\u2681",
    "3": "\u2682",
    "4": "\u2683",
    "5": "\u2684",
    "*": "\u2605",
}
# the name of each face, and of a count of it ("4 threes": the whole phrase is one
# message, as languages put the count and the word together in their own ways)
_FACES = frozenset("12345*")
_FACE_COUNTS = {
    "1": lambda q: _n("{n} one", "{n} ones", q),
    "2": lambda q: _n("{n} two", "{n} twos", q),
    "3": lambda q: _n("{n} three", "{n} threes", q),
    "4": lambda q: _n("{n} four", "{n} fours", q),
    "5": lambda q: _n("{n} five", "{n} fives", q),
    "*": lambda q: _n("{n} star", "{n} stars", q),
}
# a face's name alone, as the title of a die picture and in "threes or stars"
_FACE_NAMES = {
    "1": lambda q: _n("one", "ones", q),
    "2": lambda q: _n("two", "twos", q),
    "3": lambda q: _n("three", "threes", q),
    "4": lambda q: _n("four", "fours", q),
    "5": lambda q: _n("five", "fives", q),
    "*": lambda q: _n("star", "stars", q),
}


def _face_key(face: Any) -> str:
    """Normalise a face (1-5, "1"-"5", "*", "★") to "1".."5" or "*"."""
    if isinstance(face, bool):
        return "?"
    if isinstance(face, int):
        return str(face) if 1 <= face <= 5 else "?"
    s = str(face).strip()
    if s in ("*", "\u2605", "star", "stars"):
        return "*"
    return s if s in _FACES else "?"


@remembered(64)
def die(face: Any) -> str:
    """One face -> its picture: 1..5 -> ⚀..⚄, "*" -> ★ ("?" for anything else)."""
    return DIE_PICTURES.get(_face_key(face), "?")


def dice(faces: Iterable[Any] | None, sep: str = " ") -> str:
    """A list of faces -> their pictures joined by ``sep``."""
    return sep.join(die(f) for f in (faces or ()))


def plain(faces: Iterable[Any] | None, sep: str = " ") -> str:
    """A list of faces -> the plain values as a player types them ("3 * 1")."""
    return sep.join(_face_key(f) for f in (faces or ()))


@remembered(256)
def face_name(face: Any, quantity: int = 1, tr: Translator = ENGLISH) -> str:
    """1 -> "one" (quantity 1) or "ones" (any other quantity); "*" -> "star"/"stars"."""
    name = _FACE_NAMES.get(_face_key(face))
    return str(face) if name is None else name(quantity).said(tr)


@remembered(4096)
def said(message: Message, tr: Translator = ENGLISH) -> str:
    """A message in ``tr``'s language, remembered: a turn's reports say the same notes, bids
    and charts to every player (a message with a list among its values is said anew)."""
    return message.said(tr)


@remembered(4096)
def told(text: str, tr: Translator = ENGLISH) -> str:
    """Text that carries its message (a kind's note, pbem.kinds.words.Told) in ``tr``'s
    language, remembered by its English text (which says what it means: the same for
    every reader of a turn's notes, and the same rules line in every report)."""
    message = getattr(text, "message", None)
    return message.said(tr) if type(message) is Message else str(text)


def bid(b: Mapping[str, Any] | None, tr: Translator = ENGLISH) -> str:
    """{"quantity": 4, "face": 3} -> "4 threes"; {"quantity": 1, "face": "*"} -> "1 star"."""
    if not b:
        return _("no bid").said(tr)
    return _bid_said(b["quantity"], b["face"], tr)


@remembered(1024)
def _bid_said(quantity: Any, face: Any, tr: Translator) -> str:
    """``bid`` remembered by its quantity and face (a bid is a dict: no key of a cache)."""
    phrase = _FACE_COUNTS.get(_face_key(face))
    return f"{quantity} {face}" if phrase is None else said(phrase(quantity), tr)


@remembered(1024)
def counted_in(singular: str, many: str, n: int, tr: Translator = ENGLISH) -> str:
    """``plural``'s answer, remembered: "3 dice" (the same few counts in every report)."""
    return tr.ngettext(singular, many, n).replace("{n}", str(n))


def plural_in(tr: Translator) -> Callable[[str, str, int], str]:
    """The ``plural("{n} die", "{n} dice", n)`` global of a language's templates."""
    def plural(singular: str, many: str, n: int) -> str:
        return counted_in(singular, many, n, tr)
    return plural


def count_of(n: int, one: str, many: str, tr: Translator = ENGLISH) -> str:
    """The ``n|plural("die", "dice")`` filter of templates written before the ``plural``
    global (a referee's overrides may use it): the same rule."""
    return counted_in(f"{{n}} {one}", f"{{n}} {many}", n, tr)


@remembered(1024)   # a report says some fifty chances, mostly the same few
def pct(p: Any, tr: Translator = ENGLISH) -> str:
    """A probability -> a whole percentage in tr's language (pbem.text.wording.percent); "?"
    for none."""
    if p is None:
        return "?"
    x = float(p)
    if math.isnan(x):
        return "?"
    return percent(x, tr)


@remembered(1024)
def utc(value: Any, fmt: str = "%Y-%m-%d %H:%M UTC") -> str:
    """An ISO timestamp ("2026-12-01T18:00:00Z") or datetime -> "2026-12-01 18:00 UTC"."""
    if value is None:
        return ""
    if isinstance(value, datetime):
        dt = value
    else:
        s = str(value).strip()
        try:
            dt = datetime.fromisoformat(s[:-1] + "+00:00" if s.endswith(("Z", "z")) else s)
        except ValueError:
            return s
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC).strftime(fmt)


@remembered(2048)   # talk lines can be 2,000 characters: a few MB at most
def wrap(text: Any, width: int = 72, indent: str = "", first: str | None = None) -> str:
    """Fill ``text`` to ``width`` columns; ``first`` prefixes line 1, ``indent`` the others.

    Each line of ``text`` is filled on its own, so line breaks the writer
    made are kept.  A line that already fits is kept exactly as written;
    a longer one has its runs of white space folded while it is filled.
    Long words (URLs, hex strings) are never broken: a line may then run
    past ``width``, which is better than a URL cut in two.
    """
    lead = indent if first is None else first
    out: list[str] = []
    for raw in str(text).splitlines() or [""]:
        prefix = lead if not out else indent
        if len(prefix) + len(raw) <= width:
            out.append((prefix + raw).rstrip())  # fits: keep it exactly as written
            continue
        out.append(
            textwrap.fill(
                " ".join(raw.split()),
                width=width,
                initial_indent=prefix,
                subsequent_indent=indent,
                break_long_words=False,
                break_on_hyphens=False,
            )
        )
    return "\n".join(out)


def lookup(mapping: Mapping[Any, Any] | None, key: Any, default: Any = None) -> Any:
    """``mapping[key]`` whether the mapping is keyed by int (Python) or str (JSON)."""
    if not mapping:
        return default
    if key in mapping:
        return mapping[key]
    skey = str(key)
    if skey in mapping:
        return mapping[skey]
    try:
        ikey = int(key)
    except (TypeError, ValueError):
        return default
    return mapping.get(ikey, default)


def name_of(players: Iterable[Mapping[str, Any]] | None, number: Any) -> str:
    """The name of the player numbered ``number`` in a report's list of players ("" if none
    is): one filter call, where a loop in the template costs a macro's worth each time."""
    for p in players or ():     # a loop, not next(genexpr): twice as fast, called a row
        if p["number"] == number:
            return str(p["name"])
    return ""


class Shown(str):
    """Text of a shared part, cleaned once a turn as an output is (pbem.text.usertext.shown):
    a reader's report puts it out as it is, where a str's every character would be
    searched again for each reader."""


def seen_by(pieces: Iterable[Any], you: Any) -> str:
    """A part of a report as reader ``you`` sees it (the ``seen_by`` filter): the
    ``pieces`` of a shared template's part joined, each either what every reader sees or
    a dict of what a seat sees of it by seat, ``none`` for any other reader (a watcher
    too). One join in Python, where a loop of the reader's template over the rows of a
    table, asking of each whether it is the reader's, costs an output and a test a row;
    markup if the pieces are (the HTML part's)."""
    out = []
    markup = False
    for piece in pieces:
        if type(piece) is dict:
            piece = piece[you] if you in piece else piece[None]
        markup = markup or type(piece) is markupsafe.Markup
        out.append(piece)
    joined = "".join(out)
    if markup:
        return markupsafe.Markup(joined)
    # cleaned pieces make a cleaned whole (shown drops or replaces single characters)
    return Shown(joined) if all(type(piece) is Shown for piece in out) else joined


def count_in(values: Iterable[Any], choices: Any) -> int:
    """How many of ``values``, as text, are among ``choices``: the dice of a cup that
    count for a bid (``ds|count_in(["3", "*"])``).  The same number as
    ``ds|map("string")|select("in", choices)|list|length``, a row of the cups-up
    table at a tenth of the cost."""
    return sum(1 for v in values if markupsafe.soft_str(v) in choices)


_PICTURE = ('<span title="{title}" style="display:inline-block;min-width:1.25em;margin:0 1px;'
            'padding:0 2px;border:{border};border-radius:5px;background:{background};'
            'color:{colour};font-size:1.35em;line-height:1.3em;text-align:center;'
            'vertical-align:middle;">{die}</span>')
_VALUES = ' <span style="font-family:Menlo,Consolas,monospace;color:#555;">({values})</span>'


def _put_out(text: str) -> str:
    """A filter's text as a template's ``{{ }}`` puts it out in HTML (said_in's finalize
    of a str, then escaped)."""
    return markupsafe.escape(shown(text))


@remembered(512)     # a turn's dice, shown in the shared rows and in each report
def _die_pictures(faces: tuple[Any, ...], exposed: bool, values: bool,
                  match: tuple[str, ...] | None, tr: Translator) -> str:
    out = []
    for face in faces:
        text = markupsafe.soft_str(face)
        out.append(_PICTURE.format(
            title=_put_out(face_name(face, 1, tr)),
            border=("2px solid #1d8a3a" if match is not None and text in match
                    else "1px solid #b07d00" if exposed else "1px solid #666"),
            background="#ffe9a8" if exposed else "#ffffff",
            colour="#b07d00" if text == "*" else "#222",
            die=_put_out(die(face))))
    if values and faces:
        out.append(_VALUES.format(values=_put_out(plain(faces))))
    return "".join(out)


def die_pictures_in(tr: Translator) -> Callable[..., markupsafe.Markup]:
    """The ``die_pictures(faces, exposed, values, match)`` global of a language's
    templates: the dice as styled pictures, the markup _macros.html.j2's ``pics`` macro
    made with a loop of its own (a tenth of a postal report was that loop)."""
    def die_pictures(faces: Iterable[Any] | None, exposed: Any = False, values: Any = True,
                     match: Iterable[Any] | None = None) -> markupsafe.Markup:
        return markupsafe.Markup(_die_pictures(
            tuple(faces or ()), bool(exposed), bool(values),
            None if match is None else tuple(match), tr))
    return die_pictures

