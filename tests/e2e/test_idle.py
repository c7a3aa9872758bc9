"""IMAP IDLE (pbem.mail.idle): `pbem serve` answers the moment an order arrives in its
Dovecot inbox, though its poll is ten minutes apart; a dropped IDLE connection (Dovecot
restarted) comes back; a server without IDLE is polled as before."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from testkit.dovecot import dovecot_available
from testkit.mailstack import MailStack
from testkit.stack import help_mail, stack_config

LONG_POLL = 600   # seconds: a tick never comes by the clock within a test
ANSWERED_WITHIN = 3.0   # seconds: the median of five IDLE answers, on a loaded box


@contextmanager
def serving(stack: MailStack, tmp_path: Path, poll_seconds: float) -> Iterator[
        subprocess.Popen[str]]:
    """`pbem serve` on the stack's bluff inbox, once its first tick is done."""
    for user in ("bluff", "p1", "referee"):
        stack.clear(user)
    config = stack_config(tmp_path / "pbem.toml", stack, f"sqlite:///{tmp_path}/pbem.db",
                          "k", imap={"poll_seconds": poll_seconds},
                          # p1 asks for HELP again and again, a stranger to the server
                          server={"stranger_answers_per_day": 1000})
    proc = subprocess.Popen([sys.executable, "-m", "pbem.cli", "serve", "-c", str(config)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        proc.seen = until_logged(proc, "the first tick is done")   # type: ignore[attr-defined]
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)


def until_logged(proc: subprocess.Popen[str], words: str) -> list[str]:
    assert proc.stdout is not None
    lines = []
    while True:
        line = proc.stdout.readline()
        assert line, "pbem serve ended:\n" + "".join(lines)
        lines.append(line)
        if words in line:
            return lines


def answer_time(stack: MailStack, user: str, *, within: float) -> float:
    """Deliver a HELP from user; seconds until its answer is in user's inbox."""
    before = len(stack.fetch_all(user))
    started = time.monotonic()
    stack.deliver("bluff", help_mail(stack, user), mail_from=stack.address(user))
    stack.wait_for(user, before + 1, timeout=within)
    return time.monotonic() - started


@pytest.fixture
def own_stack(request: pytest.FixtureRequest) -> Iterator[MailStack]:
    """A Dovecot of the test's own (it is restarted, or configured apart)."""
    if not dovecot_available():
        pytest.skip("Dovecot is not installed")
    stack = MailStack(extra_config=getattr(request, "param", "")).start()
    try:
        yield stack
    finally:
        stack.stop()


def test_an_order_is_answered_at_once_with_a_poll_of_ten_minutes(
        mailstack: MailStack, tmp_path: Path) -> None:
    """Every answer is IDLE's: the poll would take ten minutes. How soon is
    bench/idle_latency.py's figure (a median about 0.55 s: Dovecot tells an idle client
    0.5 s after the mail); the bound here leaves room for a loaded 2-core box, where
    medians of five were 0.50 to 0.60 s with single answers up to 1.3 s."""
    with serving(mailstack, tmp_path, LONG_POLL):
        took = [answer_time(mailstack, "p1", within=5.0) for _ in range(5)]
    print("answered after", ", ".join(f"{t:.2f}" for t in took), "s")
    assert statistics.median(took) < ANSWERED_WITHIN, took


def test_a_dropped_idle_connection_comes_back(own_stack: MailStack, tmp_path: Path) -> None:
    """Only an IDLE wake answers within a test (the poll is ten minutes away), so an
    answer within answer_time's seconds is one. How fast IDLE answers is the test above's
    (a median over five): one answer, the first on a new connection, took 1.1 to 1.6 s
    on a loaded 2-core box."""
    with serving(own_stack, tmp_path, LONG_POLL) as proc:
        answer_time(own_stack, "p1", within=5.0)
        own_stack.restart()   # the IDLE connection is cut; the same ports again
        until_logged(proc, "IDLE is back")
        answer_time(own_stack, "p1", within=10.0)


NO_IDLE = ("imap_capability = IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE LITERAL+ "
           "NAMESPACE UIDPLUS MOVE")


@pytest.mark.parametrize("own_stack", [NO_IDLE], indirect=True)
def test_a_server_without_idle_is_polled(own_stack: MailStack, tmp_path: Path) -> None:
    with serving(own_stack, tmp_path, 2) as proc:
        took = answer_time(own_stack, "p1", within=10.0)
        proc.terminate()
        rest = proc.communicate(timeout=30)[0]
    assert "does not offer IDLE" in "".join(proc.seen) + rest   # type: ignore[attr-defined]
    assert took < 10.0


@pytest.mark.postgresql
def test_two_workers_with_shares_answer_every_mail_once_at_once(
        mailstack: MailStack, pgcluster: object, tmp_path: Path) -> None:
    """Each worker idles on the whole folder; woken, each polls a share (fetchers = 2):
    every mail answered once, long before the ten-minute poll."""
    for user in ("bluff", "p1", "referee"):
        mailstack.clear(user)
    database = pgcluster.new_database()   # type: ignore[attr-defined]
    config = stack_config(tmp_path / "pbem.toml", mailstack, database, "k",
                          imap={"poll_seconds": LONG_POLL, "fetchers": 2},
                          server={"stranger_answers_per_day": 1000})
    workers = [subprocess.Popen([sys.executable, "-m", "pbem.cli", "serve", "-c", str(config)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
               for _ in range(2)]
    try:
        for proc in workers:
            until_logged(proc, "the first tick is done")
        started = time.monotonic()
        mails = [help_mail(mailstack, "p1") for _ in range(10)]
        for raw in mails:
            mailstack.deliver("bluff", raw, mail_from=mailstack.address("p1"))
        answers = mailstack.wait_for("p1", 10, timeout=15.0)
        took = time.monotonic() - started
        time.sleep(1.0)   # a second answer to any of them would come by now
        answers = mailstack.fetch_all("p1")
    finally:
        for proc in workers:
            proc.terminate()
            proc.wait(30)
    assert len(answers) == 10
    asked = {line.split(b": ", 1)[1] for raw in mails for line in raw.splitlines()
             if line.startswith(b"Message-ID: ")}
    replied = {line.split(b": ", 1)[1] for raw in answers for line in raw.splitlines()
               if line.startswith(b"In-Reply-To: ")}
    assert replied == asked
    assert took < 10.0, took
