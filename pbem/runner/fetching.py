"""The mailbox side of a worker: poll the [imap] folder (all of it, or a share of it
beside other workers), store what was fetched, set aside what cannot be stored, and
move the quarantined mail back when the referee asks.

Part of the shell (pbem.runner.server wires it): it stores through the referee and leases
each share in the database (pbem.store.claims.Lease).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from datetime import datetime

from imapclient import IMAPClient
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col, select

from pbem.config import ImapSettings, Settings, SmtpSettings
from pbem.mail.addresses import parse_sender
from pbem.mail.errors import MailError
from pbem.mail.idle import IdleWatch
from pbem.mail.imap import WHOLE, FetchedMail, ImapInbox, Share
from pbem.mail.oauth import OAuthGrant, OAuthLogin, TokenSource
from pbem.runner import storing
from pbem.runner.referee import Referee
from pbem.services.failures import what_failed
from pbem.services.post import tell_referee
from pbem.store.backoff import Backoff
from pbem.store.claims import Lease, Waits
from pbem.store.engines import transient_error
from pbem.store.models import Signup
from pbem.store.security import known_address
from pbem.store.work import Work
from pbem.text.wording import _

log = logging.getLogger(__name__)
IMAP_KEEP_OPEN_SECONDS = 120.0   # an idle IMAP connection is used again for this long


def oauth_login(conf: ImapSettings | SmtpSettings, service: str,
                refused: Callable[[str, str], object]) -> OAuthLogin | None:
    """The OAuth2 login of an [imap] or [smtp] section with ``auth = "oauth2"`` (None:
    a password); ``refused`` is told (service, why) when its token cannot be had."""
    if conf.auth != "oauth2":
        return None
    grant = OAuthGrant(conf.oauth_client_id, provider=conf.oauth_provider,
                       tenant=conf.oauth_tenant, token_uri=conf.oauth_token_uri,
                       scopes=conf.oauth_scopes, refresh_token=conf.oauth_refresh_token,
                       client_secret=conf.oauth_client_secret,
                       token_file=conf.oauth_token_file)
    source = TokenSource(grant, lambda why: refused(service, why))
    return OAuthLogin(source, conf.username or "", conf.oauth_mechanism)


def _imap_login(login: OAuthLogin | None) -> Callable[[object], object] | None:
    return login.imap if login is not None else None


class Fetcher:
    """A worker's fetching: ``fetch`` each tick, ``settle`` once the tick's handling is
    over, ``close`` at the end. An unreachable IMAP server backs ``backoff`` off (the
    tick reports it)."""

    def __init__(self, settings: Settings, engine: Engine, referee: Referee,
                 clock: Callable[[], datetime], backoff: Backoff) -> None:
        self.settings, self.engine, self.referee = settings, engine, referee
        self.clock, self.backoff = clock, backoff
        self._inbox: ImapInbox | None = None                # inbox(): made once
        self._spam: ImapInbox | None = None                 # spam_box(): made once
        self._fetch_turn = 0                                # shares: ticks so far

    def inbox(self) -> ImapInbox | None:
        """The mailbox; its connection is kept open between polls for a while."""
        imap = self.settings.imap
        if imap is None:
            return None
        if self._inbox is None:
            self._inbox = self._box(imap.folder, _imap_login(oauth_login(
                imap, "IMAP", self.token_refused)))
        return self._inbox

    def spam_box(self) -> ImapInbox | None:
        """The [imap] spam_folder, read for mail from known senders only (known_sender),
        or None (no spam_folder)."""
        imap = self.settings.imap
        if imap is None or not imap.spam_folder:
            return None
        if self._spam is None:
            inbox = self.inbox()
            assert inbox is not None
            self._spam = self._box(imap.spam_folder, inbox.login, only_from=self.known_sender)
        return self._spam

    def _box(self, folder: str, login: Callable[[IMAPClient], object] | None,
             only_from: Callable[[bytes], bool] | None = None) -> ImapInbox:
        """A folder of the [imap] mailbox, opened as every folder of it is."""
        imap = self.settings.imap
        assert imap is not None
        return ImapInbox(imap.host, imap.port, imap.username, imap.password, ssl=imap.ssl,
                         folder=folder, done_folder=imap.done_folder,
                         quarantine_folder=imap.quarantine_folder,
                         max_bytes=self.settings.max_mail_bytes,
                         keep_open=IMAP_KEEP_OPEN_SECONDS, login=login, only_from=only_from)

    def known_sender(self, header: bytes) -> bool:
        """Is the From of this header block (From: only) the referee, a player or watcher
        of any game, or an address with a sign-up confirmed or waiting for its code? Mail
        the provider filed as spam is read only from them: anything else there is spam
        (or a stranger's, whom a spam folder may well keep)."""
        value = header.decode("utf-8", "replace").partition(":")[2] if header else ""
        address = parse_sender(value).address
        if address is None:
            return False
        if address == self.settings.referee.lower():
            return True
        with Session(self.engine) as session:
            return known_address(session, address) or session.exec(
                select(Signup.id).where(Signup.email == address,
                                        col(Signup.status).startswith("pending"))
            ).first() is not None

    def rescue_spam(self) -> int:
        """Store the mail of known senders in the spam folder and move it to the done
        folder, as if it had come to the inbox (the folder's name is in its key: a UID is
        a folder's own). A spam folder that cannot be read is logged, not backed off:
        the inbox goes on."""
        spam = self.spam_box()
        if spam is None:
            return 0

        def key(mail: FetchedMail) -> str:
            return f"{spam.folder}/{mail.uidvalidity}/{mail.uid}"

        def store(mail: FetchedMail) -> None:
            self.referee.store_inbound(mail.raw, source="imap", truncated=mail.truncated,
                                       size=mail.size, imap_key=key(mail))

        def store_batch(mails: list[FetchedMail]) -> None:
            self.referee.store_many([(m.raw, key(m), m.truncated, m.size) for m in mails],
                                    source="imap")
        try:
            rescued = spam.poll(store, store_batch=store_batch)
        except MailError as exc:
            log.warning("the spam folder %s could not be read: %s", spam.folder,
                        what_failed(exc))
            return 0
        if rescued:
            log.info("%d mails of players and known senders taken out of the spam folder %s",
                     rescued, spam.folder)
        return rescued

    def idle_watch(self, woken: Callable[[], object],
                   stop: threading.Event) -> IdleWatch | None:
        """A watch IDLE on the [imap] folder that calls ``woken`` when mail arrives (not
        started), or None: no [imap], or ``idle = false``. Each worker idles on the whole
        folder and, woken, polls it as its ticks do (its shares included): IDLE says when,
        the shares say what."""
        mailbox = self.inbox()
        imap = self.settings.imap
        if mailbox is None or imap is None or not imap.idle:
            return None
        return IdleWatch(mailbox.connect, imap.folder, woken, stop)

    def token_refused(self, service: str, why: str) -> None:
        """The OAuth2 refresh for ``service`` (IMAP, SMTP) failed: the referee is told, once
        until it works again (TokenSource); the mail waits in the mailbox and the outbox."""
        try:
            with Work(self.engine) as session:
                tell_referee(session, self.referee.post, _("The mail server login failed"), [
                    _("pbem could not log in to {service}: {why}", service=service, why=why),
                    _("The mail waits in the mailbox and the outbox and is handled once the "
                      "login works again. Make a new refresh token with `pbem oauth` (see "
                      "docs/providers.md) and put it where oauth_token_file says: pbem takes "
                      "it at its next try (a token in the environment needs pbem serve "
                      "restarted).")])
                session.commit()
        except Exception as exc:   # the log says it all the same (TokenSource)
            log.warning("the referee could not be told of the refused %s login: %s",
                        service, what_failed(exc))

    def close(self) -> None:
        """Log out of the kept IMAP connection (once a move left to a thread is over)."""
        if self._inbox is not None:
            self._inbox.close()
        if self._spam is not None:
            self._spam.close()

    def _imap_key(self, mail: FetchedMail) -> str:
        """folder/UIDVALIDITY/UID: the same mail fetched twice is stored once."""
        folder = self.settings.imap.folder if self.settings.imap else "INBOX"
        return f"{folder}/{mail.uidvalidity}/{mail.uid}"

    def store_fetched(self, mail: FetchedMail) -> None:
        self.referee.store_inbound(mail.raw, source="imap", truncated=mail.truncated,
                                   size=mail.size, imap_key=self._imap_key(mail))

    def store_fetched_batch(self, mails: list[FetchedMail]) -> None:
        """A fetched group in one transaction (all or nothing; see ImapInbox.poll)."""
        self.referee.store_many([(m.raw, self._imap_key(m), m.truncated, m.size)
                                 for m in mails], source="imap")

    def store_failed(self, mail: FetchedMail, exc: Exception) -> bool:
        """A fetched mail could not be stored: True to set it aside (the IMAP quarantine
        folder) after storing.STORE_TRIES tries, counted in the database; logged once a try,
        and once with its traceback when set aside, when the referee is told. An outage of
        the database is not counted (the mail waits for it)."""
        imap = self.settings.imap
        assert imap is not None
        where, why = self._imap_key(mail), what_failed(exc)
        if isinstance(exc, OperationalError) and transient_error(exc):
            log.warning("mail %s not stored, the database is unavailable (%s); it stays in "
                        "%s", where, why, imap.folder)
            return False
        try:
            tries = storing.count_store_failure(self.engine, where)
        except Exception as again:   # the database fails too: the mail waits for it
            log.warning("mail %s not stored (%s), nor its try counted (%s); it stays in %s",
                        where, why, what_failed(again), imap.folder)
            return False
        if tries < storing.STORE_TRIES:
            log.warning("mail %s could not be stored (%s); it stays in %s for another try",
                        where, why, imap.folder)
            return False
        log.error("mail %s could not be stored %d times; set aside in %s, the referee is told",
                  where, tries, imap.quarantine_folder, exc_info=exc)
        try:
            self.referee.unstorable(where, why, tries, imap.quarantine_folder)
        except Exception as again:   # set aside all the same: it must not block the folder
            log.warning("the referee could not be told of mail %s: %s", where,
                        what_failed(again))
        return True

    def release_quarantine(self, imap_inbox: ImapInbox) -> None:
        """The referee asked for the mails set aside back (RETRY QUARANTINE): move them
        to the folder polled, where this fetch stores them again."""
        if not storing.release_asked(self.engine):
            return
        moved = imap_inbox.release()
        storing.release_done(self.engine)
        log.info("%d mails set aside in %s moved back to %s", moved,
                 imap_inbox.quarantine_folder, imap_inbox.folder)

    def fetch(self, *, move_later: bool = False, waits: Waits | None = None) -> int:
        """Store what waits in the mailbox (the whole folder, or a share of it: shares);
        an unreachable IMAP server is retried with back-off. With ``move_later`` the
        stored mail's move out of the folder runs on while the caller handles it
        (ImapInbox.poll), and ``settle`` ends it."""
        mailbox = self.inbox()
        if mailbox is None or not self.backoff.ready(self.clock()):
            return 0
        taken = self.take_share(waits)
        if taken is None:
            return 0
        share, lease = taken
        rescued = 0
        try:   # the lease is released once the poll is over, its last move included
            try:
                if share.number == 0:   # one share's poller, so it is done once
                    self.release_quarantine(mailbox)
                    rescued = self.rescue_spam()
            except BaseException:
                lease.release()
                raise
            fetched = mailbox.poll(self.store_fetched, store_batch=self.store_fetched_batch,
                                   move_later=move_later, done=lease.release,
                                   set_aside=self.store_failed, share=share)
        except MailError as exc:   # unreachable, dropped, or an IMAP error: nothing was lost
            self.backoff.failed(self.clock(), exc)
            return 0
        self.backoff.succeeded()
        return fetched + rescued

    def take_share(self, waits: Waits | None) -> tuple[Share, Lease] | None:
        """The first of this tick's shares no other worker polls, with its lease taken;
        None when others poll them all (told to ``waits``). One poller a share at a time:
        two would fetch the same mail (harmless, it is stored once) and move it twice
        (the done folder would get two copies)."""
        for share in self.shares():
            lease = Lease(self.engine, "fetch" if share == WHOLE else f"fetch {share}",
                          self.clock, seconds=self.settings.claim_lease_seconds)
            if lease.try_acquire():
                return share, lease
            # named as the refused try saw it: read again, a holder that just ended is None
            log.info("another process (%s) is fetching %s; left to it", lease.refused_by,
                     "mail" if share == WHOLE else f"{share} of the mail")
            if waits is not None:
                waits.add("left the fetch to another process", 0.0, lease.refused_by)
        return None

    def shares(self) -> list[Share]:
        """The shares of the folder a tick may poll, in the order it tries them (it polls
        the first one no other worker holds): the whole folder, or with ``[imap]
        fetchers`` = N (several workers polling side by side) the N shares, beginning at
        the next one each tick, a worker's first by its pid: workers ticking together
        begin on different shares, and one worker alone polls each share within N ticks."""
        of = self.settings.imap.fetchers if self.settings.imap else 1
        self._fetch_turn += 1
        first = os.getpid() + self._fetch_turn
        return [WHOLE] if of == 1 else [Share((first + k) % of, of) for k in range(of)]

    def settle(self) -> None:
        """Wait for the move a ``fetch(move_later=True)`` left running; a failed one backs
        the IMAP server off like a failed fetch (its mail is stored: the next poll moves
        it)."""
        if self._inbox is None:
            return
        try:
            self._inbox.settle()
        except MailError as exc:
            self.backoff.failed(self.clock(), exc)
