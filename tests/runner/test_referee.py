"""The referee service on a real SQLite file with the .eml outbox (no mail server needed)."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import inspect
from sqlmodel import Session, select

from pbem.config import Settings, SmtpSettings
from pbem.demo.robot_client import parse_mail
from pbem.games.records import find_game
from pbem.games.states import load_state
from pbem.games.turn_in_play import pending_orders
from pbem.rules.postal import minigame_of
from pbem.runner.server import Server
from pbem.store.models import InboundMail, OutboundMail
from pbem.store.work import Work
from testkit.referee import (  # noqa: F401  (clock, server: fixtures)
    PLAYERS,
    REFEREE_KEY,
    Clock,
    clock,
    deliver,
    key_and_seat,
    last_text,
    mail,
    outbox,
    server,
    started_game,
)


def test_migrations_build_the_models_schema(server: Server) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlmodel import SQLModel
    with server.engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), SQLModel.metadata)
    assert diff == []
    assert {"game", "player", "move", "pendingorder", "inbound_mail", "outbound_mail"} <= set(
        inspect(server.engine).get_table_names())


def test_start_sends_five_first_reports_with_commitment(server: Server) -> None:
    started_game(server)
    reports = [m for m in outbox(server) if "report" in str(m["Subject"])]
    assert len(reports) == 5
    assert {str(m["To"]) for m in reports} == set(PLAYERS)
    text = reports[0].get_body(("plain",)).get_content()
    assert "commitment" in text.lower()


def test_fresh_mail_with_game_and_key_is_confirmed_with_odds(server: Server) -> None:
    started_game(server)
    key, seat = key_and_seat(server, "p1@example.org")
    opener = minigame_of(seat, 1) == seat   # in turn 1 everyone opens their own mini-game
    assert opener
    deliver(server, mail("p1@example.org", f"Hi!\nGAME g1\nKEY {key}\nbid 1 three\n"))
    text = last_text(server, "p1@example.org")
    assert "1 three" in text and "%" in text
    assert "Hi!" in text   # the prose line is named as ignored
    with Work(server.engine) as session:
        assert seat in pending_orders(session, find_game(session, "g1"))


def test_later_order_replaces_earlier(server: Server) -> None:
    started_game(server)
    key, seat = key_and_seat(server, "p2@example.org")
    deliver(server, mail("p2@example.org", f"GAME g1\nKEY {key}\nBID 1 two\n", subject="a"))
    deliver(server, mail("p2@example.org", f"GAME g1\nKEY {key}\nBID 2 stars\n", subject="b"))
    assert "1 two" in last_text(server, "p2@example.org")
    with Work(server.engine) as session:
        orders = pending_orders(session, find_game(session, "g1"))
        assert '"quantity": 2' in orders[seat].move_json


@pytest.mark.parametrize("body,expected", [
    ("GAME g1\nKEY wrongkey\nBID 1 two\n", "does not belong"),
    ("BID 1 two\n", "which game"),
    ("GAME g1\nBID 1 two\n", "KEY"),
])
def test_unidentified_mail_is_refused_and_changes_nothing(server: Server, body: str,
                                                          expected: str) -> None:
    started_game(server)
    deliver(server, mail("p1@example.org", body))
    assert expected in last_text(server, "p1@example.org")
    with Work(server.engine) as session:
        assert pending_orders(session, find_game(session, "g1")) == {}


def test_a_valid_key_from_another_address_is_refused(server: Server) -> None:
    started_game(server)
    key, _ = key_and_seat(server, "p1@example.org")
    deliver(server, mail("p2@example.org", f"GAME g1\nKEY {key}\nBID 1 two\n"))
    assert "does not belong" in last_text(server, "p2@example.org")
    assert key not in last_text(server, "p2@example.org")


def test_bad_order_line_is_quoted_with_a_hint(server: Server) -> None:
    started_game(server)
    key, _ = key_and_seat(server, "p3@example.org")
    deliver(server, mail("p3@example.org", f"GAME g1\nKEY {key}\nBID 3 sevens\n"))
    text = last_text(server, "p3@example.org")
    assert "BID 3 sevens" in text and "line 3" in text and "1 to 5" in text
    assert "nothing" in text.lower()


def test_html_only_mail_is_read(server: Server) -> None:
    started_game(server)
    key, seat = key_and_seat(server, "p4@example.org")
    html = f"<html><body><p>GAME g1</p><p>KEY {key}</p><div>BID 2 fours</div></body></html>"
    deliver(server, mail("p4@example.org", "", html=html))
    with Work(server.engine) as session:
        assert seat in pending_orders(session, find_game(session, "g1"))


def test_automatic_mail_gets_no_answer(server: Server) -> None:
    started_game(server)
    before = len(outbox(server))
    deliver(server, mail("p1@example.org", "I am away", headers={"Auto-Submitted": "auto-replied"}))
    deliver(server, mail("mailer-daemon@example.org", "Undeliverable"))
    deliver(server, mail("bluff@example.org", "myself"))
    assert len(outbox(server)) == before


def test_same_mail_twice_is_stored_once(server: Server) -> None:
    raw = mail("p1@example.org", "HELP\n")
    assert server.referee.store_inbound(raw, source="smtp")
    assert not server.referee.store_inbound(raw, source="imap", imap_key="INBOX/1/1")
    with Session(server.engine) as session:
        assert len(session.exec(select(InboundMail)).all()) == 1


def test_help_from_a_stranger_is_answered(server: Server) -> None:
    deliver(server, mail("stranger@example.org", "help\n"))
    text = last_text(server, "stranger@example.org")
    assert "BID <quantity> <face>" in text and "CHALLENGE" in text


def test_referee_mail_needs_the_key_and_is_all_or_nothing(server: Server) -> None:
    deliver(server, mail("referee@example.org", "NEWGAME g2\n"))
    assert "KEY" in last_text(server, "referee@example.org")
    deliver(server, mail("referee@example.org",
                         f"KEY {REFEREE_KEY}\nNEWGAME g3\nADD nosuch x@example.org\n"))
    assert "nothing in this mail was done" in last_text(server, "referee@example.org")
    assert server.referee.admin(["LIST"]) == ["no games yet"]
    deliver(server, mail("referee@example.org", f"KEY {REFEREE_KEY}\nNEWGAME g4 DEADLINE 24\n"))
    assert "g4" in server.referee.admin(["LIST"])[0]


def test_all_orders_in_resolves_the_turn_at_once(server: Server) -> None:
    started_game(server)
    for email in PLAYERS:
        key, _ = key_and_seat(server, email)
        deliver(server, mail(email, f"GAME g1\nKEY {key}\nBID 1 one\n"))
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        assert game.turn == 2
        assert load_state(session, game).turn == 2
    turn2 = [m for m in outbox(server) if "turn 2 report" in str(m["Subject"])]
    assert len(turn2) == 5


def test_deadline_passes_and_the_robot_plays_missing_orders(server: Server, clock: Clock) -> None:
    started_game(server, hours="48")
    key, seat = key_and_seat(server, "p1@example.org")
    deliver(server, mail("p1@example.org", f"GAME g1\nKEY {key}\nBID 1 one\n"))
    assert server.referee.resolve_due() == 0
    clock.now += timedelta(hours=49)
    assert server.referee.resolve_due() == 1
    with Session(server.engine) as session:
        game = find_game(session, "g1")
        assert game.turn == 2
        assert game.deadline == clock.now + timedelta(hours=48)
    text = last_text(server, "p1@example.org")
    assert "robot" in text


def test_stale_order_is_refused(server: Server) -> None:
    started_game(server)
    key, _ = key_and_seat(server, "p1@example.org")
    server.referee.admin(["PROCESS", "g1"])
    deliver(server, mail("p1@example.org", f"GAME g1\nKEY {key}\nTURN 1\nCHALLENGE\n"))
    assert "resolved already" in last_text(server, "p1@example.org")


def test_admin_status_and_unknown_game(server: Server) -> None:
    from pbem.text.errors import Refusal
    started_game(server)
    status = server.referee.admin(["STATUS", "g1"])[0]
    assert "running" in status and "turn 1" in status
    with pytest.raises(Refusal, match="no game called"):
        server.referee.admin(["STATUS", "nope"])


def test_tick_writes_eml_files_to_the_outbox(server: Server, tmp_path: Path) -> None:
    started_game(server)
    report = server.tick()
    assert report.sent == 5    # the first reports (the welcomes of ADD waited: withdrawn)
    assert len(list((tmp_path / "outbox").glob("*.eml"))) == 5
    assert server.tick().sent == 0


@pytest.mark.mailstack
@pytest.mark.parametrize("stream", [True, False], ids=["while-handling", "at-the-end"])
def test_a_game_set_up_and_started_by_one_mail_sends_its_first_reports_not_the_welcomes(
        tmp_path: Path, clock: Clock, mailstack, stream: bool) -> None:
    """START withdraws the welcomes of ADD that have not left: the first report says it
    all. In one referee mail, with the mail sent while handling (its transaction's mail
    claimed only as it ends), they have not left either: withdrawn too. Before, the
    stream claimed them as they were queued, START kept them, and they went out."""
    users = [f"p{i}" for i in range(1, 6)]
    for user in users:
        mailstack.clear(user)
    settings = Settings(database=f"sqlite:///{tmp_path / 'pbem.db'}",
                        address=mailstack.address("bluff"),
                        referee=mailstack.address("referee"), referee_key=REFEREE_KEY,
                        smtp=SmtpSettings(mailstack.smtp_host, mailstack.smtp_port,
                                          starttls=False),
                        send_while_handling=stream)
    server = Server(settings, clock=clock)
    lines = [f"KEY {REFEREE_KEY}", "NEWGAME g1 SEED 3"]
    lines += [f"ADD g1 {mailstack.address(u)} Name{i}" for i, u in enumerate(users, start=1)]
    lines += ["START g1"]
    assert server.referee.store_inbound(mail(mailstack.address("referee"),
                                             "\n".join(lines) + "\n"), source="smtp")
    assert server.tick().sent == 5 + 1     # the first reports and the referee's answer
    server.close()
    with Session(server.engine) as session:
        kinds = sorted(r.kind for r in session.exec(select(OutboundMail)))
    assert kinds == sorted(["report"] * 5 + ["notice"])   # notice: the referee's answer
    for user in users:
        (only,) = mailstack.wait_for(user, 1)
        assert "turn 1 report" in str(parse_mail(only)["Subject"])


def test_a_tick_marks_its_parts_for_whoever_times_them(server: Server) -> None:
    started_game(server)
    for email in PLAYERS[:2]:
        key, seat = key_and_seat(server, email)
        assert server.referee.store_inbound(mail(email, f"GAME g1\nKEY {key}\nHELP\n"),
                                            source="smtp")
    marks: list[str] = []
    report = server.tick(marks.append)
    assert report.processed == 2
    assert marks == ["tick>", "fetch>", "fetch<", "mail>", "mail<", "mail>", "mail<",
                     "clock>", "clock<", "close>", "close<", "tick<"]   # close: the outbox's
    assert server.tick() is not None   # nobody timing: no marks asked for


def test_the_eml_outbox_writes_each_mails_answer_as_it_is_handled(server: Server,
                                                                  tmp_path: Path) -> None:
    """The .eml outbox writes the mail a handling transaction queued once it commits
    (pbem.outbox.Inline), before the next mail is handled, each file marked sent: the
    drain at the tick's end finds nothing left of it."""
    started_game(server)
    server.tick()   # the first reports
    folder = tmp_path / "outbox"
    for email in PLAYERS[:3]:
        key, _seat = key_and_seat(server, email)
        assert server.referee.store_inbound(mail(email, f"GAME g1\nKEY {key}\nHELP\n"),
                                            source="smtp")
    written: list[int] = []

    def mark(tag: str) -> None:
        if tag == "mail>":
            written.append(len(list(folder.glob("*.eml"))))

    report = server.tick(mark)
    assert report.processed == 3 and report.sent == 3
    assert written == [5, 6, 7]   # each HELP's answer written before the next is read
    with Session(server.engine) as session:
        rows = session.exec(select(OutboundMail)).all()
    assert {(r.status, r.claimed_by) for r in rows} == {("sent", None)}


def test_the_eml_outbox_marks_a_transactions_mail_with_the_next_commit(server: Server) -> None:
    """The files written after a handling transaction's commit are marked sent by the next
    transaction's claim, in the same statement, and the last ones by one commit at the
    tick's end: no transaction of its own a mail (before: a BEGIN, an UPDATE and a COMMIT
    for each file)."""
    from sqlalchemy import event
    started_game(server)
    server.tick()   # the first reports
    for email in PLAYERS[:4]:
        key, _seat = key_and_seat(server, email)
        assert server.referee.store_inbound(mail(email, f"GAME g1\nKEY {key}\nHELP\n"),
                                            source="smtp")
    statements: list[str] = []
    commits: list[int] = []
    event.listen(server.engine, "before_cursor_execute",
                 lambda conn, cursor, statement, *args: statements.append(statement))
    event.listen(server.engine, "commit", lambda conn: commits.append(1))
    report = server.tick()
    assert report.processed == 4 and report.sent == 4
    outbox_writes = [s for s in statements if s.startswith("UPDATE outbound_mail")]
    assert len(outbox_writes) == 4 + 1   # a claim (and marks) a mail, the last marks
    # the page's claim, the four mails, the last marks, the lease and the fetch's own
    assert len(commits) <= 1 + 4 + 1 + 3
    with Session(server.engine) as session:
        rows = session.exec(select(OutboundMail)).all()
    assert {(r.status, r.claimed_by) for r in rows} == {("sent", None)}
    assert all(r.attempts == 1 and r.sent_at is not None for r in rows)


def test_an_eml_outbox_that_cannot_be_written_leaves_the_mail_for_the_next_tick(
        server: Server, tmp_path: Path) -> None:
    """A hand-off that fails while handling (the outbox folder is a file) loses nothing
    and holds no claim: the mail waits, pending, and the next tick writes it."""
    started_game(server)
    folder = tmp_path / "outbox"
    folder.write_bytes(b"not a folder")
    key, _seat = key_and_seat(server, PLAYERS[0])
    assert server.referee.store_inbound(mail(PLAYERS[0], f"GAME g1\nKEY {key}\nHELP\n"),
                                        source="smtp")
    with pytest.raises(OSError):
        server.tick()   # the drain at its end fails as the hand-off did
    with Session(server.engine) as session:
        rows = session.exec(select(OutboundMail)).all()
    assert len(rows) == 5 + 1 and {(r.status, r.claimed_by) for r in rows} == {
        ("pending", None)}   # the first reports, the answer to HELP
    folder.unlink()
    assert server.tick().sent == 5 + 1
    assert len(list(folder.glob("*.eml"))) == 6
