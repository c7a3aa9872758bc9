"""pbem.store.claims.claim_many: a page of rows claimed by one statement, each row by one claimer
only, even by two threads of one process (they share the claimer's name)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime

from sqlalchemy import update
from sqlmodel import Session, col, select

from pbem.store import claims
from pbem.store.db import open_database
from pbem.store.models import OutboundMail

NOW = datetime(2026, 12, 2, tzinfo=UTC)


def queued(engine, n: int) -> list[int]:
    with Session(engine) as session:
        rows = [OutboundMail(message_id=f"<m{i}@x.test>", kind="help", mail_from="r@x.test",
                             rcpts_json='["p@x.test"]', next_attempt_at=NOW,
                             created_at=NOW) for i in range(n)]
        session.add_all(rows)
        session.commit()
        return [r.id for r in rows if r.id is not None]


def test_a_row_someone_took_meanwhile_is_not_ours_and_the_rest_keep_their_order(
        database: str) -> None:
    engine = open_database(database)
    ids = queued(engine, 6)
    with Session(engine) as session:   # another process took the third after we looked
        session.execute(update(OutboundMail).where(col(OutboundMail.id) == ids[2])
                        .values(claimed_by="elsewhere:1:abcd", claimed_at=NOW))
        session.commit()
    seen = [(i, None) for i in reversed(ids)]
    with Session(engine) as session:
        got = claims.claim_many(session, OutboundMail, seen, NOW, status="pending")
        session.commit()
    assert got == [i for i in reversed(ids) if i != ids[2]]
    with Session(engine) as session:
        owners = {r.id: r.claimed_by for r in session.exec(select(OutboundMail))}
    assert owners[ids[2]] == "elsewhere:1:abcd"
    assert {owners[i] for i in got} == {claims.me()}


def test_two_threads_of_one_process_never_get_the_same_row(database: str) -> None:
    engine = open_database(database)
    ids = queued(engine, 40)
    got: list[list[int]] = []
    start = threading.Barrier(2)

    def claimer() -> None:
        start.wait()
        for first in range(0, 40, 10):    # pages seen free by both threads
            with Session(engine) as session:
                page = [(i, None) for i in ids[first:first + 10]]
                got.append(claims.claim_many(session, OutboundMail, page, NOW,
                                             status="pending"))
                session.commit()

    threads = [threading.Thread(target=claimer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    claimed = [i for page in got for i in page]
    assert sorted(claimed) == ids     # each row once, by one of them
