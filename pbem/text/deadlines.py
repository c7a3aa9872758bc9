"""Deadlines: the pure date arithmetic (no games, no database, no clock of its own).

- ``turn_deadline``: start of the turn + turn length, moved to the next
  fixed hour of day (UTC) if the game has one;
- ``vacation_shift``: a deadline inside a player's absence moves past it
  (to one day after the player is back, then to the fixed hour), each
  player's shifts capped by what is left of their allowance;
- ``outage_gap`` / ``shift_if_passed``: after the server was down longer
  than a threshold, a deadline that passed while it was down moves by the
  down time;
- ``utc`` and ``relative``: how a time is written in mail.

pbem.services.clock applies them to the games each tick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from pbem.text.wording import Message, _, _n, joined

# a deadline moved by a vacation lands this long after the player is back
RETURN_MARGIN = timedelta(days=1)

Interval = tuple[datetime, datetime]    # [start, end)


def align_to_hour(t: datetime, hour: int | None) -> datetime:
    """The first moment at or after t that is hour:00:00 UTC (t itself if hour is None)."""
    if hour is None:
        return t
    t = t.astimezone(UTC)
    at = t.replace(hour=hour, minute=0, second=0, microsecond=0)
    return at if at >= t else at + timedelta(days=1)


def turn_deadline(start: datetime, turn_hours: float | None,
                  hour: int | None = None) -> datetime | None:
    """A turn's deadline: start + turn length, moved to the next fixed hour of day."""
    if turn_hours is None:
        return None
    return align_to_hour(start + timedelta(hours=turn_hours), hour)


def absence_interval(first_day: date, last_day: date) -> Interval:
    """ABSENT <first> <last>: away from first_day 00:00 UTC until last_day ends."""
    return (datetime.combine(first_day, time(), UTC),
            datetime.combine(last_day + timedelta(days=1), time(), UTC))


@dataclass
class VacationShift:
    deadline: datetime
    used: dict[str, timedelta] = field(default_factory=dict)   # who -> time charged
    capped: list[str] = field(default_factory=list)           # whose allowance ran out

    @property
    def moved(self) -> bool:
        return bool(self.used)


def vacation_shift(deadline: datetime, absences: Mapping[str, Sequence[Interval]],
                   allowance: Mapping[str, timedelta], hour: int | None = None,
                   margin: timedelta = RETURN_MARGIN) -> VacationShift:
    """Move a deadline out of every absence it falls in, within each player's allowance.

    A deadline inside [start, end) of someone's absence moves to end + margin
    (then to the fixed hour); the move is charged to that player. When their
    allowance left is smaller than the move, the deadline moves only by what
    is left, the player is listed in ``capped`` and their absences no longer
    move it (beyond the cap the referee decides). Repeats until the deadline
    lies in no absence of a player who still has allowance.
    """
    result = VacationShift(deadline)
    left = {who: max(timedelta(0), a) for who, a in allowance.items()}
    while True:
        hit = next(((who, end) for who in sorted(absences) if who not in result.capped
                    for start, end in absences[who] if start <= result.deadline < end), None)
        if hit is None:
            return result
        who, end = hit
        target = align_to_hour(end + margin, hour)
        need = target - result.deadline
        have = left.get(who, timedelta(0))
        step = min(need, have)
        if step > timedelta(0):
            result.deadline += step
            result.used[who] = result.used.get(who, timedelta(0)) + step
            left[who] = have - step
        if step < need:
            result.capped.append(who)


def outage_gap(last_tick: datetime | None, now: datetime,
               threshold: timedelta | None) -> timedelta | None:
    """The down time, if the gap since the last tick is longer than the threshold."""
    if last_tick is None or threshold is None:
        return None
    gap = now - last_tick
    return gap if gap > threshold else None


def shift_if_passed(t: datetime | None, last_tick: datetime, now: datetime,
                    gap: timedelta) -> datetime | None:
    """t + gap if t passed while the server was down (last_tick < t <= now), else None."""
    if t is None or not last_tick < t <= now:
        return None
    return t + gap


def reminder_due(deadline: datetime | None, lead: timedelta | None, now: datetime) -> bool:
    return deadline is not None and lead is not None and deadline - lead <= now < deadline


def utc(t: datetime | None) -> str:
    return "none" if t is None else t.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def relative(deadline: datetime | None, now: datetime) -> str | None:
    """How far off a time is, in words: "in 2 days 3 hours", "passed" (None: no time)."""
    said = relative_said(deadline, now)
    return None if said is None else str(said)


def relative_said(deadline: datetime | None, now: datetime) -> Message | None:
    """``relative`` in its reader's language."""
    if deadline is None:
        return None
    seconds = int((deadline - now).total_seconds())
    if seconds <= 0:
        return _("passed")
    if seconds < 60:
        return _("in less than a minute")
    return _("in {time}", time=time_left(seconds))


def time_left(seconds: int) -> Message:
    """A stretch of time in words, as ``relative`` says it: "2 days 3 hours" (the minutes
    only under a day), "5 minutes", "less than a minute"."""
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    parts = [_n("{n} day", "{n} days", days)] if days else []
    if hours:
        parts.append(_n("{n} hour", "{n} hours", hours))
    if not days and minutes:
        parts.append(_n("{n} minute", "{n} minutes", minutes))
    return joined(parts, " ") if parts else _("less than a minute")
