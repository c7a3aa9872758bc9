"""The clock work of a tick: outage shift, vacations, reminders, grace, due turns.

``clock_tick`` applies the pure date arithmetic of pbem.text.deadlines to the
games, in this order: outage shift (so nothing is resolved in a rush after a
restart), then per running game vacation shifts, reminders, grace, and the
resolution of turns whose deadline (or grace end) passed. ABSENT uses
``vacation_check`` to move a deadline at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from pbem.games.audit import already_told, audit
from pbem.games.records import seated, update_players
from pbem.games.turn_in_play import missing_seats
from pbem.kinds.options import GameOptions, options_of
from pbem.services.failures import game_failed, turn_held, what_failed
from pbem.services.health import LAST_TICK
from pbem.services.post import Post, announce, notice, tagged, tell_referee
from pbem.services.turns import TurnChange, settle
from pbem.store.advisory_locks import game_writer, lanes_apart, one_writer
from pbem.store.claims import aware
from pbem.store.engines import reading
from pbem.store.models import Absence, Game, Player, ServerState
from pbem.store.work import Work
from pbem.text.deadlines import (
    Interval,
    outage_gap,
    relative_said,
    reminder_due,
    shift_if_passed,
    vacation_shift,
)
from pbem.text.wording import Said, _, _n
from pbem.text.zones import When

log = logging.getLogger(__name__)


def clock_tick(engine: Engine, post: Post, now: datetime,
               left: list[int] | None = None, step: Callable[[], None] | None = None, *,
               draft: bool = False) -> int:
    """All clock work of one tick; returns how many turns were resolved.

    Outage shift first (so nothing is resolved in a rush after a restart),
    then each running game on its own transaction: a failure in one game is
    logged and does not stop the others. On PostgreSQL (lanes_apart) each game's
    transaction claims the game (pbem.store.advisory_locks.game_writer, tried): a game another worker
    holds (its mail, its clock) is left to the next tick, its id added to ``left``.
    ``step`` is called after each game: the clock work of many games makes progress
    (serve's watchdog, pbem.runner.server.Server.loop_stalled). ``draft``: the turns'
    reports are queued as drafts for the tick's composer (pbem.services.turns.report_turn).
    """
    apart = lanes_apart(engine)
    with Work(engine) as session:
        if not apart or _outage_seen(session, post, now):
            one_writer(session)   # each transaction alone, even when a lease expired meanwhile
        _outage(session, post, now)
        session.commit()
    resolved = 0
    for game_id in clock_candidates(engine, now):
        with Work(engine) as session:   # the game's players and orders read once
            try:
                if not apart:
                    one_writer(session)
                elif not game_writer(session, game_id, wait=False):
                    session.rollback()
                    if left is not None:
                        left.append(game_id)
                    continue
                game = session.get(Game, game_id)
                if game is not None and game.status == "running" and game_tick(
                        session, post, game, now, draft=draft):
                    resolved += 1
                session.commit()
            except Exception as exc:   # one broken game must not stop the others' clock
                session.rollback()
                told(engine, post, game_id, exc)
        if step is not None:
            step()
    return resolved


CANDIDATES_PAGE = 500   # running games looked at in one read


def clock_candidates(engine: Engine, now: datetime) -> Iterator[int]:
    """The running games with a deadline that may have clock work now, a page at a time
    (never all games at once): the deadline or grace passed or in grace, a reminder due,
    or a seated player away (ABSENT) over the deadline. The others would do nothing in
    game_tick, so they cost no transaction of their own; what changes after this read is
    seen at the next tick."""
    after = 0
    while True:
        with Session(reading(engine)) as session:
            rows = list(session.execute(
                sa_select(col(Game.id), col(Game.deadline), col(Game.grace_until),
                          col(Game.reminded_turn), col(Game.turn), col(Game.turn_hours),
                          col(Game.options_json))
                .where(col(Game.status) == "running", col(Game.deadline).is_not(None),
                       col(Game.id) > after)
                .order_by(col(Game.id)).limit(CANDIDATES_PAGE)))
            if not rows:
                return
            away = set(session.exec(
                select(Player.game_id).join(Absence, col(Absence.email) == col(Player.email))
                .join(Game, col(Game.id) == col(Player.game_id))
                .where(col(Player.game_id).in_([r[0] for r in rows]),
                       col(Player.active).is_(True), col(Absence.ends) > col(Game.deadline),
                       col(Absence.starts) <= col(Game.deadline))))
        for game_id, deadline, grace_until, reminded, turn, hours, options in rows:
            lead = GameOptions.from_json(options).reminder_lead(hours)
            if (grace_until is not None or aware(deadline) <= now or game_id in away
                    or (reminded < turn and reminder_due(aware(deadline), lead, now))):
                yield game_id
        if len(rows) < CANDIDATES_PAGE:   # the last page: no read to learn so
            return
        after = rows[-1][0]


def told(engine: Engine, post: Post, game_id: int | None, exc: Exception) -> None:
    """A game's clock work failed: the referee and the players hear of it (once a turn),
    in a transaction of its own; it is tried again at the next tick."""
    with Work(engine) as session:
        game = session.get(Game, game_id)
        new = game is not None and game_failed(
            session, post, game, _("the clock work (reminder, grace or resolving the turn)"),
            exc)
        session.commit()
    if new:
        log.error("clock work for game %s failed; the referee was told; will try again",
                  game_id, exc_info=exc)
    else:
        log.warning("clock work for game %s failed again (%s); will try again", game_id,
                    what_failed(exc))


def game_tick(session: Work, post: Post, game: Game, now: datetime, *,
              draft: bool = False) -> bool:
    """Vacations, reminder, grace and resolution of one running game; True if it resolved
    (``draft``: its reports queued as a draft for the composer)."""
    if game.deadline is None:
        return False
    opts = options_of(game)
    if game.grace_until is None:
        vacation_check(session, post, game, now)
        _remind(session, post, game, now)
        if now < game.deadline:
            return False
        if opts.grace_hours > 0:
            game.grace_until = game.deadline + opts.grace
            session.add(game)
            if now < game.grace_until:
                announce(
                    session, post, game, _("turn {turn}: grace until {until}", turn=game.turn,
                                           until=When(game.grace_until)),
                    [_("The deadline of turn {turn} has passed. Orders are still taken during "
                       "a grace period until {until} ({left}); orders still missing then are "
                       "played for the players who sent none.", turn=game.turn,
                       until=When(game.grace_until),
                       left=relative_said(game.grace_until, now))], now, action="grace")
                return False
    if game.grace_until is not None and now < game.grace_until:
        return False
    if turn_held(session, game):
        # a failed mail may hold a due order, or the turn's reports were not written (the
        # players have not seen it): RETRY it (or PROCESS) first
        return False
    # the one step that resolves turns
    settle(session, post, TurnChange(game, "deadline"), draft=draft)
    return True


def _remind(session: Work, post: Post, game: Game, now: datetime) -> None:
    lead = options_of(game).reminder_lead(game.turn_hours)
    if game.reminded_turn >= game.turn or not reminder_due(game.deadline, lead, now):
        return
    assert game.deadline is not None     # reminder_due is False without one
    players = seated(session, game)
    for seat in missing_seats(session, game):
        player = players.get(seat)
        if player is None or not player.active:
            continue
        notice(
            session, post, player.email,
            tagged(game.name, _("turn {turn}: reminder, your order is not in yet",
                                turn=game.turn)),
            [_("Your order for turn {turn} of game {game} is not in yet. The deadline is "
               "{deadline} ({left}).", turn=game.turn, game=game.name,
               deadline=When(game.deadline), left=relative_said(game.deadline, now)),
             _("Reply to your latest report (or to this mail) with your order.")],
            now, game=game, seat=seat, turn=game.turn, kind="reminder")
    game.reminded_turn = game.turn
    session.add(game)
    audit(session, game, now, "reminder", f"turn {game.turn}")


def vacation_check(session: Work, post: Post, game: Game,
                   now: datetime) -> None:
    """Move the deadline out of the absences of players who still owe an order."""
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
        names = [emails[email].name for email in shift.used]
        update_players(session, game, {
            emails[email].id: {"absent_days_used":
                               emails[email].absent_days_used + used / timedelta(days=1)}
            for email, used in shift.used.items()})
        announce(
            session, post, game, _("turn {turn}: deadline moved to {deadline}",
                                   turn=game.turn, deadline=When(game.deadline)),
            [_n("The deadline of turn {turn} fell while {names} is away (ABSENT), so it moved "
                "from {old} to {deadline}.",
                "The deadline of turn {turn} fell while {names} are away (ABSENT), so it "
                "moved from {old} to {deadline}.", len(names), turn=game.turn,
                names=_names(names), old=When(old), deadline=When(game.deadline))],
            now, action="vacation")
    for email in shift.capped:
        key = f"turn {game.turn}: {email}"
        if already_told(session, game, "vacation-capped", key):
            continue
        audit(session, game, now, "vacation-capped", key)
        tell_referee(session, post, _("Vacation cap reached in {game}", game=game.name), [
            _("{name} <{email}> is away over the deadline of turn {turn} of {game} "
              "({deadline}), but has used the game's vacation cap of {days} days, so the "
              "deadline was not moved (further).", name=emails[email].name, email=email,
              turn=game.turn, game=game.name, deadline=When(game.deadline),
              days=format(opts.vacation_days, "g")),
            _("Beyond the cap you decide: EXTEND {game} <hours>, DEADLINE {game} <time>, "
              "PAUSE {game}, or let the turn resolve as it is.", game=game.name)])


def _outage_seen(session: Session, post: Post, now: datetime) -> bool:
    """PostgreSQL, workers side by side: read the last tick's time locked (the workers'
    clocks take their turns on it); True when the outage shift may move games' deadlines
    (or nothing was kept yet), which it does with the writer's lock alone. Otherwise only
    the time is written, and the games' transactions are not held back each tick."""
    row = session.get(ServerState, LAST_TICK, with_for_update=True)
    if row is None:
        return True
    minutes = post.settings.outage_minutes
    return outage_gap(datetime.fromisoformat(row.value), now,
                      timedelta(minutes=minutes) if minutes is not None else None) is not None


def _outage(session: Work, post: Post, now: datetime) -> None:
    """After a gap longer than the threshold, move what passed while down by the down time."""
    row = session.get(ServerState, LAST_TICK)
    last = datetime.fromisoformat(row.value) if row is not None else None
    minutes = post.settings.outage_minutes
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
            grace = game.grace_until is not None
            subject = (_("turn {turn}: grace period moved to {new}", turn=game.turn,
                         new=When(new)) if grace else
                       _("turn {turn}: deadline moved to {deadline}", turn=game.turn,
                         deadline=When(new)))
            what = (_("The server was down from {down} to {up}, past the grace period of turn "
                      "{turn}. So that nobody loses their turn to the outage, it moved by the "
                      "down time, to {new}. Orders sent meanwhile are being read now; if yours "
                      "is not confirmed, send it again.", down=When(last), up=When(now),
                      turn=game.turn, new=When(new)) if grace else
                    _("The server was down from {down} to {up}, past the deadline of turn "
                      "{turn}. So that nobody loses their turn to the outage, it moved by the "
                      "down time, to {new}. Orders sent meanwhile are being read now; if yours "
                      "is not confirmed, send it again.", down=When(last), up=When(now),
                      turn=game.turn, new=When(new)))
            announce(session, post, game, subject, [what], now, action="outage")
        log.warning("the server was down %s; deadlines moved in %s", gap, moved or "no game")
        if moved:
            tell_referee(session, post, _("Deadlines moved after an outage"), [
                _("The server was down from {down} to {up}. Deadlines that passed meanwhile "
                  "moved by the down time in: {games}.", down=When(last), up=When(now),
                  games=", ".join(moved))])
    if row is None:
        row = ServerState(key=LAST_TICK, value=now.isoformat())
    elif last is None or now > last:
        row.value = now.isoformat()
    session.add(row)


def _names(names: list[str]) -> Said:
    """"Ann", "Ann and Bo", "Ann and Bo and Cy" (as the notices always wrote them)."""
    return names[0] if len(names) == 1 else _("{first} and {last}", first=_names(names[:-1]),
                                                last=names[-1])
