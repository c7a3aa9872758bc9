"""Exceptions raised by the mail edges (IMAP in, SMTP out)."""
from __future__ import annotations

from pbem.text.errors import PbemError


class MailError(PbemError):
    """Base class for mail edge failures."""


class MailServiceUnavailable(MailError):
    """The mail server cannot be reached, refused the login, or dropped the
    connection. Nothing was lost; the caller should back off and try again."""
