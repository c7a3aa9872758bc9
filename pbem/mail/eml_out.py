"""The outbound edge without an SMTP server (the embedded default, no [smtp]
configured): each message dropped as an .eml file into a folder, written atomically.
Same interface as pbem.mail.smtp_out's SmtpSender.
"""
from __future__ import annotations

import logging
import os
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path

from pbem.mail.smtp_out import SendResult
from pbem.store.paths import fsync_dir

# its lines under the outbound edge's name, as before they had a module of their own
log = logging.getLogger("pbem.mail.smtp_out")

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+=-]+")
_MESSAGE_ID = re.compile(rb"^message-id:[ \t]*([^\r\n]*)", re.IGNORECASE | re.MULTILINE)


def _message_id(raw: bytes) -> str:
    """The Message-ID field of our own mail, for its file name (no header parser: the
    outbox's mail is ours, one field to a line)."""
    head = raw.split(b"\r\n\r\n", 1)[0]
    found = _MESSAGE_ID.search(head)
    return found.group(1).decode("ascii", "replace").strip() if found else ""


def _sanitise(text: str, limit: int = 60) -> str:
    text = _UNSAFE.sub("_", text.strip().strip("<>")).strip("._")
    return text[:limit] or "none"


class EmlDirSender:
    """Embedded default outbound edge: every message becomes one .eml file in
    ``folder``, written atomically (a temp file linked to its name), so no reader
    sees half a mail. With ``durable`` each file and the folder are fsynced before
    the mail counts as sent (``[database] synchronous = "full"``); without, a power
    loss may lose the files of the last moments (a process crash never does). Same
    interface as SmtpSender; all recipients are accepted."""

    def __init__(self, folder: Path, durable: bool = True) -> None:
        self.folder = Path(folder)
        self.durable = durable
        self._made = False    # the folder, made at the first mail

    def __repr__(self) -> str:
        return f"EmlDirSender({self.folder})"

    def __enter__(self) -> EmlDirSender:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def close(self) -> None:
        pass

    def send(self, mail_from: str, rcpts: list[str], raw: bytes) -> SendResult:
        rcpts = list(dict.fromkeys(rcpts))
        if not rcpts:
            return SendResult()
        if not self._made:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._made = True
        msgid = _message_id(raw)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        stem = f"{stamp}-{_sanitise(rcpts[0])}-{_sanitise(msgid)}"
        tmp = self.folder / f".{uuid.uuid4().hex}.eml.tmp"
        with open(tmp, "wb") as f:
            f.write(raw)
            if self.durable:
                f.flush()
                os.fsync(f.fileno())
        try:
            final = self._publish(tmp, stem)
        finally:
            tmp.unlink(missing_ok=True)
        if self.durable:
            fsync_dir(self.folder)
        log.info("%r: wrote %s", self, final.name)
        return SendResult(accepted=rcpts)

    def _publish(self, tmp: Path, stem: str) -> Path:
        """Hard-link tmp to a name that does not exist yet (never overwrite)."""
        for n in range(1000):
            final = self.folder / (f"{stem}.eml" if n == 0 else f"{stem}-{n}.eml")
            try:
                os.link(tmp, final)
                return final
            except FileExistsError:
                continue
            except OSError:  # no hard links on this filesystem: rename instead
                if final.exists():
                    continue
                os.replace(tmp, final)
                return final
        raise FileExistsError(f"no free file name for {stem}")
