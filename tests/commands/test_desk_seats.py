"""The referee's desk for turns and seats: PREVIEW, ORDER, REPLACE, RESEND, ROLLBACK,
each by referee mail and by the CLI (Referee.admin, and `pbem admin` as a process)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select

from pbem.games.records import find_game
from pbem.games.turn_in_play import pending_orders
from pbem.kinds import kind_of
from pbem.rules.postal_record import GameRecord, verify
from pbem.runner.server import Server
from pbem.services.export import export_json
from pbem.store.models import AuditEntry, OutboundMail
from pbem.store.work import Work
from pbem.text.errors import Refusal
from testkit.desk import (
    PLAYERS,
    Clock,
    by_seat,
    cli,
    deliver,
    game_turn,
    last_text,
    mail,
    moves_of,
    order,
    outbox,
    outbox_rows,
    player,
    raise_line,
    referee_mail,
    seat_of,
    started_game,
    state_of,
    text_of,
)

NEW = "newbie@example.org"


def pending(server: Server) -> dict[int, str]:
    with Work(server.engine) as session:
        return {s: o.by for s, o in pending_orders(session, find_game(session, "g1")).items()}


def status(server: Server) -> str:
    with Session(server.engine) as session:
        return find_game(session, "g1").status


def latest_report(server: Server, email: str) -> OutboundMail:
    return [r for r in outbox_rows(server, email) if r.kind == "report"][-1]


def test_help_lists_the_referee_desk_commands(server: Server) -> None:
    text = "\n".join(server.referee.admin(["HELP"]))
    for usage in ("PREVIEW <game>", "ORDER <game> <seat> <order>",
                  "REPLACE <game> <seat> <email> [<name>]", "RESEND <game> [<seat>]",
                  "ROLLBACK <game>"):
        assert usage in text


# --- PREVIEW ------------------------------------------------------------------------

def test_preview_by_mail_stores_nothing_and_foretells_the_turn(server: Server) -> None:
    started_game(server)
    sent = seat_of(server, PLAYERS[0])
    order(server, PLAYERS[0], "BID 1 two")
    before = {p: len(outbox(server, p)) for p in PLAYERS}
    text = referee_mail(server, "PREVIEW g1")
    assert "if the turn were resolved now" in text and "nothing is stored" in text
    assert f"player {sent} (Name1): BID 1 two (their order)" in text
    assert text.count("(no order: the robot)") == 4
    assert game_turn(server) == 1 and moves_of(server) == [] and pending(server) == {sent: "player"}
    assert {p: len(outbox(server, p)) for p in PLAYERS} == before   # to the referee only
    server.referee.admin(["PROCESS", "g1"])
    kind = kind_of(find_game(Session(server.engine), "g1"))   # the kind of any game row
    for m in moves_of(server, turn=1):                  # the turn did what the preview said
        assert f": {kind.describe_move(kind.move_from_json(m['move']))} (" in text


def test_preview_by_the_cli_process(server: Server, tmp_path: Path) -> None:
    started_game(server)
    done = cli(tmp_path, "PREVIEW", "g1")
    assert done.returncode == 0, done.stderr
    assert "turn 1: if the turn were resolved now" in done.stdout
    assert moves_of(server) == []


# --- ORDER --------------------------------------------------------------------------

def test_order_on_behalf_by_mail_is_checked_recorded_and_told(server: Server) -> None:
    started_game(server)
    seat = seat_of(server, PLAYERS[1])
    bad = referee_mail(server, f"ORDER g1 {seat} BID 3 sevens")
    assert "sevens" in bad and "nothing in this mail was done" in bad
    illegal = referee_mail(server, f"ORDER g1 {seat} CHALLENGE")   # an opener cannot challenge
    assert "nothing in this mail was done" in illegal
    assert pending(server) == {}
    text = referee_mail(server, f"ORDER g1 {seat} BID 1 five")
    assert f"order for player {seat}: BID 1 five" in text
    assert pending(server) == {seat: "referee"}
    told = last_text(server, PLAYERS[1])
    assert "The referee entered this order for you" in told and "BID 1 five" in told
    other = last_text(server, PLAYERS[0])
    assert f"entered the order of player {seat} (Name2)" in other and "five" not in other
    assert "entered by the referee on your behalf" in order(server, PLAYERS[1], "ORDERS")
    order(server, PLAYERS[1], "BID 1 four")              # the player's own order wins
    assert pending(server) == {seat: "player"}


def test_order_by_cli_completes_the_turn(server: Server) -> None:
    started_game(server)
    for email in PLAYERS[1:]:
        order(server, email, raise_line(server, seat_of(server, email)))
    seat = seat_of(server, PLAYERS[0])
    out = server.referee.admin(["ORDER", "g1", str(seat), "BID", "1", "three"])[0]
    assert "turn 1 is resolved" in out
    assert {m["seat"]: m["by"] for m in moves_of(server, turn=1)}[seat] == "referee"
    with pytest.raises(Refusal, match="no player in seat 9"):
        server.referee.admin(["ORDER", "g1", "9", "CHALLENGE"])


def test_order_with_expose_lines_joined_by_semicolons(server: Server) -> None:
    started_game(server)
    state = state_of(server)
    seat = 1                                     # opens mini-game 1, with five dice
    face = state.minigame(1).cup(seat).hidden[0].face
    words = f"BID 1 one; EXPOSE {'*' if face == 6 else face}".split()
    out = server.referee.admin(["ORDER", "g1", str(seat), *words])[0]
    assert "EXPOSE" in out and pending(server) == {seat: "referee"}


# --- REPLACE ------------------------------------------------------------------------

def test_replace_by_mail_new_key_works_old_does_not(server: Server) -> None:
    started_game(server)
    server.referee.admin(["PROCESS", "g1"])
    old = player(server, PLAYERS[2])
    seat = seat_of(server, PLAYERS[2])
    old_report = latest_report(server, PLAYERS[2])
    text = referee_mail(server, f"REPLACE g1 {seat} {NEW} Newbie")
    assert f"Newbie <{NEW}> replaces Name3 <{PLAYERS[2]}> as player {seat}" in text
    new = player(server, NEW)
    assert new.seat == seat and new.active and new.key != old.key
    assert not player(server, PLAYERS[2]).active
    welcome, report = outbox(server, NEW)
    assert "you take over player" in str(welcome["Subject"])
    assert text_of(welcome).count("turn 1, mini-game") == 5          # the full history
    assert "turn 2 report" in str(report["Subject"]) and new.key in text_of(report)
    assert "You take over seat" in text_of(report)
    assert "you have been replaced" in str(outbox(server, PLAYERS[2])[-1]["Subject"])
    for email in (PLAYERS[0], PLAYERS[1], PLAYERS[3], PLAYERS[4]):
        assert f"Newbie plays as player {seat} in place of Name3" in last_text(server, email)
    # the old key and the old report no longer work; the new ones do
    # the old key from the old address: told they were replaced (issue 11 item 7)
    assert "you were replaced in game g1" in order(server, PLAYERS[2], f"KEY {old.key}",
                                                   "ORDERS")
    deliver(server, mail(PLAYERS[2], raise_line(server, seat),
                         in_reply_to=old_report.message_id))
    assert "you were replaced in game g1" in last_text(server, PLAYERS[2])
    assert "accepted" in order(server, NEW, raise_line(server, seat))
    deliver(server, mail(NEW, "ORDERS", in_reply_to=latest_report(server, NEW).message_id))
    assert "your order is" in last_text(server, NEW)
    assert pending(server) == {seat: "player"}
    with pytest.raises(Refusal, match="plays in 'g1' already"):
        server.referee.admin(["REPLACE", "g1", "1", NEW])


def test_replace_by_cli_then_the_game_still_verifies(server: Server) -> None:
    started_game(server)
    seat = seat_of(server, PLAYERS[4])
    out = server.referee.admin(["REPLACE", "g1", str(seat), NEW])[0]
    assert "replaces Name5" in out
    assert by_seat(server)[seat].email == NEW
    while status(server) == "running":
        server.referee.admin(["PROCESS", "g1"])
    with Session(server.engine) as session:
        record = GameRecord.from_json(export_json(session, find_game(session, "g1")))
    assert len(record.entrants) == 5 and "newbie" in record.entrants
    assert verify(record) == []


# --- RESEND -------------------------------------------------------------------------

def test_resend_one_seat_by_mail(server: Server) -> None:
    started_game(server)
    seat = seat_of(server, PLAYERS[0])
    first = latest_report(server, PLAYERS[0])
    assert f"latest report sent again to player {seat}" in referee_mail(server, f"RESEND g1 {seat}")
    again = latest_report(server, PLAYERS[0])
    assert again.id != first.id and again.message_id != first.message_id
    assert again.seat == seat and again.turn == first.turn
    assert text_of(outbox(server, PLAYERS[0])[-1]) == text_of(
        next(m for m in outbox(server, PLAYERS[0]) if str(m["Message-ID"]) == first.message_id))
    assert len([r for r in outbox_rows(server, PLAYERS[1]) if r.kind == "report"]) == 1


def test_resend_all_by_the_cli_process(server: Server, tmp_path: Path) -> None:
    started_game(server)
    done = cli(tmp_path, "RESEND", "g1")
    assert done.returncode == 0, done.stderr
    assert "players 1, 2, 3, 4, 5" in done.stdout
    for email in PLAYERS:
        assert len([r for r in outbox_rows(server, email) if r.kind == "report"]) == 2


# --- ROLLBACK -----------------------------------------------------------------------

def test_rollback_by_mail_restores_the_turn_and_replays_the_same_dice(server: Server,
                                                                      clock: Clock) -> None:
    started_game(server, "DEADLINE 48")
    before = state_of(server)
    face = before.minigame(1).cup(1).hidden[0].face
    holders = by_seat(server)
    orders = {1: ["BID 1 one", f"EXPOSE {'*' if face == 6 else face}"],
              2: ["BID 1 two"], 3: ["BID 1 three"], 4: ["BID 2 two"]}  # seat 5 misses
    for seat, lines in orders.items():
        order(server, holders[seat].email, *lines)
    server.referee.admin(["PROCESS", "g1"])
    first = moves_of(server, turn=1)
    after = state_of(server)
    assert first[0]["rerolled"] and first[4]["by"] == "robot"
    order(server, holders[2].email, raise_line(server, 2))     # an order for turn 2
    clock.now += timedelta(hours=30)
    text = referee_mail(server, "ROLLBACK g1")
    with Session(server.engine) as session:                   # a fresh deadline
        deadline = find_game(session, "g1").deadline
        assert deadline is not None
        assert deadline.replace(tzinfo=None) == (clock.now + timedelta(hours=48)).replace(
            tzinfo=None)
    assert "turn 1 rolled back" in text and "1 later order void" in text
    assert state_of(server) == before and game_turn(server) == 1 and moves_of(server) == []
    assert pending(server) == {1: "player", 2: "player", 3: "player", 4: "player"}
    for email in PLAYERS:
        last = outbox(server, email)[-1]
        assert "turn 1 report" in str(last["Subject"])
        assert "The referee rolled back turn 1" in text_of(last)
    with Session(server.engine) as session:
        entry = session.exec(select(AuditEntry).where(AuditEntry.action == "rollback")).one()
        detail = json.loads(entry.detail)
        assert detail["turn"] == 1 and len(detail["moves"]) == 5 and detail["void_orders"]
    server.referee.admin(["PROCESS", "g1"])          # the same orders: the same dice
    assert moves_of(server, turn=1) == first
    assert state_of(server) == after


def test_rollback_by_cli_reopens_a_finished_game(server: Server, tmp_path: Path) -> None:
    started_game(server)
    while status(server) == "running":
        server.referee.admin(["PROCESS", "g1"])
    last_turn = max(m["turn"] for m in moves_of(server))
    final = state_of(server)
    done = cli(tmp_path, "ROLLBACK", "g1")
    assert done.returncode == 0, done.stderr
    assert f"turn {last_turn} rolled back" in done.stdout
    with Session(server.engine) as session:
        game = find_game(session, "g1")
        assert game.status == "running" and game.turn == last_turn and game.ended_at is None
        # the final reports had not left yet: they never will
        assert {r.status for r in session.exec(select(OutboundMail).where(
            OutboundMail.kind == "report", OutboundMail.turn == last_turn + 1))} == {"cancelled"}
    server.referee.admin(["PROCESS", "g1"])
    assert state_of(server) == final


def test_rollback_warns_when_the_seed_was_out(server: Server) -> None:
    started_game(server)
    while status(server) == "running":
        server.referee.admin(["PROCESS", "g1"])
    server.tick()                                    # the final reports leave
    assert "players can now work out every die" in server.referee.admin(["ROLLBACK", "g1"])[0]


def test_rollback_with_nothing_to_undo(server: Server) -> None:
    started_game(server)
    with pytest.raises(Refusal, match="no resolved turn"):
        server.referee.admin(["ROLLBACK", "g1"])


# --- every kind ---------------------------------------------------------------------

@pytest.mark.parametrize("kind_name", ["classic", "cup"])
def test_the_desk_works_for_other_kinds(server: Server, kind_name: str) -> None:
    from pbem.games.lifecycle import create_game
    from pbem.kinds import kind_named
    from pbem.rules.dice import seed_from_number
    kind = kind_named(kind_name)
    with Session(server.engine) as session:
        create_game(session, "g1", seed=seed_from_number(7), now=server.clock(), kind=kind_name,
                    rules_json=kind.parse_options([]))
        session.commit()
    for email in PLAYERS[:3]:
        server.referee.admin(["ADD", "g1", email])
    server.referee.admin(["START", "g1"])
    for _ in range(2):
        server.referee.admin(["PROCESS", "g1"])
    preview = server.referee.admin(["PREVIEW", "g1"])[0]
    assert "turn 3: if the turn were resolved now" in preview and moves_of(server, turn=3) == []
    before = state_of(server)
    due = sorted(kind.due(before))
    if kind_name == "classic":      # one seat is due, and its orders read like the postal ones
        out = server.referee.admin(["ORDER", "g1", str(due[0]),
                                    *raise_line(server, due[0]).split()])[0]
        assert f"order for player {due[0]}" in out and "turn 3 is resolved" in out
    else:
        server.referee.admin(["PROCESS", "g1"])
    played, after = moves_of(server, turn=3), state_of(server)
    assert "turn 3 rolled back" in server.referee.admin(["ROLLBACK", "g1"])[0]
    assert state_of(server) == before and game_turn(server) == 3
    assert pending(server) == ({due[0]: "referee"} if kind_name == "classic" else {})
    server.referee.admin(["PROCESS", "g1"])
    assert moves_of(server, turn=3) == played and state_of(server) == after
    seat = seat_of(server, PLAYERS[0])
    server.referee.admin(["REPLACE", "g1", str(seat), NEW, "Newbie"])
    assert "moves so far" in order(server, NEW, "HISTORY")
    assert "you were replaced in game g1" in order(server, PLAYERS[0], "ORDERS")
    assert "players 1, 2, 3" in server.referee.admin(["RESEND", "g1"])[0]
