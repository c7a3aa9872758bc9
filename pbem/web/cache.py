"""A small thread-safe memo (least recently used out first) for what the web app may
keep between requests: replays of finished games, their verification, built pages.

Keys always include what makes the value change (a game's turn, its page version), so
nothing stale is ever served; the size only bounds the memory. The memos hold a page's
data, never the drawn page: its messages are said in each reader's language when the
page is drawn (pbem.web.language), so the same data serves every language.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class Memo(Generic[V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable, make: Callable[[], V]) -> V:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]
        value = make()   # outside the lock: two threads may both make it, both right
        with self._lock:
            self._items[key] = value
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._items)
