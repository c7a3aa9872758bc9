"""The phrases people write orders in, in English, German and Czech: what the grammar of
pbem.orders.reading matches a line's clauses against.

Each table is a finite set of word tuples, folded as a line's words are (any case,
accents optional, ä typed ae: every spelling a player may type, pbem.orders.words.spelled):
greetings and courtesy words around an order, the openers of a bid ("Ich erhöhe auf"),
a challenge as people say it ("Becher hoch!"), the words between a quantity and its face
("3 mal die 5"), and the single words that make a clause speak of bidding, of a
challenge, or deny one. A phrase is added here; how a line is read stays in reading.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable

from pbem.orders.words import ENGLISH_FACE_WORDS, FACE_WORDS, NUMBER_WORDS, spelled


def _phrases(*texts: str) -> frozenset[tuple[str, ...]]:
    """Each text's word tuples in every spelling a player may type (see spelled)."""
    found: set[tuple[str, ...]] = set()
    for text in texts:
        forms: list[tuple[str, ...]] = [()]
        for word in text.split():
            forms = [f + (s,) for f in forms for s in spelled(word)]
        found.update(forms)
    return frozenset(found)


def _combined(subjects: Iterable[str], verbs: Iterable[str]) -> list[str]:
    return [f"{s} {v}".strip() for s in subjects for v in verbs]


# greetings, courtesy and filler words around an order, in any of the languages
COURTESY = _phrases(
    "please", "pls", "plz", "thanks", "thank you", "thanks a lot", "thx", "cheers", "hi",
    "hello", "hey", "dear all", "hi all", "hello all", "hi everyone", "hello everyone",
    "everyone", "all", "folks", "guys", "well", "so", "then", "now", "right", "alright",
    "good luck", "gl", "regards", "best", "best regards", "kind regards", "sorry", "yes",
    "bitte", "danke", "danke schön", "dankeschön", "vielen dank", "danke sehr", "hallo",
    "moin", "servus", "grüß gott", "grüße", "gruß", "liebe grüße", "viele grüße", "lg",
    "mfg", "also", "gut", "na gut", "na dann", "dann", "jetzt", "nun", "zusammen", "leute",
    "ihr lieben", "hallo zusammen", "hallo leute", "hallo ihr lieben", "hi zusammen",
    "viel glück", "viel spaß", "tschüss", "ciao", "ja", "bitte schön", "bitteschön",
    "prosím", "díky", "dík", "děkuji", "děkuju", "moc díky", "díky moc", "ahoj", "čau", "nazdar",
    "zdravím", "zdravíčko", "dobrý den", "dobrý večer", "tak", "takže", "dobře", "no",
    "hodně štěstí", "s pozdravem", "všem", "ahoj všichni", "zdravím všechny", "jo", "ano",
    "tedy", "teda", "nyní", "teď", "tak tedy",
    "and", "und", "or", "oder", "nebo",
)
MOST_COURTESY_WORDS = max(len(p) for p in COURTESY)

# a subject and a verb of bidding or raising, before a bid ("Ich erhöhe auf" drei Fünfer)
BID_OPENERS: dict[str, frozenset[tuple[str, ...]]] = {
    "en": _phrases(
        *_combined(("", "I", "I'LL", "ILL", "I WILL", "I SHALL"),
                   ("BID", "SAY", "RAISE", "RAISE TO", "RAISE IT TO", "RAISE THE BID TO",
                    "GO", "GO TO", "GO WITH", "BET", "BET ON", "MAKE IT", "CLAIM",
                    "OPEN WITH", "BID ON")),
        "I'D SAY", "ID SAY", "LET'S SAY", "LETS SAY", "LET'S GO WITH", "I'M BIDDING",
        "IM BIDDING", "I AM BIDDING", "I'M RAISING TO", "IM RAISING TO", "I AM RAISING TO",
        "RAISING TO", "BIDDING", "I'M GOING WITH", "I AM GOING WITH", "MY BID IS", "MY BID",
        "MY NEW BID IS", "NEW BID", "MY BID WILL BE", "MY BID FOR THIS TURN IS", "BID IS",
        "MY BID THIS TURN IS", "RAISE TO",
    ),
    "de": _phrases(
        *_combined(("", "ICH"), ("BIETE", "BIETE AUF", "SAGE", "ERHÖHE", "ERHÖHE AUF",
                                  "ERHÖHE DAS GEBOT AUF", "SETZE", "SETZE AUF", "TIPPE",
                                  "TIPPE AUF", "WETTE", "WETTE AUF", "GEHE AUF", "MACHE",
                                  "SAGE MAL", "BIETE JETZT", "ERHÖHE JETZT AUF",
                                  "GEHE HOCH AUF", "ERHOEH AUF", "ERHÖH AUF")),
        "BIETE ICH", "SAGE ICH", "ERHÖHE ICH AUF", "SETZE ICH AUF", "TIPPE ICH AUF",
        "GEHE ICH AUF", "SAGEN WIR", "ICH WÜRDE SAGEN", "MEIN GEBOT", "MEIN GEBOT IST",
        "MEIN GEBOT LAUTET", "MEIN NEUES GEBOT", "MEIN NEUES GEBOT IST", "NEUES GEBOT",
        "GEBOT", "GEBOT IST", "GEBOT AUF", "ICH BIETE MAL", "ICH ERHÖHE MAL AUF",
    ),
    "cs": _phrases(
        *_combined(("", "JÁ"), ("SÁZÍM", "SÁZÍM NA", "VSADÍM", "VSADÍM NA", "VSADÍM SE O",
                                 "VSADÍM SE NA", "SÁZÍM SE O", "VSÁZÍM", "VSÁZÍM NA",
                                 "ZVYŠUJI NA", "ZVYŠUJU NA", "ZVÝŠÍM NA", "ZVEDÁM NA",
                                 "ZVYŠUJI SÁZKU NA", "ZVÝŠÍM SÁZKU NA", "NABÍZÍM",
                                 "HLÁSÍM", "ŘÍKÁM", "NAVRHUJI", "NAVRHUJU", "TIPUJI", "TIPUJU", "TIPUJI NA",
                                 "TIPUJU NA", "JDU NA", "DÁVÁM", "PŘIHAZUJI NA",
                                 "NABÍZÍM SÁZKU", "SÁZÍM NA TO ŽE JE", "ŘEKNU")),
        "MOJE SÁZKA", "MOJE SÁZKA JE", "MÁ SÁZKA", "MÁ SÁZKA JE", "SÁZKA", "SÁZKA JE",
        "NOVÁ SÁZKA", "NOVÁ SÁZKA JE", "MOJE NOVÁ SÁZKA JE", "SÁZKA NA",
    ),
}

OPENER_LANGUAGE = {words: language for language, table in BID_OPENERS.items()
                   for words in table}

# a challenge as people say it (a whole clause)
CHALLENGES: dict[str, frozenset[tuple[str, ...]]] = {
    "en": _phrases(
        "LIAR", "YOU LIAR", "LIAR LIAR", "CHALLENGE", "I CHALLENGE", "I CHALLENGE THAT",
        "I CHALLENGE IT", "I CHALLENGE YOU", "I CHALLENGE THE BID", "I CHALLENGE THIS",
        "I CHALLENGE YOUR BID", "I'LL CHALLENGE", "I WILL CHALLENGE", "I CALL", "I CALL IT",
        "I CALL BLUFF", "I CALL YOUR BLUFF", "I CALL THAT", "CALL", "CALLING", "CALLING IT",
        "I DON'T BELIEVE IT", "I DON'T BELIEVE YOU", "I DON'T BELIEVE THAT", "I DONT BELIEVE IT",
        "I DONT BELIEVE YOU", "I DONT BELIEVE THAT", "I DO NOT BELIEVE IT",
        "I DO NOT BELIEVE YOU", "I DO NOT BELIEVE THAT", "I DON'T BELIEVE THIS",
        "DON'T BELIEVE IT", "DONT BELIEVE IT", "NOT BELIEVING IT", "I DOUBT IT",
        "I DOUBT THAT", "CUPS UP", "LIFT THE CUPS", "LIFT YOUR CUPS", "UP WITH THE CUPS",
        "SHOW YOUR DICE", "SHOW ME YOUR DICE", "SHOW THE DICE", "LET'S SEE THE DICE",
        "I CHALLENGE THE LAST BID", "I CHALLENGE THE CURRENT BID", "TAKE IT", "I TAKE IT",
    ),
    "de": _phrases(
        "HOCH DIE BECHER", "BECHER HOCH", "DIE BECHER HOCH", "BECHER RAUF", "BECHER AUF",
        "DAS GLAUBE ICH NICHT", "DAS GLAUB ICH NICHT", "GLAUBE ICH NICHT", "GLAUB ICH NICHT",
        "ICH GLAUBE DAS NICHT", "ICH GLAUBE DIR NICHT", "ICH GLAUBE ES NICHT",
        "ICH GLAUBE EUCH NICHT", "ICH GLAUB DIR NICHT", "ICH GLAUB DAS NICHT",
        "DAS GLAUBE ICH DIR NICHT", "GLAUBE ICH DIR NICHT", "DAS GLAUBE ICH EUCH NICHT",
        "ICH ZWEIFLE", "ICH ZWEIFLE AN", "ICH ZWEIFLE DAS AN", "ICH ZWEIFLE ES AN",
        "ICH ZWEIFLE DAS GEBOT AN", "ICH ZWEIFEL DAS AN", "ICH ZWEIFLE DEIN GEBOT AN",
        "ZWEIFLE AN", "ZWEIFLE DAS AN", "ICH BEZWEIFLE DAS", "DAS BEZWEIFLE ICH",
        "BEZWEIFLE ICH", "ICH BEZWEIFLE ES", "ANGEZWEIFELT", "ICH ZWEIFLE AN DEM GEBOT",
        "LÜGNER", "ICH DECKE AUF", "AUFDECKEN",
        "ZEIGT HER", "ZEIGT EURE WÜRFEL", "WÜRFEL ZEIGEN", "ICH WILL DIE WÜRFEL SEHEN", "DAS NEHME ICH DIR NICHT AB", "ICH FORDERE HERAUS", "ICH ZWEIFLE DEN WERT AN", "ICH ZWEIFLE DEN TIPP AN",
        "ZWEIFLE DEN WERT AN", "ICH ZWEIFLE DEINEN TIPP AN",
    ),
    "cs": _phrases(
        "NEVĚŘÍM", "TOMU NEVĚŘÍM", "NEVĚŘÍM TOMU", "NEVĚŘÍM TI", "TO NEVĚŘÍM", "JÁ NEVĚŘÍM",
        "JÁ TOMU NEVĚŘÍM", "TO TI NEVĚŘÍM", "NEVĚŘÍM VÁM", "TO VÁM NEVĚŘÍM", "TOHLE NEVĚŘÍM",
        "PŘIJÍMÁM", "PŘIJÍMÁM SÁZKU", "SÁZKU PŘIJÍMÁM", "PŘIJÍMÁM TU SÁZKU", "BERU SÁZKU",
        "LHÁŘI", "UKAŽTE KOSTKY", "UKAŽ KOSTKY", "ODKRÝT KOSTKY",
        "ODKRYJTE KOSTKY", "ODKRÝVÁM", "KOSTKY NAHORU", "VSADÍM SE PROTI", "VSADÍM SI PROTI", "SÁZÍM PROTI", "VSADÍM SE PROTI TOBĚ",
        "NEVĚŘÍM TOMU ANI SLOVO", "ZVEDNĚTE KELÍMKY", "KELÍMKY NAHORU",
    ),
}

CHALLENGE_LANGUAGE = {words: language for language, table in CHALLENGES.items()
                      for words in table}
# to accept the bet (Bluff's challenge; in Cup of Bluff it may as well be OK)
ACCEPTS = _phrases("TAKE IT", "I TAKE IT", "PŘIJÍMÁM", "PŘIJÍMÁM SÁZKU", "SÁZKU PŘIJÍMÁM",
                   "PŘIJÍMÁM TU SÁZKU", "BERU SÁZKU")

# words between a quantity and its face ("3 mal die 5", "3 Würfel mit der Augenzahl 5",
# "3 kostky s číslem 5", "3 dice showing 5")
JOINERS = _phrases(
    "MAL", "MAL DIE", "MAL DER", "X", "\u00d7", "KRÁT", "WÜRFEL MIT DER AUGENZAHL", "WÜRFEL MIT EINER", "WÜRFEL MIT EINEM",
    "WÜRFEL MIT AUGENZAHL", "WÜRFEL MIT DER", "WÜRFEL MIT", "WÜRFEL MIT DEM WERT",
    "KOSTKY S ČÍSLEM", "KOSTEK S ČÍSLEM", "KOSTKY UKAZUJÍ ČÍSLO", "KOSTEK UKAZUJE ČÍSLO", "KOSTKY S", "KOSTEK S", "KOSTKY SE", "KOSTEK SE",
    "KOSTKY NA KTERÝCH JE", "KOSTEK NA KTERÝCH JE", "DICE SHOWING", "DICE SHOWING A",
    "DICE WITH", "DICE WITH A", "DICE OF", "DIE SHOWING", "DIE SHOWING A",
)
MOST_JOINER_WORDS = max(len(p) for p in JOINERS)

# the words that make a clause with a bid in it speak of bidding (as in "Soll ich drei
# Fünfer bieten?", "I don't bid three fives", "Nesázím tři pětky")
BID_VERBS = frozenset(w for word in (
    "BID", "BIDS", "BIDDING", "RAISE", "RAISING", "BET",
    "BIETE", "BIETEN", "BIETEST", "GEBOT", "ERHÖHE", "ERHÖHEN", "SETZE", "SETZEN", "TIPPE",
    "SÁZÍM", "SÁZET", "VSADÍM", "VSADIT", "SÁZKA", "SÁZKU", "ZVYŠUJI", "ZVÝŠIT", "ZVÝŠÍM",
    "NABÍZÍM", "NABÍDNOUT", "NESÁZÍM", "NEVSADÍM", "NEZVYŠUJI", "NEZVÝŠÍM", "NENABÍZÍM",
    "HLÁSÍM", "NEHLÁSÍM") for w in spelled(word))
CHALLENGE_WORDS = frozenset(w for word in (
    "CHALLENGE", "LIAR", "BELIEVE", "GLAUBE", "ZWEIFLE", "BECHER", "NEVĚŘÍM", "VĚŘÍM",
    "PŘIJÍMÁM") for w in spelled(word))
NEGATIONS = frozenset(w for word in (
    "NOT", "DON'T", "DONT", "NEVER", "WON'T", "WONT", "NICHT", "KEIN", "KEINE", "NIE", "NE",
    "NEBUDU", "NECHCI") for w in spelled(word))


def _table(*tables: tuple[str | None, dict[str, object]]) -> dict[str, tuple[object, str | None]]:
    return {form: (value, language) for language, table in tables
            for word, value in table.items() for form in spelled(word)}


# the words of a bid's face and quantity, each with its language (None: English)
FACE_NOUNS = _table(("de", {w: f for w, f in FACE_WORDS["de"].items()}),
                    ("cs", {w: f for w, f in FACE_WORDS["cs"].items()}),
                    (None, dict(ENGLISH_FACE_WORDS)))
NUMBERS = _table(*((lang if lang != "en" else None, dict[str, object](table))
                   for lang, table in NUMBER_WORDS.items()))
# the face words that are also plain numbers: a face only where the line's shape says so
PLAIN_NUMBERS = frozenset(NUMBERS)

# words that make a bid after them a maybe ("vielleicht drei Fünfer", "maybe three fives")
HEDGES = frozenset(w for word in ("MAYBE", "PERHAPS", "PROBABLY", "VIELLEICHT",
                                  "WAHRSCHEINLICH", "EVENTUELL", "MOŽNÁ", "ASI", "NEJSPÍŠ")
                   for w in spelled(word))

# "or" between two orders: a clause ends ("drei Fünfer oder vier Vierer")
OR_WORDS = frozenset({"OR", "ODER", "NEBO", "BZW"})
# the words among bids that leave them bids and little else ("drei Fünfer oder vier Vierer")
AMONG_BIDS = frozenset({"OR", "ODER", "NEBO", "BZW", "AND", "UND", "A"})
