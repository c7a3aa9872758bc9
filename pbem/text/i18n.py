"""The languages pbem speaks, and their gettext catalogues.

English is the source language: every message is written in English in the code and the
templates (``_()`` of pbem.text.wording, ``{% trans %}``), and that text is the msgid. German
and Czech are translations, in the gettext catalogues ``pbem/locale/<lang>/LC_MESSAGES/
*.po`` (made and kept up to date with Babel: testkit/catalogue.py). A catalogue is read
once a process, when its language is first needed; a message it lacks is said in English.

A wheel carries each language's catalogues compiled into one ``pbem.mo`` (made at build
time by hatch_build.py, from :func:`compiled_catalogue`), and no .po file: an installed
pbem reads the .mo as it is. A source checkout has the .po files alone (or a .mo older
than one of them): they are compiled when first needed, so an edit is read at once.
"""

from __future__ import annotations

import functools
import gettext
import io
from pathlib import Path

from pbem.text.wording import ENGLISH, LANGUAGES, Translator

__all__ = ["LANGUAGES", "SOURCE_LANGUAGE", "answer_language", "best_language",
           "compiled_catalogue", "known_language", "translator"]

SOURCE_LANGUAGE = "en"
LOCALE_DIR = Path(__file__).resolve().parent.parent / "locale"  # pbem/locale


def catalogue_files(language: str) -> list[Path]:
    """The .po files of a language (sorted; the first one that has a message says it)."""
    return sorted((LOCALE_DIR / language / "LC_MESSAGES").glob("*.po"))


def compiled_file(language: str) -> Path:
    """Where a language's catalogues stand compiled into one (in a wheel: hatch_build.py)."""
    return LOCALE_DIR / language / "LC_MESSAGES" / "pbem.mo"


def compiled_catalogue(language: str) -> bytes | None:
    """The .po files of ``language`` merged and compiled into one .mo (fuzzy entries left
    out, as msgfmt does); None when it has none."""
    # imported here: an installed pbem reads its .mo and compiles nothing
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    merged = None
    for path in catalogue_files(language):
        with path.open("rb") as fp:
            catalogue = read_po(fp, locale=language)
        if merged is None:
            merged = catalogue
            continue
        for message in catalogue:        # one catalogue, one look-up a message
            if message.id and message.id not in merged:
                merged[message.id] = message
    if merged is None:
        return None
    compiled = io.BytesIO()
    write_mo(compiled, merged)
    return compiled.getvalue()


@functools.lru_cache(maxsize=8)
def translator(language: str) -> Translator:
    """What says messages in ``language`` (English for the source or an unknown one)."""
    if language == SOURCE_LANGUAGE or language not in LANGUAGES:
        return ENGLISH
    built, sources = compiled_file(language), catalogue_files(language)
    if built.exists() and all(built.stat().st_mtime >= po.stat().st_mtime for po in sources):
        with built.open("rb") as fp:
            return gettext.GNUTranslations(fp)
    compiled = compiled_catalogue(language)
    if compiled is None:
        return ENGLISH
    return gettext.GNUTranslations(io.BytesIO(compiled))


def known_language(code: str | None, default: str = SOURCE_LANGUAGE) -> str:
    """``code`` if pbem speaks it, else ``default``."""
    return code if code is not None and code in LANGUAGES else default


def answer_language(*, game: str | None, own: str | None = None, chosen: str | None = None,
                    written: str | None = None, plays_in: str | None = None,
                    default: str = SOURCE_LANGUAGE) -> str:
    """The language a mail to someone is in (the one rule; docs/commands.md, "Languages").

    About a game (``game``: its language): the language that person reads that game in,
    their own there (``own``: LANGUAGE, or the language their JOIN was written in), else
    the one the address chose anywhere (``chosen``: a player REPLACEd into the game
    without one reads the game's), else the game's. About no game: the language of the
    mail's words (``written``: a mail of English order words is answered in English),
    else the address's chosen one, else that of the games it plays (``plays_in``), else
    ``default`` (the server's). A code pbem does not speak counts as none."""
    order = (own, chosen, game) if game is not None else (written, chosen, plays_in)
    return next((c for c in order if c is not None and c in LANGUAGES),
                known_language(default))


def best_language(accept: str | None, default: str = SOURCE_LANGUAGE) -> str:
    """The language to answer an HTTP ``Accept-Language`` header in: the first of its
    choices, by weight, that pbem speaks ("de-AT,de;q=0.9,en;q=0.5" -> "de")."""
    choices: list[tuple[float, int, str]] = []
    for i, part in enumerate((accept or "")[:1000].split(",")[:40]):
        tag, _, params = part.strip().partition(";")
        weight = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip() == "q":
                try:
                    weight = float(value)
                except ValueError:
                    weight = 0.0
        code = tag.strip().lower().split("-")[0]
        if code and weight > 0:
            choices.append((-weight, i, code))
    for _, _, code in sorted(choices):
        if code in LANGUAGES:
            return code
    return default
