"""Resolving turns: the moves of a turn, playing it, its reports, the missed-turn count.

``settle`` is the one step that resolves a turn: every path that can complete
one (a player's order, the referee's ORDER, WAIT off and PROCESS, through the
command table's runner, pbem.commands.registry; a passed deadline, through the
clock) says what changed (a ``TurnChange``), and ``settle`` decides whether the
turn completes (``complete``: every due order in, not under WAIT; PROCESS and
the deadline: now), plays it (``play_turn``: missing orders are played for
their players: their standing order, the game's policy, or the robot) and
queues its reports (``report_turn``; a player's order has them queued after
its answer, which says they follow). What the transaction knows of the game
(pbem.games.turn_in_play.GameFacts) is read once and handed down.

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, NamedTuple, TypeVar, cast, overload

from sqlalchemy import bindparam
from sqlmodel import col, select

from pbem.games.lifecycle import turn_begins
from pbem.games.records import id_of, players_of, seated, update_game, update_players
from pbem.games.states import record_moves, stream_of
from pbem.games.turn_in_play import GameFacts, drop_orders, facts_of
from pbem.kinds import GameKind, kind_of
from pbem.kinds.options import POLICIES, GameOptions, options_of, robot_level
from pbem.services.bounces import describe_said, failing, report_notes
from pbem.services.post import Post, read_in_turn, tagged, tell_referee
from pbem.services.reports import enqueue_reports
from pbem.store.claims import aware
from pbem.store.engines import core_read
from pbem.store.models import Move
from pbem.store.rows import GameView, PlayerRow, PlayerView
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import Said, _, _n

# how a move is recorded (Move.by): orders really given, and moves made for a missing order
GIVEN_BY = ("player", "referee")
MISSED_BY = ("standing", "policy", "robot")

S = TypeVar("S")   # the game kind's state
M = TypeVar("M")   # the game kind's move


@dataclass
class TurnOutcome(Generic[S, M]):
    played_for: dict[int, M]     # seat -> the move made for a missing order
    played_by: dict[int, str]    # seat -> "standing" (their DEFAULT), "policy" or "robot"
    state: S                     # the kind's state after the turn
    notes: list[str]             # what happened, for the report
    seat_notes: dict[int, list[str]] = field(default_factory=dict)   # as told to a seat
    made_by: dict[int, str] = field(default_factory=dict)   # seat -> each move's Move.by


def robot_rng(game: GameView, turn: int, seat: int) -> random.Random:
    """The robot's choices come from the seed too, so a replay makes the same ones."""
    digest = hmac.new(bytes.fromhex(game.seed_hex), f"robot/{turn}/{seat}".encode(),
                      hashlib.sha256).digest()
    return random.Random(int.from_bytes(digest, "big"))


def game_policy(game: GameView) -> str:
    """The game's missing-order policy (NEWGAME MISSING), ROBOT unless set."""
    policy = str(json.loads(game.options_json or "{}").get("policy", "robot")).lower()
    return policy.upper() if policy in POLICIES else "ROBOT"


def missing_move(game: GameView, kind: GameKind[S, M], state: S, seat: int,
                 player: PlayerView | None, options: GameOptions | None = None) -> tuple[M, str]:
    """The move for a seat without an order: its standing order, the game's policy, the robot
    (``options``: the game's, if the caller has them)."""
    level = robot_level(game, options)
    if player is not None and (player.default_order or "").upper() == "ROBOT":
        return kind.robot_move(state, seat, robot_rng(game, game.turn, seat),
                               level=level), "robot"
    for policy, by in ((player.default_order if player else None, "standing"),
                       (game_policy(game), "policy")):
        if policy and policy.upper() in ("CHALLENGE", "RAISE"):
            move = kind.standing_move(state, seat, policy.upper())
            if move is not None:
                return move, by
    return kind.robot_move(state, seat, robot_rng(game, game.turn, seat),
                               level=level), "robot"


def turn_moves(facts: GameFacts[S, M]) -> tuple[dict[int, M], dict[int, str]]:
    """The moves the turn is played with now: the orders in, the rest played for their seats;
    and how each was made (Move.by)."""
    game, kind, state, holders = facts.game, facts.kind, facts.started, facts.seated
    moves: dict[int, M] = {}
    by: dict[int, str] = {}
    for seat in sorted(kind.due_seats(state)):
        order = facts.orders.get(seat)
        if order is not None:
            moves[seat], by[seat] = kind.move_from_json(json.loads(order.move_json)), order.by
        else:
            moves[seat], by[seat] = missing_move(game, kind, state, seat, holders.get(seat),
                                                 facts.options)
    return moves, by


@overload
def resolve_turn(session: Work, game: GameView, now: datetime,
                 facts: GameFacts[S, M]) -> TurnOutcome[S, M]: ...
@overload
def resolve_turn(session: Work, game: GameView, now: datetime,
                 facts: None = None) -> TurnOutcome[Any, Any]: ...   # the kind looked up
def resolve_turn(session: Work, game: GameView, now: datetime,
                 facts: GameFacts[S, M] | None = None) -> TurnOutcome[S, M] | TurnOutcome[Any, Any]:
    """Apply the turn's orders (missing ones are played for the player) and advance
    (``facts``: the transaction's, left with the state after the turn)."""
    if game.status != "running":
        raise Refusal(_("game '{game}' is not running", game=game.name))
    if facts is None:
        return resolve_turn(session, game, now, facts_of(session, game))
    kind, state = facts.kind, facts.started
    moves, by = turn_moves(facts)
    played_for = {seat: move for seat, move in moves.items() if by[seat] in MISSED_BY}
    resolution = kind.apply(state, moves, stream_of(game))
    record_moves(session, game, [
        {"game_id": id_of(game), "turn": game.turn, "seat": seat,
         "minigame": kind.place(state, seat), "move_json": json.dumps(kind.move_to_json(move)),
         "by": by[seat], "rerolled_json": json.dumps(resolution.extras.get(seat, [])),
         "created_at": now} for seat, move in moves.items()])
    drop_orders(session, game, facts=facts)
    facts.state = resolution.state
    ended = ({"status": "over", "ended_at": now, "deadline": None}
             if kind.over(resolution.state) else turn_begins(game, now, facts.options))
    facts.game = update_game(session, facts.game, turn=game.turn + 1, **ended)
    return TurnOutcome(played_for, {s: by[s] for s in played_for}, resolution.state,
                       resolution.notes, resolution.seat_notes, by)


def played_for_notes(game: GameView, outcome: TurnOutcome[S, M],
                     players: Mapping[int, PlayerView], *,
                     early: bool = False, had_deadline: bool = True,
                     kind: GameKind[S, M] | None = None) -> list[Said]:
    """A line in the report for each move made for a missing order (early: the referee
    played the turn before its deadline, so nobody was late; had_deadline: the turn had
    one at all)."""
    kind = kind or kind_of(game)
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


def before_deadline(game: GameView, now: datetime) -> bool:
    """Whether the turn is played before its deadline (or grace end) has come: by the
    referee's PROCESS, or in a game without deadlines."""
    end = game.grace_until or game.deadline
    return end is None or now < aware(end)


@dataclass
class PlayedTurn(Generic[S, M]):
    """A turn just played: the state after it and what its reports say."""

    state: S
    # each note text or a message, said in the report's reader's language
    notes: list[Said]                 # to every report
    seat_notes: dict[int, list[Said]]  # to one seat's report (the kind's, then the notes)
    facts: GameFacts[S, M]            # what the transaction knows of the game, after it


# a turn of a game of any kind: what settle plays, the kind looked up by the game's name
# (pbem.kinds.AnyKind says why that is where a kind's state and move types end)
SomePlayedTurn = PlayedTurn[Any, Any]


def play_turn(session: Work, post: Post, facts: GameFacts[S, M], *,
              early: bool | None = None) -> PlayedTurn[S, M]:
    """Play the turn in hand and count missed turns (the referee is told); what its
    reports are to say. early: played before its deadline (None: from the clock now; the
    clock says False)."""
    game = facts.game
    turn = game.turn
    now = post.clock()
    early = before_deadline(game, now) if early is None else early
    had_deadline = (game.grace_until or game.deadline) is not None   # resolving sets the next
    outcome = resolve_turn(session, game, now, facts)
    game = facts.game   # as the turn left it
    read_in_turn(session, game, turn)   # the talk and notices of the turn are read in this one
    players = facts.seated
    after_turn(session, post, game, turn, players=players, options=facts.options,
               made_by=outcome.made_by)
    facts.players = players_of(session, game)   # their missed turns as after_turn wrote them
    more = (played_for_notes(game, outcome, players, early=early, had_deadline=had_deadline,
                             kind=facts.kind)
            + report_notes(session, game))
    return PlayedTurn(outcome.state, [*outcome.notes, *more],
                      {s: [*n, *more] for s, n in outcome.seat_notes.items()}, facts)


def report_turn(session: Work, post: Post, played: PlayedTurn[S, M], *, draft: bool,
                inbound_id: int | None = None) -> None:
    """Queue the reports of the turn just played (pbem.services.reports): made into mails
    now, or (``draft``: the caller's tick has the composer making them, pbem.runner.composer)
    as one draft the composer makes into mails once the transaction has committed. The turn
    is counted in ``session.reported`` (the tick's composer starts after so many)."""
    enqueue_reports(session, post, played.facts.game, played.state, now=post.clock(),
                    inbound_id=inbound_id, facts=played.facts,
                    # the report's context says each note in its reader's language
                    notes=cast(list[str], played.notes),
                    seat_notes=cast(dict[int, list[str]], played.seat_notes),
                    draft=draft)
    session.reported.append(id_of(played.facts.game))


# why a turn may complete now (TurnChange.why): an order came in, WAIT went off (as soon
# as every due order is in); the referee's PROCESS, the deadline passed (now)
WHEN_COMPLETE = ("order", "wait-off")
NOW = ("process", "deadline")


@dataclass(frozen=True)
class TurnChange:
    """What a command or the clock changed that may complete a turn (``why``: one of
    WHEN_COMPLETE or NOW), with what its transaction knows of the game, if read."""

    game: GameView
    why: str
    # what its transaction knows of the game, if read (a game of any kind)
    facts: GameFacts[Any, Any] | None = None


def complete(facts: GameFacts[S, M], missing: Sequence[int] | None = None) -> bool:
    """Is every due order in, the game running and not under WAIT? The one place that says
    "resolve as soon as every due order is in". ``missing``: ``facts.missing()``, if the
    caller has it (a kind says who is due in words, each seat's: not cheap)."""
    return (facts.game.status == "running" and not facts.options.wait
            and not (facts.missing() if missing is None else missing))


def settle(session: Work, post: Post, change: TurnChange, *, inbound_id: int | None = None,
           report: bool = True, draft: bool = False) -> SomePlayedTurn | None:
    """The one step that resolves a turn: whether ``change`` completes it (an order in, WAIT
    off: ``complete``; PROCESS, the deadline: it does), then the turn played and its reports
    queued (``report``: else the caller queues them, report_turn, after its answer; ``draft``:
    as a draft for the composer, report_turn). The turn played, or None. PROCESS of a game
    not running is refused (resolve_turn)."""
    assert change.why in WHEN_COMPLETE + NOW, change.why
    game = change.game
    if change.why in WHEN_COMPLETE and game.status != "running":
        return None
    facts = change.facts or facts_of(session, game)
    if change.why in WHEN_COMPLETE and not complete(facts):
        return None
    played = play_turn(session, post, facts,
                       early=False if change.why == "deadline" else None)
    if report:
        report_turn(session, post, played, draft=draft, inbound_id=inbound_id)
    return played


# who made each move of a turn (a Core read: pbem.store.engines.core_read)
_MOVES_BY = (select(Move.seat, Move.by)
             .where(col(Move.game_id) == bindparam("game"), col(Move.turn) == bindparam("turn"))
             .order_by(col(Move.seat)))


class _MadeBy(NamedTuple):
    """A move of the turn as after_turn reads it (a row of _MOVES_BY)."""

    seat: int
    by: str


def after_turn(session: Work, post: Post, game: GameView, turn: int, *,
               players: dict[int, PlayerRow] | None = None,
               options: GameOptions | None = None,
               made_by: dict[int, str] | None = None) -> list[PlayerRow]:
    """Count the missed turns of turn ``turn`` (just resolved); ask the referee to replace
    whoever reaches the limit (once: when the count reaches it). Returns those players.
    ``players`` (the seated), ``options`` and ``made_by`` (each seat's Move.by, as the
    turn recorded it: else read back): if the caller has them."""
    rows = ([_MadeBy(seat, by) for seat, by in sorted(made_by.items())] if made_by
            else core_read(session, _MOVES_BY, {"game": game.id, "turn": turn}))
    holders = players if players is not None else seated(session, game)
    # NEWGAME MISSED <n>; 0: never ask the referee
    limit = (options or options_of(game)).missed_limit
    counts: dict[int | None, int] = {}
    for row in rows:
        player = holders.get(row.seat)
        if player is None:
            continue
        if row.by == "player":
            counts[player.id] = 0
        elif row.by in MISSED_BY:
            counts[player.id] = player.missed_turns + 1
    now: dict[int | None, PlayerRow] = {p.id: p for p in update_players(
        session, game, {pid: {"missed_turns": n} for pid, n in counts.items()})}
    reached = [now[pid] for pid, n in counts.items() if limit and n == limit]
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
