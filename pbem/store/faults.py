"""Crashes on purpose, and what a crashed process leaves behind.

Crash points. ``crash_point("imap-stored")`` kills the own process with SIGKILL
(no cleanup, no flush, no atexit: like a power cut) when the environment
variable ``PBEM_CRASH_AT`` names that point, so the crash tests can stop a real
server at each step of handling mail. ``PBEM_CRASH_AT=outbox-handed-off:3``
kills at the third time the point is passed; several points are separated by
commas. Without the variable a crash point costs one global lookup.

The points, in the order a mail meets them:

    imap-fetched         the bodies are fetched, nothing stored yet
    imap-stored          one mail is stored (committed), not yet moved on the IMAP server
    imap-moved           a batch was moved to the done folder, nothing processed
    listener-stored      a listener mail is stored, the client has not had its 250
    inbound-handled      mid-transaction: a mail's effects are flushed, not committed
    inbound-committed    a mail's transaction is committed
    outbox-enqueued      mid-transaction: one outgoing mail was queued (reports too)
    outbox-claimed       a mail is claimed for sending, not yet handed to SMTP
    outbox-handed-off    SMTP took the mail, the row is not yet marked sent
    outbox-marked        the row is marked sent

and, in the schema work of a first start or an upgrade (schema/env.py):

    schema-statement     mid-migration: a statement of it has run (":n": the n-th)

Poison. ``poison_point(raw)`` kills the own process as a crash point does when the mail
being handled contains the text that the environment variable ``PBEM_POISON`` (or
``arm_poison``) names, each time, in whichever process handles it: a mail that kills
its handler, for the tests of the guard against one (pbem.runner.referee).

Failure points. ``fail_point("inbound-read")`` raises InjectedFailure when the
environment variable ``PBEM_FAIL_AT`` (or ``arm_failures``) names it: a bug on
purpose, so the tests can see what a mail that fails costs the server (the mail
kept as failed, the referee told, at most once an hour); ``fail_point("inbound-store")``
the same for a fetched mail that cannot be stored (set aside on the IMAP server).
"""

from __future__ import annotations

import logging
import os
import signal
import time

from pbem.text.errors import PbemError
from pbem.text.wording import ngettext

log = logging.getLogger(__name__)

CRASH_ENV = "PBEM_CRASH_AT"
POINTS = ("imap-fetched", "imap-stored", "imap-moved", "listener-stored", "inbound-handled",
          "inbound-committed", "outbox-enqueued", "outbox-claimed", "outbox-handed-off",
          "outbox-marked", "schema-statement", "drafts-queued")


def _parse(spec: str | None) -> dict[str, int]:
    armed: dict[str, int] = {}
    for item in (spec or "").split(","):
        name, _, nth = item.strip().partition(":")
        if not name:
            continue
        if name not in POINTS:
            raise ValueError(f"{CRASH_ENV}: unknown crash point {name!r} (known: {POINTS})")
        armed[name] = int(nth) if nth else 1
    return armed


FAIL_ENV = "PBEM_FAIL_AT"
FAIL_POINTS = ("inbound-read", "inbound-store")


class InjectedFailure(PbemError, RuntimeError):
    """A failure on purpose (PBEM_FAIL_AT): what a bug in handling a mail would raise."""


def _parse_failures(spec: str | None) -> frozenset[str]:
    names = frozenset(item.strip() for item in (spec or "").split(",") if item.strip())
    unknown = names - set(FAIL_POINTS)
    if unknown:
        raise ValueError(f"{FAIL_ENV}: unknown failure "
                         f"{ngettext('point', 'points', len(unknown))} {', '.join(sorted(unknown))} "
                         f"(known: {', '.join(FAIL_POINTS)})")
    return names


_armed: dict[str, int] = _parse(os.environ.get(CRASH_ENV))
_failing: frozenset[str] = _parse_failures(os.environ.get(FAIL_ENV))
_passed: dict[str, int] = {}


def arm(spec: str | None) -> None:
    """Arm crash points from a spec like the environment variable's (None disarms)."""
    global _armed
    _armed = _parse(spec)
    _passed.clear()


_server_pid: int | None = None   # the server this process works for (a bounded child's)


def work_for(server_pid: int) -> None:
    """This process is a bounded child of the server ``server_pid`` (pbem.runner.isolation): a
    crash point kills the server, as a kill from outside would, and this child with it."""
    global _server_pid
    _server_pid = server_pid


def crash_point(name: str) -> None:
    """SIGKILL this process (the server) here if PBEM_CRASH_AT names this point (at its
    n-th pass)."""
    if not _armed:
        return
    nth = _armed.get(name)
    if nth is None:
        return
    _passed[name] = _passed.get(name, 0) + 1
    if _passed[name] >= nth:
        if _server_pid is not None:
            os.kill(_server_pid, signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(10)   # pragma: no cover - the signal is on its way


POISON_ENV = "PBEM_POISON"
_poison: bytes | None = os.environ.get(POISON_ENV, "").encode() or None


def arm_poison(text: str | None) -> None:
    """A mail that contains ``text`` kills its handler (None: no mail does)."""
    global _poison
    _poison = text.encode() if text else None


def poison_point(raw: bytes) -> None:
    """SIGKILL this process if the mail ``raw`` contains the poison (PBEM_POISON)."""
    if _poison is not None and _poison in raw:
        os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(10)   # pragma: no cover - the signal is on its way


def passes(name: str) -> int:
    """How often the armed crash point ``name`` has been passed since ``arm``."""
    return _passed.get(name, 0)


def arm_failures(spec: str | None) -> None:
    """Arm failure points from a spec like PBEM_FAIL_AT's (None disarms)."""
    global _failing
    _failing = _parse_failures(spec)


def fail_point(name: str) -> None:
    """Raise InjectedFailure here if PBEM_FAIL_AT names this point."""
    if _failing and name in _failing:
        raise InjectedFailure(f"failure point {name} ({FAIL_ENV})")
