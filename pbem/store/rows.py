"""A game and its players as plain rows: what a mail's handling reads and passes down.

A player's mail reads its game by one statement and the game's players by one more (once
a transaction: pbem.games.records.players_of), as these frozen rows, not ORM objects: loading,
tracking and flushing the objects was the ORM's share of an order. What changes them is
written by its own statement, at once (pbem.games.records.update_game, update_players), and the
changed row is handed on: a row is never changed in place, so a stale one cannot be
written back.

``GameView`` and ``PlayerView`` are what a reader of either needs: a row, or the ORM
object that the referee's commands, the clock, the web pages and the admin commands still
hold (pbem.store.models), which has the same attributes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Protocol


class GameView(Protocol):
    """A game as its readers see it: a GameRow, or a Game object."""

    @property
    def id(self) -> int | None: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def rules_json(self) -> str: ...
    @property
    def seed_hex(self) -> str: ...
    @property
    def commitment(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def turn(self) -> int: ...
    @property
    def turn_hours(self) -> float | None: ...
    @property
    def deadline(self) -> datetime | None: ...
    @property
    def options_json(self) -> str: ...
    @property
    def turn_started_at(self) -> datetime | None: ...
    @property
    def paused_left_seconds(self) -> float | None: ...
    @property
    def reminded_turn(self) -> int: ...
    @property
    def grace_until(self) -> datetime | None: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def started_at(self) -> datetime | None: ...
    @property
    def ended_at(self) -> datetime | None: ...


class PlayerView(Protocol):
    """A player as its readers see them: a PlayerRow, or a Player object."""

    @property
    def id(self) -> int | None: ...
    @property
    def game_id(self) -> int: ...
    @property
    def entrant(self) -> int: ...
    @property
    def email(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def seat(self) -> int | None: ...
    @property
    def key(self) -> str: ...
    @property
    def key_hash(self) -> str: ...
    @property
    def active(self) -> bool: ...
    @property
    def default_order(self) -> str | None: ...
    @property
    def missed_turns(self) -> int: ...
    @property
    def absent_days_used(self) -> float: ...
    @property
    def timezone(self) -> str | None: ...
    @property
    def language(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class GameRow:
    """A row of game, as read (the columns of pbem.store.models.Game, in its order)."""

    id: int
    name: str
    kind: str
    rules_json: str
    seed_hex: str
    commitment: str
    status: str
    turn: int
    turn_hours: float | None
    deadline: datetime | None
    options_json: str
    turn_started_at: datetime | None
    paused_left_seconds: float | None
    reminded_turn: int
    grace_until: datetime | None
    created_at: datetime
    started_at: datetime | None
    ended_at: datetime | None


@dataclass(frozen=True, slots=True)
class PlayerRow:
    """A row of player, as read (the columns of pbem.store.models.Player, in its order,
    then what its address chose anywhere)."""

    id: int
    game_id: int
    entrant: int
    email: str
    name: str
    seat: int | None
    key: str
    key_hash: str
    active: bool
    default_order: str | None
    missed_turns: int
    absent_days_used: float
    timezone: str | None
    language: str | None
    # read with the row: what the address chose in any game, the newest (LANGUAGE, TIMEZONE;
    # JOIN's language), so that mail to the player needs no read of its own
    # (pbem.services.post.Post.reader_of's ``chosen``)
    chosen_language: str | None
    chosen_zone: str | None

    @property
    def chosen(self) -> tuple[str | None, str | None]:
        """(language, time zone) the address chose in any game, the newest of each."""
        return self.chosen_language, self.chosen_zone


GAME_COLUMNS = tuple(f.name for f in fields(GameRow))
CHOSEN = ("chosen_language", "chosen_zone")
PLAYER_COLUMNS = tuple(f.name for f in fields(PlayerRow) if f.name not in CHOSEN)


def game_row(game: GameView) -> GameRow:
    """The row of a stored game object as it is now (flushed: it has its id)."""
    assert game.id is not None
    return GameRow(*(getattr(game, name) for name in GAME_COLUMNS))
