"""ROLLBACK <game>: undo the last resolved turn.

The turn's moves leave the record (they are kept in the audit log), the
players' own orders of that turn (and those the referee entered for them)
become pending orders again, the moves played for missing orders are
dropped, orders already sent for the next turn are void, the turn counter
goes back, a finished game runs again, and the turn gets a fresh deadline.
Everyone gets the report of the turn played again, with a note.

The dice stay fair: every roll comes from the committed seed by its label
(``hand/<mini-game>/<seat>``, ``reroll/<mini-game>/<seat>/<n>`` ...), never
from a running counter, so playing the turn again with the same orders
deals the same dice, and the record still verifies. What the undone turn
showed cannot be taken back, though: see docs/commands.md ("Missed
turns, replacements and rollbacks").
"""

from __future__ import annotations

import json
from datetime import datetime

from sqlmodel import Session, col, select

from pbem.commands.context import CommandContext, MailCommand
from pbem.games.lifecycle import turn_begins
from pbem.games.records import find_game, id_of, seated, update_players
from pbem.games.states import load_state
from pbem.orders.arguments import game_name
from pbem.orders.commands import Order
from pbem.services.reports import enqueue_reports
from pbem.services.turns import GIVEN_BY, MISSED_BY
from pbem.store.models import AuditEntry, Game, Move, OutboundMail, PendingOrder
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import Message, _, _n, listed, listing, ngettext, plural


def do_rollback(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    session, now = ctx.session, ctx.now
    game = find_game(session, name)
    if game.status not in ("running", "paused", "over"):
        raise Refusal(_("game '{game}' is {state}: nothing to roll back", game=name,
                        state=game.status))
    moves = list(session.exec(select(Move).where(Move.game_id == game.id)
                              .order_by(col(Move.turn).desc(), col(Move.seat))))
    if not moves:
        raise Refusal(_("game '{game}' has no resolved turn to roll back", game=name))
    turn = moves[0].turn
    undone = [m for m in moves if m.turn == turn]
    later = list(session.exec(select(PendingOrder).where(PendingOrder.game_id == game.id)))
    final_seen = game.status == "over" and session.exec(select(OutboundMail.id).where(
        OutboundMail.game_id == game.id, OutboundMail.kind == "report",
        OutboundMail.turn == game.turn, OutboundMail.status == "sent")).first() is not None
    _audit_undone(session, game, turn, undone, later, now)
    unsent = _withhold_reports(session, game, turn)
    restored = _restore_orders(session, game, turn, undone, later, now)
    _rewind(game, turn, now)
    session.add(game)
    session.flush()
    enqueue_reports(session, ctx.post, game, load_state(session, game), now=now,
                    # a note is said in each reader's language (the report's notes take
                    # messages: services.reports types them str still)
                    notes=[_note(turn, restored)])  # type: ignore[list-item]
    out = (f"game {game.name}: turn {turn} rolled back ("
           f"{plural('{n} move', '{n} moves', len(undone))} undone, "
           f"orders of {_orders_from(restored) if restored else 'nobody'} pending again, "
           f"{plural('{n} later order', '{n} later orders', len(later))} void, "
           f"{plural('{n} unsent report', '{n} unsent reports', unsent)} withheld); "
           f"turn {turn} reports sent again")
    if final_seen:
        out += ("; warning: the final report had gone out with the seed, so the players can "
                "now work out every die")
    return out


def _audit_undone(session: Session, game: Game, turn: int, undone: list[Move],
                  later: list[PendingOrder], now: datetime) -> None:
    """The whole undone turn, untruncated (pbem.games.audit.audit cuts details short)."""
    detail = {"turn": turn,
              "moves": [{"seat": m.seat, "minigame": m.minigame, "by": m.by,
                         "move": json.loads(m.move_json),
                         "rerolled": json.loads(m.rerolled_json)} for m in undone],
              "void_orders": [{"turn": o.turn, "seat": o.seat, "by": o.by,
                               "move": json.loads(o.move_json)} for o in later]}
    session.add(AuditEntry(game_id=game.id, at=now, actor="referee", action="rollback",
                           detail=json.dumps(detail)))


def _withhold_reports(session: Session, game: Game, turn: int) -> int:
    """Reports of the undone turn not yet sent never leave: nobody learns what it did."""
    unsent = list(session.exec(select(OutboundMail).where(
        OutboundMail.game_id == game.id, OutboundMail.kind == "report",
        OutboundMail.turn == game.turn, OutboundMail.status == "pending")))
    for row in unsent:
        row.status = "cancelled"
        row.last_error = f"turn {turn} was rolled back"
        session.add(row)
    return len(unsent)


def _restore_orders(session: Work, game: Game, turn: int, undone: list[Move],
                    later: list[PendingOrder], now: datetime) -> list[int]:
    """Orders really given in the undone turn are pending again, later ones void, a missed
    turn no longer counts; returns the seats whose order is back."""
    for void in later:
        session.delete(void)
    session.flush()
    holders = seated(session, game)
    restored = []
    missed: dict[int | None, int] = {}
    for move in undone:
        if move.by in GIVEN_BY:
            session.add(PendingOrder(game_id=id_of(game), turn=turn, seat=move.seat,
                                     move_json=move.move_json, by=move.by, created_at=now))
            restored.append(move.seat)
        elif move.by in MISSED_BY and move.seat in holders:
            player = holders[move.seat]
            missed[player.id] = max(0, missed.get(player.id, player.missed_turns) - 1)
        session.delete(move)
    session.flush()
    update_players(session, game, {pid: {"missed_turns": n} for pid, n in missed.items()})
    session.forget(["orders"])   # orders voided and given back: read anew
    return restored


def _rewind(game: Game, turn: int, now: datetime) -> None:
    """The game back at ``turn``, running again if it was over, with a fresh deadline."""
    if game.status == "over":
        game.status = "running"
        game.ended_at = None
    game.turn = turn
    game.turn_started_at = now
    game.grace_until = None
    game.reminded_turn = min(game.reminded_turn, turn - 1)
    if game.status == "paused":
        game.paused_left_seconds = game.turn_hours * 3600 if game.turn_hours else None
        game.deadline = None
    else:
        for name, value in turn_begins(game, now).items():
            setattr(game, name, value)


def _note(turn: int, restored: list[int]) -> Message:
    note = _("The referee rolled back turn {turn}: its moves are undone and the turn is "
             "played again. Orders the players had sent for turn {turn} stand (a new order "
             "replaces yours); moves made for missing orders are void, and so are orders "
             "already sent for turn {next}. The dice come from the same seed, so the same "
             "orders give the same dice.", turn=turn, next=turn + 1)
    if restored:
        note = _n("{note} Orders in again from player {players}.",
                  "{note} Orders in again from players {players}.", len(restored),
                  note=note, players=listed(sorted(restored)))
    return note


def _orders_from(seats: list[int]) -> str:
    """ "player 2", "players 1 and 3" """
    return f"{ngettext('player', 'players', len(seats))} {listing(sorted(seats))}"


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("ROLLBACK", "ROLLBACK <game>",
            _("undo the last resolved turn; its reports are sent again"), game_name,
            action=do_rollback, who="referee", phase="change"),
)
