"""A game's and its players' stored rows: read (a transaction's memo keeps the players),
and changed, each change written at once by its own statement.

Works inside the caller's transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy import select as sa_select
from sqlalchemy.orm import aliased
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, select

from pbem.store.engines import core_read
from pbem.store.models import (
    Game,
    Player,
)
from pbem.store.rows import (
    GAME_COLUMNS,
    PLAYER_COLUMNS,
    GameRow,
    GameView,
    PlayerRow,
    PlayerView,
    game_row,
)
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import _


def id_of(game: GameView) -> int:
    """The id of a stored game (every game here has been flushed)."""
    assert game.id is not None
    return game.id


# --- a transaction's memo -------------------------------------------------------------------
#
# Within one unit of work (pbem.store.work.Work) the players and the pending orders of a game
# are read once, as rows: what reads or writes them takes the Work. What keeps the memo right
# is said in pbem.store.work: record_order and drop_orders (pbem.games.turn_in_play) set the
# orders they wrote, update_players the players it wrote, a function that adds or deletes a
# Player or PendingOrder forgets its kind (add_player, remove_entrant: pbem.games.lifecycle),
# the transaction's end forgets all. What is derived from the players (active, seated) is
# filtered in Python from the same rows.

# --- queries -------------------------------------------------------------------------------

def find_game(session: Session, name: str) -> Game:
    game = session.exec(select(Game).where(Game.name == name)).first()
    if game is None:
        raise Refusal(_("there is no game called '{name}'", name=name))
    return game


# a game and its players as rows (pbem.store.rows), each by a statement built once
_GAME_BY_ID = select(*(getattr(Game, name) for name in GAME_COLUMNS)).where(
    col(Game.id) == bindparam("game"))
_GAME_NAMED = select(*(getattr(Game, name) for name in GAME_COLUMNS)).where(
    col(Game.name) == bindparam("name"))
_OTHER = aliased(Player)


def _chosen(column: str) -> Any:
    """The newest ``column`` (language, timezone) the player's address set in any game."""
    chosen = getattr(_OTHER, column)
    return (sa_select(chosen).where(col(_OTHER.email) == col(Player.email), chosen.is_not(None))
            .order_by(col(_OTHER.id).desc()).limit(1).correlate(Player).scalar_subquery())


# a player's columns as read (PlayerRow's, in its order): its own, then what its address
# chose anywhere
PLAYER_READ = (*(getattr(Player, name) for name in PLAYER_COLUMNS),
               _chosen("language"), _chosen("timezone"))
_PLAYERS_OF = (sa_select(*PLAYER_READ)
               .where(col(Player.game_id) == bindparam("game"))
               .order_by(col(Player.entrant), col(Player.id)))


def read_game(session: Session, game_id: int) -> GameRow | None:
    """The game of that id as a row, read now (one statement)."""
    row = core_read(session, _GAME_BY_ID, {"game": game_id}).first()
    return GameRow(*row) if row is not None else None


def game_named(session: Session, name: str) -> GameRow:
    """The game called ``name`` as a row (a player's mail: its GAME line); refused if none
    (find_game: the object, for the referee's commands)."""
    game = game_called(session, name)
    if game is None:
        raise Refusal(_("there is no game called '{name}'", name=name))
    return game


def game_called(session: Session, name: str) -> GameRow | None:
    """The game called ``name`` as a row, or None (one statement)."""
    row = core_read(session, _GAME_NAMED, {"name": name}).first()
    return GameRow(*row) if row is not None else None


def read_players(session: Session, game: GameView) -> list[PlayerRow]:
    """Every player of the game (replaced ones too), in sign-up order, read now: for a
    reader that reads them once (a page, a replay); a handling reads ``players_of``."""
    return [PlayerRow(*row) for row in core_read(session, _PLAYERS_OF, {"game": game.id})]


def players_of(session: Work, game: GameView) -> list[PlayerRow]:
    """Every player of the game (replaced ones too), in sign-up order (the memo's: read
    once a transaction, kept right by update_players and forgotten by what adds or
    deletes one)."""
    players = known_players(session, game.id)
    if players is None:
        players = read_players(session, game)
        remember_players(session, game.id, players)
    return list(players)


def known_players(session: Work, game_id: int | None) -> list[PlayerRow] | None:
    """The players of the game the memo holds (None: not read in this transaction)."""
    return session.recall(("players", game_id))  # type: ignore[no-any-return]


def remember_players(session: Work, game_id: int | None, players: list[PlayerRow]) -> None:
    """The game's players as read now, in sign-up order (a read of them with its game:
    pbem.games.turn_in_play.game_at_hand)."""
    session.memo[("players", game_id)] = players


def seated(session: Work, game: GameView) -> dict[int, PlayerRow]:
    """seat -> the player who holds it now (a replaced player no longer does)."""
    return {p.seat: p for p in players_of(session, game) if p.seat is not None and p.active}


def active_players(session: Work, game: GameView) -> list[PlayerRow]:
    return [p for p in players_of(session, game) if p.active]


def entrants_of(session: Session, game: GameView) -> list[PlayerRow]:
    """One player per entrant, in sign-up order: a replacement (REPLACE) takes the place of
    the player it replaces, so the seat draw of the record still checks."""
    places: dict[int, PlayerRow] = {}
    for p in read_players(session, game):
        if p.entrant not in places or p.active:
            places[p.entrant] = p
    return list(places.values())


def seat_count(session: Work, game: GameView) -> int:
    return seats_of(players_of(session, game))


def seats_of(players: Iterable[PlayerView]) -> int:
    """How many seats ``players`` hold (replaced players too: the seat count of the game)."""
    return len({p.seat for p in players if p.seat is not None})


# --- a game's and its players' changes, each written at once by its own statement ---------
#
# A row is never changed in place: a change is written now, by an UPDATE of the columns
# that change, built once for each set of them (what the session holds is flushed first, as
# a flush would order it), and the changed row returned, for the caller to hand on. An
# object of the same row that the session holds (the referee's commands, the clock and the
# admin commands hold the game's) is given the values written (``_held_agree``), so an
# object and a row of one game never disagree.

@lru_cache(maxsize=64)
def _update_of(model: type[Game] | type[Player], names: tuple[str, ...]) -> Any:
    """UPDATE <model's table> SET <names> WHERE id = :row_id, built once for each set of
    names (the values bound as new_<name>)."""
    return (update(model).where(col(model.id) == bindparam("row_id"))
            .values({name: bindparam(f"new_{name}") for name in names}))


def _held_agree(session: Session, model: type[Game] | type[Player], row_id: int,
                changed: Mapping[str, Any]) -> None:
    """An object of that row in the session (its identity map) takes the values written,
    as loaded (set_committed_value: not a change to flush)."""
    held = session.identity_map.get(session.identity_key(model, row_id))
    if held is not None:
        for name, value in changed.items():
            set_committed_value(held, name, value)


def update_game(session: Session, game: GameView, **changes: Any) -> GameRow:
    """Write ``changes`` (columns of game) to the stored game now; the changed row."""
    row = game_row(game)
    changed = {name: value for name, value in changes.items() if getattr(row, name) != value}
    if changed:
        session.flush()
        session.connection().execute(
            _update_of(Game, tuple(sorted(changed))),
            {"row_id": row.id, **{f"new_{name}": value for name, value in changed.items()}})
        _held_agree(session, Game, row.id, changed)
    return replace(row, **changed)


def update_players(session: Work, game: GameView,
                   changes: Mapping[int | None, Mapping[str, Any]]) -> list[PlayerRow]:
    """Write ``changes`` (player id -> the columns changed, to their values) to the stored
    players of ``game`` now: the players that change the same columns by one statement
    (executemany); the memo's players become the changed rows. Returns the game's players
    as they now are."""
    players = players_of(session, game)
    by_id = {p.id: p for p in players}
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for player_id, columns in changes.items():
        assert player_id is not None
        changed = {name: value for name, value in columns.items()
                   if getattr(by_id[player_id], name) != value}
        if changed:
            by_id[player_id] = replace(by_id[player_id], **changed)
            groups.setdefault(tuple(sorted(changed)), []).append(
                {"row_id": player_id, **{f"new_{name}": v for name, v in changed.items()}})
    if groups:
        session.flush()
        for names, rows in groups.items():
            session.connection().execute(_update_of(Player, names), rows)
            for values in rows:
                _held_agree(session, Player, values["row_id"],
                            {name: values[f"new_{name}"] for name in names})
        players = [by_id[p.id] for p in players]
        remember_players(session, game.id, players)
    return list(players)


def update_player(session: Work, game: GameView, player: PlayerView,
                  **changes: Any) -> PlayerRow:
    """Write ``changes`` to one stored player now (update_players); the changed row."""
    assert player.id is not None
    players = update_players(session, game, {player.id: changes})
    return next(p for p in players if p.id == player.id)


def running_games_of(session: Session, email: str) -> list[tuple[Game, Player]]:
    """The running games an address plays in, with its player there."""
    rows = session.exec(select(Game, Player).where(Player.game_id == Game.id,
                                                   Player.email == email,
                                                   col(Player.active).is_(True),
                                                   Game.status == "running"))
    return list(rows.all())
