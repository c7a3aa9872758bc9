"""An IMAP connection of pbem.mail.imap.ImapInbox: logged in (a password, or OAuth2),
kept open between polls (``keep_open``) or logged out, and its failures as MailError:
MailServiceUnavailable when the server cannot be reached, refuses the login or drops the
connection.
"""
from __future__ import annotations

import imaplib
import ssl as ssl_mod
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from imapclient import IMAPClient
from imapclient.exceptions import LoginError

from .errors import MailError, MailServiceUnavailable

_T = TypeVar("_T")


class ImapConnection:
    """How an inbox gets, keeps and gives up its connection; ImapInbox (pbem.mail.imap)
    sets these parts up."""

    host: str
    port: int
    username: str
    password: str
    ssl: bool
    ssl_context: ssl_mod.SSLContext | None
    timeout: float
    keep_open: float                    # seconds a kept connection is used again; 0: none
    login: Callable[[IMAPClient], object] | None   # logs a connection in (OAuth2)
    _kept: IMAPClient | None
    _kept_since: float
    _lock: threading.Lock               # one poll at a time on the kept connection

    def _connect(self) -> IMAPClient:
        where = f"{self.host}:{self.port}"
        try:
            client = IMAPClient(self.host, self.port, ssl=self.ssl,
                                ssl_context=self.ssl_context, timeout=self.timeout)
        except (OSError, imaplib.IMAP4.error) as e:
            raise MailServiceUnavailable(f"cannot connect to IMAP server {where}: {e}") from e
        try:
            if self.login is not None:
                self.login(client)
            else:
                client.login(self.username, self.password)
        except MailServiceUnavailable:   # no OAuth2 token
            close_quietly(client)
            raise
        except (LoginError, imaplib.IMAP4.error, OSError) as e:
            close_quietly(client)
            raise MailServiceUnavailable(
                f"IMAP login as {self.username!r} on {where} failed: {e}") from e
        return client

    def connect(self) -> IMAPClient:
        """A logged-in connection of the caller's own (an IDLE watch's: pbem.mail.idle);
        the caller logs out. Raises MailServiceUnavailable."""
        return self._connect()

    def _capabilities(self, client: IMAPClient) -> set[bytes]:
        return {c.upper() for c in client.capabilities()}

    def _keep(self, client: IMAPClient) -> None:
        """Keep the connection for the next poll (keep_open), or log out."""
        if self.keep_open > 0:
            self._kept, self._kept_since = client, time.monotonic()
        else:
            close_quietly(client)

    def close(self) -> None:
        """Log out of a kept connection (once a move left to a thread is over)."""
        with self._lock:
            client, self._kept = self._kept, None
            if client is not None:
                close_quietly(client)

    def _take(self) -> tuple[IMAPClient, bool]:
        """The kept connection if it is fresh enough (True), else a new one (False)."""
        client, self._kept = self._kept, None
        if client is not None:
            if time.monotonic() - self._kept_since <= self.keep_open:
                return client, True
            close_quietly(client)
        return self._connect(), False

    def _on_connection(self, work: Callable[[], _T]) -> _T:
        """``work`` on the IMAP connection, its failures as MailError."""
        try:
            return work()
        except (OSError, imaplib.IMAP4.abort) as e:
            raise MailServiceUnavailable(f"IMAP connection to {self.host}:{self.port} "
                                         f"lost: {e}") from e
        except imaplib.IMAP4.error as e:
            raise MailError(f"IMAP error on {self.host}:{self.port}: {e}") from e


def close_quietly(client: IMAPClient) -> None:
    """Log out, or at least drop the connection; a dead one raises nothing."""
    try:
        client.logout()
    except Exception:
        try:
            client.shutdown()
        except Exception:
            pass
