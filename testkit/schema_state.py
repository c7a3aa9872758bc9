"""What a database's schema and rows are, for the tests and bench that kill schema work.

``filled_at_first_revision(url, rows)`` makes the database at pbem's first schema
revision with ``rows`` rows in every table (values made from the column types, each
row's foreign keys pointing at the rows of the same number), as an old database in
use would be. ``schema_of(url)`` is what SQLAlchemy's inspector sees (columns, primary
keys, indexes, foreign keys, unique constraints: what must equal a fresh database's);
``rows_of(url, columns)`` reads the rows back, columns as given, for comparing (a column a
later revision moved to a table of its own read from there: MOVED).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from pbem.store import db, engines

Schema = dict[str, dict[str, Any]]
Columns = dict[str, list[str]]   # table -> the columns to read back
# columns a later revision moved to a table of their own, keyed by the row's id (0016)
MOVED = {("inbound_mail", "raw"): "inbound_raw", ("outbound_mail", "raw"): "outbound_body"}


def _value(column: sa.Column[Any], n: int) -> object:
    python_type = None
    try:
        python_type = column.type.python_type
    except NotImplementedError:
        pass
    if python_type is bool:
        return n % 2 == 0
    if python_type is int:
        return n
    if python_type is float:
        return n + 0.5
    if python_type is bytes:
        return f"raw {n}\x00\xff".encode("latin-1")
    if python_type is datetime:
        return datetime(2026, 11, 1, 12, 0, n % 60, tzinfo=UTC).replace(tzinfo=None)
    return f"{column.name} {n}"


def filled_at_first_revision(url: str, rows: int) -> Columns:
    """The database at the first revision, ``rows`` rows a table; the columns filled."""
    engine = db.open_database(url, migrate=False)
    try:
        db.upgrade(engine, db.revisions()[0])
        meta = sa.MetaData()
        meta.reflect(engine)
        filled: Columns = {}
        with engine.begin() as conn:
            for table in meta.sorted_tables:   # parents first
                if table.name == "alembic_version":
                    continue
                filled[table.name] = [c.name for c in table.columns]
                conn.execute(table.insert(), [
                    {c.name: _value(c, n) for c in table.columns} for n in range(1, rows + 1)])
        return filled
    finally:
        engine.dispose()


def rows_of(url: str, columns: Columns) -> dict[str, list[tuple[Any, ...]]]:
    engine = engines.make_engine(url)
    try:
        meta = sa.MetaData()
        present = set(sa.inspect(engine).get_table_names())
        meta.reflect(engine, only=list(columns) + sorted(set(MOVED.values()) & present))

        def column(table: sa.Table, name: str) -> Any:
            if name in table.c:
                return table.c[name]
            apart = meta.tables[MOVED[(table.name, name)]]
            return sa.select(apart.c[name]).where(
                apart.c.mail_id == table.c.id).scalar_subquery()

        with engine.connect() as conn:
            return {name: [tuple(row) for row in conn.execute(
                        sa.select(*(column(meta.tables[name], c) for c in names))
                        .order_by(*meta.tables[name].primary_key.columns))]
                    for name, names in columns.items()}
    finally:
        engine.dispose()


def schema_of(url: str) -> Schema:
    """Every table's columns, primary key, indexes, foreign keys and unique constraints."""
    engine = engines.make_engine(url)
    try:
        inspector = sa.inspect(engine)
        schema: Schema = {}
        for table in sorted(inspector.get_table_names()):
            schema[table] = {
                "columns": [(c["name"], str(c["type"]), c["nullable"])
                            for c in inspector.get_columns(table)],
                "primary key": inspector.get_pk_constraint(table)["constrained_columns"],
                "indexes": sorted((i["name"], tuple(i["column_names"]), bool(i["unique"]))
                                  for i in inspector.get_indexes(table)),
                "foreign keys": sorted((tuple(f["constrained_columns"]), f["referred_table"],
                                        tuple(f["referred_columns"]))
                                       for f in inspector.get_foreign_keys(table)),
                "unique": sorted(tuple(u["column_names"])
                                 for u in inspector.get_unique_constraints(table)),
            }
        return schema
    finally:
        engine.dispose()


def revision_of(url: str) -> str | None:
    engine = engines.make_engine(url)
    try:
        return db.current_revision(engine)
    finally:
        engine.dispose()
