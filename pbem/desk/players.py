"""Player desk commands: SAY (table talk), ABSENT (vacations), and the sign-up commands
of pbem.desk.signup (JOIN, CONFIRM, LEAVE, WATCH, UNWATCH).

- ``SAY <text>`` is relayed at once to every other player of the game (one
  notice each) and shown in the "table talk" section of the next report
  (``talk_lines``). The SAY lines of one mail make one message; it is cut at
  MAX_TALK characters, with a note. Names and text go into mail only through
  the mail composer (headers) and autoescaped templates (HTML).
- ``ABSENT <from-date> <to-date>`` (ISO dates, UTC days, both included) and
  ``ABSENT NONE``: stored by address in table Absence, for every game of the
  address; deadlines falling inside move past it (pbem.deadlines), within the
  game's vacation cap.
"""

from __future__ import annotations

import re
from datetime import date

from sqlmodel import Session, col, delete, select

from pbem.deadlines import absence_interval, vacation_check
from pbem.desk import PlayerAction, PlayerContext, notices, signup
from pbem.desk.options import options_of
from pbem.models import Absence, Game, Player, TalkMessage
from pbem.orders import Command, Order, OrderError

MAX_TALK = 2000
MAX_ABSENCE_DAYS = 366
_SAY = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])?\s*say\b:?\s?", re.IGNORECASE)


def _refuse(message: str, hint: str, order: Order, game: str | None = None) -> Exception:
    from pbem.referee import refusal
    return refusal(message, hint, order.line_no, order.line, game=game)


# --- SAY ---------------------------------------------------------------------------------

def parse_say(args: list[str]) -> None:
    if not args:
        raise OrderError("SAY needs something to say", "e.g. SAY Nobody has three stars.")


def say_text(line: str) -> str:
    """The text of a SAY line as written (spacing kept), without the SAY word."""
    return _SAY.sub("", line, count=1).rstrip()


def do_say(ctx: PlayerContext, order: Order) -> str:
    assert ctx.who is not None
    game, player = ctx.who.game, ctx.who.player
    says = sorted((o for o in _mail_orders(ctx) if o.name == "SAY"), key=lambda o: o.line_no)
    if says and says[0].line_no != order.line_no:
        return "relayed with the first SAY line"   # the first SAY relays them all
    if game.status in ("over", "cancelled"):
        raise _refuse(f"game {game.name} is {game.status}", "", order, game.name)
    text = "\n".join(say_text(o.line) for o in says or [order])
    cut = len(text) > MAX_TALK
    if cut:
        text = text[:MAX_TALK]
    ctx.session.add(TalkMessage(game_id=game.id, turn=game.turn, seat=player.seat,
                                name=player.name, text=text, created_at=ctx.now))
    speaker = player.name + (f" (player {player.seat})" if player.seat is not None else "")
    note = [f"(The message was cut at {MAX_TALK:,} characters.)"] if cut else []
    others = [p for p in notices.active_players(ctx.session, game) if p.id != player.id]
    for other in others:
        notices.notice(ctx.session, ctx.referee, other.email,
                       f"[bluff {game.name}] table talk from {player.name}",
                       [f"{speaker} says:", text, *note,
                        "Answer with SAY <text> in a reply to this mail or to your report."],
                       ctx.now, game=game, seat=other.seat,
                       turn=game.turn if other.seat is not None else None, kind="talk")
    subject = f"[bluff {game.name}] your table talk was relayed"
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [f"Relayed to {len(others)} player(s), and in the next report:", text,
                       *note]})
    return f"{player.email} said {len(text)} characters in {game.name}" + (" (cut)" if cut
                                                                             else "")


def _mail_orders(ctx: PlayerContext) -> list[Order]:
    from pbem.desk import player_commands
    from pbem.orders import parse_text
    return parse_text(ctx.msg.lines, player_commands()).orders


def talk_lines(session: Session, game: Game) -> list[dict[str, str]]:
    """The table talk of the turn before the one being reported, for the report's section."""
    rows = session.exec(select(TalkMessage).where(TalkMessage.game_id == game.id,
                                                  TalkMessage.turn == game.turn - 1)
                        .order_by(col(TalkMessage.id)))
    return [{"from": r.name + (f" (player {r.seat})" if r.seat is not None else ""),
             "text": r.text} for r in rows]


# --- ABSENT ------------------------------------------------------------------------------

def parse_absent(args: list[str]) -> tuple[date, date] | None:
    if len(args) == 1 and args[0].upper() == "NONE":
        return None
    if len(args) != 2:
        raise OrderError("ABSENT takes the first and the last day you are away, or NONE",
                         "e.g. ABSENT 2026-12-24 2026-12-27 (UTC days), or ABSENT NONE")
    try:
        first, last = date.fromisoformat(args[0]), date.fromisoformat(args[1])
    except ValueError:
        raise OrderError("ABSENT takes dates as YYYY-MM-DD",
                         "e.g. ABSENT 2026-12-24 2026-12-27") from None
    if last < first:
        raise OrderError("the last day comes before the first", "e.g. ABSENT 2026-12-24 2026-12-27")
    if (last - first).days >= MAX_ABSENCE_DAYS:
        raise OrderError(f"an absence is at most {MAX_ABSENCE_DAYS} days",
                         "ask the referee to PAUSE the game for longer breaks")
    return first, last


def do_absent(ctx: PlayerContext, order: Order) -> str:
    assert ctx.who is not None
    email = ctx.who.player.email
    if order.args is None:
        ctx.session.exec(delete(Absence).where(col(Absence.email) == email,
                                               col(Absence.ends) > ctx.now))
        said = ["Your absences are cleared: deadlines no longer move for you."]
        outcome = f"absences of {email} cleared"
    else:
        starts, ends = absence_interval(*order.args)
        if ends <= ctx.now:
            raise _refuse("that absence is over already", "give days to come", order,
                          ctx.who.game.name)
        ctx.session.add(Absence(email=email, starts=starts, ends=ends, created_at=ctx.now))
        ctx.session.flush()
        first, last = order.args
        said = [f"Noted: you are away from {first.isoformat()} to {last.isoformat()} (UTC days, "
                f"both included). A deadline of your games that falls in it while your order "
                f"is missing moves to the day after you are back (the players are told).",
                *_caps(ctx.session, email)]
        outcome = f"{email} away {first.isoformat()} to {last.isoformat()}"
    _move_now(ctx, email)
    subject = "Your absence is noted" if order.args else "Your absences are cleared"
    ctx.answer("notice", subject, {"subject": subject, "paragraphs": said,
                                   "game": ctx.who.game.name})
    return outcome


def _running_games(session: Session, email: str) -> list[tuple[Game, Player]]:
    rows = session.exec(select(Game, Player).where(Player.game_id == Game.id,
                                                   Player.email == email,
                                                   col(Player.active).is_(True),
                                                   Game.status == "running"))
    return list(rows.all())


def _caps(session: Session, email: str) -> list[str]:
    out = []
    for game, player in _running_games(session, email):
        cap = options_of(game).vacation_days
        left = max(0.0, cap - player.absent_days_used)
        out.append(f"Game {game.name}: deadlines move for you by at most {cap:g} days in all; "
                   f"{left:.1f} days are left. Beyond that the referee decides.")
    return out


def _move_now(ctx: PlayerContext, email: str) -> None:
    """Shift the current deadlines at once (the tick would do it within a minute too)."""
    for game, _ in _running_games(ctx.session, email):
        if game.deadline is not None and game.grace_until is None:
            vacation_check(ctx.session, ctx.referee, game, ctx.now)


COMMANDS: tuple[Command, ...] = (
    *signup.COMMANDS,
    Command("SAY", "SAY <text>",
            "table talk: relayed at once to the other players, and in the next report",
            parse_say),
    Command("ABSENT", "ABSENT <from-date> <to-date> | ABSENT NONE",
            "a vacation (UTC days, both included): your deadlines inside it move past it",
            parse_absent),
)
ACTIONS: dict[str, PlayerAction] = {**signup.ACTIONS, "SAY": do_say, "ABSENT": do_absent}
NEEDS_PLAYER: set[str] = {*signup.NEEDS_PLAYER, "SAY", "ABSENT"}
