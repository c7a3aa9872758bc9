"""The IMAP edge: fetch new mail from a mailbox, hand each message to a durable
``store`` callback, and only then move it out of the way.

Delivery guarantee: at-least-once. A mail leaves the inbox only after ``store``
returned for it; if the connection drops between ``store`` and the move, the next
poll hands the same mail again with the same ``(uidvalidity, uid)``, so ``store``
should treat that pair (or the Message-ID) as an idempotency key.

A mail that ``store`` cannot take stays in the folder for the next poll, unless the
poll's ``set_aside`` says otherwise (it counts the tries): then it is moved to the
``quarantine_folder``, where it waits, kept as it came, until ``release`` moves it back.

Here the poll (fetch, store, hand on); the connection (login, kept between polls, its
failures) is pbem.mail.imap_connection's, the folders a mail goes to once handed on
(done, quarantine, back) pbem.mail.imap_folders'.
"""
from __future__ import annotations

import logging
import ssl as ssl_mod
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from imapclient import IMAPClient

from pbem.store.faults import crash_point

from .errors import MailServiceUnavailable
from .imap_connection import close_quietly
from .imap_folders import DONE_KEYWORD, ImapFolders

log = logging.getLogger(__name__)

_SIZE_CHUNK = 1000             # UIDs per RFC822.SIZE fetch (keeps command lines short)
_BATCH_BYTES = 20_000_000      # soft cap on the bytes of one body fetch
# mails fetched, stored and moved in one go: each MOVE costs Dovecot time in proportion
# to the folder, so a folder of 20,000 mails empties in 6 s in groups of 250, in 14 s in
# groups of 50 (the bytes of a group stay under _BATCH_BYTES either way)
FETCH_BATCH = 250
MAX_HEADER_BYTES = 262_144     # of a mail too large to read, at most this much header is fetched


@dataclass(frozen=True)
class FetchedMail:
    uidvalidity: int
    uid: int
    raw: bytes          # whole message, or only the header block when truncated
    size: int           # RFC822.SIZE reported by the server
    truncated: bool     # True when size > max_bytes: only headers were fetched


@dataclass(frozen=True)
class Share:
    """Which of a folder's mails one poll takes: those whose UID leaves ``number`` when
    divided by ``of``. Several workers poll one folder side by side, each a share of its
    own (pbem.runner.fetching.Fetcher leases each share to one of them at a time): a UID is
    the folder's own and never reused while its UIDVALIDITY stands, so the shares never
    meet and together hold every mail."""

    number: int = 0
    of: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.number < self.of:
            raise ValueError(f"no share {self.number} of {self.of}")

    def holds(self, uid: int) -> bool:
        return uid % self.of == self.number

    def __str__(self) -> str:
        return "the folder" if self.of == 1 else f"share {self.number + 1} of {self.of}"


WHOLE = Share()


def _chunks(seq: Sequence[int], n: int) -> Iterator[list[int]]:
    for i in range(0, len(seq), n):
        yield list(seq[i:i + n])


class ImapInbox(ImapFolders):
    """One mailbox folder polled over IMAP (a fresh connection per poll)."""

    def __init__(self, host: str, port: int, username: str, password: str, *, ssl: bool = True,
                 folder: str = "INBOX", done_folder: str = "pbem-done",
                 quarantine_folder: str = "pbem-quarantine",
                 max_bytes: int = 10_000_000, timeout: float = 30.0,
                 ssl_context: ssl_mod.SSLContext | None = None,
                 keep_open: float = 0.0,
                 login: Callable[[IMAPClient], object] | None = None,
                 only_from: Callable[[bytes], bool] | None = None) -> None:
        self.host = host
        self.port = port
        self.username = username
        self.password = password
        self.ssl = ssl
        self.folder = folder
        self.done_folder = done_folder
        self.quarantine_folder = quarantine_folder
        self.max_bytes = max_bytes
        self.timeout = timeout
        self.ssl_context = ssl_context
        # a connection idle for at most this many seconds is used again by the next poll
        # (no connect and login each time); 0: a fresh connection per poll
        self.keep_open = keep_open
        # logs a connection in instead of the password (OAuth2: pbem.mail.oauth.OAuthLogin)
        self.login = login
        # a folder read only in part (the spam folder): a mail is taken when only_from says
        # yes to its From header field; the rest is never touched (pbem.runner.fetching)
        self.only_from = only_from
        self._passed_over: tuple[int, set[int]] = (0, set())   # (uidvalidity, uids)
        self._kept: IMAPClient | None = None
        self._kept_since = 0.0
        # what a kept connection already did, so its next poll need not again: the folder
        # it has selected (with that UIDVALIDITY), and whether it has seen the done folder
        self._selected: tuple[IMAPClient, int] | None = None
        self._done_seen: IMAPClient | None = None
        self._lock = threading.Lock()     # one poll at a time on the kept connection
        # the last group's move left to a thread (poll's move_later), and what it met
        self._mover: threading.Thread | None = None
        self._mover_error: Exception | None = None

    def __repr__(self) -> str:
        return (f"ImapInbox({self.username}@{self.host}:{self.port}/{self.folder}"
                f" -> {self.done_folder})")

    # ---- polling ------------------------------------------------------------------

    def poll(self, store: Callable[[FetchedMail], None], *, batch: int = FETCH_BATCH,
             store_batch: Callable[[list[FetchedMail]], object] | None = None,
             move_later: bool = False, done: Callable[[], object] | None = None,
             set_aside: Callable[[FetchedMail, Exception], bool] | None = None,
             share: Share = WHOLE) -> int:
        """Store every waiting mail of the ``share`` (all of them: WHOLE) and move it to
        ``done_folder``; return how many were stored. A mail whose ``store`` raised stays
        in the folder untouched.
        With ``store_batch`` a fetched group is stored in one call (one transaction),
        mail by mail with ``store`` only when that fails.

        With ``move_later`` the last group's move, which only tidies the folder (its mail
        is stored), is left to a thread of its own: the poll returns once the mail is
        stored, and the move runs while the caller handles it. The next poll (and
        ``close``) waits for it; ``settle`` waits for it and raises what it met. ``done``
        is called once the poll is over, its last move included, from the thread that
        ends it. ``set_aside`` is asked of each mail ``store`` raised for (with what it
        raised): True moves the mail to ``quarantine_folder``.

        Raises MailServiceUnavailable when the server cannot be reached, refuses the
        login or drops the connection, and MailError for other IMAP failures.
        """
        if batch < 1:
            raise ValueError("batch must be >= 1")
        self._lock.acquire()
        moving = False
        try:
            self._mover_error = None   # a move left to a thread by the last poll
            client, kept = self._take()
            try:
                try:
                    stored, last = self._poll_on(client, store, batch, store_batch, move_later,
                                                 set_aside, share)
                except MailServiceUnavailable as e:
                    if not kept:
                        raise
                    # the server closed the kept connection meanwhile: once more on a new
                    # one (a mail stored but not moved is handed again, and stored once)
                    log.info("%r: kept connection lost (%s); reconnecting", self, e)
                    close_quietly(client)
                    client = self._connect()
                    stored, last = self._poll_on(client, store, batch, store_batch,
                                                 move_later, set_aside, share)
            except BaseException:
                close_quietly(client)
                raise
            if last is not None:
                self._mover = threading.Thread(target=self._move_last,
                                               args=(client, *last, done),
                                               name="pbem-imap-move", daemon=True)
                self._mover.start()
                moving = True
            else:
                self._keep(client)
            return stored
        finally:
            if not moving:
                self._lock.release()
                if done is not None:
                    done()

    def settle(self) -> None:
        """Wait for a move the last poll left to a thread (``move_later``); raise what it
        met (its mail is stored: the next poll finds it again and moves it)."""
        mover, self._mover = self._mover, None
        if mover is not None:
            mover.join()
        error, self._mover_error = self._mover_error, None
        if error is not None:
            raise error

    def _move_last(self, client: IMAPClient, uids: list[int], mode: str,
                   done: Callable[[], object] | None) -> None:
        """The last group's move, in a thread of its own, holding the poll's lock."""
        try:
            try:
                self._on_connection(lambda: self._mark_done(client, uids, mode))
                crash_point("imap-moved")
                self._keep(client)
            except Exception as exc:   # stored already: the next poll moves it
                log.warning("%r: moving %d stored mails failed: %s", self, len(uids), exc)
                self._mover_error = exc
                close_quietly(client)
        finally:
            self._lock.release()
            if done is not None:
                try:
                    done()
                except Exception:
                    log.exception("%r: after the move", self)

    def _poll_on(self, client: IMAPClient, store: Callable[[FetchedMail], None],
                 batch: int, store_batch: Callable[[list[FetchedMail]], object] | None,
                 move_later: bool, set_aside: Callable[[FetchedMail, Exception], bool] | None,
                 share: Share) -> tuple[int, tuple[list[int], str] | None]:
        return self._on_connection(
            lambda: self._poll(client, store, batch, store_batch, move_later, set_aside, share))

    def _poll(self, client: IMAPClient, store: Callable[[FetchedMail], None],
              batch: int, store_batch: Callable[[list[FetchedMail]], object] | None,
              move_later: bool, set_aside: Callable[[FetchedMail, Exception], bool] | None,
              share: Share) -> tuple[int, tuple[list[int], str] | None]:
        """How many mails of the ``share`` were stored, and the last group's move when it
        is left to the caller (``move_later``: its uids and the mode)."""
        uidvalidity = self._select(client)
        caps = self._capabilities(client)
        mode = "move" if b"MOVE" in caps else "expunge" if b"UIDPLUS" in caps else "flag"

        uids = sorted(u for u in client.search(["NOT", "DELETED", "NOT", "KEYWORD", DONE_KEYWORD])
                      if share.holds(u))
        if self.only_from is not None:
            uids = self._wanted(client, uidvalidity, uids)
        if not uids:
            return 0, None
        sizes: dict[int, int] = {}
        for chunk in _chunks(uids, _SIZE_CHUNK):
            for uid, data in client.fetch(chunk, ["RFC822.SIZE"]).items():
                if b"RFC822.SIZE" in data:
                    sizes[uid] = int(data[b"RFC822.SIZE"])
        uids = [u for u in uids if u in sizes]  # vanished meanwhile: someone expunged it

        stored = 0
        done_ready = False
        groups = list(self._batches(uids, sizes, batch))
        for number, group in enumerate(groups, 1):
            small = [u for u in group if sizes[u] <= self.max_bytes]
            big = [u for u in group if sizes[u] > self.max_bytes]
            bodies: dict[int, tuple[bytes, bool]] = {}
            if small:
                for uid, data in client.fetch(small, ["BODY.PEEK[]"]).items():
                    if b"BODY[]" in data:
                        bodies[uid] = (bytes(data[b"BODY[]"]), False)
            if big:   # the size limit holds before anything is parsed: headers only, capped
                part = f"BODY.PEEK[HEADER]<0.{MAX_HEADER_BYTES}>"
                for uid, data in client.fetch(big, [part]).items():
                    header = data.get(b"BODY[HEADER]<0>", data.get(b"BODY[HEADER]"))
                    if header is not None:
                        bodies[uid] = (bytes(header), True)
            crash_point("imap-fetched")

            mails = [FetchedMail(uidvalidity, uid, bodies[uid][0], sizes[uid], bodies[uid][1])
                     for uid in group if uid in bodies]
            done, aside = self._store(mails, store, store_batch, set_aside)
            stored += len(done)
            if aside:
                self._set_aside(client, aside, mode)

            if done:
                if mode != "flag" and not done_ready:
                    self._ensure_done_folder(client)
                    done_ready = True
                if move_later and number == len(groups):
                    log.info("%r: stored %d of %d mails (%s)", self, stored, len(uids), share)
                    return stored, (done, mode)
                self._mark_done(client, done, mode)
                crash_point("imap-moved")
        log.info("%r: stored %d of %d mails (%s)", self, stored, len(uids), share)
        return stored, None

    def _wanted(self, client: IMAPClient, uidvalidity: int, uids: list[int]) -> list[int]:
        """The uids whose From ``only_from`` wants; the others are remembered and not asked
        of again (read with PEEK: not even their \\Seen flag changes)."""
        assert self.only_from is not None
        if self._passed_over[0] != uidvalidity:
            self._passed_over = (uidvalidity, set())
        passed = self._passed_over[1]
        wanted: list[int] = []
        for chunk in _chunks([u for u in uids if u not in passed], _SIZE_CHUNK):
            part = "BODY.PEEK[HEADER.FIELDS (FROM)]"
            for uid, data in client.fetch(chunk, [part]).items():
                header = data.get(b"BODY[HEADER.FIELDS (FROM)]", b"")
                if self.only_from(bytes(header)):
                    wanted.append(uid)
                else:
                    passed.add(uid)
        return sorted(wanted)

    def _select(self, client: IMAPClient) -> int:
        """Select the folder; its UIDVALIDITY. A kept connection that has it selected
        already is asked NOOP instead, which is how IMAP polls a selected folder for new
        mail (RFC 3501 6.1.2), at a sixth of SELECT's cost; a UIDVALIDITY never changes
        while selected (RFC 3501 2.3.1.1: the server ends the session instead)."""
        if self._selected is not None and self._selected[0] is client:
            client.noop()
            return self._selected[1]
        uidvalidity = int(client.select_folder(self.folder)[b"UIDVALIDITY"])
        self._selected = (client, uidvalidity)
        return uidvalidity

    def _store(self, mails: list[FetchedMail], store: Callable[[FetchedMail], None],
               store_batch: Callable[[list[FetchedMail]], object] | None,
               set_aside: Callable[[FetchedMail, Exception], bool] | None,
               ) -> tuple[list[int], list[int]]:
        """Store a fetched group: all in one go (``store_batch``, one transaction) when it
        can, else mail by mail, where a mail that fails stays in the folder unless
        ``set_aside`` says to move it to the quarantine folder; the uids stored, and the
        uids to set aside."""
        if store_batch is not None and len(mails) > 1:
            try:
                store_batch(mails)
            except Exception as exc:   # the mail that failed is found one by one
                log.warning("%r: storing %d mails at once failed (%s: %s); one by one", self,
                            len(mails), type(exc).__name__, _short(exc))
            else:
                for _ in mails:
                    crash_point("imap-stored")
                return [mail.uid for mail in mails], []
        done: list[int] = []
        aside: list[int] = []
        for mail in mails:
            try:
                store(mail)
            except Exception as exc:
                if set_aside is not None and set_aside(mail, exc):
                    aside.append(mail.uid)
                elif set_aside is None:
                    log.exception("%r: storing uid %s failed; it stays in %s for the "
                                  "next poll", self, mail.uid, self.folder)
                continue
            crash_point("imap-stored")
            done.append(mail.uid)
        return done, aside

    def _batches(self, uids: list[int], sizes: dict[int, int],
                 batch: int) -> Iterator[list[int]]:
        group: list[int] = []
        group_bytes = 0
        budget = max(_BATCH_BYTES, self.max_bytes)
        for uid in uids:
            cost = sizes[uid] if sizes[uid] <= self.max_bytes else 0
            if group and (len(group) >= batch or group_bytes + cost > budget):
                yield group
                group, group_bytes = [], 0
            group.append(uid)
            group_bytes += cost
        if group:
            yield group


def _short(error: Exception) -> str:
    return " ".join(str(error).split())[:300]


