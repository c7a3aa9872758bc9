"""The order words of each language a player may write in, besides English: one table a
language, read by the order grammar (pbem.orders.parsing), not a replacement of strings.

German uses the words of the German rule text (Ravensburger: "Hoch die Becher!", der
Sternchen-Würfel); Czech those of the Czech one (sázka, nevěřím, hvězdička). Every word
is matched in any case and with or without its accents (``NEVĚŘÍM`` = ``neverim``,
``Fünfer`` = ``funfer``); the English words always work too.

Pure: no I/O; pbem.orders.parsing imports it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from functools import lru_cache

STAR_FACE = "*"       # what pbem.orders.parsing makes the star face of (pbem.rules.dice.STAR)


@lru_cache(maxsize=8192)
def folded(word: str) -> str:
    """A word as the grammar compares it: upper case, accents off (ß becomes SS). (Kept
    for the words met most: a mail's words repeat, and so do its mails'.)"""
    if word.isascii():
        return word.upper()
    decomposed = unicodedata.normalize("NFKD", word.upper().replace("\u2019", "'"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


_UMLAUTS = str.maketrans({"Ä": "AE", "Ö": "OE", "Ü": "UE", "ä": "ae", "ö": "oe", "ü": "ue"})


def spelled(word: str) -> tuple[str, ...]:
    """The folded forms a word of the tables may be typed in: accents off, and a German
    umlaut typed as its letter and "e" (FÜNFER: FUNFER, FUENFER; ERHÖHE: ERHOHE, ERHOEHE)."""
    forms = (folded(word), folded(word.translate(_UMLAUTS)))
    return forms if forms[0] != forms[1] else forms[:1]


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

# the word for each face (1..5, the star; a six is the star, which replaces the 6), each
# form a player may write: German plurals and cases (Fünfer, Fünfen, Fünfern), Czech cases
# (pětka, pětky, pětek, pětkami, pětku). The bare numbers (FÜNF, PĚT, FIVE) are faces
# after an order word ("BIETE 3 fünf"); a line of two numbers alone reads two ways
FACE_WORDS: Mapping[str, Mapping[str, object]] = {
    "de": {
        **{w: 1 for w in ("EINS", "EINSER", "EINSERN", "EINSEN", "EINER", "EINERN")},
        **{w: 2 for w in ("ZWEI", "ZWEIER", "ZWEIERN", "ZWEIEN")},
        **{w: 3 for w in ("DREI", "DREIER", "DREIERN", "DREIEN")},
        **{w: 4 for w in ("VIER", "VIERER", "VIERERN", "VIEREN")},
        **{w: 5 for w in ("FÜNF", "FÜNFER", "FÜNFERN", "FÜNFEN")},
        **{w: STAR_FACE for w in ("STERN", "STERNE", "STERNEN", "STERNCHEN", "STERNCHENS",
                                  "SECHS", "SECHSER", "SECHSERN", "SECHSEN", "JOKER",
                                  "JOKERN")},
    },
    "cs": {
        **{w: 1 for w in ("JEDNIČKA", "JEDNIČKY", "JEDNIČEK", "JEDNIČKAMI", "JEDNIČKU",
                          "JEDNIČKOU", "JEDNA")},
        **{w: 2 for w in ("DVOJKA", "DVOJKY", "DVOJEK", "DVOJKAMI", "DVOJKU", "DVOJKOU", "DVĚ")},
        **{w: 3 for w in ("TROJKA", "TROJKY", "TROJEK", "TROJKAMI", "TROJKU", "TROJKOU", "TŘI")},
        **{w: 4 for w in ("ČTYŘKA", "ČTYŘKY", "ČTYŘEK", "ČTYŘKAMI", "ČTYŘKU", "ČTYŘKOU", "ČTYŘI")},
        **{w: 5 for w in ("PĚTKA", "PĚTKY", "PĚTEK", "PĚTKAMI", "PĚTKU", "PĚTKOU", "PĚT")},
        **{w: STAR_FACE for w in ("HVĚZDIČKA", "HVĚZDIČKY", "HVĚZDIČEK", "HVĚZDIČKAMI",
                                  "HVĚZDIČKU", "HVĚZDIČKOU", "HVĚZDA", "HVĚZDY", "HVĚZD", "HVĚZDAMI",
                                  "HVĚZDU", "ŠESTKA", "ŠESTKY", "ŠESTEK", "ŠESTKAMI",
                                  "ŠESTKU", "ŠESTKOU", "ŠEST")},
    },
}
# the English face words the grammar reads as nouns (pbem.orders.parsing reads its own spellings)
ENGLISH_FACE_WORDS: Mapping[str, object] = {
    **{w: 1 for w in ("ONES", "1S", "1'S")}, **{w: 2 for w in ("TWOS", "2S", "2'S")},
    **{w: 3 for w in ("THREES", "3S", "3'S")}, **{w: 4 for w in ("FOURS", "4S", "4'S")},
    **{w: 5 for w in ("FIVES", "5S", "5'S")},
    **{w: STAR_FACE for w in ("STAR", "STARS", "SIXES", "6S", "6'S", "JOKER", "JOKERS")},
}

# quantities in words, as players write them (one to thirty at least)
NUMBER_WORDS: Mapping[str, Mapping[str, int]] = {
    "de": {w: i for i, w in enumerate(
        "NULL EINS ZWEI DREI VIER FÜNF SECHS SIEBEN ACHT NEUN ZEHN ELF ZWÖLF DREIZEHN "
        "VIERZEHN FÜNFZEHN SECHZEHN SIEBZEHN ACHTZEHN NEUNZEHN ZWANZIG EINUNDZWANZIG "
        "ZWEIUNDZWANZIG DREIUNDZWANZIG VIERUNDZWANZIG FÜNFUNDZWANZIG SECHSUNDZWANZIG "
        "SIEBENUNDZWANZIG ACHTUNDZWANZIG NEUNUNDZWANZIG DREIßIG".split())}
    | {"EIN": 1, "EINE": 1, "EINEN": 1},
    "cs": {w: i for i, w in enumerate(
        "NULA JEDNA DVA TŘI ČTYŘI PĚT ŠEST SEDM OSM DEVĚT DESET JEDENÁCT DVANÁCT TŘINÁCT "
        "ČTRNÁCT PATNÁCT ŠESTNÁCT SEDMNÁCT OSMNÁCT DEVATENÁCT DVACET".split())}
    | {"JEDEN": 1, "JEDNO": 1, "JEDNU": 1, "DVĚ": 2, "TŘICET": 30}
    | {f"{unit}ADVACET": i for i, unit in enumerate(
        ("", "JEDEN", "DVA", "TŘI", "ČTYŘI", "PĚT", "ŠEST", "SEDM", "OSM", "DEVĚT"),
        start=20) if unit}
    | {f"DVACET{unit}": i for i, unit in enumerate(
        ("", "JEDNA", "DVA", "TŘI", "ČTYŘI", "PĚT", "ŠEST", "SEDM", "OSM", "DEVĚT"),
        start=20) if unit},
    "en": {w: i for i, w in enumerate(
        "ZERO ONE TWO THREE FOUR FIVE SIX SEVEN EIGHT NINE TEN ELEVEN TWELVE THIRTEEN "
        "FOURTEEN FIFTEEN SIXTEEN SEVENTEEN EIGHTEEN NINETEEN TWENTY TWENTYONE TWENTYTWO "
        "TWENTYTHREE TWENTYFOUR TWENTYFIVE TWENTYSIX TWENTYSEVEN TWENTYEIGHT TWENTYNINE "
        "THIRTY".split())},
}
# a tens word a unit word may follow as a word of its own ("twenty one", "dvacet jedna")
TENS_WORDS: Mapping[str, int] = {"TWENTY": 20, "DVACET": 20}

# the standing orders (DEFAULT) by the words of each language
STANDING_ORDER_WORDS: Mapping[str, tuple[str, ...]] = {
    "CHALLENGE": ("ANZWEIFELN", "ZWEIFELN", "HOCH DIE BECHER", "NEVĚŘÍM", "NEVĚŘIT"),
    "RAISE": ("ERHÖHEN", "BIETEN", "ZVÝŠIT", "ZVYŠOVAT", "PŘIHODIT"),
    "ROBOT": ("ROBOTER", "ROBOT"),
    "NONE": ("KEINE", "KEINER", "NICHTS", "ŽÁDNÁ", "ŽÁDNÝ", "ŽÁDNÉ", "NIC"),
}


def standing_order(words: Iterable[str]) -> str | None:
    """The standing order (CHALLENGE, RAISE, ROBOT, NONE) that ``words`` name in any of
    the languages, any case, accents optional (ERHÖHEN = ERHOHEN = ERHOEHEN); None if none."""
    said = " ".join(folded(w).strip(".!,;:") for w in words).strip()
    if said in STANDING_ORDER_WORDS:
        return said
    return next((name for name, spellings in STANDING_ORDER_WORDS.items()
                 if said in {f for s in spellings for f in spelled(s)}), None)


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
    return {form: value for table in tables.values() for word, value in table.items()
            for form in spelled(word)}


FOLDED_FACES = _folded_table(FACE_WORDS)
_FOLDED_ORDER_WORDS = tuple((language, tuple(form.split() for words in table.values()
                                              for w in words for form in spelled(w)))
                            for language, table in ORDER_WORDS.items())
FOLDED_NUMBERS: dict[str, int] = {form: value for table in NUMBER_WORDS.values()
                                  for word, value in table.items() for form in spelled(word)}


# each face as an order names it after a quantity: (one, two to four, five and more)
FACES_SAID: Mapping[str, Mapping[str, tuple[str, str, str]]] = {
    "en": {"1": ("one", "ones", "ones"), "2": ("two", "twos", "twos"),
           "3": ("three", "threes", "threes"), "4": ("four", "fours", "fours"),
           "5": ("five", "fives", "fives"), STAR_FACE: ("star", "stars", "stars")},
    "de": {"1": ("Einser", "Einser", "Einser"), "2": ("Zweier", "Zweier", "Zweier"),
           "3": ("Dreier", "Dreier", "Dreier"), "4": ("Vierer", "Vierer", "Vierer"),
           "5": ("Fünfer", "Fünfer", "Fünfer"), STAR_FACE: ("Stern", "Sterne", "Sterne")},
    "cs": {"1": ("jednička", "jedničky", "jedniček"), "2": ("dvojka", "dvojky", "dvojek"),
           "3": ("trojka", "trojky", "trojek"), "4": ("čtyřka", "čtyřky", "čtyřek"),
           "5": ("pětka", "pětky", "pětek"),
           STAR_FACE: ("hvězdička", "hvězdičky", "hvězdiček")},
}


def order_said(name: str, args: tuple[str, ...], language: str | None) -> str:
    """An order as its order word writes it in ``language`` (None: English): "BIETE 3
    Fünfer", "SÁZKA 5 pětek", "HOCH DIE BECHER", "BID 4 stars"; a bid's arguments are a
    quantity and a face ("3", "5"; "*" the star)."""
    lang = language if language is not None and language in ORDER_WORDS else "en"
    word = ORDER_WORDS[lang].get(name, (name,))[0] if lang != "en" else name
    if name == "BID" and len(args) == 2 and args[0].isdigit() and args[1] in FACES_SAID["en"]:
        count = int(args[0])
        forms = FACES_SAID[lang][args[1]]
        face = forms[0] if count == 1 else forms[1] if 2 <= count <= 4 else forms[2]
        return f"{word} {count} {face}"
    return " ".join((word, *args))
