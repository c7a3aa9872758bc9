"""Referee desk commands about turns and seats: PREVIEW, ORDER, REPLACE, RESEND, ROLLBACK.

They work for every game kind through pbem.kinds (due, take_order, apply,
history ...). Each change players should know of is announced to them:
an order entered on a player's behalf (the player gets its content, the
others only that it was entered), a replacement, a rollback (the reports
of the turn played again, with a note). ROLLBACK lives in
pbem.commands.rollback.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from email import message_from_bytes, policy
from email.utils import format_datetime

from sqlmodel import Session

from pbem.commands.context import CommandContext, Done, MailCommand, with_seats
from pbem.commands.referee_cmds import not_an_address
from pbem.games.audit import audit
from pbem.games.records import active_players, find_game, id_of, players_of, seated, update_players
from pbem.games.reporting import latest_report
from pbem.games.states import load_state, stream_of
from pbem.games.turn_in_play import drop_orders, facts_of, pending_orders, record_order
from pbem.kinds import kind_of
from pbem.mail.addresses import address_problem
from pbem.mail.compose import make_message_id
from pbem.mail.text import BodyLine
from pbem.orders.arguments import game_name
from pbem.orders.commands import Order
from pbem.orders.parsing import parse_text
from pbem.services.post import announce, notice, tagged
from pbem.services.reports import enqueue_reports
from pbem.services.turns import TurnChange, turn_moves
from pbem.store.bodies import outbound_body
from pbem.store.models import Game, OutboundBody, OutboundMail, Player
from pbem.store.rows import GameView, PlayerView
from pbem.store.security import new_key
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import Said, _, joined

# --- argument parsers ---------------------------------------------------------

def _seat(word: str) -> int:
    if not word.isdigit() or int(word) < 1:
        raise Refusal(_("'{word}' is not a seat number", word=word),
                      _("seats are numbered from 1"))
    return int(word)


def parse_order(args: list[str]) -> tuple[str, int, str]:
    if len(args) < 3:
        raise Refusal(_("ORDER needs a game, a seat and the order"),
                      _("e.g. ORDER cup-1 3 BID 6 threes; EXPOSE 3 3"))
    return game_name([args[0]]), _seat(args[1]), " ".join(args[2:])


def parse_replace(args: list[str]) -> tuple[str, int, str, str]:
    if len(args) < 3:
        raise Refusal(_("REPLACE needs a game, a seat and the new player's address"),
                      _("e.g. REPLACE cup-1 3 fay@example.org Fay"))
    email = args[2].strip("<>").lower()
    problem = address_problem(email)   # the rule the reader and the composer apply
    if problem is not None:
        raise Refusal(not_an_address(args[2], problem))
    return game_name([args[0]]), _seat(args[1]), email, " ".join(args[3:])[:60]


def parse_resend(args: list[str]) -> tuple[str, int | None]:
    if not 1 <= len(args) <= 2:
        raise Refusal(_("RESEND takes a game and, if you like, a seat"),
                      _("e.g. RESEND cup-1 3"))
    return game_name([args[0]]), _seat(args[1]) if len(args) == 2 else None


# --- helpers ------------------------------------------------------------------

def running_game(session: Session, name: str, what: Said,
                 statuses: tuple[str, ...] = ("running", "paused")) -> Game:
    game = find_game(session, name)
    if game.status not in statuses:
        raise Refusal(_("game '{game}' is {state}: nothing to {what}", game=name,
                        state=game.status, what=what))
    return game


def holder(session: Work, game: GameView, seat: int) -> PlayerView:
    player = seated(session, game).get(seat)
    if player is None:
        raise Refusal(_("game '{game}' has no player in seat {seat}", game=game.name,
                        seat=seat))
    return player


_BY = {"player": "their order", "referee": "the referee's order on their behalf",
       "standing": "no order: their standing order", "policy": "no order: the game's policy",
       "robot": "no order: the robot"}


# --- PREVIEW ------------------------------------------------------------------

def do_preview(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    game = running_game(ctx.session, name, _("preview"), ("running", "paused"))
    facts = facts_of(ctx.session, game)
    kind, state = facts.kind, facts.state
    moves, by = turn_moves(facts)
    resolution = kind.apply(state, moves, stream_of(game))   # pure: nothing is stored
    players = facts.seated
    lines = [f"game {game.name}, turn {game.turn}: if the turn were resolved now "
             f"(a preview; nothing is stored)"]
    for seat, move in sorted(moves.items()):
        who = players[seat].name if seat in players else "?"
        lines.append(f"  player {seat} ({who}): {kind.describe_move(move)} ({_BY[by[seat]]})")
    lines += [f"  {note}" for note in resolution.notes]
    scores = ", ".join(f"{s['seat']}: {s['score']}" for s in
                       sorted(kind.standings(resolution.state), key=lambda s: s["seat"]))
    lines.append(f"  then: scores {scores}; " + ("the game would be over" if
                                                 kind.over(resolution.state) else
                                                 f"turn {game.turn + 1} would begin"))
    return "\n".join(lines)


# --- ORDER --------------------------------------------------------------------

def do_order(ctx: CommandContext, order: Order) -> Done:
    args: tuple[str, int, str] = order.args
    name, seat, words = args
    game = running_game(ctx.session, name, _("order"), ("running", "paused"))
    facts = facts_of(ctx.session, game)
    kind, state = facts.kind, facts.state
    player = facts.seated.get(seat)
    if player is None:
        raise Refusal(_("game '{game}' has no player in seat {seat}", game=game.name,
                        seat=seat))
    if seat not in kind.due_seats(state):
        raise Refusal(_("player {seat} has no move in turn {turn}", seat=seat, turn=game.turn))
    parts = [w.strip() for w in words.split(";") if w.strip()]
    parsed = parse_text([BodyLine(i, part) for i, part in enumerate(parts, start=1)],
                        kind.commands)
    if parsed.problems:
        p = parsed.problems[0]
        raise Refusal(_("'{line}': {problem} ({hint})", line=p.line, problem=p.message,
                        hint=p.hint) if p.hint else
                      _("'{line}': {problem}", line=p.line, problem=p.message))
    if parsed.prose:
        raise Refusal(_("'{line}' is not an order of {kind} (orders: {usages})",
                        line=parsed.prose[0].text, kind=kind.title,
                        usages=", ".join(c.usage for c in kind.commands)))
    # a refusal (a player's name, the kind's) goes up as it is; run() quotes the ORDER line
    names = {s: p.name for s, p in facts.seated.items()}
    taken = kind.take_order(state, seat, with_seats(parsed.orders, names, game.name))
    replaced = record_order(ctx.session, game, seat, taken.move, now=ctx.now, inbound_id=None,
                            by="referee", facts=facts)
    now = ctx.now
    audit(ctx.session, game, now, "order",
          f"turn {game.turn}, seat {seat}: {taken.summary}", actor="referee")
    entered = _("The referee entered this order for you, player {seat}, in turn "
                "{turn}: {order}.", seat=seat, turn=game.turn, order=taken.summary)
    notice(ctx.session, ctx.post, player.email,
           tagged(game.name, _("turn {turn}: the referee entered your order", turn=game.turn)), [
                       (_("{entered} It replaces the order you had sent.", entered=entered)
                        if replaced else entered),
                       _("You may still send your own order before the deadline: it replaces "
                         "this one.")], now, game=game, seat=seat, turn=game.turn)
    others = [p for p in facts.players if p.active and p.seat != seat]
    announce(ctx.session, ctx.post, game,
             _("turn {turn}: an order entered by the referee", turn=game.turn),
             [_("The referee entered the order of player {seat} ({name}) for turn {turn} on "
                "their behalf. What it is shows in the next report.", seat=seat,
                name=player.name, turn=game.turn)],
             now, action="order-announced", actor="referee", players=others)
    # the runner resolves the turn if this order completes it (pbem.services.turns.settle)
    return Done(f"game {game.name}, turn {game.turn}: order for player {seat}: {taken.summary}",
                TurnChange(game, "order", facts),
                if_resolved=f"; every order was in, so turn {game.turn} is resolved")


# --- REPLACE ------------------------------------------------------------------

def do_replace(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, int, str, str] = order.args
    name, seat, email, new_name = args
    game = running_game(ctx.session, name, _("replace"), ("running", "paused"))
    old = holder(ctx.session, game, seat)
    same = next((p for p in players_of(ctx.session, game) if p.email == email), None)
    if same is not None and same.active:
        raise Refusal(_("{address} plays in '{game}' already (seat {seat})", address=email,
                        game=game.name, seat=same.seat))
    key, key_hash = new_key()
    new = Player(game_id=id_of(game), email=email, key=key, key_hash=key_hash,
                 name=new_name or (same.name if same else email.partition("@")[0]),
                 entrant=old.entrant, seat=seat, active=True, default_order=None,
                 missed_turns=0)
    taking = {name: getattr(new, name) for name in
              ("name", "entrant", "seat", "active", "key", "key_hash", "default_order",
               "missed_turns")}
    # the players by statement (pbem.games.records.update_players): a former one back, or a new one
    update_players(ctx.session, game, {old.id: {"active": False},
                                       **({same.id: taking} if same is not None else {})})
    if same is None:
        ctx.session.add(new)
        ctx.session.flush()
        ctx.session.forget(["players"])   # a new player
    dropped = pending_orders(ctx.session, game).get(seat)
    if dropped is not None:
        drop_orders(ctx.session, game, [seat])
    ctx.session.flush()
    now = ctx.now
    audit(ctx.session, game, now, "replace", f"seat {seat}: {old.email} -> {email} "
          f"from turn {game.turn}" + ("; the seat's order of this turn was dropped"
                                      if dropped else ""), actor="referee")
    kind = kind_of(game)
    state = load_state(ctx.session, game)
    history = kind.history(state)
    notice(ctx.session, ctx.post, new.email,
           tagged(game.name, _("welcome: you take over player {seat}", seat=seat)), [
                       _("The referee has given you seat {seat} in game {game} of "
                         "{kind}, which {old} held until now. You play from turn "
                         "{turn} on.", seat=seat, game=game.name, kind=kind.title,
                         old=old.name, turn=game.turn),
                       _("Your report for this turn, with your dice and your order key, comes "
                         "in a separate mail: answer it with your orders."),
                       *([_("The moves so far:"), joined(history, "\n")] if history else [])],
           now, game=game, seat=seat, turn=game.turn)
    enqueue_reports(ctx.session, ctx.post, game, state, now=now, only_seat=seat,
                    notes=[_("You take over seat {seat} from {old}.",  # type: ignore[list-item]
                             seat=seat, old=old.name)])
    notice(ctx.session, ctx.post, old.email, tagged(game.name, _("you have been replaced")), [
                       _("The referee has given your seat {seat} in game {game} to "
                         "{new}. Your order key no longer works. Thank you for playing!",
                         seat=seat, game=game.name, new=new.name)],
           now, game=game)
    others = [p for p in active_players(ctx.session, game) if p.seat != seat]
    announce(ctx.session, ctx.post, game, _("player {seat} replaced", seat=seat), [
        _("From turn {turn} on, {new} plays as player {seat} in place of {old}.",
          turn=game.turn, new=new.name, seat=seat, old=old.name)],
        now, action="replace-announced", actor="referee", players=others)
    return (f"game {game.name}: {new.name} <{email}> replaces {old.name} <{old.email}> as "
            f"player {seat}" + ("; their pending order was dropped" if dropped else ""))


# --- RESEND -------------------------------------------------------------------

def resend_copy(ctx: CommandContext, row: OutboundMail, raw: bytes) -> OutboundMail:
    """A new mail with the same content as ``row`` (its bytes ``raw``): a new Message-ID
    and Date, nothing else."""
    msg = message_from_bytes(raw, policy=policy.SMTP)
    message_id = make_message_id(ctx.post.origin.domain, row.kind)
    del msg["Message-ID"]
    msg["Message-ID"] = message_id
    del msg["Date"]
    msg["Date"] = format_datetime(ctx.now)
    copy = OutboundMail(message_id=message_id, kind=row.kind, mail_from=row.mail_from,
                        rcpts_json=row.rcpts_json, game_id=row.game_id,
                        seat=row.seat, turn=row.turn, next_attempt_at=ctx.now,
                        created_at=ctx.now)
    ctx.session.add(copy)
    ctx.session.flush()   # its id, which its bytes' row is keyed by
    assert copy.id is not None
    ctx.session.add(OutboundBody(mail_id=copy.id, raw=msg.as_bytes()))
    return copy


def report_names(raw: bytes) -> dict[int, str] | None:
    """The seat holders' names a stored report shows (its report.json); None if it has
    none to read."""
    for part in message_from_bytes(raw, policy=policy.default).walk():
        if part.get_filename() == "report.json":
            payload = part.get_payload(decode=True)
            try:
                view = json.loads(payload if isinstance(payload, bytes) else b"")
                return {int(p["number"]): str(p["name"]) for p in view["players"]}
            except (ValueError, KeyError, TypeError):
                return None
    return None


def still_true(row: OutboundMail, raw: bytes, player: PlayerView,
               holders: Mapping[int, PlayerView]) -> bool:
    """Is a stored report (``row``, its bytes ``raw``) still right to send again: to the
    seat holder's address now, naming the players who hold the seats now (not one
    replaced since)?"""
    return (player.email in json.loads(row.rcpts_json)
            and report_names(raw) == {s: p.name for s, p in holders.items()})


def do_resend(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, int | None] = order.args
    name, only = args
    game = find_game(ctx.session, name)
    if game.started_at is None:
        raise Refusal(_("game '{game}' has not started: no report to resend", game=name))
    holders = seated(ctx.session, game)
    seats = [only] if only is not None else sorted(holders)
    done, remade = [], []
    for seat in seats:
        player = holders.get(seat)
        if player is None:
            raise Refusal(_("game '{game}' has no player in seat {seat}", game=name,
                            seat=seat))
        row = latest_report(ctx.session, game, seat)
        raw = outbound_body(ctx.session, row.id) if row is not None else b""
        if row is not None and still_true(row, raw, player, holders):
            resend_copy(ctx, row, raw)
        else:   # a seat changed hands or moved since: the report made anew, as it is now
            enqueue_reports(ctx.session, ctx.post, game, load_state(ctx.session, game),
                            now=ctx.now, only_seat=seat, notes=[REMADE])  # type: ignore[list-item]
            remade.append(str(seat))
        done.append(str(seat))
    return (f"game {game.name}: latest report sent again to player{'s' * (len(done) > 1)} "
            + ", ".join(done) + (f" (made anew for {', '.join(remade)}: the seats changed "
                                 "hands or addresses since)" if remade else ""))


REMADE = _("The referee sent this report again. It is made anew, as the players have "
           "changed since this turn's report first went out (that one also says what "
           "happened in the turn played).")


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("PREVIEW", "PREVIEW <game>",
            _("what the turn would do if resolved now (to you only; nothing is stored)"),
            game_name, action=do_preview, who="referee", phase="look"),
    MailCommand("ORDER", "ORDER <game> <seat> <order>",
            _("enter an order on a player's behalf (lines joined by ;), e.g. ORDER cup-1 3 "
              "BID 6 threes; EXPOSE 3 3"), parse_order, action=do_order, who="referee", phase="change"),
    MailCommand("REPLACE", "REPLACE <game> <seat> <email> [<name>]",
            _("give a seat to a new player (new key, the history and the seat's report)"),
            parse_replace, action=do_replace, who="referee", phase="change"),
    MailCommand("RESEND", "RESEND <game> [<seat>]", _("send the latest reports again"),
            parse_resend, action=do_resend, who="referee", phase="change"),
)
