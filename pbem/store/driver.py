"""The hot statements of a mail's handling run at the driver's cost.

A Core statement of the order path (``Hot``) is compiled once for each dialect and each
shape of its parameters (the names given, the length of each list: an IN of two ids is
another text than one of three), with the parameters' order and the bind processors that
SQLAlchemy's own execution would apply (``SQLCompiler.construct_expanded_state``, its
public API since 2.0). Each run puts the values in that order and hands the text to
``Connection.exec_driver_sql``: no look-up in the compile cache and no expansion of a
list parameter at each run (the replied mail's read on SQLite: about 440 µs through
``Connection.execute``, 150 µs so). The values go through the bind processors of their
types (``TypeEngine.bind_processor``: a date on SQLite written as SQLAlchemy writes it).
The engine's events still see every statement
(``before_cursor_execute``: pbem.store.engines' NUL replacement, a bench's counts).

Rows come back as the driver gives them, without SQLAlchemy's result processing: a
statement run here reads no column that needs it (a date or a time on SQLite), only ids,
text, numbers and bytes. Nothing is kept but the compiled texts, in the ``Hot`` itself.

``unindexed`` shapes a term of such a statement for SQLite's planner (see it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

from sqlalchemy import Connection, CursorResult
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement


@dataclass(frozen=True)
class _Value:
    """Where a compiled parameter's value comes from: ``name`` of the run's parameters
    (``index``: an item of that list), or a constant of the statement."""

    name: str | None
    index: int | None = None
    constant: Any = None


@dataclass(frozen=True)
class _Text:
    """A statement compiled for one dialect and one shape of parameters."""

    sql: str
    names: tuple[str, ...] | None      # the positions' names (qmark), None: by name
    values: dict[str, _Value]
    processors: dict[str, Callable[[Any], Any]]
    keys: tuple[str, ...] = field(init=False)     # the values' keys in the text's order
    take: Callable[[Mapping[str, Any]], Any] | None = field(init=False)
    plan: tuple[tuple[str | None, int | None, Any], ...] = field(init=False)
    processed: tuple[tuple[int, Callable[[Any], Any]], ...] = field(init=False)

    def __post_init__(self) -> None:
        keys = self.names if self.names is not None else tuple(self.values)
        # the common case, every value a run's parameter as it is named: taken in one
        # call (itemgetter), the few with a bind processor (a date) processed after
        plain = all(self.values[k].name == k and self.values[k].index is None for k in keys)
        object.__setattr__(self, "keys", keys)   # (frozen: set once, here)
        object.__setattr__(self, "take", itemgetter(*keys) if plain and keys else None)
        object.__setattr__(self, "plan", tuple(
            (self.values[k].name, self.values[k].index, self.values[k].constant) for k in keys))
        object.__setattr__(self, "processed", tuple(
            (at, self.processors[key]) for at, key in enumerate(keys) if key in self.processors))

    def arguments(self, params: Mapping[str, Any]) -> tuple[Any, ...] | dict[str, Any]:
        keys, take = self.keys, self.take
        if take is not None:
            taken = take(params)
            found = [taken] if len(keys) == 1 else list(taken)
        else:   # a list's items, constants of the statement
            found = [constant if name is None else params[name] if index is None
                     else params[name][index] for name, index, constant in self.plan]
        for at, process in self.processed:
            found[at] = process(found[at])
        if self.names is not None:
            return tuple(found)
        return dict(zip(keys, found, strict=True))


class _Marker:
    """Stands for a run's parameter while the statement is compiled."""

    def __init__(self, name: str, index: int | None = None) -> None:
        self.name, self.index = name, index


class Hot:
    """A Core statement run through ``Connection.exec_driver_sql`` (see the module).
    ``lists``: the names of its list parameters (``bindparam(..., expanding=True)``)."""

    def __init__(self, statement: ClauseElement, lists: Sequence[str] = ()) -> None:
        self.statement = statement
        self.lists = tuple(lists)
        self._texts: dict[tuple[Any, ...], _Text] = {}

    def __call__(self, conn: Connection, params: Mapping[str, Any]) -> CursorResult[Any]:
        """Run the statement once with ``params`` on ``conn``."""
        text = self._text(conn, params)
        return conn.exec_driver_sql(text.sql, text.arguments(params))

    def many(self, conn: Connection, params: Sequence[Mapping[str, Any]]) -> CursorResult[Any]:
        """Run it once for each of ``params`` (one shape, no lists), as the driver's
        executemany: one statement sent (psycopg pipelines it)."""
        text = self._text(conn, params[0])
        return conn.exec_driver_sql(text.sql, [text.arguments(p) for p in params])

    def _text(self, conn: Connection, params: Mapping[str, Any]) -> _Text:
        key = (conn.dialect.name, tuple(params), *(len(params[n]) for n in self.lists))
        found = self._texts.get(key)
        if found is None:
            found = self._texts[key] = self._compile(conn, params)
        return found

    def _compile(self, conn: Connection, params: Mapping[str, Any]) -> _Text:
        compiled = self.statement.compile(dialect=conn.dialect, column_keys=list(params))
        assert isinstance(compiled, SQLCompiler)
        if compiled.insert_prefetch or compiled.update_prefetch:   # run by the ORM's context
            raise ValueError(f"give every column a value: {compiled.insert_prefetch} "
                             f"{compiled.update_prefetch} have defaults computed in Python")
        markers = {name: ([_Marker(name, n) for n in range(len(value))]
                          if name in self.lists else _Marker(name))
                   for name, value in params.items()}
        state = compiled.construct_expanded_state(markers)
        values = {key: (_Value(value.name, value.index) if isinstance(value, _Marker)
                        else _Value(None, constant=value))
                  for key, value in state.parameters.items()}
        names = tuple(state.positiontup) if state.positiontup is not None else None
        assert "_Marker" not in state.statement, "a parameter rendered into the text"
        # the expanded lists' processors come with the state, the others from their types
        # as this dialect has them (a date on SQLite: text without its zone)
        processors: dict[str, Callable[[Any], Any]] = dict(state.processors)
        for key, bind in compiled.binds.items():
            if key in values and key not in processors:
                process = bind.type.dialect_impl(conn.dialect).bind_processor(conn.dialect)
                if process is not None:
                    processors[key] = process
        return _Text(state.statement, names, values, processors)


def unindexed(column: Any) -> Any:
    """A text ``column`` as a term no index serves (``column || ''``), for a condition
    beside a look-up by ids: without statistics SQLite's planner prefers an index of the
    column to four ids or more, and walks all its entries of that value (every pending
    mail, by the (status, sent_at) index: 1.9 ms at 20,000 pending, where the ids take
    17 µs). PostgreSQL finds the ids by its primary key either way."""
    return column + ""
