"""The new text of a reply: what a human typed above the quote, the quote header and the
signature, in the quote and signature shapes of many clients and languages.

Pure and total: whatever string it gets, it returns a value and never raises.  The lines
of a text are ``text.splitlines()``, numbered from 1 (error messages quote them so).
:mod:`pbem.mail.quotecut` finds where a quote of a known mail begins; this module is the
fallback for the rest and reads what stands above that cut.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from pbem.text.wording import Said, _

__all__ = ["QUOTE", "QUOTED", "SIGNATURE", "BodyLine", "NewText", "new_text", "new_text_lines"]

# what a reading may have left out, as a confirmation names it
QUOTE = _("the quoted text below your text")
SIGNATURE = _("the signature")


@dataclass(frozen=True)
class BodyLine:
    number: int  # 1-based line number in the extracted text (error messages quote the line)
    text: str  # the line, stripped of trailing whitespace


@dataclass(frozen=True)
class NewText:
    """The new lines of a reply, and what was left out (QUOTE, SIGNATURE; in that order)."""

    lines: list[BodyLine]
    ignored: tuple[Said, ...] = ()


# a line of a ">"-quote (pbem.mail.quotecut reads quotes by it too)
QUOTED = re.compile(r"^\s*>")
_SIG_SEP = re.compile(r"^\s*--\s*$")

# the verbs of quote headers: "John wrote:", "Hans schrieb:", "Jean a écrit :" ...
_VERBS = (
    r"wrote|writes|schrieb|a\s+[ée]crit|escribi[óo]|escreveu|ha\s+scritto|scrisse|schreef|"
    r"skrev|kirjoitti|napsal(?:a|\(a\))?|napisa[łl](?:a|\(a\))?|написал(?:а|\(а\))?|пишет|"
    r"írta|yazdı|書きました|写道"
)
# "On <date>, <name> wrote:" and friends: opener word ... closing phrase.
_ATTRIBUTION = [
    re.compile(r"^\s*On\s.{0,400}\bwrote\s*:\s*$", re.IGNORECASE),  # en (Gmail/Apple/Tb)
    re.compile(r"^\s*Am\s.{0,400}\bschrieb\b.{0,300}:\s*$", re.IGNORECASE),  # de
    re.compile(r"^\s*Le\s.{0,400}\ba\s+[ée]crit\s*:\s*$", re.IGNORECASE),  # fr
    re.compile(r"^\s*El\s.{0,400}\bescribi[óo]\s*:\s*$", re.IGNORECASE),  # es
    re.compile(r"^\s*Em\s.{0,400}\bescreveu\s*:\s*$", re.IGNORECASE),  # pt
    re.compile(r"^\s*Il\s.{0,400}\bha\s+scritto\s*:\s*$", re.IGNORECASE),  # it
    re.compile(r"^\s*Op\s.{0,400}\bschreef\b.{0,300}:\s*$", re.IGNORECASE),  # nl
    # da / no / sv, cs, pl, it ("In data"), pt ("Às"): opener ... verb ... ":"
    re.compile(r"^\s*(Den|Dne|V|W\s+dniu|In\s+data|[ÀA]s|No\s+dia)\s.{0,400}"
               rf"\b({_VERBS})\b.{{0,300}}[:：]\s*$", re.IGNORECASE),
]
# Gmail in most languages: a date and time, a name, an address, then a verb or nothing
# ("pe 20. lokakuuta 2017 klo 17.50 John <j@x> kirjoitti:", "ср, 30 апр. 2025 г. в
# 15:19, John <j@x>:", "2017年10月20日(金) 17:50 John <j@x>:"): the end of such a line
_TIME = re.compile(r"\d{1,2}[:.]\d{2}")
_ATTRIBUTION_END = re.compile(rf"(\b({_VERBS})|@[^\s<>]+>)\s*$", re.IGNORECASE)
_ATTRIBUTION_OPENER = re.compile(
    r"^\s*(On|Am|Le|El|Em|Il|Op|Den|Dne|V|W\s+dniu|In\s+data|[ÀA]s|No\s+dia)\s",
    re.IGNORECASE)
# "Name wrote:" / "Name schrieb am ...:" without an opener: only an attribution when quoted
# text follows it.
_WEAK_ATTRIBUTION = re.compile(rf"^.{{1,300}}\b({_VERBS})\b.{{0,300}}[:：]\s*$", re.IGNORECASE)
# Lines from which everything is the forwarded / original message.
_ORIGINAL_MARKER = re.compile(
    r"^\s*-{2,}\s*(original(?:-|\s+)message|ursprüngliche\s+nachricht|original-nachricht|"
    r"message\s+d'origine|message\s+original|forwarded\s+message|weitergeleitete\s+nachricht|"
    r"mensaje\s+original|mensaje\s+reenviado|mensagem\s+original|mensagem\s+encaminhada|"
    r"messaggio\s+originale|messaggio\s+inoltrato|oorspronkelijk\s+bericht|"
    r"doorgestuurd\s+bericht|oprindelig\s+(besked|meddelelse)|videresendt\s+(besked|melding)|"
    r"opprinnelig\s+melding|ursprungligt\s+meddelande|vidarebefordrat\s+meddelande|"
    r"alkuperäinen\s+viesti|välitetty\s+viesti|původní\s+zpráva|přeposlaná\s+zpráva|"
    r"oryginalna\s+wiadomość|wiadomość\s+oryginalna|przekazana\s+wiadomość|"
    r"исходное\s+сообщение|пересылаемое\s+сообщение|元のメッセージ|転送されたメッセージ)"
    r"\s*-{2,}\s*$",
    re.IGNORECASE,
)
# Zoho: "---- On <date> <name> wrote ----"
_DASHED_ATTRIBUTION = re.compile(rf"^\s*-{{2,}}\s.{{0,400}}\b({_VERBS})\s*-{{2,}}\s*$",
                                 re.IGNORECASE)
_FORWARD_MARKER = re.compile(
    r"^\s*(begin forwarded message|anfang der weitergeleiteten nachricht|"
    r"début du message réexpédié|inizio messaggio inoltrato)\s*:\s*$",
    re.IGNORECASE,
)
_UNDERSCORES = re.compile(r"^\s*_{10,}\s*$")
# Outlook-style header block of the original message, in many languages.
_COLON = r"\s*\*?\s*[:：]\*?"
_HDR_FROM = re.compile(
    r"^\s*\*?(From|Von|De|Van|Da|Från|Fra|Od|Lähettäjä|От|Mittente|差出人|Afzender|"
    rf"Remetente|Nadawca|Odesílatel|Feladó){_COLON}\s*\S", re.IGNORECASE)
_HDR_SENT = re.compile(
    r"^\s*\*?(Sent|Date|Gesendet|Datum|Envoyé|Envoye|Enviado|Enviada|Fecha|Data|Verzonden|"
    r"Inviato|Skickat|Sendt|Dato|Odesláno|Wysłano|Wysłane|Lähetetty|Päivämäärä|Отправлено|"
    rf"Дата|送信日時|日付){_COLON}", re.IGNORECASE)
_HDR_TO = re.compile(
    r"^\s*\*?(To|Subject|An|Betreff|À|A|Para|Objet|Asunto|Aan|Onderwerp|Oggetto|Till|Ämne|"
    r"Ärende|Til|Emne|Komu|Předmět|Do|Temat|Vastaanottaja|Aihe|Кому|Тема|宛先|件名|Assunto|"
    rf"Cc|Kopie){_COLON}", re.IGNORECASE)
# Mobile and app signatures ("Sent from my iPhone", "Gesendet von Outlook für Android",
# "Sent from TypeApp<http://...>"): a short line, dropped on its own.
_MOBILE_SIG = re.compile(
    r"^\s*(sent\s+(from|via|with|using)\b|get\s+outlook\s+for\b|von\s+meinem\s.{1,60}\s"
    r"gesendet|gesendet\s+(von|mit|vom)\b|envoy[ée]\s+(de|depuis|à\s+partir\s+de|avec)\b|"
    r"odesl[áa]no\s+(z|ze|pomoc[íi])\b|enviad[oa]\s+(desde|de|do|a\s+partir|com)\b|"
    r"inviato\s+(da|con)\b|verzonden\s+(vanaf|met|van)\b|verstuurd\s+(vanaf|met)\b|"
    r"skickat\s+från\b|sendt\s+fra\b|lähetetty\s.{0,60}(iphone|android|outlook|"
    r"puhelimesta|laitteesta|sovelluksella)|wys[łl]an[eo]\s+z\b|отправлено\s+(с|из)\b|"
    r"\S{0,20}から送信)",
    re.IGNORECASE,
)
_URL_LINE = re.compile(r"^\s*[<\[(]?\s*(https?://|www\.)\S*\s*[>\])]?\s*$", re.IGNORECASE)
# The first line of a legal footer: everything from there on is footer.
_LEGAL_FOOTER = re.compile(
    r"^\s*(this\s+(e-?mail|message|communication)|the\s+information\s+(contained|in\s+this)|"
    r"confidentiality\s+notice|disclaimer\b|diese\s+(e-?mail|nachricht)|"
    r"tato\s+(zpráva|e-?mailová)|ce\s+(message|courriel|e-?mail)|este\s+(mensaje|correo)|"
    r"questo\s+messaggio|dit\s+(bericht|e-?mailbericht)|denne\s+(e-?mail|meddelelse|"
    r"e-?post)|detta\s+(e-?postmeddelande|meddelande)|tämä\s+(viesti|sähköposti)|"
    r"ta\s+wiadomość|это\s+(сообщение|письмо)|この(電子)?メール)",
    re.IGNORECASE,
)
# ... and it speaks of secrecy: "This message is my order for turn 3:" is no footer
_LEGAL_WORD = re.compile(
    r"confidential|privileged|intended\s+(solely|only)|vertraulich|důvěrn|confidentiel|"
    r"confidencial|riservat|vertrouwelijk|fortrolig|konfidentiell|luottamuksellinen|poufn|"
    r"конфиденциальн|機密", re.IGNORECASE)
FOOTER_MIN_WORDS = 8  # a footer's first line is a sentence, not "This message is a bid"


def _next_nonblank(lines: Sequence[str], start: int) -> int | None:
    for j in range(start, min(len(lines), start + 50)):
        if lines[j].strip():
            return j
    return None


def _attribution_end(lines: Sequence[str], i: int) -> int | None:
    """If a strong attribution (opener ... wrote:) starts at line i, possibly wrapped over
    up to three lines, return the index of its last line."""
    gmail = _TIME.search(lines[i][:200]) is not None
    if not gmail and not _ATTRIBUTION_OPENER.match(lines[i]):
        return None
    joined = ""
    for j in range(i, min(i + 3, len(lines))):
        if j > i and not lines[j].strip():
            return None
        joined = (joined + " " + lines[j].strip()) if joined else lines[j]
        if len(joined) > 500:
            return None
        if _is_attribution(joined, gmail):
            return j
    return None


def _ends_with_colon(line: str) -> bool:
    return line.rstrip().endswith((":", "："))


def _is_attribution(joined: str, gmail: bool) -> bool:
    """A whole attribution line: an opener ... a verb ... ":", or (``gmail``: its first
    line has a time) a Gmail one (a date and time, an address or a verb, ":")."""
    if not _ends_with_colon(joined):   # cheap first: most lines end otherwise
        return False
    if any(p.match(joined) for p in _ATTRIBUTION):
        return True
    return gmail and bool(_ATTRIBUTION_END.search(joined.rstrip()[:-1][-80:]))


def _is_header_block(lines: Sequence[str], i: int) -> bool:
    """A bare ``From: ...`` line followed within 4 lines by ``Sent:``/``Date:`` and
    ``To:``/``Subject:`` lines (Outlook, and localized variants)."""
    if not _HDR_FROM.match(lines[i]):
        return False
    window = lines[i + 1 : i + 5]
    return any(_HDR_SENT.match(x) for x in window) and any(_HDR_TO.match(x) for x in window)


def _quote_starts(lines: Sequence[str], i: int) -> bool:
    """Does the original message begin at line i (everything from there is old text)?"""
    line = lines[i]
    if _ORIGINAL_MARKER.match(line) or _FORWARD_MARKER.match(line):
        return True
    if _DASHED_ATTRIBUTION.match(line) and len(line) <= 500:
        return True
    if _UNDERSCORES.match(line):
        j = _next_nonblank(lines, i + 1)
        if j is not None and j - i <= 3 and bool(
                _HDR_FROM.match(lines[j]) or _HDR_SENT.match(lines[j])):
            return True
    return _is_header_block(lines, i)


def _is_legal_footer(line: str) -> bool:
    return (len(line) <= 2000 and _LEGAL_FOOTER.match(line) is not None
            and len(line.split()) >= FOOTER_MIN_WORDS and _LEGAL_WORD.search(line) is not None)


def _scan(lines: Sequence[str], left_out: set[Said]) -> Iterator[int]:
    """Yield the indexes of the lines that are new text (blank ones are not: none is);
    what is left out is noted in ``left_out``."""
    i = 0
    n = len(lines)
    while i < n:
        line = lines[i]
        if not line or line.isspace():   # no rule below reads a blank line (a blanked
            i += 1                       # quote is mostly these: new_text)
            continue
        if QUOTED.match(line):   # first: a signature or a footer line never opens with ">"
            left_out.add(QUOTE)   # once for the run of them (a copy of our report is long)
            i += 1
            while i < n and QUOTED.match(lines[i]):
                i += 1
            continue
        if _SIG_SEP.match(line) or _is_legal_footer(line):
            if _next_nonblank(lines, i + 1) is not None or not _SIG_SEP.match(line):
                left_out.add(SIGNATURE)
            return
        if _quote_starts(lines, i):
            left_out.add(QUOTE)
            return
        end = _attribution_end(lines, i)
        if end is not None:
            left_out.add(QUOTE)
            j = _next_nonblank(lines, end + 1)
            if j is not None and QUOTED.match(lines[j]):
                i = end + 1  # drop the attribution; the quote goes by the '>' rule
                continue
            return  # the original follows unquoted: it is all old text
        if len(line) <= 300 and _ends_with_colon(line) and _WEAK_ATTRIBUTION.match(line):
            j = _next_nonblank(lines, i + 1)
            if j is not None and j <= i + 2 and QUOTED.match(lines[j]):
                i += 1
                continue
        if len(line) <= 200 and (_MOBILE_SIG.match(line) or _URL_LINE.match(line)):
            left_out.add(SIGNATURE)
            i += 1
            continue
        yield i
        i += 1


def new_text(text: str, quote: tuple[int, int] | None = None, *,
             lines: Sequence[str] | None = None) -> NewText:
    """The lines a human newly typed in a mail body, with their line numbers, and what was
    left out.  ``quote``: the first line of a quote of a mail we know and the first line
    after it (pbem.mail.quotecut); none of those lines is read. ``lines``: the text's
    ``splitlines()``, if the caller has them.

    Drops ``>``-quoted lines, everything from a signature separator (``-- `` / ``--``) or a
    legal footer on, attribution lines (``On <date>, <name> wrote:``, ``Am ... schrieb
    ...:``, ``pe 20. lokakuuta 2017 klo 17.50 John <j@x> kirjoitti:``, possibly wrapped),
    the quoted original after an ``-----Original Message-----`` line (many languages), an
    underscore line or a ``From:``-``Sent:``-``To:`` header block (many languages),
    forwarded messages, mobile signatures, bare URLs and blank lines.  Never raises.
    """
    try:
        if not isinstance(text, str):
            return NewText([])
        read = text.splitlines() if lines is None else list(lines)
        left_out: set[Said] = set()
        if quote is not None:
            start, end = max(0, quote[0]), min(len(read), quote[1])
            if any(line.strip() for line in read[start:end]):
                left_out.add(QUOTE)
            if start < end:   # blanked, not removed: the lines after it keep their numbers
                read[start:end] = [""] * (end - start)
        result = [BodyLine(idx + 1, read[idx].rstrip()) for idx in _scan(read, left_out)]
        return NewText(result, tuple(p for p in (QUOTE, SIGNATURE) if p in left_out))
    except Exception:
        return NewText([])


def new_text_lines(text: str) -> list[BodyLine]:
    """The new lines of ``text`` (see :func:`new_text`).  Never raises."""
    return new_text(text).lines
