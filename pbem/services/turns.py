"""Resolving turns: the moves of a turn, playing it, its reports, the missed-turn count.

``resolve`` plays the turn in hand (``play_turn``: missing orders are played
for their players: their standing order, the game's policy, or the robot),
then queues its reports (``report_turn``), two steps a runner may also call
one after the other itself (pbem.referee, for the order that completes a
turn). ``turn_complete`` is the one place that says "resolve as soon as every
due order is in" (not under WAIT): a player's order, the referee's ORDER and
WAIT off (``resolve_if_complete``) all ask it.

After each resolution ``after_turn`` counts the turns a player missed in a
row (Player.missed_turns; their own order resets it) and, when the count
reaches the game's missed-turn limit, asks the referee once to replace them
(saying so when mail to the player has been bouncing). The reports note mail
to a player that bounced since the last turn (pbem.services.bounces).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import random
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from sqlalchemy import bindparam
from sqlmodel import Session, col, select

from pbem.claims import aware
from pbem.db import core_read
from pbem.errors import Refusal
from pbem.games import (
    drop_orders,
    id_of,
    load_state,
    missing_seats,
    next_deadline,
    pending_orders,
    seated,
    stream_of,
)
from pbem.kinds import AnyKind, kind_of
from pbem.models import Game, Move, Player
from pbem.options import POLICIES, options_of, robot_level
from pbem.services.bounces import describe_said, failing, report_notes
from pbem.services.post import Post, read_in_turn, tagged, tell_referee
from pbem.services.reports import enqueue_reports
from pbem.wording import Said, _, _n

# how a move is recorded (Move.by): orders really given, and moves made for a missing order
GIVEN_BY = ("player", "referee")
MISSED_BY = ("standing", "policy", "robot")


@dataclass
class TurnOutcome:
    played_for: dict[int, Any]   # seat -> the move made for a missing order
    played_by: dict[int, str]    # seat -> "standing" (their DEFAULT), "policy" or "robot"
    state: Any                   # the kind's state after the turn
    notes: list[str]             # what happened, for the report
    seat_notes: dict[int, list[str]] = field(default_factory=dict)   # as told to a seat


def robot_rng(game: Game, turn: int, seat: int) -> random.Random:
    """The robot's choices come from the seed too, so a replay makes the same ones."""
    digest = hmac.new(bytes.fromhex(game.seed_hex), f"robot/{turn}/{seat}".encode(),
                      hashlib.sha256).digest()
    return random.Random(int.from_bytes(digest, "big"))


def game_policy(game: Game) -> str:
    """The game's missing-order policy (NEWGAME MISSING), ROBOT unless set."""
    policy = str(json.loads(game.options_json or "{}").get("policy", "robot")).lower()
    return policy.upper() if policy in POLICIES else "ROBOT"


def missing_move(game: Game, kind: AnyKind, state: Any, seat: int,
                 player: Player | None) -> tuple[Any, str]:
    """The move for a seat without an order: its standing order, the game's policy, the robot."""
    if player is not None and (player.default_order or "").upper() == "ROBOT":
        return kind.robot_move(state, seat, robot_rng(game, game.turn, seat),
                               level=robot_level(game)), "robot"
    for policy, by in ((player.default_order if player else None, "standing"),
                       (game_policy(game), "policy")):
        if policy and policy.upper() in ("CHALLENGE", "RAISE"):
            move = kind.standing_move(state, seat, policy.upper())
            if move is not None:
                return move, by
    return kind.robot_move(state, seat, robot_rng(game, game.turn, seat),
                               level=robot_level(game)), "robot"


def turn_moves(session: Session, game: Game, state: Any) -> tuple[dict[int, Any], dict[int, str]]:
    """The moves the turn is played with now: the orders in, the rest played for their seats;
    and how each was made (Move.by)."""
    kind = kind_of(game)
    orders, holders = pending_orders(session, game), seated(session, game)
    moves: dict[int, Any] = {}
    by: dict[int, str] = {}
    for seat in sorted(kind.due(state)):
        order = orders.get(seat)
        if order is not None:
            moves[seat], by[seat] = kind.move_from_json(json.loads(order.move_json)), order.by
        else:
            moves[seat], by[seat] = missing_move(game, kind, state, seat, holders.get(seat))
    return moves, by


def resolve_turn(session: Session, game: Game, now: datetime) -> TurnOutcome:
    """Apply the turn's orders (missing ones are played for the player) and advance."""
    if game.status != "running":
        raise Refusal(_("game '{game}' is not running", game=game.name))
    kind = kind_of(game)
    state = load_state(session, game)
    moves, by = turn_moves(session, game, state)
    played_for = {seat: move for seat, move in moves.items() if by[seat] in MISSED_BY}
    resolution = kind.apply(state, moves, stream_of(game))
    for seat, move in moves.items():
        session.add(Move(game_id=id_of(game), turn=game.turn, seat=seat,
                         minigame=kind.place(state, seat),
                         move_json=json.dumps(kind.move_to_json(move)), by=by[seat],
                         rerolled_json=json.dumps(resolution.extras.get(seat, [])),
                         created_at=now))
    drop_orders(session, game)
    game.turn += 1
    if kind.over(resolution.state):
        game.status = "over"
        game.ended_at = now
        game.deadline = None
    else:
        game.deadline = next_deadline(game, now)
    session.add(game)
    session.flush()
    return TurnOutcome(played_for, {s: by[s] for s in played_for}, resolution.state,
                       resolution.notes, resolution.seat_notes)


def played_for_notes(game: Game, outcome: TurnOutcome, players: dict[int, Player], *,
                     early: bool = False, had_deadline: bool = True) -> list[Said]:
    """A line in the report for each move made for a missing order (early: the referee
    played the turn before its deadline, so nobody was late; had_deadline: the turn had
    one at all)."""
    kind = kind_of(game)
    notes: list[Said] = []
    for seat, move in sorted(outcome.played_for.items()):
        name: Said = (players[seat].name if seat in players
                      else _("player {seat}", seat=seat))
        by = outcome.played_by.get(seat)
        who = (_("their standing order") if by == "standing"
               else _("the game's policy") if by == "policy" else _("the robot"))
        missing = (_("sent no order in time") if not early else
                   _("had no order in when the referee played the turn (before its "
                     "deadline)") if had_deadline else
                   _("had no order in when the referee played the turn"))
        notes.append(_("Player {seat} ({name}) {missing}; {who} played {move} for them.",
                       seat=seat, name=name, missing=missing, who=who,
                       move=kind.describe_move_said(move)))
    return notes


def before_deadline(game: Game, now: datetime) -> bool:
    """Whether the turn is played before its deadline (or grace end) has come: by the
    referee's PROCESS, or in a game without deadlines."""
    end = game.grace_until or game.deadline
    return end is None or now < aware(end)


@dataclass
class PlayedTurn:
    """A turn just played: the state after it and what its reports say."""

    state: Any
    # each note text or a message, said in the report's reader's language
    notes: list[Said]                 # to every report
    seat_notes: dict[int, list[Said]]  # to one seat's report (the kind's, then the notes)


def play_turn(session: Session, post: Post, game: Game, *,
              early: bool | None = None) -> PlayedTurn:
    """Play the turn in hand and count missed turns (the referee is told); what its
    reports are to say. early: played before its deadline (None: from the clock now; the
    clock says False)."""
    turn = game.turn
    early = before_deadline(game, post.clock()) if early is None else early
    had_deadline = (game.grace_until or game.deadline) is not None   # resolving sets the next
    outcome = resolve_turn(session, game, post.clock())
    read_in_turn(session, game, turn)   # the talk and notices of the turn are read in this one
    after_turn(session, post, game, turn)
    players = seated(session, game)
    more = (played_for_notes(game, outcome, players, early=early, had_deadline=had_deadline)
            + report_notes(session, game))
    return PlayedTurn(outcome.state, [*outcome.notes, *more],
                      {s: [*n, *more] for s, n in outcome.seat_notes.items()})


def report_turn(session: Session, post: Post, game: Game, played: PlayedTurn, *,
                inbound_id: int | None = None) -> None:
    """Queue the reports of the turn just played (pbem.services.reports)."""
    enqueue_reports(session, post, game, played.state, now=post.clock(), inbound_id=inbound_id,
                    # the report's context says each note in its reader's language
                    notes=cast(list[str], played.notes),
                    seat_notes=cast(dict[int, list[str]], played.seat_notes))


def resolve(session: Session, post: Post, game: Game, *, inbound_id: int | None = None,
            early: bool | None = None) -> None:
    """Play the turn in hand, then queue its reports (play_turn, report_turn)."""
    report_turn(session, post, game, play_turn(session, post, game, early=early),
                inbound_id=inbound_id)


def turn_complete(session: Session, game: Game, state: Any | None = None) -> bool:
    """Is every due order in, the game running and not under WAIT (state: if loaded)?"""
    if game.status != "running" or options_of(game).wait:
        return False
    return not missing_seats(session, game, state)


def resolve_if_complete(session: Session, post: Post, game: Game, *, state: Any | None = None,
                        inbound_id: int | None = None) -> bool:
    """Resolve the turn if it is complete (turn_complete); True if it did."""
    if not turn_complete(session, game, state):
        return False
    resolve(session, post, game, inbound_id=inbound_id)
    return True


# who made each move of a turn (a Core read: pbem.db.core_read)
_MOVES_BY = (select(Move.seat, Move.by)
             .where(col(Move.game_id) == bindparam("game"), col(Move.turn) == bindparam("turn"))
             .order_by(col(Move.seat)))


def after_turn(session: Session, post: Post, game: Game, turn: int) -> list[Player]:
    """Count the missed turns of turn ``turn`` (just resolved); ask the referee to replace
    whoever reaches the limit (once: when the count reaches it). Returns those players."""
    rows = core_read(session, _MOVES_BY, {"game": game.id, "turn": turn})
    holders = seated(session, game)
    limit = options_of(game).missed_limit   # NEWGAME MISSED <n>; 0: never ask the referee
    reached = []
    for row in rows:
        player = holders.get(row.seat)
        if player is None:
            continue
        if row.by == "player":
            player.missed_turns = 0
        elif row.by in MISSED_BY:
            player.missed_turns += 1
            if limit and player.missed_turns == limit:
                reached.append(player)
        session.add(player)
    for player in reached:
        bouncing = failing(session, player.email)
        tell_referee(session, post, tagged(game.name, _n(
            "player {seat} has missed {n} turn", "player {seat} has missed {n} turns", limit,
            seat=player.seat)), [
            _n("Player {seat} of game {game}, {name} <{email}>, has sent no order for {n} "
               "turn in a row (up to turn {turn}).",
               "Player {seat} of game {game}, {name} <{email}>, has sent no order for {n} "
               "turns in a row (up to turn {turn}).", limit, seat=player.seat,
               game=game.name, name=player.name, email=player.email, turn=turn),
            *([_("Mail to {email} has been bouncing {how}: they may not have had their "
                 "reports.", email=player.email, how=describe_said(bouncing))]
              if bouncing is not None else []),
            _("The game goes on: their standing order or the robot plays for them meanwhile."),
            _("To give the seat to someone else: REPLACE {game} {seat} <email> [<name>]",
              game=game.name, seat=player.seat)])
    return reached
