"""Alembic environment: migrations run on the engine pbem hands over (pbem.db)."""

from alembic import context
from sqlalchemy import create_engine

import pbem.models  # noqa: F401  (registers the tables on SQLModel.metadata)
from sqlmodel import SQLModel

config = context.config
target_metadata = SQLModel.metadata


def run_migrations_online() -> None:
    engine = config.attributes.get("engine")
    if engine is None:
        engine = create_engine(config.get_main_option("sqlalchemy.url"))
    with engine.begin() as connection:
        context.configure(connection=connection, target_metadata=target_metadata,
                          render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run_migrations_online()
