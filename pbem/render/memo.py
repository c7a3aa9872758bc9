"""Remembered answers of the pure functions a report calls over and over (its filters,
its charts' percentages)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def remembered(maxsize: int) -> Callable[[F], F]:
    """Remember a pure function's answers: a turn's reports wrap, date, draw and count the
    same things over and over (one ``wrap`` of a long line costs ~8 µs, a look-up ~0.2 µs).
    ``typed``: 1, True and "1" are different faces.  An unhashable argument (a list)
    is simply not remembered."""
    def decorate(fn: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize, typed=True)(fn)

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return cached(*args, **kwargs)
            except TypeError:   # unhashable (or fn's own error, which it raises again)
                return fn(*args, **kwargs)
        call.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return call  # type: ignore[return-value]
    return decorate
