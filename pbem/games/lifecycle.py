"""A game's course from its making to its start: made, its players added and taken off
before the start, the seats drawn and the game started, and what a turn's beginning sets.

Works inside the caller's transaction.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, or_
from sqlmodel import Session, col, delete, select

from pbem.games.records import id_of, players_of, update_players
from pbem.games.states import stream_of
from pbem.kinds import DEFAULT_KIND, kind_named, kind_of
from pbem.kinds.options import GameOptions, options_of
from pbem.rules.dice import commitment
from pbem.rules.postal_record import draw_seats
from pbem.rules.ruleset import RuleSet
from pbem.store.models import (
    Game,
    Player,
    Signup,
)
from pbem.store.rows import (
    GameView,
    PlayerView,
)
from pbem.store.security import new_key
from pbem.store.work import Work
from pbem.text.deadlines import turn_deadline
from pbem.text.errors import Refusal
from pbem.text.wording import _


def create_game(session: Session, name: str, *, seed: bytes, now: datetime,
                turn_hours: float | None = None, rules: RuleSet | None = None,
                kind: str = DEFAULT_KIND, rules_json: Mapping[str, object] | None = None) -> Game:
    if session.exec(select(Game).where(Game.name == name)).first() is not None:
        raise Refusal(_("a game called '{name}' exists already", name=name))
    kind_named(kind)
    if rules_json is None:
        rules_json = (rules or RuleSet()).to_json()
    game = Game(name=name, kind=kind, rules_json=json.dumps(rules_json),
                seed_hex=seed.hex(), commitment=commitment(seed), turn_hours=turn_hours,
                created_at=now)
    session.add(game)
    session.flush()
    return game


def add_player(session: Work, game: GameView, email: str, name: str) -> Player:
    if game.status != "new":
        raise Refusal(_("game '{game}' has started: players can no longer be added",
                        game=game.name))
    players = players_of(session, game)
    email = email.lower()
    if any(p.email == email for p in players):
        raise Refusal(_("{email} plays in '{game}' already", email=email, game=game.name))
    most = kind_of(game).max_players
    if len(players) >= most:
        raise Refusal(_("game '{game}' has its {most} players already", game=game.name,
                        most=most))
    key, key_hash = new_key()
    # the time zone and language the address chose in another game (TIMEZONE, LANGUAGE)
    # hold here too
    chosen = session.exec(select(Player.timezone, Player.language).where(
        Player.email == email, or_(col(Player.timezone).is_not(None),
                                   col(Player.language).is_not(None)))
        .order_by(col(Player.id).desc())).first()
    zone, language = chosen if chosen is not None else (None, None)
    player = Player(game_id=id_of(game), entrant=len(players) + 1, email=email,
                    name=name or email.partition("@")[0], key=key, key_hash=key_hash,
                    timezone=zone, language=language)
    session.add(player)
    session.flush()
    session.forget(["players"])   # the memo's players are the game's without this one
    return player


_DELETE_PLAYER = delete(Player).where(col(Player.id) == bindparam("player_id"))


def remove_entrant(session: Work, game: GameView, player: PlayerView) -> None:
    """Take a player off a game before the start; the others keep their sign-up order."""
    if game.status != "new":
        raise Refusal(_("game '{game}' has started: use REPLACE to change a player",
                        game=game.name))
    session.exec(delete(Signup).where(col(Signup.game_id) == game.id,
                                      col(Signup.email) == player.email,
                                      col(Signup.status) != "confirmed"))
    session.connection().execute(_DELETE_PLAYER, {"player_id": player.id})
    session.forget(["players"])
    # entrants stay 1..n in sign-up order: the seat draw goes over them in that order
    update_players(session, game, {
        p.id: {"entrant": number}
        for number, p in enumerate(players_of(session, game), start=1)})


def turn_begins(game: GameView, now: datetime,
                options: GameOptions | None = None) -> dict[str, Any]:
    """A turn begins now: the game's columns that say so (its start remembered, grace
    cleared, its deadline: turn length, fixed hour; ``options``: the game's, if the caller
    has them)."""
    return {"turn_started_at": now, "grace_until": None,
            "deadline": turn_deadline(now, game.turn_hours,
                                      (options or options_of(game)).deadline_hour)}


def start_game(session: Work, game: Game, now: datetime) -> None:
    """Draw the seats and start the game (the game's object: the referee's START, a full
    game's sign-up; the players by statement)."""
    if game.status != "new":
        raise Refusal(_("game '{game}' has started already", game=game.name))
    players = players_of(session, game)
    kind = kind_of(game)
    if not kind.min_players <= len(players) <= kind.max_players:
        wanted = (str(kind.min_players) if kind.min_players == kind.max_players
                  else _("{lo} to {hi}", lo=kind.min_players, hi=kind.max_players))
        raise Refusal(_("a game of {kind} needs {wanted} players; '{game}' has {count}",
                        kind=kind.title, wanted=wanted, game=game.name, count=len(players)))
    draw = draw_seats(stream_of(game), len(players))
    update_players(session, game, {player.id: {"seat": seat}
                                   for player, seat in zip(players, draw, strict=False)})
    game.status = "running"
    game.turn = 1
    game.started_at = now
    for name, value in turn_begins(game, now).items():
        setattr(game, name, value)
    session.add(game)
