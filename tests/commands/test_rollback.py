"""ROLLBACK (pbem.commands.rollback) through the registry on a real SQLite file database."""

from __future__ import annotations

import re

import pytest

from pbem.runner.server import Server
from pbem.text.errors import Refusal
from testkit.desk import PLAYERS, game_turn, moves_of, order, started_game, subjects
from testkit.deskrun import referee


def started(server: Server) -> None:
    referee(server, "NEWGAME g1 SEED 3",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)), "START g1")


def test_rollback_undoes_the_last_resolved_turn(server: Server) -> None:
    started(server)
    referee(server, "PROCESS g1")
    assert game_turn(server) == 2 and len(moves_of(server, turn=1)) == 5
    out = referee(server, "ROLLBACK g1")[0]
    assert "turn 1" in out
    assert game_turn(server) == 1 and moves_of(server) == []
    assert any("turn 1" in s for s in subjects(server, PLAYERS[0])[-1:])   # sent again


@pytest.mark.parametrize(("setup", "said"), [
    ((), "ROLLBACK g1: game 'g1' is new: nothing to roll back"),
    (("START g1",), "ROLLBACK g1: game 'g1' has no resolved turn to roll back"),
])
def test_rollback_refusals(server: Server, setup: tuple[str, ...], said: str) -> None:
    referee(server, "NEWGAME g1 SEED 3",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)), *setup)
    with pytest.raises(Refusal) as refused:
        referee(server, "ROLLBACK g1")
    assert str(refused.value) == said


def test_rollback_says_its_counts_in_words(server: Server) -> None:
    """No "1 moves", no Python list of seats: "orders of player 1 pending again"."""
    started_game(server, "DEADLINE 48", name="g2")
    order(server, PLAYERS[0], "BID 1 one", name="g2")
    referee(server, "PROCESS g2")
    out = referee(server, "ROLLBACK g2")[0]
    assert re.search(r"orders of player \d pending again", out)
    assert "[" not in out and "5 moves undone" in out and "0 later orders void" in out
