"""Deadlines in a notice are said in the zone of the player who reads it (TIMEZONE):
local time, zone, and UTC beside; a player without a zone reads UTC."""

from __future__ import annotations

from pathlib import Path

from pbem.runner.server import Server
from testkit.desk import PLAYERS, Clock, last_text, make_server, order, started_game


def test_a_reminder_says_the_deadline_in_the_readers_zone(tmp_path: Path,
                                                          clock: Clock) -> None:
    server: Server = make_server(tmp_path, clock)
    started_game(server, "DEADLINE 48")
    order(server, PLAYERS[0], "TIMEZONE Europe/Prague")
    clock.advance(hours=37)
    server.referee.resolve_due()
    prague, plain = last_text(server, PLAYERS[0]), last_text(server, PLAYERS[1])
    assert "reminder" in prague.lower() and "reminder" in plain.lower()
    assert "(Europe/Prague)" in prague and " UTC" in prague
    assert "Europe/Prague" not in plain and " UTC" in plain


def test_a_grace_notice_in_each_readers_zone(tmp_path: Path, clock: Clock) -> None:
    server: Server = make_server(tmp_path, clock)
    started_game(server, "DEADLINE 24 GRACE 6")
    order(server, PLAYERS[2], "TIMEZONE America/New_York")
    clock.advance(hours=24, minutes=1)
    server.referee.resolve_due()
    assert "(America/New_York)" in last_text(server, PLAYERS[2])
    assert "America/New_York" not in last_text(server, PLAYERS[3])
