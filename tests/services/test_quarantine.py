"""Issue 16: no mail can stop the server, and failing mail does not flood the referee.

- a kill is not the mail's fault: a mail whose handling is killed twice (a real
  server process SIGKILLed at a crash point while handling it, testkit/crash.py) is
  handled at the next tick;
- a mail that kills whoever handles it (pbem.store.faults.poison_point) kills the server
  once, then the two bounded children that handle it on their own: it is set aside,
  its sender answered in their language, the referee told once, the game goes on;
- mails that fail with an internal error (a failure point, pbem.store.faults) cost the
  referee at most one notice an hour: the first at once, the rest summed up with
  their count when the hour is over.

Both over the real mail stack (Dovecot's INBOX in, SMTP out).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session

from pbem.config import load_settings
from pbem.demo.robot_client import parse_mail
from pbem.games.records import find_game
from pbem.runner.server import Server
from pbem.services import failures
from pbem.store import faults
from testkit.crash import Zygote
from testkit.desk import Clock
from testkit.e2e import text_of
from testkit.kills import KilledGame
from testkit.stack import stack_config, stack_settings
from testkit.stored import inbound_rows

pytestmark = pytest.mark.mailstack

KEY = "quarantine-referee-key"
_ids = itertools.count(1)


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as z:
        yield z


def mail(stack: Any, user: str, body: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"] = stack.address(user), stack.address("bluff")
    msg["Subject"] = "a question"
    msg["Message-ID"] = f"<quarantine-{next(_ids)}@{user}.test>"
    msg.set_content(body + "\n")
    return msg.as_bytes(policy=policy.SMTP)


def rows(engine: Any) -> list[Any]:
    return inbound_rows(engine)


def write_config(tmp_path: Path, stack: Any) -> Path:
    return stack_config(tmp_path / "pbem.toml", stack, f"sqlite:///{tmp_path / 'pbem.db'}", KEY)


def test_kills_of_the_server_while_it_handles_a_mail_do_not_set_it_aside(
        mailstack: Any, tmp_path: Path, zygote: Zygote) -> None:
    """A kill is not the mail's fault: killed twice while handling the same mail (the
    second time in its bounded child, which the kill takes with the server), the server
    handles it at the next tick, as any other."""
    for user in ["bluff", "referee", "p1", "observer"]:
        mailstack.clear(user)
    config = write_config(tmp_path, mailstack)
    server = Server(load_settings(config))           # the database, made once
    first_mail, other = mail(mailstack, "observer", "HELP"), mail(mailstack, "p1", "HELP")
    mailstack.append("bluff", first_mail, other)     # the first is handled first
    for attempt in (1, 2):
        assert zygote.tick(config, crash="inbound-handled") == -9   # SIGKILLed in handling
        first, second = rows(server.engine)
        assert first.raw == first_mail and first.status == "new" and first.attempts == attempt
        assert second.status == "new"
    assert zygote.tick(config) == 0                   # the next tick handles both
    assert [(r.status, r.outcome) for r in rows(server.engine)] == [("done", "help sent")] * 2
    assert len(mailstack.fetch_all("observer")) == len(mailstack.fetch_all("p1")) == 1
    assert mailstack.fetch_all("referee") == []       # nothing to tell


POISON = "this line kills whoever reads it"


@pytest.fixture()
def poisoned(monkeypatch: pytest.MonkeyPatch) -> Iterator[Zygote]:
    """A zygote whose ticks die of any mail with POISON in it (pbem.store.faults.poison_point),
    in whichever process handles it."""
    monkeypatch.setenv(faults.POISON_ENV, POISON)
    with Zygote() as z:
        yield z


def test_a_mail_that_kills_whoever_handles_it_is_set_aside_and_its_sender_told(
        mailstack: Any, tmp_path: Path, poisoned: Zygote) -> None:
    """A poison mail kills the server once; then it kills the two bounded children that
    handle it on their own while the server goes on: it is set aside, its sender asked
    (in their language) to send the orders again as plain text, the referee told once,
    the game not held: the player's new mail plays the turn."""
    game = KilledGame(mailstack, tmp_path, poisoned, seed=5, options="LANGUAGE de")
    assert game.turn() == 1
    game.send_orders(poison={"p1": POISON})
    assert poisoned.tick(game.config) == -9           # it kills the server once
    assert poisoned.tick(game.config) == 0            # then its bounded handlers, twice
    (poison,) = game.set_aside()
    assert poison.outcome is not None and poison.outcome.startswith(
        "set aside: it killed its handler 2 times")
    assert game.left() == {"stored mail new": 0, "mail unsent": 0, "mail in the folder": 0}
    with Session(game.server.engine) as session:
        assert failures.held_by(session, find_game(session, "g1")) == []   # not held
    (notice,) = [parse_mail(r) for r in mailstack.fetch_all("referee")]
    said = " ".join(text_of(notice).split())
    assert f"#{poison.id}: set aside unread" in said and "2 times" in said, said
    (answer,) = [parse_mail(r) for r in mailstack.fetch_all("p1")]
    said = " ".join(text_of(answer).split()).lower()
    assert "deine mail konnte nicht gelesen werden" in said, said
    assert "bitte schicke deine befehle noch einmal als reinen text" in said, said
    assert game.turn() == 1                           # the turn waits for p1's order
    game.resend("p1")
    assert game.send_orders() == 1                    # p1 sends it again
    assert game.catch_up() == 1 and game.turn() == 2
    assert len(game.set_aside()) == 1
    assert len(mailstack.fetch_all("referee")) == 1   # told once


def stack_server(stack: Any, tmp_path: Path, clock: Clock) -> Server:
    return Server(stack_settings(stack, f"sqlite:///{tmp_path / 'pbem.db'}", KEY), clock=clock)


def test_failing_mail_costs_the_referee_one_notice_an_hour(mailstack: Any,
                                                            tmp_path: Path) -> None:
    for user in ["bluff", "referee", "observer"]:
        mailstack.clear(user)
    clock = Clock()
    server = stack_server(mailstack, tmp_path, clock)

    def notices() -> list[str]:
        return [str(parse_mail(r)["Subject"]) + " | " + " ".join(text_of(parse_mail(r)).split())
                for r in mailstack.fetch_all("referee")]

    faults.arm_failures("inbound-read")
    try:
        mailstack.append("bluff", *(mail(mailstack, "observer", f"HELP {i}") for i in range(3)))
        server.tick()
        assert [r.status for r in rows(server.engine)] == ["failed"] * 3
        (first,) = notices()                          # the first at once, alone
        assert first.startswith("A mail could not be handled") and "#1: an internal" in first
        clock.advance(minutes=30)
        mailstack.append("bluff", *(mail(mailstack, "observer", f"HELP {i}") for i in range(3, 5)))
        server.tick()
        assert [r.status for r in rows(server.engine)] == ["failed"] * 5
        assert len(notices()) == 1                    # within the hour: held back
    finally:
        faults.arm_failures(None)
    clock.advance(minutes=31)
    server.tick()                                     # an hour since: the rest, together
    first, summary = notices()
    assert summary.startswith("4 mails could not be handled")
    assert all(f"#{n}: an internal error" in summary for n in (2, 3, 4, 5))
    clock.advance(hours=2)
    server.tick()
    assert len(notices()) == 2
