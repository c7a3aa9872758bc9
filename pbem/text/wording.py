"""How pbem says things: messages said later in the reader's language, counts, lists.

A ``Message`` is text a player or the referee will read, kept as its English source
(the gettext msgid) and its values until the reader's language is known: ``_("no
game is called {name}", name=name)``, ``_n("{n} die", "{n} dice", n)`` (the names
gettext's tools look for; a module that imports ``_`` never assigns ``_``). The mail or
page that shows it says it in its reader's language (pbem.render.reports, through the
catalogues of pbem.text.i18n); ``str()`` says it in English (logs, the referee's shell).
Values may be messages themselves, or lists of them.

``ngettext(singular, plural, n)`` has gettext's argument order and meaning (English
here); ``plural`` fills the count into the form it picked: ``plural("{n} die", "{n}
dice", 3)`` -> "3 dice". Pure: the standard library and Babel's CLDR number formats
only; a translation comes in as any object with gettext's ``gettext``/``ngettext``.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from babel.numbers import format_percent

# the languages pbem speaks (English is the source: the code's and templates' own text),
# each by its own name
LANGUAGES: Mapping[str, str] = {"en": "English", "de": "Deutsch", "cs": "čeština"}


class Translator(Protocol):
    """What says a message in one language (gettext.NullTranslations is one)."""

    def gettext(self, message: str, /) -> str: ...

    def ngettext(self, singular: str, plural: str, n: int, /) -> str: ...


class SaysItself(Protocol):
    """A value that knows how its reader reads it (a time in the reader's zone); say()
    knows one by its class's ``said``."""

    def said(self, tr: Translator) -> str: ...


class English:
    """The source language: every message as written."""

    def gettext(self, message: str, /) -> str:
        return message

    def ngettext(self, singular: str, plural: str, n: int, /) -> str:
        return singular if n == 1 else plural


ENGLISH = English()


@dataclass(frozen=True, slots=True)
class Message:
    """Text to be said in the reader's language: its English source (``{name}`` fields,
    and the plural form with a count ``n``) and the values of its fields."""

    source: str
    values: tuple[tuple[str, Any], ...] = ()
    plural: str | None = None
    n: int = 1
    capital: bool = False    # said with its first letter upper case (a sentence's start)

    def said(self, tr: Translator = ENGLISH) -> str:
        """The message in ``tr``'s language, its values filled in (said there too)."""
        text = (tr.gettext(self.source) if self.plural is None
                else tr.ngettext(self.source, self.plural, self.n))
        if self.values or self.plural is not None:
            fields = {key: say(value, tr) for key, value in self.values}
            fields.setdefault("n", self.n)
            text = _fill(text, fields)
        return text[:1].upper() + text[1:] if self.capital else text

    def capitalized(self) -> Message:
        """This message as a sentence's start: its first letter upper case, said in any
        language."""
        return Message(self.source, self.values, self.plural, self.n, True)

    def __str__(self) -> str:
        return self.said(ENGLISH)

    # Text that became a message still compares, and is searched, as its English text
    # (code and tests written when it was a str); said elsewhere only when read.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return str(self) == other
        if type(other) is Message:
            return (self.source, self.values, self.plural, self.n, self.capital) == (
                other.source, other.values, other.plural, other.n, other.capital)
        return NotImplemented

    def __hash__(self) -> int:
        # what it is made of, not its English text (which would be formatted at every
        # look-up of a cache of said messages); so a Message and the str it equals are
        # not one key of a dict: code compares them, it does not mix them as keys
        return hash((self.source, self.values, self.plural, self.n, self.capital))

    def __contains__(self, part: str) -> bool:
        return part in str(self)

    def __getattr__(self, name: str) -> Any:
        """A str's methods (``split``, ``lower`` ...) read its English text, as where the
        text was a str before it became a message."""
        if name.startswith("_") or not hasattr(str, name):
            raise AttributeError(name)
        return getattr(str(self), name)

    def __len__(self) -> int:
        return len(str(self))

    def __bool__(self) -> bool:
        return True       # a message always says something (no English text to make)

    def __add__(self, other: object) -> Message:
        """Messages follow one another (a sentence, then another)."""
        if not isinstance(other, (Message, str)):
            return NotImplemented
        return Message("{a}{b}", (("a", self), ("b", other)))

    def __radd__(self, other: object) -> Message:
        if not isinstance(other, str):
            return NotImplemented
        return Message("{a}{b}", (("a", other), ("b", self)))


_FORMATTER = string.Formatter()


def _fill(text: str, fields: Mapping[str, Any]) -> str:
    """``text.format(**fields)``; a field the text (a translation) lacks a value for is
    left as written rather than losing the whole message."""
    try:
        return text.format_map(fields)
    except (KeyError, IndexError, ValueError):
        return "".join(lit + (str(fields.get(name, "{" + name + "}")) if name is not None
                              else "")
                       for lit, name, _, _ in _safe_parse(text))


def _safe_parse(text: str) -> Iterable[tuple[str, str | None, str | None, str | None]]:
    try:
        return list(_FORMATTER.parse(text))
    except ValueError:
        return [(text, None, None, None)]


def _(source: str, /, **values: Any) -> Message:
    """A message (its English source with ``{name}`` fields) and its values."""
    return Message(source, tuple(values.items()))


def _n(singular: str, plural: str, n: int, /, **values: Any) -> Message:
    """A message whose form follows the count ``n`` (``{n}`` in it is the count)."""
    return Message(singular, tuple(values.items()), plural, n)


Said = str | Message


_PLAIN = frozenset({str, int, float, bool, type(None)})


def say(value: Any, tr: Translator = ENGLISH) -> Any:
    """A value as its reader reads it: a message said in ``tr``'s language, and so every
    message inside a list, tuple or dict (a new container where one was said, the same
    object where none was); a value that says itself to a reader (``said(tr)``: a time,
    pbem.text.zones.When) said; anything else as it is."""
    kind = type(value)
    if kind is Message:
        return value.said(tr)
    if kind in _PLAIN:
        return value
    if kind is dict:
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            said = say(item, tr)
            if said is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = said
        return value if changed is None else changed
    if kind is list or kind is tuple:
        items = [say(item, tr) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return items if kind is list else tuple(items)
    # a value that says itself (SaysItself); a look at its class, not a runtime Protocol
    # check, which costs microseconds a value
    return value.said(tr) if callable(getattr(kind, "said", None)) else value


def joined(parts: Iterable[object], sep: str = " ") -> Message:
    """Several messages as one, ``sep`` between them (said each in the reader's language)."""
    items = list(parts)
    between = sep.replace("{", "{{").replace("}", "}}")
    return Message(between.join(f"{{p{i}}}" for i in range(len(items))),
                   tuple((f"p{i}", item) for i, item in enumerate(items)))


def ngettext(singular: str, plural: str, n: int) -> str:
    """The form for ``n`` (English: only exactly one is singular; -1 and 0 are plural)."""
    return singular if n == 1 else plural


def count_of(amount: float) -> int:
    """The count a plural form is chosen by for an amount that may have a fraction: the
    amount when whole, else 2 (1.5 hours, 13.5 days: the "few" form, as German and Czech
    say a fraction, and English's plural)."""
    return int(amount) if amount == int(amount) else 2


def plural(singular: str, plural: str, n: int) -> str:
    """The form for ``n``, with ``{n}`` in it replaced by ``n``."""
    return ngettext(singular, plural, n).replace("{n}", str(n))


def listing(items: Iterable[object], none: Said | None = None,
            tr: Translator = ENGLISH) -> str:
    """Items as a reader writes them: "1", "1 and 3", "1, 2 and 4" (``none``, else
    "nobody", if empty), never a Python list; in ``tr``'s language."""
    return str(listed(items, none).said(tr))


def listed(items: Iterable[object], none: Said | None = None) -> Message:
    """``listing`` as a message, said when its reader's language is known."""
    words = list(items)
    if not words:
        return Message("{none}", (("none", none),)) if none is not None else _("nobody")
    if len(words) == 1:
        return Message("{only}", (("only", words[0]),))
    return _("{first} and {last}", first=joined(words[:-1], ", "), last=words[-1])


def percent(p: float, tr: Translator = ENGLISH) -> str:
    """A probability as a whole percentage, written as tr's language writes one (CLDR,
    through Babel): 0.4567 -> "46%" in English, "46 %" (a no-break space) in German and
    Czech. A value that is neither 0 nor 1 never shows as "0%" or "100%": it is written
    "<1%" or ">99%", so that a player is not told a bid is certain when it is not (the
    reports' odds and their charts)."""
    whole = round(p * 100)
    if whole == 0 and p > 0.0:      # 0.005 too, which round() takes to 0 (half to even)
        return "<" + _whole_percent(1, language_of(tr))
    if whole == 100 and p < 1.0:
        return ">" + _whole_percent(99, language_of(tr))
    return _whole_percent(whole, language_of(tr))


@functools.lru_cache(maxsize=512)
def _whole_percent(whole: int, locale: str) -> str:
    """A whole percentage in a language, remembered: Babel takes some 40 µs for each, and a
    turn's reports write the same hundred-odd numbers thousands of times (their odds)."""
    return format_percent(whole / 100, locale=locale)


def language_of(tr: Translator) -> str:
    """The language code tr says things in: a catalogue's Language header ("de"), "en"
    for the source. A reader (pbem.text.zones.Reader) is a translator and a time zone."""
    inner = getattr(tr, "tr", tr)
    info = getattr(inner, "info", None)
    language = info().get("language") if callable(info) else None
    return language if isinstance(language, str) and language in LANGUAGES else "en"


# the fields of a command's usage ("BID <quantity> <face>"), said in the reader's language
# where HELP and errors list the commands (the command words themselves stay as written)
USAGE_FIELDS: Mapping[str, Message] = {
    "<game>": _("<game>"), "<key>": _("<key>"), "<your key>": _("<your key>"),
    "<quantity>": _("<quantity>"), "<face>": _("<face>"), "<seat>": _("<seat>"),
    "<text>": _("<text>"), "<name>": _("<name>"), "<your name>": _("<your name>"),
    "<from-date>": _("<from-date>"), "<to-date>": _("<to-date>"), "<token>": _("<token>"),
    "<total>": _("<total>"), "<player>": _("<player>"),
    "<player number or name>": _("<player number or name>"),
    "<new address>": _("<new address>"), "<email>": _("<email>"), "<zone>": _("<zone>"),
    "<IANA name>": _("<IANA name>"), "<code>": _("<code>"), "<n>": _("<n>"),
    "<hours>": _("<hours>"), "<hour>": _("<hour>"), "<days>": _("<days>"),
    "<order>": _("<order>"), "<kind>": _("<kind>"), "<mail id>": _("<mail id>"),
    "<first>": _("<first>"), "<last>": _("<last>"), "<referee key>": _("<referee key>")}
_USAGE_FIELD = re.compile(r"<[^<>\n]{1,40}>")


def usage_said(text: str, tr: Translator = ENGLISH) -> str:
    """A command's usage with its fields in ``tr``'s language: "BID <quantity> <face>" ->
    "BID <Anzahl> <Augenzahl>"; a field it does not know stays as written."""
    return _USAGE_FIELD.sub(lambda m: USAGE_FIELDS[m.group()].said(tr)
                            if m.group() in USAGE_FIELDS else m.group(), text)
