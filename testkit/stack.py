"""pbem over the real mail stack (testkit/mailstack.py): a server at one of the stack's
addresses that reads that user's IMAP inbox and sends over the stack's SMTP front,
the stack's referee the referee. As a pbem.toml for a real process
(``stack_config``) or as Settings for a Server in the test (``stack_settings``).

Plain module (no pytest import), like testkit/mailstack.py.
"""

from __future__ import annotations

import json
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

from pbem.config import ImapSettings, Settings, SmtpSettings


def _toml_lines(values: dict[str, object]) -> str:
    return "".join(f"{name} = {json.dumps(value)}\n" for name, value in values.items())


def stack_config(path: Path, stack: Any, database: str, referee_key: str, *,
                 server: dict[str, object] | None = None,
                 imap: dict[str, object] | None = None,
                 smtp: dict[str, object] | None = None, user: str = "bluff") -> Path:
    """A pbem.toml at path: the database, user's (bluff's) address and IMAP inbox and the
    stack's SMTP, the stack's referee with referee_key; ``server``, ``imap`` and
    ``smtp``: more settings of those sections (name: value)."""
    path.write_text(f"""
[server]
database = "{database}"
address = "{stack.address(user)}"
referee = "{stack.address('referee')}"
referee_key = "{referee_key}"
{_toml_lines(server or {})}[imap]
host = "{stack.imap_host}"
port = {stack.imap_port}
ssl = false
username = "{stack.address(user)}"
password = "{stack.password}"
{_toml_lines(imap or {})}[smtp]
host = "{stack.smtp_host}"
port = {stack.smtp_port}
starttls = false
{_toml_lines(smtp or {})}""", encoding="utf-8")
    return path


def stack_settings(stack: Any, database: str, referee_key: str, *, user: str = "bluff",
                   smtp: bool = True, verp: bool = False, **settings: Any) -> Settings:
    """Settings for user's address and IMAP inbox, the stack's SMTP (none without smtp;
    verp: SmtpSettings.verp) and referee with referee_key; settings: any other field."""
    return Settings(
        database=database, address=stack.address(user), referee=stack.address("referee"),
        referee_key=referee_key,
        imap=ImapSettings(stack.imap_host, stack.imap_port, ssl=False,
                          username=stack.address(user), password=stack.password),
        smtp=SmtpSettings(stack.smtp_host, stack.smtp_port, starttls=False, verp=verp)
        if smtp else None, **settings)


def help_mail(stack: Any, user: str) -> bytes:
    """A HELP from ``user`` of the stack to its bluff mailbox (any answer proves a mail read)."""
    msg = EmailMessage()
    msg["From"], msg["To"] = stack.address(user), stack.address("bluff")
    msg["Subject"] = "help please"
    msg["Message-ID"] = make_msgid(domain="bluff.test")
    msg.set_content("HELP\n")
    return msg.as_bytes(policy=policy.SMTP)
