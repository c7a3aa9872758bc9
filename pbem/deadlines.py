"""Deadlines: the pure date arithmetic, and the clock work the server does each tick.

The pure part (top of the module) knows nothing of games or databases:

- ``turn_deadline``: start of the turn + turn length, moved to the next
  fixed hour of day (UTC) if the game has one;
- ``vacation_shift``: a deadline inside a player's absence moves past it
  (to one day after the player is back, then to the fixed hour), each
  player's shifts capped by what is left of their allowance;
- ``outage_gap`` / ``shift_if_passed``: after the server was down longer
  than a threshold, a deadline that passed while it was down moves by the
  down time.

``clock_tick`` (below) applies them to the database each tick, in this
order: outage shift, then per running game vacation shifts, reminders,
grace, and the resolution of turns whose deadline (or grace end) passed.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING

from sqlmodel import Session, col, select

if TYPE_CHECKING:
    from pbem.models import Game
    from pbem.referee import Referee

log = logging.getLogger(__name__)

# a deadline moved by a vacation lands this long after the player is back
RETURN_MARGIN = timedelta(days=1)
LAST_TICK = "clock.last_tick"

Interval = tuple[datetime, datetime]    # [start, end)

# --- pure date arithmetic ----------------------------------------------------------


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


# --- the clock work of a tick (the imperative shell) ------------------------------------


def clock_tick(referee: "Referee", now: datetime) -> int:
    """All clock work of one tick; returns how many turns were resolved.

    Outage shift first (so nothing is resolved in a rush after a restart),
    then each running game on its own transaction: a failure in one game is
    logged and does not stop the others.
    """
    from pbem.models import Game
    with Session(referee.engine) as session:
        _outage(session, referee, now)
        session.commit()
    with Session(referee.engine) as session:
        ids = list(session.exec(select(Game.id).where(Game.status == "running",
                                                      col(Game.deadline).is_not(None))
                                .order_by(col(Game.id))))
    resolved = 0
    for game_id in ids:
        with Session(referee.engine) as session:
            try:
                game = session.get(Game, game_id)
                if game is not None and game.status == "running" and game_tick(
                        session, referee, game, now):
                    resolved += 1
                session.commit()
            except Exception:   # one broken game must not stop the clock of the others
                log.exception("clock work for game %s failed; will try again", game_id)
                session.rollback()
    return resolved


def resolves_early(game: "Game") -> bool:
    """Whether a turn resolves as soon as every due order is in (not under WAIT)."""
    from pbem.desk.options import options_of
    return not options_of(game).wait


def start_turn_clock(game: "Game", now: datetime) -> datetime | None:
    """A new turn begins now: its deadline (grace cleared, the start remembered)."""
    from pbem.desk.options import options_of
    game.turn_started_at = now
    game.grace_until = None
    return turn_deadline(now, game.turn_hours, options_of(game).deadline_hour)


def game_tick(session: Session, referee: "Referee", game: "Game", now: datetime) -> bool:
    """Vacations, reminder, grace and resolution of one running game; True if it resolved."""
    from pbem.desk import notices
    from pbem.desk.options import options_of
    from pbem.reports import relative
    if game.deadline is None:
        return False
    opts = options_of(game)
    if game.grace_until is None:
        vacation_check(session, referee, game, now)
        _remind(session, referee, game, now)
        if now < game.deadline:
            return False
        if opts.grace_hours > 0:
            game.grace_until = game.deadline + opts.grace
            session.add(game)
            if now < game.grace_until:
                notices.announce(
                    session, referee, game, f"turn {game.turn}: grace until "
                    f"{utc(game.grace_until)}",
                    [f"The deadline of turn {game.turn} has passed. Orders are still taken "
                     f"during a grace period until {utc(game.grace_until)} "
                     f"({relative(game.grace_until, now)}); orders still missing then are "
                     f"played for the players who sent none."], now, action="grace")
                return False
    if game.grace_until is not None and now < game.grace_until:
        return False
    referee.resolve(session, game)
    return True


def _remind(session: Session, referee: "Referee", game: "Game", now: datetime) -> None:
    from pbem.desk import notices
    from pbem.desk.options import options_of
    from pbem.games import missing_seats, seated
    from pbem.reports import relative
    lead = options_of(game).reminder_lead(game.turn_hours)
    if game.reminded_turn >= game.turn or not reminder_due(game.deadline, lead, now):
        return
    players = seated(session, game)
    for seat in missing_seats(session, game):
        player = players.get(seat)
        if player is None or not player.active:
            continue
        notices.notice(
            session, referee, player.email,
            f"[bluff {game.name}] turn {game.turn}: reminder, your order is not in yet",
            [f"Your order for turn {game.turn} of game {game.name} is not in yet. The deadline "
             f"is {utc(game.deadline)} ({relative(game.deadline, now)}).",
             "Reply to your latest report (or to this mail) with your order."],
            now, game=game, seat=seat, turn=game.turn, kind="reminder")
    game.reminded_turn = game.turn
    session.add(game)
    notices.audit(session, game, now, "reminder", f"turn {game.turn}")


def vacation_check(session: Session, referee: "Referee", game: "Game",
                   now: datetime) -> None:
    """Move the deadline out of the absences of players who still owe an order."""
    from pbem.desk import notices
    from pbem.desk.options import options_of
    from pbem.games import missing_seats, seated
    from pbem.models import Absence
    assert game.deadline is not None
    players = seated(session, game)
    emails = {p.email: p for p in players.values() if p.active}
    rows = list(session.exec(select(Absence).where(col(Absence.email).in_(list(emails)),
                                                   col(Absence.ends) > game.deadline)))
    if not any(r.starts <= game.deadline for r in rows):
        return
    owing = {players[s].email for s in missing_seats(session, game) if s in players}
    absences: dict[str, list[Interval]] = {}
    for r in rows:
        if r.email in owing:
            absences.setdefault(r.email, []).append((r.starts, r.ends))
    opts = options_of(game)
    allowance = {e: opts.vacation_cap - timedelta(days=emails[e].absent_days_used)
                 for e in absences}
    shift = vacation_shift(game.deadline, absences, allowance, opts.deadline_hour)
    if shift.moved:
        old, game.deadline = game.deadline, shift.deadline
        session.add(game)
        names = []
        for email, used in shift.used.items():
            emails[email].absent_days_used += used / timedelta(days=1)
            session.add(emails[email])
            names.append(emails[email].name)
        notices.announce(
            session, referee, game, f"turn {game.turn}: deadline moved to {utc(game.deadline)}",
            [f"The deadline of turn {game.turn} fell while {' and '.join(names)} "
             f"{'is' if len(names) == 1 else 'are'} away (ABSENT), so it moved from {utc(old)} "
             f"to {utc(game.deadline)}."], now, action="vacation")
    for email in shift.capped:
        key = f"turn {game.turn}: {email}"
        if notices.already_told(session, game, "vacation-capped", key):
            continue
        notices.audit(session, game, now, "vacation-capped", key)
        notices.tell_referee(referee, session, f"Vacation cap reached in {game.name}", [
            f"{emails[email].name} <{email}> is away over the deadline of turn {game.turn} of "
            f"{game.name} ({utc(game.deadline)}), but has used the game's vacation cap of "
            f"{opts.vacation_days:g} days, so the deadline was not moved (further).",
            f"Beyond the cap you decide: EXTEND {game.name} <hours>, DEADLINE {game.name} "
            f"<time>, PAUSE {game.name}, or let the turn resolve as it is."])


def _outage(session: Session, referee: "Referee", now: datetime) -> None:
    """After a gap longer than the threshold, move what passed while down by the down time."""
    from pbem.desk import notices
    from pbem.models import Game, ServerState
    row = session.get(ServerState, LAST_TICK)
    last = datetime.fromisoformat(row.value) if row is not None else None
    minutes = getattr(referee.settings, "outage_minutes", None)
    gap = outage_gap(last, now, timedelta(minutes=minutes) if minutes is not None else None)
    if gap is not None and last is not None:
        moved = []
        for game in session.exec(select(Game).where(Game.status == "running")):
            if game.grace_until is not None:
                new = shift_if_passed(game.grace_until, last, now, gap)
                if new is not None:
                    game.grace_until = new
            else:
                new = shift_if_passed(game.deadline, last, now, gap)
                if new is not None:
                    game.deadline = new
            if new is None:
                continue
            session.add(game)
            moved.append(game.name)
            what = "grace period" if game.grace_until is not None else "deadline"
            notices.announce(
                session, referee, game, f"turn {game.turn}: {what} moved to {utc(new)}",
                [f"The server was down from {utc(last)} to {utc(now)}, past the {what} of "
                 f"turn {game.turn}. So that nobody loses their turn to the outage, it moved "
                 f"by the down time, to {utc(new)}. Orders sent meanwhile are being read now; "
                 f"if yours is not confirmed, send it again."], now, action="outage")
        log.warning("the server was down %s; deadlines moved in %s", gap, moved or "no game")
        if moved:
            notices.tell_referee(referee, session, "Deadlines moved after an outage", [
                f"The server was down from {utc(last)} to {utc(now)}. Deadlines that passed "
                f"meanwhile moved by the down time in: {', '.join(moved)}."])
    if row is None:
        row = ServerState(key=LAST_TICK, value=now.isoformat())
    elif last is None or now > last:
        row.value = now.isoformat()
    session.add(row)
