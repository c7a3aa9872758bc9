"""Time zones: a player's own (TIMEZONE Europe/Prague) and how a time is written in it.

Pure: the IANA names come from the standard ``zoneinfo`` (the system's tz database, or
the ``tzdata`` package). The server keeps every time in UTC; a time a player reads is
written in their zone with its name, the UTC time beside it, so that nobody is ever
unsure which hour a deadline means:

    2026-12-05 19:00 CET (Europe/Prague), 18:00 UTC

Without a zone (or with UTC) it is the UTC time alone, as before: 2026-12-05 18:00 UTC.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

from pbem.text.errors import Refusal
from pbem.text.wording import Translator, _

ZONE_EXAMPLE = _("e.g. TIMEZONE Europe/Prague, TIMEZONE America/New_York or TIMEZONE UTC")
UTC_NAMES = frozenset({"UTC", "GMT", "Z", "ZULU", "NONE", "ETC/UTC"})
MOST_LETTERS = 64     # longer than any IANA name: a longer word is not one


@lru_cache(maxsize=1)
def _zones_by_folded_name() -> dict[str, str]:
    return {name.casefold(): name for name in available_timezones()}


def zone_named(text: str) -> str | None:
    """The IANA name a player wrote (any case: europe/prague -> Europe/Prague); None for
    UTC (or NONE: back to UTC alone). Refusal, with the nearest names, for one unknown."""
    word = text.strip()
    if word.upper() in UTC_NAMES:
        return None
    known = _zones_by_folded_name()
    name = known.get(word.casefold()) if len(word) <= MOST_LETTERS else None
    if name is None:
        near = difflib.get_close_matches(word.casefold(), known, n=2, cutoff=0.85)
        names = [known[n] for n in near]
        hint = (_("did you mean {name}?", name=names[0]) if len(names) == 1
                else _("did you mean {first} or {second}?", first=names[0], second=names[1])
                if names else _("write a name of the IANA time zone database, {example}",
                                example=ZONE_EXAMPLE))
        raise Refusal(_("'{word}' is not a time zone I know", word=word[:MOST_LETTERS]), hint)
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):   # listed, but its file is unreadable
        raise Refusal(_("the time zone {name} cannot be read on this server", name=name),
                      ZONE_EXAMPLE) from None
    return name


def _aware(when: datetime) -> datetime:
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


def in_zone(when: datetime | str | None, zone: str | None) -> str:
    """A time as a player with that zone reads it: local time, zone abbreviation and
    name, then UTC; the UTC time alone without a zone. "" for None."""
    if when is None:
        return ""
    if isinstance(when, str):
        when = datetime.fromisoformat(when.replace("Z", "+00:00"))
    utc = _aware(when).astimezone(UTC)
    if zone is None:
        return f"{utc:%Y-%m-%d %H:%M} UTC"
    try:
        local = utc.astimezone(ZoneInfo(zone))
    except (ZoneInfoNotFoundError, ValueError):
        return f"{utc:%Y-%m-%d %H:%M} UTC"
    same_day = local.date() == utc.date()
    beside = f"{utc:%H:%M} UTC" if same_day else f"{utc:%Y-%m-%d %H:%M} UTC"
    return f"{local:%Y-%m-%d %H:%M} {local.tzname()} ({zone}), {beside}"


@dataclass(frozen=True)
class When:
    """A time in a message (a deadline in a reminder): said in the zone of whoever reads
    it (a ``Reader``'s ``zone``: local time and zone, UTC beside), in UTC where the reader
    has none, and in UTC by ``str()``."""

    at: datetime

    def said(self, tr: object) -> str:
        return in_zone(self.at, getattr(tr, "zone", None))

    def __str__(self) -> str:
        return in_zone(self.at, None)


@dataclass(frozen=True)
class Reader:
    """Who reads a mail: their language (a translator) and their time zone."""

    tr: Translator
    zone: str | None

    def gettext(self, message: str, /) -> str:
        return self.tr.gettext(message)

    def ngettext(self, singular: str, plural: str, n: int, /) -> str:
        return self.tr.ngettext(singular, plural, n)
