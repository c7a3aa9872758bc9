"""Who may act: key checks, and limits on what an address can make the server do.

- Keys are compared in constant time, as SHA-256 digests, so neither the
  length nor the first differing byte of a key shows in the time a check
  takes. Where only a check is needed the server keeps only the digest: the
  referee key may be configured as ``referee_key_sha256`` and players'
  ``key_hash`` is what their KEY lines are checked against. (Players' keys
  are printed in every report, so the server does keep those.)
- Failed attempts (a wrong key, a key from another address, a reply to
  another player's mail) are counted per address in ``sender_event``. After
  ``auth_failure_limit`` of them within ``auth_failure_window_minutes`` no
  key from that address is looked at until the window has passed, and the
  referee is told once.
- Answers to an address the server does not know (no player, watcher or
  sign-up, not the referee), and to an address that is locked out, are
  limited to ``stranger_answers_per_day`` a day: forged mail cannot turn
  the server into a source of backscatter, and two servers (or a server and
  an auto-responder that strips the usual headers) stop answering each other.
  An address with a pending sign-up hears about its code (a CONFIRM that did not
  match) up to ``SIGNUP_ANSWERS_PER_DAY`` times a day besides.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlmodel import Session, col, func, select

from pbem.models import Player, SenderEvent, Signup, Watcher

AUTH_FAILED = "auth-failed"
AUTH_ALERTED = "auth-alerted"
STRANGER_ANSWERED = "stranger-answered"
SIGNUP_ANSWERED = "signup-answered"
LOCKOUT_TOLD = "lockout-told"
#: what a mail's outcome says when its answer was held back
STRANGER_LIMIT = "one answer a day to an unknown or locked-out address"
#: answers a day about its code to an address with a pending sign-up (a mistyped CONFIRM)
SIGNUP_ANSWERS_PER_DAY = 3


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


def find_key_owner(players: list[Player], given: str) -> Player | None:
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
    auth_failures: int = 5                  # failed attempts per address and window
    auth_window: timedelta = timedelta(hours=1)
    stranger_answers_per_day: int = 1

    @classmethod
    def from_settings(cls, settings: object) -> Limits:
        return cls(auth_failures=int(getattr(settings, "auth_failure_limit", 5)),
                   auth_window=timedelta(minutes=float(
                       getattr(settings, "auth_failure_window_minutes", 60))),
                   stranger_answers_per_day=int(getattr(settings, "stranger_answers_per_day", 1)))


def _count(session: Session, address: str, kind: str, since: datetime) -> int:
    return int(session.exec(select(func.count()).select_from(SenderEvent).where(
        SenderEvent.address == address, SenderEvent.kind == kind,
        col(SenderEvent.at) > since)).one())


def record(session: Session, address: str, kind: str, now: datetime) -> None:
    session.add(SenderEvent(address=address, kind=kind, at=now))
    session.flush()


def failures(session: Session, address: str, now: datetime, limits: Limits) -> int:
    """Failed attempts from the address within the window."""
    return _count(session, address, AUTH_FAILED, now - limits.auth_window)


def locked_out(session: Session, address: str, now: datetime, limits: Limits) -> bool:
    return failures(session, address, now, limits) >= limits.auth_failures


def locked_until(session: Session, address: str, now: datetime, limits: Limits) -> datetime:
    """When the oldest counted failure leaves the window (the lock-out ends then, or later)."""
    rows = session.exec(select(SenderEvent.at).where(
        SenderEvent.address == address, SenderEvent.kind == AUTH_FAILED,
        col(SenderEvent.at) > now - limits.auth_window).order_by(col(SenderEvent.at).desc())
        .limit(limits.auth_failures)).all()
    oldest = min(rows) if rows else now
    return oldest + limits.auth_window


def note_failure(session: Session, address: str, now: datetime, limits: Limits) -> bool:
    """Count a failed attempt; True when the referee should now be told (once a window)."""
    record(session, address, AUTH_FAILED, now)
    if failures(session, address, now, limits) < limits.auth_failures:
        return False
    if _count(session, address, AUTH_ALERTED, now - limits.auth_window) > 0:
        return False
    record(session, address, AUTH_ALERTED, now)
    return True


def tell_of_lockout(session: Session, address: str, now: datetime) -> bool:
    """May the address be told it is locked out? Once a lock-out (the lock-out begins
    when the referee is alerted); counts it if so."""
    began = session.exec(select(func.max(SenderEvent.at)).where(
        SenderEvent.address == address, SenderEvent.kind == AUTH_ALERTED)).one()
    if began is None or _count(session, address, LOCKOUT_TOLD, began - timedelta(seconds=1)):
        return False
    record(session, address, LOCKOUT_TOLD, now)
    return True


def known_address(session: Session, address: str) -> bool:
    """A player (of any game), a watcher or someone who confirmed a sign-up: not a stranger.
    (An unconfirmed JOIN does not count: anyone can forge one in another's name.)"""
    for model in (Player, Watcher):
        if session.exec(select(model.id).where(model.email == address)).first() is not None:
            return True
    return session.exec(select(Signup.id).where(Signup.email == address,
                                                Signup.status == "confirmed")).first() is not None


def may_answer(session: Session, address: str, now: datetime, limits: Limits) -> bool:
    """May a limited address (stranger, locked out) get an answer now? Counts it if so."""
    return _within_day(session, address, now, STRANGER_ANSWERED, limits.stranger_answers_per_day)


def answers_left(session: Session, address: str, now: datetime, limits: Limits) -> bool:
    """Has an unknown address an answer left today? Asked, not counted."""
    return _count(session, address, STRANGER_ANSWERED,
                  now - timedelta(days=1)) < limits.stranger_answers_per_day


def may_answer_about_signup(session: Session, address: str, now: datetime) -> bool:
    """May an address with a pending sign-up hear about its code now? Counts it if so."""
    return _within_day(session, address, now, SIGNUP_ANSWERED, SIGNUP_ANSWERS_PER_DAY)


def _within_day(session: Session, address: str, now: datetime, kind: str, per_day: int) -> bool:
    if _count(session, address, kind, now - timedelta(days=1)) >= per_day:
        return False
    record(session, address, kind, now)
    return True
