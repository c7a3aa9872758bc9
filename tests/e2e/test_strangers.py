"""Issue 32, item 4: promise 5 as written. An unknown address gets at most
``stranger_answers_per_day`` answers a day, of every kind: errors, HELP, LIST, a JOIN's
code mail, refusals of wrong keys, the answer to a mail that failed on our side; mails
handled one a tick or many in one tick alike. An address with a pending sign-up hears
about its code (a mistyped CONFIRM) within a small bound of its own (3 a day).
"""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import Path

import pytest

from pbem.demo.robot_client import parse_mail
from pbem.runner.server import Server
from pbem.store import faults
from testkit.desk import Clock, admin, mail, make_server, outbox_rows, started_game, text_of
from testkit.storm import storm_mail

STRANGER = "someone@elsewhere.example"

# every kind of mail a stranger can send: errors, HELP, LIST, JOIN, WATCH, garbage, wrong
# keys (past five they are dropped, an unknown owner never told)
KINDS = ["HELP", "LIST", "JOIN open-1 Stranger", "WATCH g1", "what is this\nBDI 5 4",
         "\x00\x01garbage \u202e", "CONFIRM", *(f"GAME g1\nKEY wrong-{i}\nBID 1 two"
                                                for i in range(7)), "STATUS", "LEAVE open-1"]


def stranger_server(tmp_path: Path, clock: Clock, per_day: int) -> Server:
    server = make_server(tmp_path, clock, stranger_answers_per_day=per_day)
    started_game(server)
    admin(server, "NEWGAME open-1 OPEN")
    return server


def answers(server: Server, to: str = STRANGER) -> int:
    return len(outbox_rows(server, to))


def server_mail(server: Server) -> list[EmailMessage]:
    return [parse_mail(r.raw) for r in outbox_rows(server, STRANGER)]


@pytest.mark.parametrize("per_day", [1, 2])
@pytest.mark.parametrize("in_one_tick", [False, True], ids=["tick-each", "one-tick"])
def test_an_unknown_address_gets_at_most_its_answers_a_day_of_every_kind(
        tmp_path: Path, clock: Clock, per_day: int, in_one_tick: bool) -> None:
    server = stranger_server(tmp_path, clock, per_day)
    raws = [mail(STRANGER, body, subject=f"mail {i}") for i, body in enumerate(KINDS)]
    raws.append(storm_mail(b"References: <a\xc5b@x.test>\r\n", STRANGER))
    for raw in raws:
        assert server.referee.store_inbound(raw, source="smtp")
        if not in_one_tick:
            server.referee.process_pending()
            clock.advance(minutes=1)
    faults.arm_failures("inbound-read")      # and a mail that fails on our side
    try:
        assert server.referee.store_inbound(mail(STRANGER, "HELP", subject="failing"),
                                            source="smtp")
        server.referee.process_pending()
    finally:
        faults.arm_failures(None)
    assert answers(server) == per_day
    clock.advance(hours=22)                  # within the day: still no more
    server.referee.store_inbound(mail(STRANGER, "HELP", subject="later"), source="smtp")
    server.referee.process_pending()
    assert answers(server) == per_day
    clock.advance(hours=3)                   # a day after the first: one more
    server.referee.store_inbound(mail(STRANGER, "HELP", subject="next day"), source="smtp")
    server.referee.process_pending()
    assert answers(server) == per_day + 1


def test_a_pending_sign_up_hears_about_its_code(tmp_path: Path, clock: Clock) -> None:
    """A newcomer's mistyped code (CONFIRM d452674799, wrong) is answered politely, at most
    3 times a day, although the code mail used the stranger's one answer; the right code
    still works after."""
    server = stranger_server(tmp_path, clock, 1)
    server.referee.store_inbound(mail(STRANGER, "JOIN open-1 Newcomer"), source="smtp")
    server.referee.process_pending()
    code_mail = text_of(server_mail(server)[-1])
    code = code_mail.split("CONFIRM ")[1].split()[0]
    for i in range(5):
        server.referee.store_inbound(mail(STRANGER, f"CONFIRM d45267479{i}"), source="smtp")
        server.referee.process_pending()
    texts = [text_of(m) for m in server_mail(server)]
    assert len(texts) == 1 + 3
    assert all("code does not match" in t for t in texts[1:])
    # other mail from the address is still a stranger's: no answer
    server.referee.store_inbound(mail(STRANGER, "HELP"), source="smtp")
    server.referee.process_pending()
    assert answers(server) == 4
    server.referee.store_inbound(mail(STRANGER, f"CONFIRM {code}"), source="smtp")
    server.referee.process_pending()
    assert "open-1" in text_of(server_mail(server)[-1]) and answers(server) == 5


def test_a_sign_up_bound_ends_with_the_day(tmp_path: Path, clock: Clock) -> None:
    server = stranger_server(tmp_path, clock, 1)
    server.referee.store_inbound(mail(STRANGER, "JOIN open-1 Newcomer"), source="smtp")
    server.referee.process_pending()
    for i in range(4):
        server.referee.store_inbound(mail(STRANGER, f"CONFIRM 00000000{i}"), source="smtp")
    server.referee.process_pending()
    assert answers(server) == 1 + 3
    clock.advance(days=1, minutes=1)
    server.referee.store_inbound(mail(STRANGER, "CONFIRM 0000000009"), source="smtp")
    server.referee.process_pending()
    assert answers(server) == 5
