"""The web pages' view of the database: read-only, enforced by the database itself.

Every connection of the web app is made read-only when it opens (SQLite
``PRAGMA query_only``, a PostgreSQL session whose transactions are read only),
so nothing the web app does, by mistake or by a crafted request, can change a
game. The web app never migrates the schema either: ``pbem serve`` / ``tick``
do; a database behind the code's schema is refused with a clear message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from alembic.script import ScriptDirectory
from sqlalchemy import Engine, event, text
from sqlmodel import create_engine

from pbem.store.db import alembic_config, revisions
from pbem.text.errors import PbemError


class DatabaseNotReady(PbemError):
    """The database is missing or not migrated; the message says what to do."""


def _read_only_sqlite(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")   # wait out the referee's write lock
    cursor.execute("PRAGMA query_only=ON")
    cursor.close()


def _read_only_postgres(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
    cursor.close()
    dbapi_connection.commit()


def open_read_only(url: str) -> Engine:
    """An engine on the server's database whose connections cannot write."""
    if url.startswith("sqlite:///") and ":memory:" not in url:
        path = Path(url.removeprefix("sqlite:///")).expanduser()
        if not path.exists():
            raise DatabaseNotReady(f"there is no database at {path}: start the server "
                                   "(pbem serve or pbem tick) once to create it")
    engine = create_engine(url, pool_pre_ping=True)
    listener = {"sqlite": _read_only_sqlite, "postgresql": _read_only_postgres}.get(
        engine.dialect.name)
    if listener is not None:
        event.listen(engine, "connect", listener)
    check_schema(engine)
    return engine


def check_schema(engine: Engine) -> None:
    """Refuse a database that the server has not migrated to this code's schema."""
    head = ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
    try:
        with engine.connect() as conn:
            current = conn.execute(text("SELECT version_num FROM alembic_version")).scalar()
    except Exception as exc:   # no such table, or no database at all
        raise DatabaseNotReady(f"the database has no pbem schema ({exc.__class__.__name__}): "
                               "start the server (pbem serve or pbem tick) once") from exc
    if current != head and current not in revisions():
        raise DatabaseNotReady(f"the database is at schema {current}, newer than this code "
                               f"knows ({head}): a newer pbem has upgraded it; run that one")
    if current != head:
        raise DatabaseNotReady(f"the database is at schema {current}, this code needs {head}: "
                               "run pbem db upgrade (or pbem tick, or restart pbem serve) "
                               "to migrate it first")
