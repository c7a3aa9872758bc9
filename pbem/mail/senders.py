"""Where a worker's outgoing mail goes: one sender a connection (pbem.outbox's ``open_sender``).

The .eml folder (the embedded default), or an SMTP connection borrowed from one pool kept
open from tick to tick; each DKIM-signed when there is a signer. The server makes one
``Senders`` from its settings and hands its ``open`` down to the outbox, so opening a
sender is a call down to here, never back into the server.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pbem.mail.dkim import DkimSigner, SigningSender, with_signature
from pbem.mail.eml_out import EmlDirSender
from pbem.mail.oauth import OAuthLogin
from pbem.mail.smtp_out import BorrowedSender, SmtpPool, SmtpSender

SMTP_KEEP_OPEN_SECONDS = 60.0    # an idle SMTP connection (servers drop them after minutes)


@dataclass(frozen=True)
class SmtpAccount:
    """The [smtp] server and its login, as the senders need them."""

    host: str
    port: int
    ssl: bool
    starttls: bool
    username: str | None
    password: str | None
    login: OAuthLogin | None   # OAuth2 (pbem.mail.oauth), or None: the password


class Senders:
    """A worker's senders: ``open`` gives one (a ``with`` block's), ``close`` ends the
    SMTP connections kept open."""

    def __init__(self, *, outbox_dir: Path, durable: bool, signer: DkimSigner | None,
                 smtp: SmtpAccount | None) -> None:
        self.outbox_dir, self.durable, self.signer, self.smtp = outbox_dir, durable, signer, smtp
        self._pool: SmtpPool | None = None   # made at the first SMTP sender

    def open(self) -> EmlDirSender | BorrowedSender | SigningSender:
        account = self.smtp
        if account is None:
            return with_signature(EmlDirSender(self.outbox_dir, durable=self.durable),
                                  self.signer)
        if self._pool is None:
            login = account.login
            self._pool = SmtpPool(lambda: SmtpSender(
                account.host, account.port, ssl=account.ssl, starttls=account.starttls,
                username=account.username, password=account.password,
                login=login.smtp if login is not None else None), SMTP_KEEP_OPEN_SECONDS)
        return with_signature(self._pool.borrow(), self.signer)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
