"""A game driven through time (a controllable clock, no sleeps): early resolution and WAIT,
reminders, grace, vacations, a server outage, and the referee's DEADLINE, EXTEND, PAUSE,
RESUME, WAIT, REMOVE and CANCEL, by mail and by `pbem admin`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, col, select

from pbem.games.records import find_game, players_of, seated
from pbem.runner.server import Server
from pbem.store.models import AuditEntry, Move, Player
from pbem.store.work import Work
from pbem.text.errors import Refusal
from testkit.desk import (
    PLAYERS,
    REFEREE,
    T0,
    Clock,
    admin,
    cli,
    game_row,
    last_text,
    make_server,
    new_game,
    order,
    outbox,
    referee_mail,
    send,
    started_game,
    subjects,
)


def tick(server: Server) -> int:
    return server.referee.resolve_due()


def moves_by(server: Server, turn: int = 1) -> dict[str, str]:
    """email -> how its move of the turn was made (player | robot | ...)."""
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        holders = seated(session, game)
        return {holders[m.seat].email: m.by for m in session.exec(
            select(Move).where(Move.game_id == game.id, Move.turn == turn))}


def audit(server: Server) -> list[str]:
    with Session(server.engine) as session:
        return [a.action for a in session.exec(select(AuditEntry).order_by(col(AuditEntry.id)))]


def count(server: Server, phrase: str, to: str | None = None) -> int:
    return sum(phrase in s for s in subjects(server, to))


# --- resolution: early, WAIT, at the deadline ----------------------------------------------

def test_a_turn_resolves_as_soon_as_all_orders_are_in(server: Server) -> None:
    started_game(server, "DEADLINE 48")
    for email in PLAYERS:
        order(server, email, "BID 1 one")
    assert game_row(server).turn == 2
    assert set(moves_by(server).values()) == {"player"}


def test_wait_resolves_only_at_the_deadline(server: Server, clock: Clock) -> None:
    started_game(server, "DEADLINE 48 WAIT")
    for email in PLAYERS:
        order(server, email, "BID 1 one")
    assert game_row(server).turn == 1 and tick(server) == 0
    clock.advance(hours=48)
    assert tick(server) == 1
    assert game_row(server).turn == 2
    assert set(moves_by(server).values()) == {"player"}      # their orders, not the robot's


def test_wait_by_mail_then_off_by_cli_resolves_a_full_turn(server: Server,
                                                           tmp_path: Path) -> None:
    started_game(server, "DEADLINE 48")
    assert "WAIT on" in referee_mail(server, "WAIT g1 on")
    assert count(server, "turns resolve at the deadline") == 5
    for email in PLAYERS:
        order(server, email, "BID 1 one")
    assert game_row(server).turn == 1
    done = cli(tmp_path, "WAIT", "g1", "off")
    assert done.returncode == 0, done.stderr
    assert "turn 1 resolved" in done.stdout
    assert game_row(server).turn == 2


# --- reminders -----------------------------------------------------------------------------

def test_a_reminder_goes_once_to_those_missing_an_order(server: Server, clock: Clock) -> None:
    started_game(server, "DEADLINE 48")          # default lead: 12 hours before
    order(server, PLAYERS[0], "BID 1 one")
    clock.advance(hours=35)
    tick(server)
    assert count(server, "reminder") == 0
    clock.advance(hours=2)
    tick(server)
    assert count(server, "reminder", PLAYERS[0]) == 0
    assert all(count(server, "reminder", p) == 1 for p in PLAYERS[1:])
    assert "is not in yet" in last_text(server, PLAYERS[1])
    clock.advance(hours=1)
    tick(server)
    assert count(server, "reminder") == 4        # once per turn
    # a reply to the reminder is read like a reply to the report
    reminder = outbox(server, PLAYERS[1])[-1]
    assert "are accepted" in send(server, PLAYERS[1], "BID 1 one",
                                    in_reply_to=str(reminder["Message-ID"]))


def test_remind_0_sends_none(server: Server, clock: Clock) -> None:
    started_game(server, "DEADLINE 48 REMIND 0")
    clock.advance(hours=47)
    tick(server)
    assert count(server, "reminder") == 0


# --- grace ---------------------------------------------------------------------------------

def test_grace_is_announced_takes_late_orders_then_plays_the_missing(server: Server,
                                                                     clock: Clock) -> None:
    started_game(server, "DEADLINE 24 GRACE 6")
    order(server, PLAYERS[0], "BID 1 one")
    clock.advance(hours=24, minutes=1)
    assert tick(server) == 0
    game = game_row(server)
    assert game.turn == 1 and game.grace_until == T0 + timedelta(hours=30)
    assert all(count(server, "grace until 2026-12-02 18:00 UTC", p) == 1 for p in PLAYERS)
    assert "still taken" in last_text(server, PLAYERS[1])
    assert "are accepted" in order(server, PLAYERS[1], "BID 1 one")   # late, in grace
    clock.advance(hours=3)
    assert tick(server) == 0 and count(server, "grace until") == 5      # announced once
    clock.advance(hours=3)
    assert tick(server) == 1
    by = moves_by(server)
    assert by[PLAYERS[0]] == by[PLAYERS[1]] == "player"
    assert {by[p] for p in PLAYERS[2:]} == {"robot"}
    game = game_row(server)
    assert game.turn == 2 and game.grace_until is None
    assert game.deadline == clock.now + timedelta(hours=24)
    assert "grace" in audit(server)


# --- vacations -----------------------------------------------------------------------------

def test_absent_moves_the_deadline_past_the_vacation(server: Server, clock: Clock) -> None:
    started_game(server, "DEADLINE 48")          # deadline 2026-12-03 12:00
    answer = order(server, PLAYERS[2], "ABSENT 2026-12-02 2026-12-04")
    assert "Noted" in answer and "14 days" in answer
    game = game_row(server)
    assert game.deadline == datetime(2026, 12, 6, 0, 0, tzinfo=UTC)   # a day after the return
    assert all(count(server, "deadline moved to 2026-12-06 00:00 UTC", p) == 1 for p in PLAYERS)
    assert "Name3 is away" in last_text(server, PLAYERS[0])
    with Work(server.engine) as session:
        used = next(p.absent_days_used for p in players_of(session, find_game(session, "g1"))
                    if p.email == PLAYERS[2])
    assert used == pytest.approx(2.5)
    tick(server)
    assert game_row(server).deadline == datetime(2026, 12, 6, tzinfo=UTC)   # moved once
    assert count(server, "deadline moved") == 5


def test_vacation_of_a_player_whose_order_is_in_moves_nothing(server: Server) -> None:
    started_game(server, "DEADLINE 48")
    order(server, PLAYERS[2], "BID 1 one")
    order(server, PLAYERS[2], "ABSENT 2026-12-02 2026-12-04")
    assert game_row(server).deadline == T0 + timedelta(hours=48)


def test_the_vacation_cap_stops_the_shift_and_the_referee_decides(server: Server,
                                                                  clock: Clock) -> None:
    started_game(server, "DEADLINE 48 VACATION 1")
    order(server, PLAYERS[2], "ABSENT 2026-12-02 2026-12-20")
    assert game_row(server).deadline == T0 + timedelta(hours=48 + 24)   # one day, no more
    assert "Vacation cap reached" in subjects(server, REFEREE)[-1]
    tick(server)
    tick(server)
    assert sum("Vacation cap" in s for s in subjects(server, REFEREE)) == 1
    clock.advance(hours=73)
    assert tick(server) == 1                      # the turn goes on without them


def test_absent_none_clears_and_absent_needs_the_player(server: Server) -> None:
    started_game(server, "DEADLINE 240")
    assert "needs to know who you are" in send(server, "x@example.org",
                                               "ABSENT 2026-12-02 2026-12-04")
    assert "cleared" in order(server, PLAYERS[0], "ABSENT NONE")
    assert "last day comes before" in order(server, PLAYERS[0], "ABSENT 2026-12-04 2026-12-02")
    order(server, PLAYERS[0], "ABSENT 2026-12-30 2027-01-02")
    order(server, PLAYERS[0], "ABSENT NONE")
    assert game_row(server).deadline == T0 + timedelta(hours=240)


# --- outage --------------------------------------------------------------------------------

def test_an_outage_moves_the_deadlines_that_passed_while_down(tmp_path: Path,
                                                              clock: Clock) -> None:
    server = make_server(tmp_path, clock, outage_minutes=15)
    started_game(server, "DEADLINE 24")
    assert tick(server) == 0                      # the server runs: its last tick is noted
    clock.advance(hours=30)                       # down for 30 hours, past the deadline
    assert tick(server) == 0
    game = game_row(server)
    assert game.turn == 1
    assert game.deadline == T0 + timedelta(hours=24 + 30)
    assert all(count(server, "deadline moved", p) == 1 for p in PLAYERS)
    assert "server was down" in last_text(server, PLAYERS[0])
    assert "after an outage" in subjects(server, REFEREE)[-1]
    for _ in range(6 * 24):                       # back up: ticks every 10 minutes
        clock.advance(minutes=10)
        if tick(server):
            break
    assert game_row(server).turn == 2
    assert clock.now == T0 + timedelta(hours=54)
    assert audit(server).count("outage") == 1


def test_short_gaps_are_no_outage(tmp_path: Path, clock: Clock) -> None:
    server = make_server(tmp_path, clock, outage_minutes=15)
    started_game(server, "DEADLINE 1")
    tick(server)
    for _ in range(6):
        clock.advance(minutes=10)
        tick(server)
    assert game_row(server).turn == 2 and "outage" not in audit(server)


# --- DEADLINE, EXTEND ----------------------------------------------------------------------

def test_deadline_by_mail_and_by_cli(server: Server, clock: Clock, tmp_path: Path) -> None:
    started_game(server, "DEADLINE 48")
    assert "set to 2026-12-01 18:00 UTC" in referee_mail(server, "DEADLINE g1 +6")
    assert game_row(server).deadline == T0 + timedelta(hours=6)
    assert all(count(server, "new deadline 2026-12-01 18:00 UTC", p) == 1 for p in PLAYERS)
    referee_mail(server, "DEADLINE g1 2026-12-04 09:30")
    assert game_row(server).deadline == datetime(2026, 12, 4, 9, 30, tzinfo=UTC)
    assert "has passed already" in referee_mail(server, "DEADLINE g1 2026-11-30T00:00Z")
    assert "is not a time" in referee_mail(server, "DEADLINE g1 soon")
    done = cli(tmp_path, "DEADLINE", "g1", "2099-01-02T03:00")
    assert done.returncode == 0, done.stderr
    assert game_row(server).deadline == datetime(2099, 1, 2, 3, 0, tzinfo=UTC)
    assert audit(server).count("deadline") == 3


def test_extend_by_mail_and_by_cli_also_in_grace(server: Server, clock: Clock,
                                                 tmp_path: Path) -> None:
    started_game(server, "DEADLINE 24 GRACE 2")
    assert "extended by 12 hours" in referee_mail(server, "EXTEND g1 12")
    assert game_row(server).deadline == T0 + timedelta(hours=36)
    assert count(server, "extended by 12 hours") == 5
    done = cli(tmp_path, "EXTEND", "g1", "1.5")
    assert done.returncode == 0, done.stderr
    assert game_row(server).deadline == T0 + timedelta(hours=37.5)
    clock.advance(hours=38)
    tick(server)                                  # grace begins
    referee_mail(server, "EXTEND g1 3")
    game = game_row(server)
    assert game.grace_until == T0 + timedelta(hours=37.5 + 2 + 3)
    assert "not a number of hours" in referee_mail(server, "EXTEND g1 -3")


def test_extend_without_a_deadline_is_refused(server: Server) -> None:
    started_game(server)
    assert "no deadline to extend" in referee_mail(server, "EXTEND g1 5")


# --- PAUSE, RESUME ---------------------------------------------------------------------------

def test_pause_stops_the_clock_and_resume_restarts_it(server: Server, clock: Clock) -> None:
    started_game(server, "DEADLINE 48")
    clock.advance(hours=10)
    assert "paused (38.0 hours left)" in referee_mail(server, "PAUSE g1")
    game = game_row(server)
    assert game.status == "paused" and game.paused_left_seconds == 38 * 3600
    assert all(count(server, "the game is paused", p) == 1 for p in PLAYERS)
    refused = order(server, PLAYERS[0], "BID 1 one")     # refused while paused, with the way on
    assert "> line 3: BID 1 one game g1 is paused: no orders are taken now" in refused
    assert "Fix: send your order again once the referee has resumed the game (RESUME g1)" \
        in refused
    clock.advance(hours=100)
    assert tick(server) == 0 and game_row(server).turn == 1
    assert "paused with 38.0 hours left" in admin(server, "STATUS g1")
    assert "resumed" in referee_mail(server, "RESUME g1")
    game = game_row(server)
    assert game.status == "running" and game.deadline == clock.now + timedelta(hours=38)
    assert game.paused_left_seconds is None
    assert all(count(server, "the game resumes", p) == 1 for p in PLAYERS)
    assert "are accepted" in order(server, PLAYERS[0], "BID 1 one")
    clock.advance(hours=38)
    assert tick(server) == 1
    assert audit(server)[-2:] == ["pause", "resume"] or {"pause", "resume"} <= set(audit(server))


def test_pause_and_resume_by_cli(server: Server, tmp_path: Path) -> None:
    started_game(server, "DEADLINE 48")
    done = cli(tmp_path, "PAUSE", "g1")
    assert done.returncode == 0, done.stderr
    assert game_row(server).status == "paused"
    # EXTEND of a paused game in this process (the `pbem admin EXTEND` process is in
    # test_extend_by_mail_and_by_cli)
    assert "extended by 2 hours" in admin(server, "EXTEND g1 2")
    left = game_row(server).paused_left_seconds
    done = cli(tmp_path, "RESUME", "g1")
    assert done.returncode == 0, done.stderr
    game = game_row(server)
    assert game.status == "running"
    # the CLI runs on the real clock: the deadline is its now + the time that was left
    real_now = datetime.now(UTC)
    assert left is not None and game.deadline is not None
    assert abs((game.deadline - real_now).total_seconds() - left) < 120
    # a refusal in this process (`pbem admin` prints one to stderr and exits 1:
    # test_newgame_by_cli_and_help_from_the_same_table)
    with pytest.raises(Refusal, match="cannot resume"):
        admin(server, "RESUME g1")


# --- REMOVE, CANCEL --------------------------------------------------------------------------

def test_remove_before_the_start_by_mail_and_by_cli(server: Server, tmp_path: Path) -> None:
    new_game(server)
    assert "removed from g1" in referee_mail(server, f"REMOVE g1 {PLAYERS[1]}")
    assert "you were removed" in subjects(server, PLAYERS[1])[-1]
    done = cli(tmp_path, "REMOVE", "g1", PLAYERS[3])
    assert done.returncode == 0, done.stderr
    with Work(server.engine) as session:
        left = players_of(session, find_game(session, "g1"))
    assert [(p.entrant, p.email) for p in left] == [(1, PLAYERS[0]), (2, PLAYERS[2]),
                                                    (3, PLAYERS[4])]
    admin(server, "ADD g1 new@example.org New")
    assert "does not play" in referee_mail(server, f"REMOVE g1 {PLAYERS[1]}")
    admin(server, "ADD g1 new2@example.org New2")
    admin(server, "START g1")
    assert "use REPLACE" in referee_mail(server, f"REMOVE g1 {PLAYERS[0]}")


def test_cancel_by_mail_and_by_cli(server: Server, clock: Clock, tmp_path: Path) -> None:
    started_game(server, "DEADLINE 24")
    assert "g1 cancelled; 5 players told" in referee_mail(server, "CANCEL g1")
    game = game_row(server)
    assert game.status == "cancelled" and game.deadline is None
    assert all(count(server, "the game is cancelled", p) == 1 for p in PLAYERS)
    assert "not running" in order(server, PLAYERS[0], "BID 1 one")
    clock.advance(hours=30)
    assert tick(server) == 0
    assert "cannot cancel" in referee_mail(server, "CANCEL g1")
    new_game(server, name="g2", players=["a@example.org"])
    done = cli(tmp_path, "CANCEL", "g2")
    assert done.returncode == 0 and "1 player told" in done.stdout
    assert "the game is cancelled" in subjects(server, "a@example.org")[-1]
    assert "cancel" in audit(server)


def test_a_referee_mail_is_all_or_nothing_with_desk_commands(server: Server) -> None:
    started_game(server, "DEADLINE 24")
    answer = referee_mail(server, "EXTEND g1 5", "PAUSE nosuch")
    assert "nothing in this mail was done" in answer
    assert game_row(server).deadline == T0 + timedelta(hours=24)


def test_players_of_other_games_hear_nothing(server: Server) -> None:
    started_game(server, "DEADLINE 24")
    new_game(server, name="g2", players=["solo@example.org"])
    referee_mail(server, "EXTEND g1 5")
    assert not any("extended" in s for s in subjects(server, "solo@example.org"))
    with Session(server.engine) as session:
        assert session.exec(select(Player).where(Player.email == "solo@example.org")).one()
