"""The replay of a game: the state after every turn, rebuilt from the seed and the
recorded moves exactly as the referee built it (pbem.games.states.load_state does the same,
keeping only the last state); and the game's course drawn from it (pbem.render.charts).

A finished game never changes (a ROLLBACK changes its turn), so the web app keeps
the steps of a few recent games in memory, keyed by game and turn (pbem.web.cache).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any, Generic, TypeVar, overload

from sqlmodel import Session, col, select

from pbem.games.records import read_players, seats_of
from pbem.games.states import stream_of
from pbem.kinds import GameKind, kind_of
from pbem.render.charts import Course
from pbem.store.models import Move
from pbem.store.rows import GameView

S = TypeVar("S")   # the game kind's state
M = TypeVar("M")   # the game kind's move


@dataclass(frozen=True)
class PlayedMove(Generic[M]):
    seat: int
    move: M
    by: str


@dataclass(frozen=True)
class Step(Generic[S, M]):
    turn: int                         # 0: the start, before any move
    moves: list[PlayedMove[M]]
    notes: list[str]
    state: S                          # the state after the turn


# a step of a game of any kind: its kind looked up by the game's name (pbem.kinds.AnyKind
# says why that is where a kind's state and move types end)
SomeStep = Step[Any, Any]


@overload
def replay_steps(session: Session, game: GameView, kind: GameKind[S, M]) -> list[Step[S, M]]: ...
@overload
def replay_steps(session: Session, game: GameView, kind: None = None) -> list[SomeStep]: ...
def replay_steps(session: Session, game: GameView,
                 kind: GameKind[S, M] | None = None) -> list[Step[S, M]] | list[SomeStep]:
    """The start and the state after every turn (``kind``: the game's, if the caller has
    it)."""
    if kind is None:
        return replay_steps(session, game, kind_of(game))
    stream = stream_of(game)
    state = kind.start(json.loads(game.rules_json), stream,
                       seats_of(read_players(session, game)))
    steps: list[Step[S, M]] = [Step(0, [], [], state)]
    rows = session.exec(select(Move).where(Move.game_id == game.id)
                        .order_by(col(Move.turn), col(Move.seat)))
    for turn, group in groupby(rows, key=lambda r: r.turn):
        played = [PlayedMove(r.seat, kind.move_from_json(json.loads(r.move_json)), r.by)
                  for r in group]
        resolution = kind.apply(state, {p.seat: p.move for p in played}, stream)
        state = resolution.state
        steps.append(Step(turn, played, list(resolution.notes), state))
    return steps


def course(game: GameView, steps: Sequence[Step[S, M]], names: Mapping[int, str]) -> Course:
    """Each seat's score after every step (the kind's course_key of its standings), as
    pbem.render.charts draws it: {"label", "turns", "lines": [{"seat", "name", "values"}]}."""
    kind = kind_of(game)
    # every standing has a score; the course_key is the kind's own (classic: dice held)
    scores = [{s["seat"]: int(s.get(kind.course_key, s["score"]))
               for s in kind.standings(step.state)} for step in steps]
    seats = sorted({seat for score in scores for seat in score})
    return {"label": kind.course_label, "turns": [step.turn for step in steps],
            "lines": [{"seat": seat, "name": names.get(seat, f"player {seat}"),
                       "values": [score.get(seat, 0) for score in scores]}
                      for seat in seats]}
