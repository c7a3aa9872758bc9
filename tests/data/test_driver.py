"""pbem.store.driver: a hot statement run through the driver does what Connection.execute
does with it (the same rows, dates written alike, lists of any length), on SQLite and on
PostgreSQL, and one whose columns would take Python-side defaults is refused."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import bindparam, insert, select, update
from sqlmodel import col

from pbem.store.db import open_database
from pbem.store.driver import Hot
from pbem.store.models import OutboundBody, OutboundMail

NOW = datetime(2026, 12, 6, 12, 0, 30, 123456, tzinfo=UTC)


def values(n: int) -> dict[str, object]:
    return {"message_id": f"<m{n}@x.test>", "kind": "help", "mail_from": "a@x.test",
            "rcpts_json": '["b@x.test"]', "game_id": None,
            "seat": None, "turn": None, "inbound_id": None, "status": "pending",
            "attempts": 0, "next_attempt_at": NOW, "created_at": NOW, "bounce_token": None}


def test_a_hot_statement_writes_and_reads_as_core_does(database: str) -> None:
    engine = open_database(database)
    hot_insert = Hot(insert(OutboundMail).returning(col(OutboundMail.id)))
    by_ids = select(OutboundMail.__table__).where(  # type: ignore[attr-defined]
        col(OutboundMail.id).in_(bindparam("ids", expanding=True))).order_by(col(OutboundMail.id))
    hot_read = Hot(select(col(OutboundMail.id), col(OutboundBody.raw)).where(
        col(OutboundMail.id).in_(bindparam("ids", expanding=True)),
        col(OutboundBody.mail_id) == col(OutboundMail.id)).order_by(
        col(OutboundMail.id)), lists=["ids"])
    with engine.begin() as conn:
        hot = [hot_insert(conn, values(n)).scalar_one() for n in range(3)]
        core = [conn.execute(insert(OutboundMail).returning(col(OutboundMail.id)),
                             values(n)).scalar_one() for n in range(3, 6)]
        conn.execute(insert(OutboundBody), [{"mail_id": i, "raw": b"raw\x00bytes"}
                                            for i in hot + core])
        rows = conn.execute(by_ids, {"ids": hot + core}).mappings().all()
        # the same columns, dates included, whichever way the row was written
        assert [{k: v for k, v in r.items() if k not in ("id", "message_id")}
                for r in rows[:3]] == [{k: v for k, v in r.items()
                                        if k not in ("id", "message_id")} for r in rows[3:]]
        assert rows[0]["created_at"].replace(tzinfo=UTC) == NOW
        for ids in ([hot[0]], hot, hot + core, []):   # an IN of each length, and of none
            assert [tuple(r) for r in hot_read(conn, {"ids": ids})] == \
                [(i, b"raw\x00bytes") for i in ids]
        stamp = Hot(update(OutboundMail).where(col(OutboundMail.id) == bindparam("row"))
                    .values(sent_at=bindparam("when")))
        stamp.many(conn, [{"row": i, "when": NOW} for i in core])
        sent = conn.execute(select(col(OutboundMail.sent_at)).where(
            col(OutboundMail.id).in_(core))).scalars().all()
        assert [s.replace(tzinfo=UTC) for s in sent] == [NOW] * 3
        # one parameter (taken alone, not as a tuple), and one beside a constant
        one = Hot(select(col(OutboundMail.id)).where(col(OutboundMail.message_id) ==
                                                     bindparam("m")))
        assert one(conn, {"m": "<m4@x.test>"}).scalar_one() == core[1]
        pending = Hot(select(col(OutboundMail.id)).where(
            col(OutboundMail.status) == "pending", col(OutboundMail.id) == bindparam("row")))
        assert pending(conn, {"row": hot[2]}).scalar_one() == hot[2]
    engine.dispose()


def test_a_statement_whose_defaults_python_would_fill_is_refused(tmp_path) -> None:
    engine = open_database(f"sqlite:///{tmp_path / 'pbem.db'}")
    partial = {k: v for k, v in values(1).items() if k not in ("status", "attempts")}
    with engine.begin() as conn, pytest.raises(ValueError, match="give every column"):
        Hot(insert(OutboundMail))(conn, partial)
    engine.dispose()
