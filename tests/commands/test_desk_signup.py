"""Sign-up by mail (JOIN + CONFIRM, LEAVE, auto-start), observers (WATCH, UNWATCH) and table
talk (SAY): by mail, through the referee, on a controllable clock."""

from __future__ import annotations

import json
import re

import pytest
from sqlmodel import Session, select

from pbem.games.records import find_game, players_of
from pbem.runner.server import Server
from pbem.store.models import Player, Signup, TalkMessage, Watcher
from pbem.store.work import Work
from testkit.desk import (
    PLAYERS,
    REFEREE,
    Clock,
    admin,
    game_row,
    key_of,
    last_text,
    order,
    outbox,
    outbox_rows,
    send,
    started_game,
    subjects,
    text_of,
)

CODE = re.compile(r"CONFIRM ([0-9a-f]{10})")


def emails(server: Server, name: str = "g1") -> list[str]:
    with Work(server.engine) as session:
        return [p.email for p in players_of(session, find_game(session, name))]


def join(server: Server, email: str, line: str = "JOIN g1") -> str:
    """JOIN from email; returns the code mailed back."""
    answer = send(server, email, line)
    found = CODE.search(answer)
    assert found, answer
    return found.group(1)


def joined(server: Server, email: str, name: str = "") -> str:
    code = join(server, email, f"JOIN g1 {name}".strip())
    return send(server, email, f"CONFIRM {code}")


# --- JOIN + CONFIRM ------------------------------------------------------------------------

def test_join_takes_a_seat_only_when_the_address_confirms(server: Server) -> None:
    admin(server, "NEWGAME g1 SEED 3 OPEN")
    code = join(server, "ann@example.org", "JOIN g1 Ann")
    assert emails(server) == []
    with Session(server.engine) as session:
        signup = session.exec(select(Signup)).one()
        assert signup.status == "pending" and code not in json.dumps(signup.model_dump(
            mode="json"))                         # only the hash is kept
    welcome = send(server, "ann@example.org", f"CONFIRM {code.upper()}")
    assert "Welcome, Ann" in welcome and "1 of 5 seats" in welcome
    assert f"KEY {key_of(server, 'ann@example.org')}" in welcome
    assert emails(server) == ["ann@example.org"]
    assert "Ann joined" in subjects(server, REFEREE)[-1]
    assert "does not match" in send(server, "ann@example.org", f"CONFIRM {code}")   # used


def test_a_bare_confirm_in_a_reply_to_the_code_mail_works(server: Server) -> None:
    admin(server, "NEWGAME g1 OPEN")
    join(server, "bob@example.org")
    code_mail = outbox(server, "bob@example.org")[-1]
    answer = send(server, "bob@example.org", "CONFIRM",
                  in_reply_to=str(code_mail["Message-ID"]))
    assert "Welcome, bob" in answer
    assert "could not tell what you confirm" in send(server, "cyd@example.org", "CONFIRM")


def test_nobody_can_sign_up_another_address(server: Server) -> None:
    admin(server, "NEWGAME g1 OPEN")
    # mallory forges victim's address: the code goes to the victim, not to mallory
    join(server, "victim@example.org", "JOIN g1 Victim")
    assert not any("CONFIRM" in text_of(m) for m in outbox(server, "mallory@example.org"))
    code = CODE.search(last_text(server, "victim@example.org"))
    assert code is not None
    # even with the code, or with a reply to the victim's code mail, from another address
    assert "does not match" in send(server, "mallory@example.org", f"CONFIRM {code.group(1)}")
    code_mail = outbox(server, "victim@example.org")[-1]
    # (another address: a stranger gets one error answer a day)
    assert "could not tell" in send(server, "mallory2@example.org", "CONFIRM",
                                    in_reply_to=str(code_mail["Message-ID"]))
    # and a JOIN naming another address only names the sender's own sign-up
    join(server, "mallory@example.org", "JOIN g1 victim@example.org")
    assert emails(server) == []


def test_codes_expire_and_are_limited_per_day(server: Server, clock: Clock) -> None:
    admin(server, "NEWGAME g1 OPEN")
    code = join(server, "ann@example.org")
    clock.advance(days=8)
    assert "expired" in send(server, "ann@example.org", f"CONFIRM {code}")
    join(server, "ann@example.org")
    join(server, "ann@example.org")
    join(server, "ann@example.org")
    before = len(outbox_rows(server, "ann@example.org"))
    server.referee.store_inbound(b"From: ann@example.org\r\nTo: bluff@example.org\r\n"
                                 b"Subject: x\r\nMessage-ID: <flood@x>\r\n\r\nJOIN g1\r\n",
                                 source="smtp")
    server.referee.process_pending()
    assert len(outbox_rows(server, "ann@example.org")) == before      # no fourth code mail a day


@pytest.mark.parametrize("setup,message", [
    ("NEWGAME g1", "not open for sign-up"),
    ("NEWGAME g2 OPEN", "no game called"),
])
def test_join_refused(server: Server, setup: str, message: str) -> None:
    admin(server, setup)
    assert message in send(server, "ann@example.org", "JOIN g1")


def test_join_refused_when_full_started_or_already_in(server: Server) -> None:
    admin(server, "NEWGAME g1 SEED 3 OPEN")
    for i, p in enumerate(PLAYERS[:4], start=1):
        admin(server, f"ADD g1 {p} N{i}")
    assert "play in g1 already" in send(server, PLAYERS[0], "JOIN g1")
    code = join(server, "late@example.org")
    joined(server, "fifth@example.org")
    assert "full" in send(server, "late@example.org", f"CONFIRM {code}")
    assert "full" in send(server, "other@example.org", "JOIN g1")
    admin(server, "START g1")
    assert "not open" in send(server, "other2@example.org", "JOIN g1")


# --- LEAVE ---------------------------------------------------------------------------------

def test_leave_needs_the_key_and_takes_only_your_own_seat(server: Server) -> None:
    admin(server, "NEWGAME g1 OPEN")
    joined(server, "ann@example.org", "Ann")
    joined(server, "bob@example.org", "Bob")
    assert "needs to know who you are" in send(server, "bob@example.org", "LEAVE g1")
    ann_key = key_of(server, "ann@example.org")
    assert "does not belong" in send(server, "bob@example.org",
                                     f"GAME g1\nKEY {ann_key}\nLEAVE g1")
    assert emails(server) == ["ann@example.org", "bob@example.org"]
    answer = send(server, "bob@example.org",
                  f"GAME g1\nKEY {key_of(server, 'bob@example.org')}\nLEAVE g1")
    assert "no longer signed up" in answer
    assert emails(server) == ["ann@example.org"]
    assert "Bob left" in subjects(server, REFEREE)[-1]


def test_leave_after_the_start_is_refused(server: Server) -> None:
    started_game(server)
    assert "can no longer leave" in order(server, PLAYERS[0], "LEAVE g1")


# --- AUTOSTART -----------------------------------------------------------------------------

def test_the_last_confirmed_join_starts_an_autostart_game(server: Server) -> None:
    admin(server, "NEWGAME g1 SEED 3 DEADLINE 48 AUTOSTART")
    for i, email in enumerate(PLAYERS, start=1):
        assert game_row(server).status == "new"
        joined(server, email, f"Player{i}")
    game = game_row(server)
    assert game.status == "running" and game.turn == 1 and game.deadline is not None
    assert all(any("turn 1 report" in s for s in subjects(server, p)) for p in PLAYERS)
    assert "started by itself" in subjects(server, REFEREE)[-1]


def test_open_without_autostart_waits_for_start(server: Server) -> None:
    admin(server, "NEWGAME g1 SEED 3 OPEN")
    for email in PLAYERS:
        joined(server, email)
    assert game_row(server).status == "new"
    assert "started" in admin(server, "START g1")


# --- WATCH ---------------------------------------------------------------------------------

def test_a_watcher_confirms_and_gets_the_public_view_each_turn(server: Server) -> None:
    started_game(server, "DEADLINE 48")
    code = join(server, "eye@example.org", "WATCH g1")
    with Session(server.engine) as session:
        assert session.exec(select(Watcher)).all() == []
    assert "You watch game g1" in send(server, "eye@example.org", f"CONFIRM {code}")
    admin(server, "PROCESS g1")
    view = outbox(server, "eye@example.org")[-1]
    assert "turn 2 public view" in str(view["Subject"])
    report = next(p for p in view.iter_attachments() if p.get_filename() == "report.json")
    data = json.loads(report.get_content())
    assert data["you"] is None and data["key"] is None
    for mail in outbox_rows(server, "eye@example.org"):
        for p in PLAYERS:
            assert key_of(server, p).encode() not in mail.raw
    assert "already" in send(server, "eye@example.org", "WATCH g1")
    assert "you play in g1" in send(server, PLAYERS[0], "WATCH g1")
    assert "no longer watch" in send(server, "eye@example.org", "UNWATCH g1")
    admin(server, "PROCESS g1")
    assert "turn 3" not in " ".join(subjects(server, "eye@example.org"))
    assert "do not watch" in send(server, "eye@example.org", "UNWATCH g1")


# --- SAY -----------------------------------------------------------------------------------

def test_say_is_relayed_at_once_and_shown_in_the_next_report(server: Server) -> None:
    started_game(server, "DEADLINE 48")
    code = join(server, "eye@example.org", "WATCH g1")
    send(server, "eye@example.org", f"CONFIRM {code}")
    answer = order(server, PLAYERS[0], "SAY I hold   <b>three</b> stars.\nSAY Or do I?")
    assert "Relayed to 4 players, and in the next report" in answer
    for p in PLAYERS[1:]:
        relay = outbox(server, p)[-1]
        assert "table talk from Name1" in str(relay["Subject"])
        assert "I hold <b>three</b> stars. Or do I?" in text_of(relay)
        html = relay.get_body(("html",))
        assert html is not None and "<b>three</b>" not in html.get_content()
        assert "&lt;b&gt;three&lt;/b&gt;" in html.get_content()
    assert not any("table talk from" in s for s in subjects(server, PLAYERS[0]))
    with Session(server.engine) as session:
        talk = session.exec(select(TalkMessage)).one()
    assert talk.text == "I hold   <b>three</b> stars.\nOr do I?"      # spacing kept
    admin(server, "PROCESS g1")
    for p in [*PLAYERS, "eye@example.org"]:
        text = text_of(outbox(server, p)[-1])
        assert "TALK" in text and "I hold <b>three</b> stars." in text
    admin(server, "PROCESS g1")                  # the next report has no old talk
    assert "I hold" not in text_of(outbox(server, PLAYERS[1])[-1])


def test_say_is_cut_at_2000_characters_and_needs_a_player(server: Server) -> None:
    started_game(server)
    assert "needs to know who you are" in send(server, "x@example.org", "SAY hello")
    # (the mail reader cuts a line at 500 characters: several SAY lines make one message)
    order(server, PLAYERS[0], "\n".join(["SAY " + "x" * 450] * 5))
    with Session(server.engine) as session:
        assert len(session.exec(select(TalkMessage)).one().text) == 2000
    assert "cut at 2,000 characters" in last_text(server, PLAYERS[1])


def test_names_cannot_inject_headers_or_html(server: Server) -> None:
    admin(server, "NEWGAME g1 SEED 3")
    admin(server, f"ADD g1 {PLAYERS[0]} <script>alert(1)</script>")
    for i, p in enumerate(PLAYERS[1:], start=2):
        admin(server, f"ADD g1 {p} N{i}")
    admin(server, "START g1")
    order(server, PLAYERS[0], "SAY hi\r\nBcc: evil@example.org")
    relay = outbox(server, PLAYERS[1])[-1]
    assert relay["Bcc"] is None
    html = relay.get_body(("html",))
    assert html is not None and "<script>" not in html.get_content()
    with Session(server.engine) as session:
        assert session.exec(select(Player).where(Player.email == "evil@example.org")).first() \
            is None


def test_help_lists_the_desk_orders_from_the_same_table(server: Server) -> None:
    text = send(server, "newcomer@example.org", "HELP")
    for usage in ("JOIN <game> [<name>]", "CONFIRM [<code>]", "LEAVE <game>", "WATCH <game>",
                  "UNWATCH <game>", "SAY <text>", "ABSENT <from-date> <to-date>"):
        assert usage in text
