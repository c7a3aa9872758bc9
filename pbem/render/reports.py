"""Rendering of every mail the server sends, from Jinja2 templates.

Each mail kind is a pair of templates, ``NAME.txt.j2`` (the text part) and
``NAME.html.j2`` (the HTML part).  Templates are looked up first in the
referee's override folder, then in the packaged templates: ``pbem/_templates``
inside an installed wheel, or the repository's top-level ``templates/``
folder in a checkout.

Autoescaping is on for ``.html.j2`` templates only, and every variable a
template uses must be in its context (``StrictUndefined``); optional values
are passed as ``None`` by the caller.
"""

from __future__ import annotations

import functools
import math
import textwrap
from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import jinja2
import jinja2.ext
import markupsafe

from pbem.render.charts import GLOBALS as CHARTS
from pbem.render.memo import remembered
from pbem.store.paths import packaged_dir
from pbem.text.errors import PbemError
from pbem.text.i18n import SOURCE_LANGUAGE, known_language, translator
from pbem.text.usertext import shown
from pbem.text.wording import (
    ENGLISH,
    Message,
    Translator,
    _,
    _n,
    listing,
    percent,
    say,
    usage_said,
)
from pbem.text.zones import Reader, in_zone

__all__ = [
    "Renderer",
    "SharedParts",
    "Shown",
    "TemplateProblem",
    "bid",
    "count_in",
    "dice",
    "die",
    "face_name",
    "lookup",
    "packaged_template_dir",
    "pct",
    "plain",
    "html_part",
    "text_part",
    "rules_document",
    "seen_by",
    "utc",
    "wrap",
]

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


PART_START, PART_END = "<!--pbem-part-->", "<!--/pbem-part-->"


def text_part(text: str) -> str:
    """A rendered text answer without its signature (the lines from "-- " on)."""
    head, sep, _signature = text.rpartition("\n-- \n")
    return (head if sep else text).strip("\n")


def html_part(html: str) -> markupsafe.Markup:
    """The content of a rendered HTML answer (between the layout's part markers), as
    markup: it was rendered, and escaped, by our own templates."""
    rest = html.partition(PART_START)[2]
    inner, found, _after = rest.partition(PART_END)
    return markupsafe.Markup(inner.strip() if found else html)


def rules_file(language: str = "en") -> str:
    """The name of the rules document in a language: rules.md (English, the reference),
    rules.de.md, rules.cs.md; English where a language has none."""
    name = f"rules.{language}.md"
    return name if language != "en" and (packaged_dir("docs") / name).is_file() else "rules.md"


def rules_document(language: str = "en") -> bytes:
    """docs/rules.md, the rules of every kind (attached to HELP answers), or its version
    in the reader's language: ``pbem/_docs`` in an installed wheel, else the repository's
    ``docs/`` folder."""
    return (packaged_dir("docs") / rules_file(language)).read_bytes()


def packaged_template_dir() -> Path:
    """The folder of the templates that ship with pbem (pbem.store.paths.packaged_dir).

    ``pbem/_templates`` when installed from a wheel, else the repository's
    top-level ``templates/`` folder (a source checkout).
    """
    return packaged_dir("templates")


def _escape(value: Any) -> str:
    """A value put into a sentence of an HTML template, escaped (the ``said_escaped``
    filter of _SaidWhenCompiled): markupsafe.escape without its copy of what is already
    markup and without the work for a whole number (digits need none). Its result is
    formatted into the sentence, which is then marked up as a whole, so the same text
    comes out as markupsafe.escape's would give."""
    kind = type(value)
    if kind is markupsafe.Markup:
        return cast(str, value)
    if kind is int:
        return str(value)
    return markupsafe.escape(value)


def reader(language: str, zone: str | None) -> Translator:
    """Who a mail is said to: the language's translator, with the time zone when there is
    one (pbem.text.zones.Reader: a time in a message is said in it)."""
    tr = translator(known_language(language))
    return Reader(tr, zone) if zone is not None else tr


def said_context(context: Mapping[str, Any], tr: Translator) -> dict[str, Any]:
    """A context with its messages said (pbem.text.wording.say) where they are: its values,
    the items of its lists and the values of the dicts in those lists (paragraphs,
    problems, talk lines, help lines, notes). A dict value (a report's view, a course:
    data, thousands of items) is not walked: a message in it would be said by finalize
    when put out."""
    out = dict(context)
    for key, value in context.items():
        kind = type(value)
        if kind is list or kind is tuple:
            out[key] = [_said_item(item, tr) for item in value]
        elif kind is not dict:
            out[key] = say(value, tr)
    return out


def _said_item(item: Any, tr: Translator) -> Any:
    if type(item) is dict:
        return {k: say(v, tr) if type(v) is not dict else v for k, v in item.items()}
    return say(item, tr)


def said_in(tr: Translator) -> Callable[[Any], Any]:
    """The finalize of a language's templates: a message said in that language, then
    cleaned as every output is: text without bidi controls and control characters
    (pbem.text.usertext), whatever a player put into a name or talk. Text that carries its
    message (a kind's note, pbem.kinds.words.Told: a str with a ``message``) is said as
    that message. Markup was made of such outputs already; a number has nothing to
    clean."""
    markup = markupsafe.Markup
    english = tr is ENGLISH      # a Told's text is its English already

    def finalize(value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return shown(value)
        if kind is markup or kind is int or kind is Shown:
            return value
        if kind is Message:
            return shown(said(value, tr))
        if not isinstance(value, str):
            return value
        return shown(str(value) if english else told(value, tr))
    return finalize


def _said_escaped_in(tr: Translator) -> Callable[[Any], Any]:
    """A value put into a sentence of an HTML template (_SaidWhenCompiled): said and
    cleaned as an output is (said_in), then escaped (``_escape``)."""
    said_value = said_in(tr)

    def escaped(value: Any) -> Any:
        return _escape(said_value(value))
    return escaped


def _gettext_in(tr: Translator) -> Callable[..., Any]:
    """A language's ``_()`` / ``gettext`` of the templates, as jinja2.ext.i18n's newstyle
    one (``_("Turn %(n)s", n=turn)``, escaped in HTML) with each value first made what an
    output is made (said_in): a message said in the language, text cleaned. A value put
    into a sentence is output there, and nothing else cleans it. Bound straight to ``_``:
    no look-up of ``gettext`` a call."""
    value = said_in(tr)

    @jinja2.pass_eval_context
    def gettext(eval_ctx: jinja2.nodes.EvalContext, source: str, /, **values: Any) -> str:
        text = tr.gettext(source)
        if eval_ctx.autoescape:
            text = markupsafe.Markup(text)
        # always a format (jinja2's newstyle rule): "%%" is a "%" with or without values
        return text % {k: value(v) for k, v in values.items()}
    return gettext


class _SaidWhenCompiled(jinja2.ext.Extension):
    """Each ``_("...")`` of a template said when the template compiles, in its
    Environment's language (one Environment a language, so a template compiles once for
    each): the message is a constant then, not a call a render (a report has a hundred).

    ``_("Notes")`` becomes the translated text (marked up, as jinja2.ext.i18n's newstyle
    gettext returns it, in HTML); ``_("Turn %(n)s", n=turn)`` becomes ``"Zug %(n)s" %
    {"n": turn|said}``: the same text, its values made what an output is made
    (said_in), in HTML escaped (``said_escaped``) and the whole marked up, as
    markup's own ``%`` would make it at about half the cost. Any other use of ``_`` is
    left to the ``_`` global (_gettext_in), which does the same at render time."""

    def filter_stream(self, stream: jinja2.lexer.TokenStream) -> Iterable[jinja2.lexer.Token]:
        tr: Translator = getattr(self.environment, "said_by", ENGLISH)
        html = self._escaped(stream.name)
        tokens = list(stream)
        # an {% autoescape %} block changes what an output is made: left to render time
        bare = not any(token.type == "name" and token.value == "autoescape"
                       and tokens[k - 1].type == "block_begin"
                       for k, token in enumerate(tokens) if k)
        out: list[jinja2.lexer.Token] = []
        i = 0
        while i < len(tokens):
            text = self._bare(tokens, i, tr, html) if bare else None
            if text is not None:     # {{ _("...") }}: the output is the text itself
                out.append(jinja2.lexer.Token(tokens[i].lineno, "data", text))
                i += 6
                continue
            try:
                said = self._said(tokens, i, tr, html)
            except IndexError:     # a template cut short: the parser says what is wrong
                said = None
            if said is None:
                out.append(tokens[i])
                i += 1
            else:
                replaced, i = said
                out += replaced
        return out

    def _escaped(self, name: str | None) -> bool:
        autoescape = self.environment.autoescape
        return bool(autoescape(name) if callable(autoescape) else autoescape)

    @staticmethod
    def _bare(tokens: list[jinja2.lexer.Token], i: int, tr: Translator,
              html: bool) -> str | None:
        """The text a ``{{ _("...") }}`` at ``i`` puts out, as template data (None if
        ``i`` starts no such output): what its output would be, made at compile time
        (markup in HTML: nothing to escape; text cleaned as finalize cleans it), with no
        finalize, escape or output a render."""
        if not (i + 5 < len(tokens) and tokens[i].type == "variable_begin"
                and tokens[i + 1].type == "name" and tokens[i + 1].value == "_"
                and tokens[i + 2].type == "lparen" and tokens[i + 3].type == "string"
                and tokens[i + 4].type == "rparen"
                and tokens[i + 5].type == "variable_end"):
            return None
        try:
            text = tr.gettext(tokens[i + 3].value) % {}   # newstyle: "%%" is "%"
        except (TypeError, ValueError, KeyError):
            return None
        return text if html else shown(text)

    @staticmethod
    def _said(tokens: list[jinja2.lexer.Token], i: int, tr: Translator,
              html: bool) -> tuple[list[jinja2.lexer.Token], int] | None:
        """The tokens of a constant for the ``_("...", ...)`` at ``i`` and the index
        after it; None if ``i`` starts no such call (anything else is left alone)."""
        Token = jinja2.lexer.Token
        if not (tokens[i].type == "name" and tokens[i].value == "_" and i + 2 < len(tokens)
                and tokens[i + 1].type == "lparen" and tokens[i + 2].type == "string"):
            return None
        line = tokens[i].lineno
        text = tr.gettext(tokens[i + 2].value)
        j = i + 3
        values: list[tuple[str, list[jinja2.lexer.Token]]] = []
        while tokens[j].type == "comma":
            if not (tokens[j + 1].type == "name" and tokens[j + 2].type == "assign"):
                return None
            name, j = tokens[j + 1].value, j + 3
            start, depth = j, 0
            while depth or tokens[j].type not in ("comma", "rparen"):
                if tokens[j].type in ("lparen", "lbracket", "lbrace"):
                    depth += 1
                elif tokens[j].type in ("rparen", "rbracket", "rbrace"):
                    depth -= 1
                elif tokens[j].type in ("eof", "variable_end", "block_end"):
                    return None
                j += 1
            values.append((name, tokens[start:j]))
        if tokens[j].type != "rparen":
            return None
        if not values:
            try:
                text = text % {}     # newstyle gettext's rule: "%%" is "%"
            except (TypeError, ValueError, KeyError):
                return None
        said = [Token(line, "lparen", "("), Token(line, "string", text)]
        if values:
            said += [Token(line, "mod", "%"), Token(line, "lbrace", "{")]
            for name, expr in values:
                said += [Token(line, "string", name), Token(line, "colon", ":"),
                         Token(line, "lparen", "("), *expr, Token(line, "rparen", ")"),
                         Token(line, "pipe", "|"),
                         Token(line, "name", "said_escaped" if html else "said"),
                         Token(line, "comma", ",")]
            said.append(Token(line, "rbrace", "}"))
        said.append(Token(line, "rparen", ")"))
        if html:
            said += [Token(line, "pipe", "|"), Token(line, "name", "safe")]
        return said, j + 1


# The names a template had before (new -> old): a referee's override under the old name
# still wins for the new one, and a caller or an override's {% extends %} of the old name
# still finds the packaged template.
RENAMED = {"postal_report.txt.j2": "report.txt.j2", "postal_report.html.j2": "report.html.j2"}


class _Renamed(jinja2.BaseLoader):
    """Another loader's templates under the names in ``names`` (wanted -> its own)."""

    def __init__(self, loader: jinja2.BaseLoader, names: Mapping[str, str]) -> None:
        self.loader = loader
        self.names = names

    def get_source(self, environment: jinja2.Environment,
                   template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
        if template not in self.names:
            raise jinja2.TemplateNotFound(template)
        return self.loader.get_source(environment, self.names[template])

    def list_templates(self) -> list[str]:
        return []   # the other loader lists them under their own names


@functools.lru_cache(maxsize=16)
def template_environment(override_dir: Path | None, language: str = SOURCE_LANGUAGE,
                         kind_dirs: tuple[Path, ...] = ()) -> jinja2.Environment:
    """One Environment per template folder, shared: a plain jinja2.Environment, set up
    through its public options, filters and globals only (no class of Jinja2's is
    subclassed or patched: tests/render/test_render_fast.py). Jinja2 compiles each
    template once per Environment, and compiling all of them takes about a second. A changed override
    file is still picked up (the loaders check modification times); the packaged
    templates alone are not checked (they change only with pbem itself), which saves a
    stat() a template, include and import of every mail. ``kind_dirs``: the folders of
    the game kinds' own templates (pbem.kinds.kind_template_dirs), after the override.

    One Environment a language, too: its ``_()``, ``{% trans %}``, ``plural`` and
    ``ngettext``, its filters that name things (``bid``, ``face_name``) and the messages
    (pbem.text.wording.Message) a context carries are said in that language (pbem.text.i18n)."""
    tr = translator(known_language(language))
    loaders: list[jinja2.BaseLoader] = []
    if override_dir is not None:
        override = jinja2.FileSystemLoader(str(override_dir))
        loaders += [override, _Renamed(override, RENAMED)]
    loaders += [jinja2.FileSystemLoader(str(folder)) for folder in kind_dirs]
    packaged = jinja2.FileSystemLoader(str(packaged_template_dir()))
    loaders += [packaged, _Renamed(packaged, {old: new for new, old in RENAMED.items()})]
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html.j2",),
            disabled_extensions=("txt.j2",),
            default_for_string=False,
            default=False,
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=override_dir is not None,
        finalize=said_in(tr),
        extensions=["jinja2.ext.i18n", "jinja2.ext.do", _SaidWhenCompiled],
    )
    env.extend(said_by=tr)         # the language _SaidWhenCompiled says messages in
    # the i18n extension's method, which Environment does not declare
    env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=tr.gettext, ngettext=tr.ngettext, newstyle=True)
    said_at_render = _gettext_in(tr)
    env.globals.update(gettext=said_at_render, _=said_at_render)
    said_value = said_in(tr)
    env.filters.update(
        die=die,
        dice=dice,
        plain=plain,
        face_name=lambda face, quantity=1: face_name(face, quantity, tr),
        bid=lambda b: bid(b, tr),
        pct=lambda p: pct(p, tr),
        plural=lambda n, one, many: count_of(n, one, many, tr),
        utc=utc,
        wrap=wrap,
        lookup=lookup,
        name_of=name_of,
        count_in=count_in,
        seen_by=seen_by,
        when=in_zone,        # a time in the reader's zone, UTC beside (pbem.text.zones)
        said=said_value,     # a value put into a sentence (_SaidWhenCompiled)
        usage=lambda value: usage_said(str(said_value(value)), tr),  # HELP's commands
        said_escaped=_said_escaped_in(tr),
    )
    env.globals.update(lookup=lookup, plural=plural_in(tr), ngettext=tr.ngettext,
                       listing=lambda items, none=None: listing(items, none, tr),
                       language=known_language(language), die_pictures=die_pictures_in(tr))
    # the pictures: course_chart_html, odds_chart_text ... (pbem.render.charts), in this language
    env.globals.update({name: functools.partial(draw, tr=tr) for name, draw in CHARTS.items()})
    return env


class TemplateProblem(PbemError):
    """A mail template that does not compile: which file, which line, what is wrong."""


class Renderer:
    """Renders the (text, html) pair of one mail kind."""

    def __init__(self, override_dir: Path | None = None,
                 kind_dirs: Sequence[Path] = ()) -> None:
        self.override_dir = Path(override_dir) if override_dir is not None else None
        self.kind_dirs = tuple(kind_dirs)    # the game kinds' own templates
        self.env = template_environment(self.override_dir, SOURCE_LANGUAGE, self.kind_dirs)

    def environment(self, language: str = SOURCE_LANGUAGE) -> jinja2.Environment:
        """The templates in ``language`` (one Environment each, shared)."""
        if language == SOURCE_LANGUAGE:
            return self.env
        return template_environment(self.override_dir, known_language(language), self.kind_dirs)

    @staticmethod
    def say(value: Any, language: str = SOURCE_LANGUAGE, zone: str | None = None) -> Any:
        """A message (or a list of them) to a reader of ``language`` in ``zone``; a
        subject line, say."""
        return say(value, reader(language, zone))

    @property
    def shipped_only(self) -> bool:
        """Only the shipped templates (no referee's overrides): their HTML loads nothing
        remote (tests/mail/test_mail_headers.py), so it need not be searched for it."""
        return self.override_dir is None

    def compile_all(self) -> int:
        """Compile every mail template now; the number compiled.

        ``pbem serve`` does this at start: a long-running server then spends nothing on
        compiling at its first mails (about a second in all), and a referee's override
        that does not compile stops it at start, not at the first mail that needs it.
        Raises TemplateProblem. (The web pages' templates, ``web/``, are the web
        server's.)"""
        names = [name for name in self.env.list_templates(extensions=["j2"])
                 if not name.startswith("web/")]
        for name in names:
            try:
                self.env.get_template(name)
            except jinja2.TemplateSyntaxError as exc:   # an unknown filter or test too
                where = exc.filename or exc.name or name
                raise TemplateProblem(f"template {where}, line {exc.lineno}: "
                                      f"{exc.message}") from exc
        return len(names)

    def render(self, name: str, context: Mapping[str, Any],
               language: str = SOURCE_LANGUAGE, zone: str | None = None,
               shared: SharedParts | None = None) -> tuple[str, str]:
        """Render ``NAME.txt.j2`` and ``NAME.html.j2`` with ``context`` for a reader of
        ``language`` in time ``zone``: (text, html). ``shared``: the parts every reader
        of the turn shares, rendered once (``shared_parts``, in the same language), which
        the templates then put in as they are instead of rendering them again."""
        env = self.environment(language)
        if language != SOURCE_LANGUAGE or zone is not None:
            # the messages (and times) in the context said to the reader at once, so that a
            # filter (join, wrap ...) that makes text of one gets it said, not in English
            context = said_context(context, reader(language, zone))
        if shared is None:
            text = rendered(env.get_template(f"{name}.txt.j2"), context)
            html = rendered(env.get_template(f"{name}.html.j2"), context)
        else:
            text = rendered(env.get_template(f"{name}.txt.j2"), context, shared.text)
            html = rendered(env.get_template(f"{name}.html.j2"), context, shared.html)
        return text, html

    def shared_parts(self, name: str, public: Mapping[str, Any],
                     language: str = SOURCE_LANGUAGE) -> SharedParts | None:
        """The parts of report ``NAME`` that every reader of a turn shares, rendered once
        from ``NAME_shared.txt.j2`` and ``NAME_shared.html.j2`` with ``public``, the
        turn's public context (nobody's dice, notes, talk or key): each top-level
        ``{% set part %}...{% endset %}`` of those templates, by name (docs/templates.md).

        None when the report is rendered whole for each reader, the slow way: it has no
        shared templates, or a referee overrides ``NAME.txt.j2`` or ``NAME.html.j2``
        without its shared template beside it (an override written before shared parts
        existed renders everything itself)."""
        env = self.environment(language)
        names = (f"{name}.txt.j2", f"{name}_shared.txt.j2",
                 f"{name}.html.j2", f"{name}_shared.html.j2")
        try:
            text_main, text_shared, html_main, html_shared = (
                env.get_template(each) for each in names)
        except jinja2.TemplateNotFound:
            return None
        for main, shared in ((text_main, text_shared), (html_main, html_shared)):
            if self._overridden(main) and not self._overridden(shared):
                return None
        if language != SOURCE_LANGUAGE:
            public = said_context(public, reader(language, None))
        return SharedParts(text=_parts_of(text_shared, public, cleaned=True),
                           html=_parts_of(html_shared, public))

    def _overridden(self, template: jinja2.Template) -> bool:
        """Whether ``template`` is read from the referee's override folder."""
        if self.override_dir is None or template.filename is None:
            return False
        return Path(template.filename).resolve().is_relative_to(self.override_dir.resolve())


def template_context(template: jinja2.Template, context: Mapping[str, Any],
                     shared: Mapping[str, Any] | None = None) -> jinja2.runtime.Context:
    """The Context ``template`` renders ``context`` in (``shared``: the turn's shared parts,
    as the variable ``shared``), as Template.new_context makes it, but for two costs of
    its ChainMap of globals (Template.globals: its own, none, before the Environment's):
    the globals are copied from the Environment's dict, not read key by key through the
    ChainMap (each a KeyError of the empty first map), and the Context is given none to
    compare (``globals``: an ``{% import %}`` of the template looks for globals it lacks,
    of which a template without globals of its own has none). About 20 us a template and
    20 us an import of ``_macros``: a fifth of an answer's rendering. A template with
    globals of its own (none of ours) gets Template.new_context's."""
    env = template.environment
    chain = template.globals
    if type(chain) is not ChainMap or len(chain.maps) != 2 or chain.maps[0] \
            or chain.maps[1] is not env.globals:
        return template.new_context(dict(context) if shared is None
                                    else {**context, "shared": shared})
    parent = {**env.globals, **context}     # the context's values win, as in new_context
    if shared is not None:
        parent["shared"] = shared
    return env.context_class(env, parent, template.name, template.blocks)


def rendered(template: jinja2.Template, context: Mapping[str, Any],
             shared: Mapping[str, Any] | None = None) -> str:
    """``template`` rendered with ``context`` (and ``shared``, template_context): what
    Template.render returns, its errors raised as Template.render raises them (with the
    template's lines in the traceback)."""
    env = template.environment
    try:
        return env.concat(template.root_render_func(
            template_context(template, context, shared)))
    except Exception:
        env.handle_exception()
    raise AssertionError("handle_exception raises")   # for the type checker


@dataclass(frozen=True)
class SharedParts:
    """The parts of a turn's report that every reader shares, in one language: the text
    part's and the HTML part's (markup), each by its name in the shared template (a
    rendered part, or a dict or list of them: the rows of a table by seat)."""

    text: Mapping[str, Any]
    html: Mapping[str, Any]


def _parts_of(template: jinja2.Template, context: Mapping[str, Any],
              cleaned: bool = False) -> dict[str, Any]:
    """The top-level ``{% set %}`` values of ``template`` rendered with ``context`` (its
    module's exported names, as jinja2's Template.make_module makes them, with the context
    ``rendered`` makes); ``cleaned``: a text part's
    text cleaned now (_cleaned; an HTML part's is markup, and a str in it is cleaned and
    escaped where it is put out)."""
    module = jinja2.environment.TemplateModule(template, template_context(template, context))
    parts = {key: value for key, value in vars(module).items() if not key.startswith("_")}
    return _cleaned(parts, {}) if cleaned else parts


def _cleaned(value: Any, done: dict[int, Any]) -> Any:
    """A shared part's text (and the text in its dicts and lists) cleaned now, once a turn,
    as each report's output of it would be (Shown); anything else as it is. ``done``: the
    values cleaned already, by id (a row is in its table's part and in a reader's)."""
    kind = type(value)
    if kind is str:
        if id(value) not in done:
            done[id(value)] = (value, Shown(shown(value)))   # the value kept: its id stays
        return done[id(value)][1]
    if kind is dict:
        return {key: _cleaned(item, done) for key, item in value.items()}
    if kind is list:
        return [_cleaned(item, done) for item in value]
    return value
