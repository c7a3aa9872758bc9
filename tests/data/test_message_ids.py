"""A queued mail's Message-ID (pbem.outbox.queue.ordered_token): in the order the mails
were queued, so that outbound_mail's unique index on it grows at its end, and as hard to
guess as before (128 random bits)."""

from __future__ import annotations

import re
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from pbem.outbox import Origin, enqueue
from pbem.outbox.queue import ordered_token
from pbem.store.db import open_database
from pbem.store.work import Work

START = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ID = re.compile(r"<pbem\.confirm\.([0-9a-f]{14})([0-9a-f]{32})@x\.test>")


@given(st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(4000, 1, 1)),
       st.timedeltas(min_value=timedelta(microseconds=1), max_value=timedelta(days=3000)))
def test_a_later_mail_has_a_later_token(at: datetime, later: timedelta) -> None:
    first = ordered_token(at.replace(tzinfo=UTC))
    second = ordered_token((at + later).replace(tzinfo=UTC))
    assert len(first) == len(second) == 46
    assert first < second


def test_two_tokens_of_the_same_moment_differ_in_their_random_bits() -> None:
    tokens = {ordered_token(START) for _ in range(1000)}
    assert len(tokens) == 1000
    assert len({t[:14] for t in tokens}) == 1
    assert len({t[14:] for t in tokens}) == 1000


def test_the_message_ids_of_queued_mails_sort_in_the_queues_order(tmp_path: Path) -> None:
    """600 mails queued a second apart, a transaction each: their Message-IDs sort in the
    queue's order (each new entry of the unique index goes after the last), the time each
    was queued in its token's first 14 hex digits."""
    path = tmp_path / "pbem.db"
    engine = open_database(f"sqlite:///{path}")
    origin = Origin("bluff@x.test")
    for n in range(600):
        with Work(engine) as work:
            enqueue(work, origin, kind="confirm", to=f"p{n}@x.test", subject="order received",
                    text="ok\n", html=None, now=START + timedelta(seconds=n))
            work.commit()
    engine.dispose()
    plain = sqlite3.connect(path)
    try:
        ids = [row[0] for row in plain.execute("SELECT message_id FROM outbound_mail ORDER BY id")]
        tokens = [ID.fullmatch(i) for i in ids]
        assert all(tokens)
        assert ids == sorted(ids)
        assert [int(m.group(1), 16) for m in tokens if m] == [
            (START - EPOCH) // timedelta(microseconds=1) + n * 1_000_000 for n in range(600)]
    finally:
        plain.close()
