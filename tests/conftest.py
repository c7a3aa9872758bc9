"""Shared pytest fixtures. Keep each fixture small and self-contained; add new
ones in their own section below."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from pbem.server import Server
from tests.deskkit import Clock, make_server
from tests.mailstack import MailStack, dovecot_available

# --------------------------------------------------------------------------- mail stack


@pytest.fixture(scope="session")
def mailstack() -> Iterator[MailStack]:
    """One private Dovecot (IMAP + LMTP) + SMTP front end for the whole session.

    Tests share it: clear() the mailboxes a test uses before using them.
    Without Dovecot the tests are skipped, except under CI (env CI set), where a
    missing Dovecot is an error of the CI setup and fails loudly.
    """
    if not dovecot_available():
        msg = ("Dovecot (dovecot-imapd + dovecot-lmtpd) is not installed; the "
               "mailstack tests need it (apt-get install dovecot-imapd dovecot-lmtpd)")
        if os.environ.get("CI"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    stack = MailStack().start()
    try:
        yield stack
    finally:
        stack.stop()


# --------------------------------------------------------------------------- referee's desk


@pytest.fixture
def clock() -> Clock:
    """A clock the test moves by hand, at tests.deskkit.T0 (modules may define their own)."""
    return Clock()


@pytest.fixture
def server(tmp_path: Path, clock: Clock) -> Server:
    """The desk tests' server on SQLite in tmp_path with the .eml outbox, on `clock`."""
    return make_server(tmp_path, clock)
