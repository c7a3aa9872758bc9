"""The robot level: a NEWGAME option, stored with the game, shown in STATUS and in the
reports, used by the stand-in."""

from __future__ import annotations

import pytest

from pbem.kinds import KINDS
from pbem.kinds.options import GameOptions, options_of, parse_options, robot_level, save_options
from pbem.rules.dice import DiceStream, seed_from_number
from pbem.runner.server import Server
from pbem.services.turns import missing_move, robot_rng
from pbem.store.models import Game
from pbem.text.errors import Refusal
from testkit.desk import PLAYERS, admin, game_row, outbox, referee_mail, started_game, text_of


def test_the_level_parses_and_defaults_to_strong() -> None:
    assert GameOptions().robot == "strong"
    assert parse_options("ROBOT easy RULES postal".split(), "g1").options.robot == "easy"
    assert parse_options("robot NORMAL".split(), "g1").options.robot == "normal"
    with pytest.raises(Refusal, match="not a level"):
        parse_options("ROBOT genius".split(), "g1")
    assert GameOptions.from_json(GameOptions(robot="easy").to_json()).robot == "easy"


def test_newgame_stores_the_level_and_status_shows_it(server: Server) -> None:
    assert "g1 created" in referee_mail(server, "NEWGAME g1 ROBOT normal")
    assert options_of(game_row(server)).robot == "normal"
    assert "robot normal" in admin(server, "STATUS g1")


def test_the_stand_in_plays_at_the_games_level() -> None:
    kind = KINDS["postal"]
    stream = DiceStream(seed_from_number(5))
    state = kind.start({}, stream, 5)
    game = Game(name="g1", seed_hex="ab" * 32, commitment="x", turn=1)
    moves = {}
    for level in ("easy", "normal", "strong"):
        options = GameOptions(robot=level)
        save_options(game, options)
        assert robot_level(game) == level
        seat = 2
        move, by = missing_move(game, kind, state, seat, None)
        assert by == "robot"
        assert move == kind.robot_move(state, seat, robot_rng(game, 1, seat), level=level)
        moves[level] = move
    save_options(game, GameOptions())
    assert missing_move(game, kind, state, 2, None)[0] == moves["strong"]


def test_the_referee_changes_the_level_at_the_desk(server: Server) -> None:
    referee_mail(server, "NEWGAME g1")
    assert options_of(game_row(server)).robot == "strong"
    assert "robot easy" in admin(server, "LEVEL g1 easy")
    assert options_of(game_row(server)).robot == "easy"
    assert "robot easy" in admin(server, "STATUS g1")
    with pytest.raises(Refusal, match="easy, normal or strong"):
        admin(server, "LEVEL g1 genius")


@pytest.mark.parametrize("rules", ["", "RULES classic english", "RULES cup"])
def test_every_report_says_the_level_the_robot_plays_at(server: Server, rules: str) -> None:
    started_game(server, f"DEADLINE 48 ROBOT normal {rules}".strip())
    report = outbox(server, PLAYERS[0])[-1]
    text = report.get_body(("plain",))
    assert text is not None   # a line of its own, the deadline on the next
    lines = [line.strip() for line in text.get_content().splitlines()]
    at = lines.index("Robot level for missing orders: normal.")
    assert lines[at + 1].startswith("Deadline: ")
    html = report.get_body(("html",))
    assert html is not None and "Robot level for missing orders: normal." in html.get_content()


def test_a_report_without_a_level_set_says_strong(server: Server) -> None:
    started_game(server, "DEADLINE 48")
    assert "Robot level for missing orders: strong." in text_of(outbox(server, PLAYERS[0])[-1])
