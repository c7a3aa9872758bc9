"""The player's side of the referee's desk: DEFAULT, HISTORY, ORDERS, missed turns."""

from __future__ import annotations

from datetime import timedelta

from sqlmodel import Session

from pbem.games.records import find_game
from pbem.runner.server import Server
from testkit.desk import (
    PLAYERS,
    REFEREE,
    Clock,
    admin,
    by_seat,
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
    seat_of,
    started_game,
    text_of,
)


def test_default_is_stored_and_confirmed(server: Server) -> None:
    started_game(server)
    assert "standing order is now CHALLENGE" in order(server, PLAYERS[0], "DEFAULT challenge")
    assert player(server, PLAYERS[0]).default_order == "CHALLENGE"
    assert "standing order is now NONE" in order(server, PLAYERS[0], "DEFAULT NONE")
    assert player(server, PLAYERS[0]).default_order is None
    text = order(server, PLAYERS[0], "DEFAULT sometimes")
    assert "DEFAULT takes one of CHALLENGE, RAISE, ROBOT or NONE" in text
    assert player(server, PLAYERS[0]).default_order is None


def test_default_needs_to_know_the_player(server: Server) -> None:
    started_game(server)
    deliver(server, mail("stranger@example.org", "DEFAULT RAISE"))
    assert "needs to know who you are" in last_text(server, "stranger@example.org")


def test_missed_turn_played_by_standing_order_and_by_robot(server: Server,
                                                           clock: Clock) -> None:
    started_game(server, "DEADLINE 48")
    server.referee.admin(["PROCESS", "g1"])          # turn 1: everyone opens (the robot)
    order(server, PLAYERS[0], "DEFAULT CHALLENGE")
    order(server, PLAYERS[1], "DEFAULT RAISE")
    order(server, PLAYERS[2], "DEFAULT ROBOT")
    sent = seat_of(server, PLAYERS[3])
    order(server, PLAYERS[3], raise_line(server, sent))
    clock.now += timedelta(hours=49)
    assert server.referee.resolve_due() == 1
    by = {m["seat"]: m for m in moves_of(server, turn=2)}
    s1, s2, s3, s5 = (seat_of(server, e) for e in (PLAYERS[0], PLAYERS[1], PLAYERS[2], PLAYERS[4]))
    assert by[s1]["by"] == "standing" and by[s1]["move"] == {"challenge": True}
    assert by[s2]["by"] == "standing" and "bid" in by[s2]["move"]
    assert by[s3]["by"] == "robot" and by[s5]["by"] == "robot"
    assert by[sent]["by"] == "player"
    report = last_text(server, PLAYERS[3])
    assert f"Player {s1} (Name1) sent no order in time; their standing order played CHALLENGE" \
        in report
    assert f"Player {s5} (Name5) sent no order in time; the robot played" in report
    assert f"Player {sent} (Name4) sent no order" not in report


def test_missed_turns_count_reset_and_referee_told_once(server: Server) -> None:
    started_game(server)
    absent = PLAYERS[0]
    comeback = PLAYERS[1]

    def turn(*senders: str) -> None:
        for email in senders:
            order(server, email, raise_line(server, seat_of(server, email)))
        if game_turn(server) == turn_before:
            server.referee.admin(["PROCESS", "g1"])

    for n in range(1, 3):
        turn_before = game_turn(server)
        turn(*PLAYERS[2:])
        assert player(server, absent).missed_turns == n
        assert player(server, comeback).missed_turns == n
    assert not outbox(server, REFEREE)
    turn_before = game_turn(server)
    turn(comeback, *PLAYERS[2:])                       # the comeback resets the count
    assert player(server, comeback).missed_turns == 0
    assert player(server, absent).missed_turns == 3
    asks = outbox(server, REFEREE)
    assert len(asks) == 1
    text = text_of(asks[0])
    assert "Name1" in text and absent in text and "3 turns in a row" in text
    assert f"REPLACE g1 {seat_of(server, absent)}" in text
    turn_before = game_turn(server)
    turn(comeback, *PLAYERS[2:])                        # a fourth miss: no second mail
    assert player(server, absent).missed_turns == 4
    assert len(outbox(server, REFEREE)) == 1
    assert player(server, PLAYERS[2]).missed_turns == 0


def test_missed_turn_limit_is_the_game_option(server: Server) -> None:
    started_game(server)
    with Session(server.engine) as session:
        game = find_game(session, "g1")
        game.options_json = '{"missed_limit": 1}'
        session.add(game)
        session.commit()
    server.referee.admin(["PROCESS", "g1"])
    assert len(outbox(server, REFEREE)) == 5           # every player missed once


def test_history_by_mail(server: Server) -> None:
    started_game(server)
    assert "No move has been played yet" in order(server, PLAYERS[0], "HISTORY")
    server.referee.admin(["PROCESS", "g1"])
    server.referee.admin(["PROCESS", "g1"])
    text = order(server, PLAYERS[0], "HISTORY")
    assert "the moves so far" in text
    assert text.count("turn 1, mini-game") == 5 and text.count("turn 2, mini-game") == 5
    # public information only: no one's hidden dice
    with Session(server.engine) as session:
        assert find_game(session, "g1").seed_hex not in text
    history = [r for r in outbox_rows(server, PLAYERS[0]) if r.kind == "listing"][-1]
    assert history.seat == seat_of(server, PLAYERS[0])   # threaded to the player's game


def test_history_before_the_start_is_refused(server: Server) -> None:
    server.referee.admin(["NEWGAME", "g1"])
    server.referee.admin(["ADD", "g1", PLAYERS[0], "Ann"])
    assert "has not started" in order(server, PLAYERS[0], "HISTORY")


def test_orders_by_mail_before_and_after_an_order(server: Server) -> None:
    started_game(server, "DEADLINE 24")
    text = order(server, PLAYERS[0], "ORDERS")
    assert "no order in yet" in text and "open mini-game" in text
    assert "standing order for a missed turn: NONE" in text and "Deadline" in text
    order(server, PLAYERS[0], "BID 1 two")
    text = order(server, PLAYERS[0], "ORDERS")
    assert "your order is BID 1 two" in text


def test_orders_as_a_reply_to_the_report(server: Server) -> None:
    started_game(server)
    report = next(m for m in outbox(server, PLAYERS[2]) if "report" in str(m["Subject"]))
    deliver(server, mail(PLAYERS[2], "ORDERS\nDEFAULT RAISE",
                         in_reply_to=str(report["Message-ID"])))
    texts = [text_of(m) for m in outbox(server, PLAYERS[2])[-2:]]
    assert any("no order in yet" in t for t in texts)
    assert any("standing order is now RAISE" in t for t in texts)
    assert by_seat(server)[seat_of(server, PLAYERS[2])].default_order == "RAISE"


def test_help_lists_the_desk_orders(server: Server) -> None:
    deliver(server, mail("stranger@example.org", "HELP"))
    text = last_text(server, "stranger@example.org")
    for usage in ("DEFAULT CHALLENGE|RAISE|ROBOT|NONE", "HISTORY", "ORDERS"):
        assert usage in text


def test_missed_turn_played_by_the_game_policy(server: Server, clock: Clock) -> None:
    started_game(server, "DEADLINE 48 MISSING challenge")
    server.referee.admin(["PROCESS", "g1"])
    order(server, PLAYERS[0], "DEFAULT ROBOT")          # a standing order comes first
    clock.now += timedelta(hours=49)
    server.referee.resolve_due()
    by = {m["seat"]: m for m in moves_of(server, turn=2)}
    assert by[seat_of(server, PLAYERS[0])]["by"] == "robot"
    policy = by[seat_of(server, PLAYERS[1])]
    assert policy["by"] == "policy" and policy["move"] == {"challenge": True}
    assert "the game's policy played CHALLENGE" in last_text(server, PLAYERS[1])


def test_a_turn_played_early_names_its_deadline_only_if_it_had_one(server: Server) -> None:
    """"(before its deadline)" only in a game with deadlines: without one, no deadline is
    promised in the report."""
    started_game(server, name="g1")
    admin(server, "PROCESS g1")
    without = last_text(server, PLAYERS[0])
    assert "had no order in when the referee played the turn;" in without
    assert "deadline" not in without.split("had no order in")[1].split(";")[0]
    assert "until the deadline" not in without and "until the turn is played" in without
    started_game(server, "DEADLINE 48", name="g2")
    admin(server, "PROCESS g2")
    assert ("had no order in when the referee played the turn (before its deadline);"
            in last_text(server, PLAYERS[0]))
