"""Promise 4, who may act: a player's From is not enough, a key is no use from
another address, a forged reply token is refused, referee commands need the
referee's address and key; keys are compared in constant time, checked
against stored digests, never logged; failed attempts are rate-limited and
the referee is told of repeated ones."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from pathlib import Path

import pytest
from sqlmodel import Session, select

from pbem import security
from pbem.games import find_game, pending_orders, players_of
from pbem.models import InboundMail, OutboundMail, Player, SenderEvent
from pbem.server import Server
from testkit.desk import make_server as desk_server
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
    with Session(server.engine) as session:
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
    with Session(server.engine) as session:
        player = next(p for p in players_of(session, find_game(session, "g1")) if p.email == P1)
        assert player.key_hash == hashlib.sha256(key.encode()).hexdigest()
        player.key = "shown-in-reports-only"   # the check must not need the plain key
        session.add(player)
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


def test_failed_attempts_are_rate_limited_and_the_referee_told_once(server: Server,
                                                                    clock: Clock) -> None:
    key2, seat2 = key_and_seat(server, P2)
    for i in range(5):
        assert send(server, P2, f"GAME g1\nKEY wrong-{i}\nBID 1 two\n").startswith("refused")
        clock.now += timedelta(minutes=1)
    told = [m for m in outbox(server, "referee@example.org")
            if "Repeated failed attempts" in str(m["Subject"])]
    assert len(told) == 1
    text = " ".join(told[0].get_body(("plain",)).get_content().split())
    assert P2 in text and "wrong-" not in text
    # locked out: even the right key is not looked at now
    outcome = send(server, P2, f"GAME g1\nKEY {key2}\nBID 1 two\n")
    assert outcome.startswith(f"refused: {P2} is locked out until")
    assert orders(server) == {}
    # the address hears it once (issue 11 item 6): until when, and why
    told_p2 = " ".join(outbox(server, P2)[-1].get_body(("plain",)).get_content().split())
    assert "is locked out until" in told_p2 and "failed 5 checks within 60 minutes" in told_p2
    answered = len(outbox(server, P2))
    for i in range(3):                       # more tries: no more answers, no more alerts
        send(server, P2, f"GAME g1\nKEY again-{i}\nBID 1 two\n")
    assert len(outbox(server, P2)) == answered
    assert len([m for m in outbox(server, "referee@example.org")
                if "Repeated failed attempts" in str(m["Subject"])]) == 1
    # a reply to a report needs no key, so it still works
    token = report_id(server, P2)
    assert send(server, P2, "BID 1 two\n", **{"In-Reply-To": token}).startswith("order accepted")
    # the lock-out ends with the window
    clock.now += timedelta(minutes=61)
    assert send(server, P2, f"GAME g1\nKEY {key2}\nBID 2 two\n").startswith("order accepted")
    assert list(orders(server)) == [seat2]


def test_the_referee_key_is_rate_limited_too(server: Server, clock: Clock) -> None:
    referee = "referee@example.org"
    for i in range(5):
        send(server, referee, f"KEY guess-{i}\nNEWGAME z{i}\n")
    assert send(server, referee, f"KEY {REFEREE_KEY}\nNEWGAME z9\n").startswith(
        f"refused: {referee} is locked out until")
    with Session(server.engine) as session:
        events = session.exec(select(SenderEvent).where(SenderEvent.kind == "auth-failed")).all()
        assert len(events) == 5 and {e.address for e in events} == {referee}
    assert server.referee.admin(["LIST"])[0].count("z") == 0
    clock.now += timedelta(hours=2)
    assert send(server, referee, f"KEY {REFEREE_KEY}\nNEWGAME z9\n").startswith("referee")
