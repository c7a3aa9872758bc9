"""Who may act: key checks, and limits on what an address can make the server do.

- Keys are compared in constant time, as SHA-256 digests, so neither the
  length nor the first differing byte of a key shows in the time a check
  takes. Where only a check is needed the server keeps only the digest: the
  referee key may be configured as ``referee_key_sha256`` and players'
  ``key_hash`` is what their KEY lines are checked against. (Players' keys
  are printed in every report, so the server does keep those.)
- Failed attempts (a wrong key, a key from another address, a reply to
  another player's mail) are counted per address in ``sender_event``. They
  never lock the address out: keys are long random secrets, so guessing is
  not the threat, silencing is, and a mail with the right key (or a genuine
  reply to one's report) is always acted on. Past ``auth_failure_limit``
  failures within ``auth_failure_window_minutes`` a failing mail is dropped
  unanswered (its outcome says so), and the owner of the address is told
  once a day that mail with a wrong key came in their name.
- Answers to an address the server does not know (no player, watcher or
  sign-up, not the referee) are limited to ``stranger_answers_per_day`` a
  day: forged mail cannot turn the server into a source of backscatter, and
  two servers (or a server and an auto-responder that strips the usual
  headers) stop answering each other. A known address gets at most
  ``answers_per_hour`` answers an hour to mail that is no game mail (HELP,
  LIST, errors, refusals of mail without the right key or reply token); the
  answers to a player's game mail (orders, replies to reports) are never
  held back. An address with a pending sign-up hears about its code (a
  CONFIRM that did not match) up to ``SIGNUP_ANSWERS_PER_DAY`` times a day
  besides. One mechanism counts them all: events of a kind within a window.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from sqlmodel import Session, col, func, select

from pbem.store.models import Player, SenderEvent, Signup, Watcher
from pbem.store.rows import PlayerView

P = TypeVar("P", bound=PlayerView)   # a player: a row (pbem.store.rows) or an object

AUTH_FAILED = "auth-failed"
AUTH_DROPPED = "auth-dropped"          # a failing mail past the limit, dropped unanswered
OWNER_TOLD = "owner-told"              # the owner heard of mail with wrong keys in their name
STRANGER_ANSWERED = "stranger-answered"
SIGNUP_ANSWERED = "signup-answered"
ANSWERED = "answered"                  # an answer to a known address's non-game mail
#: what a mail's outcome says when its answer was held back
STRANGER_LIMIT = "one answer a day to an unknown address"
#: answers a day about its code to an address with a pending sign-up (a mistyped CONFIRM)
SIGNUP_ANSWERS_PER_DAY = 3
DAY = timedelta(days=1)
HOUR = timedelta(hours=1)


def new_key() -> tuple[str, str]:
    """A fresh player key and its hash: the key is shown in the player's reports, checks
    use only the hash."""
    key = secrets.token_hex(8)
    return key, hash_key(key)


def code_hash(code: str) -> str:
    """What is stored of a code mailed to an address (JOIN, WATCH, ADDRESS): its SHA-256,
    the code read in any case."""
    return hashlib.sha256(code.strip().lower().encode()).hexdigest()


def hash_key(key: str) -> str:
    """The hex SHA-256 digest of a key, as kept in ``key_hash``."""
    return hashlib.sha256(key.strip().encode("utf-8", "surrogatepass")).hexdigest()


def key_matches(given: str, *, key_hash: str = "", key: str = "") -> bool:
    """Does ``given`` match the key whose digest is ``key_hash`` (else the key itself)?

    Constant time in the given key: both sides are compared as digests.
    """
    if not key_hash and not key:
        hmac.compare_digest(hash_key(given), hash_key(""))   # same work either way
        return False
    want = key_hash or hash_key(key)
    return hmac.compare_digest(hash_key(given).encode(), want.strip().lower().encode())


def find_key_owner(players: Sequence[P], given: str) -> P | None:
    """The active player whose key this is, checking every one (no early exit)."""
    found = None
    for player in players:
        if key_matches(given, key_hash=player.key_hash, key=player.key) and player.active:
            found = found or player
    return found


def referee_key_matches(given: str | None, *, key: str, key_sha256: str) -> bool:
    """The referee key check: against ``referee_key_sha256`` if set, else ``referee_key``."""
    if given is None or not (key or key_sha256):
        return False
    return key_matches(str(given), key_hash=key_sha256, key=key)


# --------------------------------------------------------------------------- limits


@dataclass(frozen=True)
class Limits:
    auth_failures: int = 5                  # failing mails per address and window answered
    auth_window: timedelta = timedelta(hours=1)
    stranger_answers_per_day: int = 1
    answers_per_hour: int = 10              # answers to a known address's non-game mail

    @classmethod
    def from_settings(cls, settings: object) -> Limits:
        return cls(auth_failures=int(getattr(settings, "auth_failure_limit", 5)),
                   auth_window=timedelta(minutes=float(
                       getattr(settings, "auth_failure_window_minutes", 60))),
                   stranger_answers_per_day=int(getattr(settings, "stranger_answers_per_day", 1)),
                   answers_per_hour=int(getattr(settings, "answers_per_hour", 10)))


def count(session: Session, address: str, kind: str, since: datetime) -> int:
    """Events of ``kind`` of the address after ``since``."""
    return int(session.exec(select(func.count()).select_from(SenderEvent).where(
        SenderEvent.address == address, SenderEvent.kind == kind,
        col(SenderEvent.at) > since)).one())


def record(session: Session, address: str, kind: str, now: datetime) -> None:
    session.add(SenderEvent(address=address, kind=kind, at=now))
    session.flush()


def within(session: Session, address: str, now: datetime, kind: str, most: int,
           window: timedelta) -> int:
    """Take one of ``most`` events of ``kind`` an address may have within ``window``: how
    many are left after this one (0: this was the last), or -1 if none was left (nothing
    counted). The one mechanism behind every limit here."""
    used = count(session, address, kind, now - window)
    if used >= most:
        return -1
    record(session, address, kind, now)
    return most - used - 1


def failures(session: Session, address: str, now: datetime, limits: Limits) -> int:
    """Failed attempts from the address within the window."""
    return count(session, address, AUTH_FAILED, now - limits.auth_window)


def note_failure(session: Session, address: str, now: datetime, limits: Limits) -> bool:
    """Count a failing mail; True when it is past the limit, to be dropped unanswered
    (counted as such)."""
    record(session, address, AUTH_FAILED, now)
    if failures(session, address, now, limits) <= limits.auth_failures:
        return False
    record(session, address, AUTH_DROPPED, now)
    return True


def tell_owner(session: Session, address: str, now: datetime) -> bool:
    """May the owner of an address be told of failing mail in their name now? Once a
    day; counts it if so."""
    return within(session, address, now, OWNER_TOLD, 1, DAY) >= 0


def known_address(session: Session, address: str) -> bool:
    """A player (of any game), a watcher or someone who confirmed a sign-up: not a stranger.
    (An unconfirmed JOIN does not count: anyone can forge one in another's name.)"""
    for model in (Player, Watcher):
        if session.exec(select(model.id).where(model.email == address)).first() is not None:
            return True
    return session.exec(select(Signup.id).where(Signup.email == address,
                                                Signup.status == "confirmed")).first() is not None


def may_answer(session: Session, address: str, now: datetime, limits: Limits) -> bool:
    """May an unknown address get an answer now? Counts it if so."""
    return within(session, address, now, STRANGER_ANSWERED, limits.stranger_answers_per_day,
                  DAY) >= 0


def answers_left(session: Session, address: str, now: datetime, limits: Limits) -> bool:
    """Has an unknown address an answer left today? Asked, not counted."""
    return count(session, address, STRANGER_ANSWERED,
                 now - DAY) < limits.stranger_answers_per_day


def may_answer_about_signup(session: Session, address: str, now: datetime) -> bool:
    """May an address with a pending sign-up hear about its code now? Counts it if so."""
    return within(session, address, now, SIGNUP_ANSWERED, SIGNUP_ANSWERS_PER_DAY, DAY) >= 0


def answer_budget(session: Session, address: str, now: datetime, limits: Limits) -> int:
    """Take one of a known address's answers an hour to mail that is no game mail: how
    many are left after it (0: this is the last, which says so), -1: none was left."""
    return within(session, address, now, ANSWERED, limits.answers_per_hour, HOUR)
