"""The order words of each language a player may write in, besides English: one table a
language, read by the order grammar (pbem.orders), not a replacement of strings.

German uses the words of the German rule text (Ravensburger: "Hoch die Becher!", der
Sternchen-Würfel); Czech those of the Czech one (sázka, nevěřím, hvězdička). Every word
is matched in any case and with or without its accents (``NEVĚŘÍM`` = ``neverim``,
``Fünfer`` = ``funfer``); the English words always work too.

Pure: no I/O; pbem.orders imports it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping

STAR_FACE = "*"       # what pbem.orders makes the star face of (pbem.rules.dice.STAR)


def folded(word: str) -> str:
    """A word as the grammar compares it: upper case, accents off (ß stays SS)."""
    decomposed = unicodedata.normalize("NFKD", word.upper())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


# order name -> the spellings of each language (a spelling may be several words). Only
# words that do not open an everyday sentence: a line that starts with one is read as
# that order ("Stand der Dinge" must stay prose, so STATUS has no German word; SAY has
# "AN ALLE", never "SAGE": "Sage mal ..." is a sentence)
ORDER_WORDS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "de": {
        "BID": ("BIETE", "GEBOT", "BIETEN"),
        "CHALLENGE": ("HOCH DIE BECHER", "ANZWEIFELN", "ZWEIFLE"),
        "EXPOSE": ("ZEIGE", "ZEIGEN"),
        "HELP": ("HILFE",),
        # the desk's commands
        "JOIN": ("ANMELDEN", "MITSPIELEN"),
        "CONFIRM": ("BESTÄTIGEN",),
        "LEAVE": ("ABMELDEN",),
        "WATCH": ("ZUSCHAUEN",),
        "UNWATCH": ("ABBESTELLEN",),
        "LIST": ("SPIELLISTE",),
        "SAY": ("AN ALLE",),
        "ORDERS": ("BEFEHLE",),
        "HISTORY": ("VERLAUF",),
        "ABSENT": ("ABWESEND",),
        "DEFAULT": ("VORGABE",),
        "LANGUAGE": ("SPRACHE",),
        "TIMEZONE": ("ZEITZONE",),
        "ADDRESS": ("NEUE ADRESSE",),
        "RECORD": ("PROTOKOLL",),
    },
    "cs": {
        "BID": ("SÁZKA", "SÁZÍM", "VSADIT"),
        "CHALLENGE": ("NEVĚŘÍM", "NEVĚŘIT"),
        "EXPOSE": ("UKÁZAT", "UKAZUJI", "UKÁŽU"),
        "HELP": ("NÁPOVĚDA",),
        # the desk's commands
        "JOIN": ("PŘIHLÁSIT", "PŘIHLÁŠKA"),
        "CONFIRM": ("POTVRDIT", "POTVRZUJI"),
        "LEAVE": ("ODHLÁSIT",),
        "WATCH": ("SLEDOVAT",),
        "UNWATCH": ("NESLEDOVAT",),
        "LIST": ("SEZNAM HER",),
        "SAY": ("VZKAZ", "VŠEM"),
        "ORDERS": ("PŘÍKAZY",),
        "HISTORY": ("HISTORIE",),
        "ABSENT": ("NEPŘÍTOMNOST",),
        "DEFAULT": ("VÝCHOZÍ",),
        "LANGUAGE": ("JAZYK",),
        "TIMEZONE": ("ČASOVÉ PÁSMO",),
        "ADDRESS": ("NOVÁ ADRESA",),
        "RECORD": ("ZÁZNAM",),
    },
}

# the word for each face (1..5, the star), each form a player may write
FACE_WORDS: Mapping[str, Mapping[str, object]] = {
    "de": {
        **{w: 1 for w in ("EINS", "EINSER", "EINSEN")},
        **{w: 2 for w in ("ZWEI", "ZWEIER", "ZWEIEN")},
        **{w: 3 for w in ("DREI", "DREIER", "DREIEN")},
        **{w: 4 for w in ("VIER", "VIERER")},
        **{w: 5 for w in ("FÜNF", "FÜNFER")},
        **{w: STAR_FACE for w in ("STERN", "STERNE", "STERNCHEN")},
    },
    "cs": {
        **{w: 1 for w in ("JEDNIČKA", "JEDNIČKY", "JEDNIČEK", "JEDNA")},
        **{w: 2 for w in ("DVOJKA", "DVOJKY", "DVOJEK", "DVĚ")},
        **{w: 3 for w in ("TROJKA", "TROJKY", "TROJEK", "TŘI")},
        **{w: 4 for w in ("ČTYŘKA", "ČTYŘKY", "ČTYŘEK", "ČTYŘI")},
        **{w: 5 for w in ("PĚTKA", "PĚTKY", "PĚTEK", "PĚT")},
        **{w: STAR_FACE for w in ("HVĚZDIČKA", "HVĚZDIČKY", "HVĚZDIČEK", "HVĚZDA",
                                  "HVĚZDY")},
    },
}

# quantities in words, as players write them
NUMBER_WORDS: Mapping[str, Mapping[str, int]] = {
    "de": {w: i for i, w in enumerate(
        "NULL EINS ZWEI DREI VIER FÜNF SECHS SIEBEN ACHT NEUN ZEHN ELF ZWÖLF DREIZEHN "
        "VIERZEHN FÜNFZEHN SECHZEHN SIEBZEHN ACHTZEHN NEUNZEHN ZWANZIG".split())}
    | {"EIN": 1, "EINE": 1, "EINEN": 1},
    "cs": {w: i for i, w in enumerate(
        "NULA JEDNA DVA TŘI ČTYŘI PĚT ŠEST SEDM OSM DEVĚT DESET JEDENÁCT DVANÁCT TŘINÁCT "
        "ČTRNÁCT PATNÁCT ŠESTNÁCT SEDMNÁCT OSMNÁCT DEVATENÁCT DVACET".split())}
    | {"JEDEN": 1, "JEDNO": 1, "DVĚ": 2},
}


# the languages a player may choose (LANGUAGE), by the names they may choose them by
LANGUAGE_NAMES: Mapping[str, str] = {
    "EN": "en", "ENGLISH": "en", "ENGLISCH": "en", "ANGLICTINA": "en",
    "DE": "de", "GERMAN": "de", "DEUTSCH": "de", "NEMCINA": "de",
    "CS": "cs", "CZ": "cs", "CZECH": "cs", "TSCHECHISCH": "cs", "CESTINA": "cs",
    "CESKY": "cs"}


def language_named(word: str) -> str | None:
    """The language code a player's word names (any case, accents optional), or None."""
    return LANGUAGE_NAMES.get(folded(word))


def words_language(lines: Iterable[str]) -> str | None:
    """The language whose order word opens the first line that opens with one (a mail
    that fails to parse is still answered in the language it was written in)."""
    for line in lines:
        words = [w.rstrip("!.:") for w in folded(line).split()[:3]]
        for language, spellings in _FOLDED_ORDER_WORDS:
            if any(words[:len(sp)] == sp for sp in spellings):
                return language
    return None


def spellings_of(name: str) -> tuple[tuple[str, str], ...]:
    """(language, spelling) of every other language's word for the order ``name``."""
    return tuple((lang, word) for lang, table in ORDER_WORDS.items()
                 for word in table.get(name, ()))


def _folded_table(tables: Mapping[str, Mapping[str, object]]) -> dict[str, object]:
    return {folded(word): value for table in tables.values() for word, value in table.items()}


FOLDED_FACES = _folded_table(FACE_WORDS)
_FOLDED_ORDER_WORDS = tuple((language, tuple(folded(w).split() for words in table.values()
                                              for w in words))
                            for language, table in ORDER_WORDS.items())
FOLDED_NUMBERS: dict[str, int] = {folded(word): value for table in NUMBER_WORDS.values()
                                  for word, value in table.items()}
