"""Seats, names and states follow REPLACE and ADDRESS everywhere: RESEND names the players
who hold the seats now, LIST counts the seats (not every player a seat ever had), STATUS
of a running game no longer offers sign-up, a reply from a player's old address is told
that the address no longer plays (not that it replied to another player's mail), and a
wrong code for an address change says how to get a new one. Through the real handling
path (mail in, outbox out) on a real SQLite file."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from sqlmodel import Session, col, select

from pbem.games.records import find_game
from pbem.runner.server import Server
from pbem.store.models import OutboundMail, Watcher
from testkit.desk import (
    PLAYERS,
    REFEREE,
    T0,
    admin,
    by_seat,
    game_row,
    key_of,
    new_game,
    order,
    outbox,
    referee_mail,
    send,
    text_of,
)

ANN, BOB = PLAYERS[0], PLAYERS[1]
NEW = "ann.new@example.net"
FAY = "fay@example.org"


def latest_report_to(server: Server, address: str) -> OutboundMail:
    with Session(server.engine) as session:
        rows = session.exec(select(OutboundMail).where(OutboundMail.kind == "report")
                            .order_by(col(OutboundMail.id))).all()
        return [r for r in rows if address in r.rcpts_json][-1]


def texts_to(server: Server, address: str) -> list[str]:
    return [text_of(m) for m in outbox(server, address)]


def moved(server: Server, old: str, new: str) -> None:
    """old moves their games to new (ADDRESS, confirmed from new)."""
    order(server, old, f"ADDRESS {new}")
    code = re.search(r"CONFIRM ([0-9a-f]{10})", texts_to(server, new)[-1])
    assert code is not None
    assert "are played from" in send(server, new, f"CONFIRM {code[1]}")


# --- RESEND ---------------------------------------------------------------------------------

def test_resend_after_a_replace_names_the_new_player_in_every_report(server: Server) -> None:
    new_game(server)
    admin(server, "START g1")
    holders = by_seat(server)
    gone, stays = holders[2], holders[1]
    referee_mail(server, f"REPLACE g1 2 {FAY} Fay")
    before = len(outbox(server, stays.email))
    done = admin(server, "RESEND g1")
    assert "made anew" in done
    again = texts_to(server, stays.email)[before:]
    assert len(again) == 1
    assert "Fay" in again[0] and gone.name not in again[0]
    assert "sent this report again" in again[0]          # the note says why it is new
    # nothing changed since: the stored report goes again, as it was
    before = len(outbox(server, stays.email))
    assert "made anew" not in admin(server, "RESEND g1 1")
    assert texts_to(server, stays.email)[before:] == [texts_to(server, stays.email)[before - 1]]


def test_resend_after_an_address_change_goes_to_the_new_address(server: Server) -> None:
    new_game(server)
    admin(server, "START g1")
    seat = next(s for s, p in by_seat(server).items() if p.email == ANN)
    moved(server, ANN, NEW)
    before = len(outbox(server, ANN))
    admin(server, f"RESEND g1 {seat}")
    assert len(outbox(server, ANN)) == before
    assert latest_report_to(server, NEW).seat == seat


# --- LIST, STATUS ---------------------------------------------------------------------------

def test_the_players_list_counts_the_seats_after_a_replace(server: Server) -> None:
    new_game(server)
    admin(server, "START g1")
    referee_mail(server, f"REPLACE g1 2 {FAY} Fay")
    listing = send(server, "stranger@example.net", "LIST")
    assert "g1" in listing and "5 players" in listing and "6 players" not in listing


def test_status_of_a_running_open_game_no_longer_offers_sign_up(server: Server) -> None:
    new_game(server, "OPEN")
    assert "open for sign-up" in admin(server, "STATUS g1")
    admin(server, "START g1")
    assert "open for sign-up" not in admin(server, "STATUS g1")


# --- mail from an old address ---------------------------------------------------------------

def test_a_reply_from_the_old_address_is_told_it_plays_no_more(server: Server) -> None:
    new_game(server)
    admin(server, "START g1")
    report = latest_report_to(server, ANN)
    key = key_of(server, ANN)
    moved(server, ANN, NEW)
    answer = send(server, ANN, "BID 1 one", in_reply_to=report.message_id)
    assert f"{ANN} no longer plays in game g1" in answer
    assert "another player's mail" not in answer
    assert NEW not in answer                 # where it moved is not told to the old address
    fresh = send(server, ANN, f"GAME g1\nKEY {key}\nORDERS")
    assert f"{ANN} no longer plays in game g1" in fresh
    with Session(server.engine) as session:  # no failed attempt counted against it
        assert find_game(session, "g1").turn == 1
    assert not [t for t in texts_to(server, REFEREE) if "Repeated failed attempts" in t]


def test_a_reply_from_a_stranger_is_still_another_players_mail(server: Server) -> None:
    new_game(server)
    admin(server, "START g1")
    report = latest_report_to(server, ANN)
    answer = send(server, "eve@example.net", "BID 1 one", in_reply_to=report.message_id)
    assert "another player's mail" in answer


# --- CONFIRM with a wrong code for ADDRESS --------------------------------------------------

def test_a_wrong_address_code_says_how_to_get_a_new_one(server: Server) -> None:
    new_game(server)
    admin(server, "START g1")
    order(server, ANN, f"ADDRESS {NEW}")
    answer = send(server, NEW, "CONFIRM 0123456789")
    assert "does not match the move of a player's games to this address" in answer
    assert f"send ADDRESS {NEW} again from the old address" in answer
    assert "JOIN" not in answer


def test_a_wrong_join_code_still_says_join(server: Server) -> None:
    new_game(server, "OPEN", players=PLAYERS[:2])
    send(server, "joe@example.net", "JOIN g1 Joe")
    answer = send(server, "joe@example.net", "CONFIRM 0123456789")
    assert "send JOIN <game> again" in answer and "ADDRESS" not in answer


# --- what else an address holds moves with it -----------------------------------------------

def test_absences_and_watching_move_with_the_address(server: Server) -> None:
    new_game(server, "DEADLINE 48")
    new_game(server, "", "g2", players=[BOB])
    admin(server, "START g1")
    with Session(server.engine) as session:
        g2 = find_game(session, "g2")
        assert g2.id is not None
        session.add(Watcher(game_id=g2.id, email=ANN, created_at=T0))
        session.commit()
    assert "Noted" in order(server, ANN, "ABSENT 2026-12-10 2026-12-12")
    moved(server, ANN, NEW)
    # a deadline inside the absence moves past it, as it would have before the move
    referee_mail(server, "DEADLINE g1 2026-12-11T12:00")
    server.tick()
    assert game_row(server).deadline == datetime(2026, 12, 14, tzinfo=UTC)   # the day after
    with Session(server.engine) as session:
        assert session.exec(select(Watcher.email)).all() == [NEW]
