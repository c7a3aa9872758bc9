"""Where an IMAP inbox's mail goes once handed on: a stored mail out of the folder
(moved to the done folder, or copied and expunged, or flagged where the server can do
neither), a mail that cannot be stored to the quarantine folder, and back from there
(``release``).
"""
from __future__ import annotations

import imaplib
import logging

from imapclient import DELETED, SEEN, IMAPClient

from .imap_connection import ImapConnection, close_quietly

# its lines under the inbox's name (pbem.mail.imap)
log = logging.getLogger("pbem.mail.imap")

DONE_KEYWORD = "$PbemDone"


class ImapFolders(ImapConnection):
    """The done and quarantine folders of an inbox (pbem.mail.imap.ImapInbox)."""

    folder: str
    done_folder: str
    quarantine_folder: str
    _done_seen: IMAPClient | None       # the connection that has seen the done folder

    def _set_aside(self, client: IMAPClient, uids: list[int], mode: str) -> None:
        """Move mails that cannot be stored to the quarantine folder (made when missing)."""
        if not client.folder_exists(self.quarantine_folder):
            try:
                client.create_folder(self.quarantine_folder)
            except imaplib.IMAP4.error:
                if not client.folder_exists(self.quarantine_folder):
                    raise
        if mode == "move":
            client.move(uids, self.quarantine_folder)
        else:   # a copy set aside, the original out of the way as a done one is
            client.copy(uids, self.quarantine_folder)
            self._mark(client, uids, "flag" if mode == "flag" else "delete")

    def release(self) -> int:
        """Move every mail of the quarantine folder back to the folder polled (the next poll
        stores it again); how many. On a connection of its own."""
        with self._lock:
            client = self._connect()
            try:
                return self._on_connection(lambda: self._release(client))
            finally:
                close_quietly(client)

    def _release(self, client: IMAPClient) -> int:
        if not client.folder_exists(self.quarantine_folder):
            return 0
        client.select_folder(self.quarantine_folder)
        uids = client.search(["NOT", "DELETED"])
        if uids:
            if b"MOVE" in self._capabilities(client):
                client.move(uids, self.folder)
            else:
                client.copy(uids, self.folder)
                client.add_flags(uids, [DELETED], silent=True)
                client.expunge()
        return len(uids)

    def _ensure_done_folder(self, client: IMAPClient) -> None:
        """Make the done folder unless it is there (asked once a connection; should it be
        deleted meanwhile, the move says TRYCREATE and _mark_done makes it again)."""
        if self._done_seen is client:
            return
        self._make_done_folder(client)
        self._done_seen = client

    def _make_done_folder(self, client: IMAPClient) -> None:
        if client.folder_exists(self.done_folder):
            return
        try:
            client.create_folder(self.done_folder)
        except imaplib.IMAP4.error:
            if not client.folder_exists(self.done_folder):  # lost a creation race?
                raise

    def _mark_done(self, client: IMAPClient, uids: list[int], mode: str) -> None:
        try:
            self._mark(client, uids, mode)
        except imaplib.IMAP4.error as e:
            if _no_such_folder(e) and mode != "flag":   # the done folder was deleted
                self._make_done_folder(client)
                self._mark(client, uids, mode)
                return
            if not _vanished(e):
                raise
            # another poller (a second server) moved some of them meanwhile: they are
            # stored already, so move the rest one by one and let the vanished ones be
            log.info("%r: some mails were moved by someone else meanwhile: %s", self, e)
            for uid in uids:
                try:
                    self._mark(client, [uid], mode)
                except imaplib.IMAP4.error as again:
                    if not _vanished(again):
                        raise

    def _mark(self, client: IMAPClient, uids: list[int], mode: str) -> None:
        if mode == "move":
            client.move(uids, self.done_folder)
        elif mode == "expunge":
            client.copy(uids, self.done_folder)
            client.add_flags(uids, [DELETED], silent=True)
            client.uid_expunge(uids)
        elif mode == "delete":   # copied elsewhere already (UIDPLUS)
            client.add_flags(uids, [DELETED], silent=True)
            client.uid_expunge(uids)
        else:
            client.add_flags(uids, [SEEN, DONE_KEYWORD.encode()], silent=True)


def _vanished(error: Exception) -> bool:
    """The IMAP server says some of the messages no longer exist (RFC 5530 EXPUNGEISSUED)."""
    text = str(error).upper()
    return "EXPUNGEISSUED" in text or "NO LONGER EXIST" in text


def _no_such_folder(error: Exception) -> bool:
    """The target folder of a MOVE or COPY does not exist (RFC 3501 6.4.7: TRYCREATE)."""
    return "TRYCREATE" in str(error).upper()
