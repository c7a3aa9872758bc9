"""The core referee commands through the real `pbem admin` command line (a subprocess on
the test's database): NEWGAME, ADD, START, STATUS, LIST, ORDER, PROCESS, REPLACE, HELP.
The desk's other commands have their own CLI tests beside their mail tests."""

from __future__ import annotations

from pathlib import Path

from sqlmodel import Session, select

from pbem.store.models import Move, Player
from testkit.desk import PLAYERS, cli, outbox


def ok(tmp_path: Path, *words: str) -> str:
    run = cli(tmp_path, *words)
    assert run.returncode == 0, run.stderr
    return run.stdout


def test_a_game_run_from_the_shell(tmp_path: Path, server) -> None:  # type: ignore[no-untyped-def]
    assert "created" in ok(tmp_path, "NEWGAME", "g1", "SEED", "5", "DEADLINE", "48")
    assert "joins g1" in ok(tmp_path, "ADD", "g1", PLAYERS[0], "Name1")
    for i, email in enumerate(PLAYERS[1:], start=2):   # the rest in-process, to save time
        server.referee.admin(["ADD", "g1", email, f"Name{i}"])
    assert "started" in ok(tmp_path, "START", "g1")
    status = ok(tmp_path, "STATUS", "g1")
    assert "running" in status and "turn 1" in status
    assert "g1" in ok(tmp_path, "LIST")
    # an order on seat 1's behalf: in turn 1 every seat opens its own mini-game
    assert "1" in ok(tmp_path, "ORDER", "g1", "1", "BID", "1", "three")
    assert "turn 1 resolved" in ok(tmp_path, "PROCESS", "g1")
    assert "new@example.org" in ok(tmp_path, "REPLACE", "g1", "2", "new@example.org", "Newbie")
    helped = ok(tmp_path, "HELP")
    for command in ("NEWGAME", "ADD", "START", "ORDER", "REPLACE", "ROLLBACK", "PAUSE"):
        assert command in helped
    bad = cli(tmp_path, "START", "nosuchgame")
    assert bad.returncode == 1 and "nosuchgame" in bad.stderr
    with Session(server.engine) as session:
        moves = session.exec(select(Move).where(Move.turn == 1)).all()
        assert len(moves) == 5
        assert {m.seat: m.by for m in moves}[1] == "referee"
        seat2 = session.exec(select(Player).where(Player.seat == 2)).all()
        assert {(p.email, p.active) for p in seat2} >= {("new@example.org", True)}
    assert outbox(server, "new@example.org"), "the newcomer got the history and the report"
