"""Several pollers on one folder (``[imap] fetchers``): each polls a share of the mail by
UID (pbem.mail.imap.Share), against the real Dovecot of the ``mailstack`` fixture; and
pbem.runner.server.Server.fetch leases each share to one worker at a time."""
from __future__ import annotations

import email
import logging
import threading
from datetime import UTC, datetime, timedelta
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlmodel import Session, select

from pbem.config import ConfigError, ImapSettings, Settings
from pbem.mail.imap import FetchedMail, ImapInbox, Share
from pbem.runner.server import Server
from pbem.store.models import InboundMail, ServerState

SERVER = "bluff@bluff.test"


@given(st.integers(1, 64), st.integers(1, 10**9))
def test_every_uid_is_in_exactly_one_share(of: int, uid: int) -> None:
    assert [n for n in range(of) if Share(n, of).holds(uid)] == [uid % of]


def test_a_share_outside_its_count_and_a_bad_fetchers_setting_are_refused() -> None:
    with pytest.raises(ValueError):
        Share(2, 2)
    with pytest.raises(ConfigError, match="fetchers"):
        ImapSettings("localhost", fetchers=0)


def deliver(mailstack: Any, count: int, tag: str) -> None:
    raws = []
    for n in range(count):
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = "p1@bluff.test", SERVER, f"{tag} {n}"
        msg["Message-ID"] = email.utils.make_msgid(domain="bluff.test")
        msg.set_content("HELP\n")
        raws.append(msg.as_bytes(policy=policy.SMTP))
    mailstack.append("bluff", *raws)


def left_in(mailstack: Any, folder: str) -> list[int]:
    client = mailstack.imap("bluff")
    try:
        client.select_folder(folder)
        return sorted(client.search(["NOT", "DELETED"]))
    finally:
        client.logout()


@pytest.mark.mailstack
def test_two_pollers_at_once_each_store_and_move_only_their_share(mailstack: Any) -> None:
    mailstack.clear("bluff")
    deliver(mailstack, 40, "burst")
    waiting = left_in(mailstack, "INBOX")
    assert len(waiting) == 40
    stored: dict[int, list[FetchedMail]] = {0: [], 1: []}
    errors: list[BaseException] = []

    def poll(number: int) -> None:
        inbox = ImapInbox(mailstack.imap_host, mailstack.imap_port, SERVER, "secret",
                          ssl=False, timeout=5)
        try:   # small groups, so the two pollers' fetches and moves interleave
            inbox.poll(stored[number].append, batch=5, share=Share(number, 2))
        except BaseException as exc:
            errors.append(exc)
        finally:
            inbox.close()
    threads = [threading.Thread(target=poll, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert not errors
    for number, mails in stored.items():
        assert mails and all(m.uid % 2 == number for m in mails)
    assert sorted(m.uid for ms in stored.values() for m in ms) == waiting   # each once
    assert left_in(mailstack, "INBOX") == []
    assert len(left_in(mailstack, "pbem-done")) == 40


@pytest.mark.mailstack
def test_a_fetch_leaves_a_share_another_worker_holds_and_takes_the_others(
        mailstack: Any, tmp_path: Path, database: str,
        caplog: pytest.LogCaptureFixture) -> None:
    mailstack.clear("bluff")
    deliver(mailstack, 12, "shared")
    settings = Settings(
        database=database, address=SERVER, referee="referee@bluff.test", referee_key="k",
        outbox_dir=tmp_path / "out",
        imap=ImapSettings(mailstack.imap_host, mailstack.imap_port, ssl=False,
                          username=SERVER, password="secret", fetchers=2))
    server = Server(settings)
    until = datetime.now(UTC) + timedelta(minutes=5)
    other = "elsewhere:1:cafe"   # a live worker of another host, fetching share 1 of 2
    with Session(server.engine) as session:
        session.add(ServerState(key="lease:fetch share 1 of 2", value=(
            f'{{"owner": "{other}", "until": "{until.isoformat()}"}}')))
        session.commit()

    def uids() -> list[int]:
        with Session(server.engine) as session:
            return sorted(int(str(key).rsplit("/", 1)[1]) for key in session.exec(
                select(InboundMail.imap_key)))
    try:
        with caplog.at_level(logging.INFO, logger="pbem.runner.fetching"):
            fetched = [server.fetch(), server.fetch()]   # one tick a share
        assert sorted(fetched) == [0, 6]
        assert f"another process ({other}) is fetching share 1 of 2 of the mail" in caplog.text
        assert uids() and all(uid % 2 == 1 for uid in uids())   # share 2 of 2: odd UIDs
        assert len(left_in(mailstack, "INBOX")) == 6             # share 1's wait for it
        with Session(server.engine) as session:                  # its holder is gone
            session.delete(session.get(ServerState, "lease:fetch share 1 of 2"))
            session.commit()
        assert sorted([server.fetch(), server.fetch()]) == [0, 6]
        assert len(uids()) == 12 and left_in(mailstack, "INBOX") == []
    finally:
        server.close()
        server.engine.dispose()
