"""The outbound edge: hand finished messages to an SMTP server (or, the embedded
default with no [smtp] configured, drop them as .eml files into a folder:
pbem.mail.eml_out).

``send`` never raises for mail-level trouble; it sorts the recipients into
accepted / temporary (retry later) / permanent (do not retry).
"""
from __future__ import annotations

import logging
import re
import smtplib
import ssl as ssl_mod
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pbem.mail.smtp_transaction import dot_stuffed, transact

__all__ = ["BorrowedSender", "SendResult", "SmtpPool", "SmtpSender", "dot_stuffed",
           "rate_limit_answer"]

log = logging.getLogger(__name__)


@dataclass
class SendResult:
    accepted: list[str] = field(default_factory=list)
    temporary: dict[str, str] = field(default_factory=dict)  # rcpt -> text: retry later
    permanent: dict[str, str] = field(default_factory=dict)  # rcpt -> text: do not retry
    # the recipients the server refused at RCPT, or at DATA (for all of the mail's
    # recipients): its word on the address, rcpt -> text, also in temporary or permanent.
    # A permanent one is a bounce told at once (pbem.services.bounces hears it as a DSN);
    # a refusal of our sender (MAIL FROM) or of our own doing is none.
    refused: dict[str, str] = field(default_factory=dict)
    # the server could not be reached, dropped us, or is shutting down (421), or refused our
    # login: trouble with the service, not with this mail. Retry later without holding it
    # against the mail, and stop sending the rest of the batch for now.
    unavailable: bool = False
    # the server said we send too much (a 4.7.x answer, "rate limit", "too many ..."): a
    # signal to slow down, not trouble with this mail. Also unavailable: the mail is kept
    # without a try counted, and sending pauses (the server's SMTP back-off).
    rate_limited: bool = False

    @property
    def ok(self) -> bool:
        return not self.temporary and not self.permanent


def _text(code: int, msg: bytes | str) -> str:
    if isinstance(msg, bytes):
        msg = msg.decode("utf-8", errors="replace")
    return f"{code} {msg}".strip()


# a provider's "you send too much": 421/450/451 with an enhanced code 4.7.x (Gmail's
# 421 4.7.0 / 451 4.7.0, Microsoft's 4.7.500-699 ...), or any 4xx that says so in words,
# but greylisting (also 4.7.x: this mail is deferred, not our sending); and a daily
# quota spent (Gmail's 550 5.4.5 "Daily user sending limit exceeded"), which says no for
# today, not for the mail
_RATE_CODE = re.compile(r"^(421|450|451)[ -]4\.7\.\d+")
_RATE_WORDS = re.compile(r"rate.?limit|too many (?!recipients)|sending (limit|quota)|throttl",
                         re.IGNORECASE)
_GREYLISTED = re.compile(r"gr[ae]y.?list", re.IGNORECASE)
_QUOTA_SPENT = re.compile(r"^5\d\d[ -]5\.4\.5\b|sending (limit|quota)", re.IGNORECASE)


def rate_limit_answer(text: str) -> bool:
    """Is ``text`` (a server's answer, code first) a rate-limit answer: a 4xx that says we
    send too much, or a 5xx that says the day's sending quota is spent?"""
    if _GREYLISTED.search(text):
        return False
    if text[:1] == "5":
        return bool(_QUOTA_SPENT.search(text))
    return bool(_RATE_CODE.match(text)) or (text[:1] == "4" and bool(_RATE_WORDS.search(text)))


def _crlf(raw: bytes) -> bytes:
    """Bare LF line ends -> CRLF (SMTP requires CRLF; smtplib leaves bytes alone)."""
    if raw.count(b"\n") == raw.count(b"\r\n"):   # already CRLF (what build_mail writes)
        return raw
    return re.sub(rb"(?<!\r)\n", b"\r\n", raw)


class SmtpSender:
    """SMTP client. As a context manager it keeps one connection for a batch of
    sends; used bare, each ``send`` opens and closes its own connection."""

    def __init__(self, host: str, port: int, *, ssl: bool = False, starttls: bool = False,
                 username: str | None = None, password: str | None = None,
                 timeout: float = 30.0, ssl_context: ssl_mod.SSLContext | None = None,
                 login: Callable[[smtplib.SMTP], object] | None = None) -> None:
        if ssl and starttls:
            raise ValueError("use either ssl (implicit TLS) or starttls, not both")
        self.host = host
        self.port = port
        self.ssl = ssl
        self.starttls = starttls
        self.username = username
        self.password = password
        self.timeout = timeout
        self.ssl_context = ssl_context
        # logs a connection in instead of the password (OAuth2: pbem.mail.oauth.OAuthLogin)
        self.login = login
        self._conn: smtplib.SMTP | None = None
        self._in_context = False

    def __repr__(self) -> str:
        mode = "ssl" if self.ssl else "starttls" if self.starttls else "plain"
        return f"SmtpSender({self.host}:{self.port}, {mode})"

    def __enter__(self) -> SmtpSender:
        self._in_context = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._in_context = False
        self.close()

    def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        try:
            conn.quit()
        except Exception:
            try:
                conn.close()
            except Exception:
                pass

    def _context(self) -> ssl_mod.SSLContext:
        return self.ssl_context or ssl_mod.create_default_context()

    def _open(self) -> smtplib.SMTP:
        conn: smtplib.SMTP
        if self.ssl:
            conn = smtplib.SMTP_SSL(self.host, self.port, timeout=self.timeout,
                                    context=self._context())
        else:
            conn = smtplib.SMTP(self.host, self.port, timeout=self.timeout)
        try:
            conn.ehlo()
            if self.starttls:
                conn.starttls(context=self._context())
                conn.ehlo()
            if self.login is not None:
                self.login(conn)
            elif self.username is not None:
                conn.login(self.username, self.password or "")
        except BaseException:
            try:
                conn.close()
            except Exception:
                pass
            raise
        return conn

    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
        rcpts = list(dict.fromkeys(rcpts))  # no duplicates, order kept
        result = SendResult()
        if not rcpts:
            return result
        raw = _crlf(raw)
        try:
            for attempt in (1, 2):
                reused = self._conn is not None
                try:
                    if self._conn is None:
                        self._conn = self._open()
                    self._sendmail(self._conn, mail_from, rcpts, raw, result)
                    break
                except smtplib.SMTPServerDisconnected as e:
                    self._drop()
                    if reused and attempt == 1:  # idle connection was closed: once more
                        log.info("%r: cached connection dropped (%s); reconnecting", self, e)
                        continue
                    self._all(result, rcpts, "temporary", f"connection lost: {e}")
                    result.unavailable = True
                    break
                except smtplib.SMTPSenderRefused as e:
                    if e.smtp_code == 421 and reused and attempt == 1:
                        self._drop()
                        continue
                    self._by_code(result, rcpts, e.smtp_code, e.smtp_error)
                    break
                except smtplib.SMTPDataError as e:
                    self._by_code(result, rcpts, e.smtp_code, e.smtp_error, refusal=True)
                    break
                except smtplib.SMTPRecipientsRefused as e:  # every recipient refused
                    for rcpt in rcpts:
                        code, msg = e.recipients.get(rcpt, (451, b"refused"))
                        self._by_code(result, [rcpt], code, msg, refusal=True)
                    break
                except (OSError, smtplib.SMTPException) as e:
                    # refused connection, timeout, TLS/AUTH failure or missing extension,
                    # bad greeting: trouble with the server or our config, not the mail
                    self._drop()
                    self._all(result, rcpts, "temporary", f"{type(e).__name__}: {e}")
                    result.unavailable = True
                    break
        finally:
            if self._conn is not None and (not self._in_context or self._conn.sock is None):
                # sock is None: smtplib closed it itself (e.g. after a 421)
                if self._in_context:
                    self._drop()
                else:
                    self.close()
        if result.temporary and all(t.startswith(("421", "530")) for t in
                                    result.temporary.values()):
            result.unavailable = True   # shutting down / authentication needed: the service
        spent = [rcpt for rcpt, text in result.permanent.items() if rate_limit_answer(text)]
        for rcpt in spent:   # the day's sending quota spent: the mail is kept for later
            result.temporary[rcpt] = result.permanent.pop(rcpt)
            result.refused.pop(rcpt, None)
        if any(rate_limit_answer(t) for t in result.temporary.values()):
            result.rate_limited = result.unavailable = True   # slow down: not this mail
        if result.temporary or result.permanent:
            log.warning("%r: temporary=%s permanent=%s", self, result.temporary,
                        result.permanent)
        return result

    def _sendmail(self, conn: smtplib.SMTP, mail_from: str, rcpts: list[str], raw: bytes,
                  result: SendResult) -> None:
        mail_options: list[str] = []
        if not raw.isascii() and conn.has_extn("8bitmime"):
            mail_options.append("BODY=8BITMIME")
        if not all(a.isascii() for a in [mail_from, *rcpts]):
            if not conn.has_extn("smtputf8"):
                self._all(result, rcpts, "permanent",
                          "non-ASCII address but the server lacks SMTPUTF8")
                return
            mail_options.append("SMTPUTF8")
        refused = transact(conn, mail_from, rcpts, raw, mail_options)
        for rcpt in rcpts:
            if rcpt in refused:
                code, msg = refused[rcpt]
                self._by_code(result, [rcpt], code, msg, refusal=True)
            else:
                result.accepted.append(rcpt)

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except Exception:
                pass

    @staticmethod
    def _all(result: SendResult, rcpts: list[str], kind: str, text: str) -> None:
        target = result.temporary if kind == "temporary" else result.permanent
        for rcpt in rcpts:
            target[rcpt] = text

    @staticmethod
    def _by_code(result: SendResult, rcpts: list[str], code: int, msg: bytes | str, *,
                 refusal: bool = False) -> None:
        """Sort ``rcpts`` by the server's reply; ``refusal``: a reply to RCPT or DATA (the
        server's word on the recipients, SendResult.refused)."""
        # 5xx is permanent, except 530 "authentication required" (RFC 4954): that is
        # our configuration, not the mail, so keep the mail for a retry.
        target = result.permanent if 500 <= code < 600 and code != 530 else result.temporary
        for rcpt in rcpts:
            target[rcpt] = _text(code, msg)
            if refusal and code not in (421, 530):
                result.refused[rcpt] = target[rcpt]


class SmtpPool:
    """SMTP connections kept open from one drain to the next (a tick's answers, then the
    next tick's) for ``keep_open`` seconds: connecting, EHLO, STARTTLS and AUTH cost more
    than sending a mail. A connection the server closed meanwhile is opened again by
    SmtpSender itself (a 421 or a dropped line on a reused connection: once more)."""

    def __init__(self, make: Callable[[], SmtpSender], keep_open: float) -> None:
        self.make = make
        self.keep_open = keep_open
        self._idle: list[tuple[SmtpSender, float]] = []
        self._lock = threading.Lock()

    def borrow(self) -> BorrowedSender:
        """A kept connection still fresh enough, else a new sender (connecting at its first
        mail); given back when the ``with`` block ends without an error."""
        now, stale, sender = time.monotonic(), [], None
        with self._lock:
            while self._idle and sender is None:
                kept, since = self._idle.pop()
                if now - since <= self.keep_open:
                    sender = kept
                else:
                    stale.append(kept)
        for old in stale:
            old.__exit__(None, None, None)
        if sender is None:
            sender = self.make().__enter__()
        return BorrowedSender(self, sender)

    def give_back(self, sender: SmtpSender, healthy: bool) -> None:
        if healthy and self.keep_open > 0:
            with self._lock:
                self._idle.append((sender, time.monotonic()))
        else:
            sender.__exit__(None, None, None)

    def close(self) -> None:
        """QUIT every kept connection."""
        with self._lock:
            idle, self._idle = self._idle, []
        for sender, _ in idle:
            sender.__exit__(None, None, None)


class BorrowedSender:
    """An SmtpSender lent by an SmtpPool for one ``with`` block."""

    def __init__(self, pool: SmtpPool, sender: SmtpSender) -> None:
        self.pool, self.sender = pool, sender

    def __repr__(self) -> str:
        return f"kept {self.sender!r}"

    def __enter__(self) -> BorrowedSender:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.give_back(self.sender, healthy=not exc or exc[0] is None)

    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
        return self.sender.send(mail_from, rcpts, raw)
