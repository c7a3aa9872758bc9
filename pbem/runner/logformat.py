"""How pbem's log lines look: for a terminal, for journald, or as JSON.

- ``text``: ``2026-01-02 10:00:00,123 INFO pbem.runner.server: ...`` (a terminal, a file).
- ``journal``: ``<6>INFO pbem.runner.server: ...``: each line begins with its syslog priority
  (sd-daemon(3): journald reads it as the entry's priority, so `journalctl -p warning`
  works) and carries no time, journald stamps each entry itself.
- ``json``: one JSON object a line (time, level, logger, message, and the traceback
  as ``exc``), for a log collector.

``auto`` (the default) is ``journal`` when stderr is the journal's stream (systemd sets
``JOURNAL_STREAM`` to its device and inode), else ``text``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TextIO

FORMATS = ("auto", "text", "journal", "json")
TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
UNSTAMPED = "%(levelname)s %(name)s: %(message)s"


def priority(level: int) -> int:
    """The syslog priority of a logging level: 3 error, 4 warning, 6 info, 7 debug."""
    if level >= logging.CRITICAL:
        return 2
    if level >= logging.ERROR:
        return 3
    if level >= logging.WARNING:
        return 4
    if level >= logging.INFO:
        return 6
    return 7


class JournalFormatter(logging.Formatter):
    """``<N>`` before every line of a record (a traceback's lines too), no time."""

    def __init__(self) -> None:
        super().__init__(UNSTAMPED)

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).splitlines())


class JsonFormatter(logging.Formatter):
    """One JSON object a record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {"time": datetime.fromtimestamp(record.created, UTC).isoformat(),
                 "level": record.levelname, "priority": priority(record.levelno),
                 "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def to_journal(stream: TextIO, env: Mapping[str, str]) -> bool:
    """Is ``stream`` the journal's (JOURNAL_STREAM names its device:inode)?"""
    device, _, inode = env.get("JOURNAL_STREAM", "").partition(":")
    if not (device.isdigit() and inode.isdigit()):
        return False
    try:
        seen = os.fstat(stream.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (seen.st_dev, seen.st_ino) == (int(device), int(inode))


def formatter(choice: str, stream: TextIO | None = None,
              env: Mapping[str, str] | None = None) -> logging.Formatter:
    """The formatter of a --log-format choice (auto: journal or text, see above)."""
    if choice == "auto":
        choice = "journal" if to_journal(stream or sys.stderr,
                                         os.environ if env is None else env) else "text"
    if choice == "journal":
        return JournalFormatter()
    if choice == "json":
        return JsonFormatter()
    return logging.Formatter(TEXT)


def set_up(level: int, choice: str = "auto") -> None:
    """The root logger writes to stderr in the chosen format (as logging.basicConfig:
    unless it has its handlers already)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(choice, sys.stderr))
    logging.basicConfig(level=level, handlers=[handler])
