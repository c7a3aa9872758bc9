"""English words left in a German or Czech mail, found by a stop-list of common English
words rather than by the catalogue's own phrases (which cannot see English that never
went through the catalogue).

STOP_WORDS: the most common English words (the 200 of the usual frequency lists) and
the English words of this game's mail (game, turn, player, deadline ...), minus those
that are German or Czech words too ("in", "so", "was", "die", "hat", "an", "am", "will",
"also", "man", "see", "her", "still", "Limit", "Start" in German; "a", "i", "to", "on",
"do", "by", "no", "ten", "most", "pro" in Czech) and single letters. Left alone:
e-mail addresses, URLs, Message-IDs, hex strings (the seed, its commitment), the
order words quoted as examples (upper case English keywords: BID, HISTORY ...), quoted
lines of the player's own mail, and names given by the caller (players' names).
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable
from email.message import EmailMessage
from email.utils import parseaddr

from babel.messages.pofile import read_po

from pbem.kinds import KINDS
from pbem.orders.words import ORDER_WORDS
from pbem.text.i18n import LOCALE_DIR

STOP_WORDS = frozenset("""
the be of and that have it for not with he as you at this but his from they we say she
or my one all would there their what up out if about who get which go me when make can
like time just him know take people into year your good some could them other than then
now look only come its over think back after use two how our work first well way even
new want because any these give day us is are was were been has had did does said made
here where why very more many much each every should must may might shall yet again
before under between through during without against until while since being those such
own same both few less least next long great little old right big different small
large early young important public able too across already always never often once
really something nothing anything everything someone anyone everyone nobody none
please thank thanks dear yours sincerely regards hello hi hey yes ok okay let lets
mail mails email answer answers reply sent send message messages subject
game games player players turn turns round rounds hours hour minutes days day
deadline deadlines reminder reminders missed limit press private only talk
orders order bid bids challenge expose dice die face faces quantity
strong weak easy hard medium level robot classic cup postal virtual mini five three
four six seven eight nine eleven twelve twenty
seat seats seed score scores standings winner won lost lose wins loses history
status help join leave watch default absent vacation language timezone zone
from date dates until back away report reports confirmation notice welcome key
referee server moves move held holds bidder challenger replaced replace replacing
newcomer started starts ended ends over finished cancelled paused resumed waiting
due none yet still left right total points point
""".split()) - frozenset("""
in so was die hat an am will also man see her still limit start a i to on do by no ten
most pro bin art war gift hell fast um per via mail mails email server robot seed ok
private status zone total level mini
""".split())

# the English order words a mail may quote as examples (HELP lists them beside the
# language's own): the upper case words of the catalogue's English messages (BID,
# HISTORY, DEADLINE ...), allowed in upper case only
_KEYWORDS = frozenset(
    word for message in read_po((LOCALE_DIR / "pbem.pot").open("rb")) if message.id
    for source in ([message.id] if isinstance(message.id, str) else message.id)
    for word in re.findall(r"\b[A-Z]{2,}\b", source)) | frozenset(
    w for table in ORDER_WORDS.values() for w in table for w in w.split()) | frozenset(
    word for kind in KINDS.values() for command in kind.commands
    for text in (command.usage, *command.aliases)
    for word in re.findall(r"\b[A-Z]{2,}\b", text))

_SKIPPED = re.compile(
    r"<[^<>\s]+@[^<>\s]+>"                 # Message-IDs
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"        # e-mail addresses
    r"|https?://\S+"                        # URLs
    r"|\b[0-9a-f]{12,}\b"                   # the seed, its commitment, hashes
    r"|\[bluff [^\]]*\]"                    # the subject's tag, the same in every language
    r"|\b[A-Z]\w+/[\w/+-]+"                 # time zone names (Europe/Berlin)
    r"|\bCup of Bluff\b",                     # the name of a kind of the game
    re.IGNORECASE)
_TAG = re.compile(r"<[^>]*>")
_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def english_words(text: str, names: Iterable[str] = ()) -> list[str]:
    """Each line of ``text`` (HTML tags dropped) with a common English word in it, the
    word marked: "turns of [hours]" (empty when there is none)."""
    found = []
    for line in html.unescape(_TAG.sub(" ", text)).splitlines():
        if line.lstrip().startswith(">"):
            continue                        # the player's own words, quoted
        for name in names:
            line = line.replace(name, " ")
        line = _SKIPPED.sub(" ", line)
        for match in _WORD.finditer(line):
            word = match.group()
            if word.isupper() and len(word) > 1 and word in _KEYWORDS:
                continue
            if word.lower() in STOP_WORDS:
                found.append(line[:match.start()].strip()[-40:] + f" [{word}] "
                             + line[match.end():].strip()[:40])
    return found


def english_in_mail(msg: EmailMessage, names: Iterable[str] = ()) -> list[str]:
    """english_words of a mail's subject, its From display name and its text and HTML
    parts."""
    names = list(names)
    found = english_words(str(msg["Subject"] or ""), names)
    found += english_words(parseaddr(str(msg["From"] or ""))[0], names)
    for kind in ("plain", "html"):
        body = msg.get_body((kind,))
        if body is not None:
            found += english_words(str(body.get_content()), names)
    return found
