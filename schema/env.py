"""Alembic environment: migrations run on the engine pbem hands over (pbem.store.db).

All the migrations of a run share one transaction (Alembic joins the one begun here),
committed at the end: on PostgreSQL, and on SQLite, whose engine begins every
transaction itself so that DDL is transactional (pbem.store.engines.make_engine). A run stopped
anywhere leaves the schema as it was before it.
"""

from alembic import context
from sqlalchemy import create_engine, event
from sqlmodel import SQLModel

import pbem.store.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from pbem.store.faults import crash_point

config = context.config
target_metadata = SQLModel.metadata


def _statement_run(*_args: object) -> None:
    crash_point("schema-statement")   # the crash tests stop the schema work here


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.begin() as connection:
        event.listen(connection, "after_cursor_execute", _statement_run)
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
