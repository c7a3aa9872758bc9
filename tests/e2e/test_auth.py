"""Promise 4, who may act: a player's From is not enough, a key is no use from
another address, a forged reply token is refused, referee commands need the
referee's address and key; keys are compared in constant time, checked
against stored digests, never logged; failing mail past a limit is dropped
unanswered and its owner told once a day, but
nobody is ever locked out: the right key and a genuine reply always work."""

from __future__ import annotations

import hashlib
import logging
import random
import smtplib
from datetime import timedelta
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from pbem.demo.robot_client import client_order_lines
from pbem.games.records import find_game, players_of, update_players
from pbem.games.turn_in_play import pending_orders
from pbem.runner.server import Server
from pbem.store import security
from pbem.store.models import InboundMail, OutboundMail, Player, SenderEvent
from pbem.store.work import Work
from testkit import desk
from testkit.desk import make_server as desk_server
from testkit.e2e import REFEREE_KEY as STACK_REFEREE_KEY
from testkit.e2e import Table
from tests.runner.test_referee import (
    PLAYERS,
    REFEREE_KEY,
    Clock,
    key_and_seat,
    last_text,
    mail,
    outbox,
    started_game,
)

P1, P2 = PLAYERS[0], PLAYERS[1]


@pytest.fixture
def clock() -> Clock:
    return Clock()


def make_server(tmp_path: Path, clock: Clock, **extra) -> Server:
    return desk_server(tmp_path, clock, **{"referee_key": REFEREE_KEY, **extra})


@pytest.fixture
def server(tmp_path: Path, clock: Clock) -> Server:
    s = make_server(tmp_path, clock)
    started_game(s)
    return s


_n = 0


def send(server: Server, sender: str, body: str, **headers: str) -> str:
    """Deliver a mail (a fresh Message-ID each time) and return the outcome."""
    global _n
    _n += 1
    raw = mail(sender, body, subject=f"mail {_n}", headers=headers or None)
    assert server.referee.store_inbound(raw, source="smtp")
    server.referee.process_pending()
    with Session(server.engine) as session:
        row = session.exec(select(InboundMail).order_by(InboundMail.id.desc())).first()
        assert row is not None and row.status == "done", row
        return row.outcome or ""


def orders(server: Server) -> dict:
    with Work(server.engine) as session:
        return pending_orders(session, find_game(session, "g1"))


def report_id(server: Server, email: str) -> str:
    with Session(server.engine) as session:
        row = session.exec(select(OutboundMail).where(OutboundMail.kind == "report")
                           .where(OutboundMail.rcpts_json.contains(email))).first()
        assert row is not None
        return row.message_id


# --------------------------------------------------------------------------- who


def test_a_players_address_without_key_or_reply_token_is_refused(server: Server) -> None:
    assert send(server, P1, "BID 1 two\n").startswith("refused")
    assert "which game" in last_text(server, P1)
    assert send(server, P1, "GAME g1\nBID 1 two\n").startswith("refused")
    assert orders(server) == {}


def test_a_valid_key_from_another_address_is_refused(server: Server) -> None:
    key, _ = key_and_seat(server, P1)
    assert send(server, P2, f"GAME g1\nKEY {key}\nBID 1 two\n").startswith("refused")
    assert orders(server) == {}
    text = last_text(server, P2)
    assert "does not belong" in text and key not in text


def test_a_reply_token_works_only_for_its_player_and_only_when_genuine(server: Server) -> None:
    token = report_id(server, P1)
    assert send(server, P2, "BID 1 two\n", **{"In-Reply-To": token}).startswith("refused")
    assert "another player's mail" in last_text(server, P2)
    forged = token[:-12] + ("0" if token[-12] != "0" else "1") + token[-11:]
    for bad in (forged, "<pbem.report.0123456789abcdef0123456789abcdef@example.org>"):
        outcome = send(server, P1, "BID 1 two\n", **{"In-Reply-To": bad, "References": bad})
        assert outcome.startswith("refused"), outcome
    assert orders(server) == {}
    # the genuine token from the player's own address is all it takes
    assert send(server, P1, "BID 1 two\n", **{"In-Reply-To": token}).startswith("order accepted")
    assert list(orders(server)) == [key_and_seat(server, P1)[1]]


def test_referee_commands_need_the_referee_address_and_key(server: Server) -> None:
    referee = "referee@example.org"
    assert send(server, referee, "NEWGAME r1\n").startswith("refused")
    assert send(server, referee, "KEY not-the-key\nNEWGAME r2\n").startswith("refused")
    assert "KEY ****" in last_text(server, referee) and "not-the-key" not in last_text(
        server, referee)
    assert not send(server, P1, f"KEY {REFEREE_KEY}\nNEWGAME r3\n").startswith("referee")
    assert not send(server, "stranger@example.org",
                    f"KEY {REFEREE_KEY}\nNEWGAME r4\n").startswith("referee")
    listed = server.referee.admin(["LIST"])[0]
    assert all(name not in listed for name in ("r1", "r2", "r3", "r4"))
    assert send(server, referee, f"KEY {REFEREE_KEY}\nNEWGAME r5\n").startswith("referee")
    assert "r5" in server.referee.admin(["LIST"])[0]


def test_the_referee_key_may_be_configured_as_its_digest_only(tmp_path: Path,
                                                             clock: Clock) -> None:
    digest = hashlib.sha256(b"only-the-hash").hexdigest()
    server = make_server(tmp_path, clock, referee_key="", referee_key_sha256=digest)
    referee = "referee@example.org"
    assert send(server, referee, "KEY wrong\nNEWGAME h1\n").startswith("refused")
    assert send(server, referee, f"KEY {digest}\nNEWGAME h2\n").startswith("refused")
    assert send(server, referee, "KEY only-the-hash\nNEWGAME h3\n").startswith("referee")
    assert server.referee.admin(["LIST"])[0].startswith("h3")


# --------------------------------------------------------------------------- keys


def test_player_keys_are_checked_against_their_stored_digest(server: Server) -> None:
    key, seat = key_and_seat(server, P1)
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        player = next(p for p in players_of(session, game) if p.email == P1)
        assert player.key_hash == hashlib.sha256(key.encode()).hexdigest()
        # the check must not need the plain key
        update_players(session, game, {player.id: {"key": "shown-in-reports-only"}})
        session.commit()
    assert send(server, P1, f"GAME g1\nKEY {key}\nBID 1 two\n").startswith("order accepted")
    assert send(server, P1, "GAME g1\nKEY shown-in-reports-only\nBID 1 two\n").startswith(
        "refused")
    assert list(orders(server)) == [seat]


def test_keys_are_compared_in_constant_time(monkeypatch) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real = security.hmac.compare_digest

    def spy(a, b):
        compared.append((a, b))
        return real(a, b)
    monkeypatch.setattr(security.hmac, "compare_digest", spy)
    key = "0123456789abcdef"
    stored = security.hash_key(key)
    for given in (key, "0", "0123456789abcdeX", "x" * 500, ""):
        compared.clear()
        assert security.key_matches(given, key_hash=stored) == (given == key)
        # one comparison, of two digests of the same length, whatever was given
        assert [(len(a), len(b)) for a, b in compared] == [(64, 64)]
    players = [Player(game_id=1, entrant=i, email=f"x{i}@y", name="n", key=f"k{i}",
                      key_hash=security.hash_key(f"k{i}")) for i in range(5)]
    compared.clear()
    assert security.find_key_owner(players, "k0") is players[0]
    assert len(compared) == 5     # no early exit: every player is checked


def test_keys_are_never_logged(server: Server, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    key, _ = key_and_seat(server, P1)
    send(server, P1, f"GAME g1\nKEY {key}\nBID 1 two\n")
    send(server, P2, f"GAME g1\nKEY {key}\nBID 1 two\n")
    send(server, P2, "GAME g1\nKEY guessed-key-123\nBID 1 two\n")
    send(server, "referee@example.org", "KEY wrong-referee-key\nLIST\n")
    send(server, "referee@example.org", f"KEY {REFEREE_KEY}\nLIST\n")
    server.tick()
    for secret in (key, "guessed-key-123", "wrong-referee-key", REFEREE_KEY):
        assert secret not in caplog.text
    with Session(server.engine) as session:
        outcomes = " ".join(m.outcome or "" for m in session.exec(select(InboundMail)))
    assert key not in outcomes and REFEREE_KEY not in outcomes
    assert "guessed-key-123" not in outcomes and "wrong-referee-key" not in outcomes


# --------------------------------------------------------------------------- rate limits


def owner_notices(server: Server, to: str) -> list:
    return [m for m in outbox(server, to) if "wrong key in your name" in str(m["Subject"])]


def test_failing_mail_is_dropped_past_the_limit_and_never_locks_the_owner_out(
        server: Server, clock: Clock) -> None:
    key2, seat2 = key_and_seat(server, P2)
    for i in range(5):                       # the first few are answered: a typo is told
        assert send(server, P2, f"GAME g1\nKEY wrong-{i}\nBID 1 two\n").startswith("refused")
        clock.now += timedelta(minutes=1)
    assert len(outbox(server, P2)) - 1 == 5  # the welcome report, and five refusals
    assert owner_notices(server, P2) == []
    for i in range(20):                      # past the limit: dropped, the owner told once
        outcome = send(server, P2, f"GAME g1\nKEY again-{i}\nBID 1 two\n")
        assert outcome.startswith("refused") and "not answered (dropped: more than 5" in \
            outcome, outcome
    (told,) = owner_notices(server, P2)
    text = " ".join(told.get_body(("plain",)).get_content().split())
    assert "6 mails with a wrong key" in text and "nothing in them was applied" in text
    assert "again-" not in text and "wrong-" not in text
    assert len(outbox(server, P2)) - 1 == 5 + 1
    # the right key is acted on at once: nobody is locked out
    assert send(server, P2, f"GAME g1\nKEY {key2}\nBID 1 two\n").startswith("order accepted")
    assert list(orders(server)) == [seat2]
    # and so is a reply to a report, which needs no key
    token = report_id(server, P2)
    assert send(server, P2, "BID 2 two\n", **{"In-Reply-To": token}).startswith(
        "order accepted")
    # the referee hears nothing of it: the owner was told
    assert not [m for m in outbox(server, "referee@example.org")
                if "wrong key" in str(m["Subject"]).lower()]
    # once a day: more the next day tell the owner again, once
    clock.now += timedelta(days=1, minutes=1)
    for i in range(8):
        send(server, P2, f"GAME g1\nKEY later-{i}\nBID 1 two\n")
    assert len(owner_notices(server, P2)) == 2


def test_the_referee_key_is_never_locked_out(server: Server, clock: Clock) -> None:
    referee = "referee@example.org"
    for i in range(12):
        send(server, referee, f"KEY guess-{i}\nNEWGAME z{i}\n")
    assert send(server, referee, f"KEY {REFEREE_KEY}\nNEWGAME z99\n").startswith("referee")
    with Session(server.engine) as session:
        events = session.exec(select(SenderEvent).where(SenderEvent.kind == "auth-failed")).all()
        assert len(events) == 12 and {e.address for e in events} == {referee}
    assert server.referee.admin(["LIST"])[0].count("z") == 1
    assert len(owner_notices(server, referee)) == 1


# --------------------------------------------------------------------------- over real mail


def forge(stack: Any, sender: str, bodies: list[str]) -> None:
    """Mails in sender's name through the stack's SMTP front, one connection for all."""
    with smtplib.SMTP(stack.smtp_host, stack.smtp_port, timeout=30) as smtp:
        for body in bodies:
            msg = EmailMessage()
            msg["From"], msg["To"] = sender, stack.address("bluff")
            msg["Subject"], msg["Message-ID"] = "orders", make_msgid(domain="forger.test")
            msg.set_content(body)
            smtp.sendmail(sender, [stack.address("bluff")], msg.as_bytes(policy=policy.SMTP))


@pytest.mark.mailstack
def test_a_hundred_forged_wrong_keys_silence_neither_referee_nor_player(
        mailstack: Any, tmp_path: Path) -> None:
    """100 wrong-key mails forged from the referee and 100 from a player, over Dovecot and
    SMTP: the right-key mail of each is acted on after them; each owner hears of it once;
    the forged mails get no more than the limit's answers."""
    with Table(mailstack, tmp_path, ["p1", "p2"]) as table:
        table.referee_sends(*table.setup("g1", "NEWGAME g1 SEED 3 RULES classic DICE 2"))
        table.server.tick()
        table.first_reports_in()
        table.referee.new_mail()
        mover = next(u for u, (_, v) in table.latest.items() if v["to_move"] == v["you"])
        view = table.latest[mover][1]
        referee, player = mailstack.address("referee"), table.clients[mover].address
        forge(mailstack, referee, [f"KEY forged-{i:04d}\nNEWGAME x{i}" for i in range(100)])
        forge(mailstack, player, [f"GAME g1\nKEY forged-{i:04d}\nHISTORY"
                                  for i in range(100)])
        mailstack.wait_for("bluff", 200, timeout=60)
        table.server.tick()
        forge(mailstack, referee, [f"KEY {STACK_REFEREE_KEY}\nNEWGAME real-1"])
        order = client_order_lines(view, random.Random(1))
        forge(mailstack, player, ["\n".join(["GAME g1", f"KEY {view['key']}", *order])])
        mailstack.wait_for("bluff", 2, timeout=30)
        table.server.tick()

        assert "real-1" in table.server.referee.admin(["LIST"])[0]
        with Work(table.server.engine) as session:
            game = find_game(session, "g1")
            assert game.turn == 2 or list(pending_orders(session, game)) == [view["you"]]
        limit = table.server.settings.auth_failure_limit
        for client in (table.referee, table.clients[mover]):
            got = client.new_mail()
            told = [m for m in got if "wrong key in your name" in str(m["Subject"])]
            assert len(told) == 1, [str(m["Subject"]) for m in got]
            refused = [m for m in got if "nothing was applied" in str(m["Subject"])]
            assert len(refused) <= limit, len(refused)
        with Session(table.server.engine) as session:
            outcomes = [m.outcome or "" for m in session.exec(select(InboundMail))]
        assert sum("not answered (dropped" in o for o in outcomes) >= 2 * (100 - limit)


@pytest.mark.parametrize("language,told,last", [
    ("de", "Post mit falschem Schlüssel in deinem Namen", "keine weiteren Antworten"),
    ("cs", "Pošta se špatným klíčem vaším jménem", "žádné další odpovědi")])
def test_the_owner_is_told_in_their_language(tmp_path: Path, clock: Clock, language: str,
                                            told: str, last: str) -> None:
    server = make_server(tmp_path, clock)
    desk.started_game(server, f"LANGUAGE {language}")
    for i in range(6):
        send(server, P2, f"GAME g1\nKEY wrong-{i}\nBID 1 two\n")
    (notice,) = [m for m in outbox(server, P2) if told in str(m["Subject"])]
    assert "6" in notice.get_body(("plain",)).get_content()
    for _ in range(server.settings.answers_per_hour):
        send(server, P1, "HELP\n")
    answered = outbox(server, P1)[-1]
    note = " ".join(answered.get_body(("plain",)).get_content().split())
    assert last in note and f"{server.settings.answers_per_hour}" in note
    assert last in " ".join(answered.get_body(("html",)).get_content().split())
    assert "STATUS" in note                  # the answer itself is kept, the note added
