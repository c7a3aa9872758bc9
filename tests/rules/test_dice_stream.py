"""The dice stream is the published construction, byte for byte (a player who recomputes
the rolls from the revealed seed must get the referee's): held against a plain reference
of it written from pbem.rules.dice's docstring, as the stream was written before it read
its blocks by index."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator

from hypothesis import given
from hypothesis import strategies as st

from pbem.rules.dice import DiceStream, seed_from_number


def reference_bytes(seed: bytes, label: str) -> Iterator[int]:
    """Block i of label L is HMAC-SHA256(seed, "L/i"), its bytes in order."""
    block = 0
    while True:
        yield from hmac.new(seed, f"{label}/{block}".encode(), hashlib.sha256).digest()
        block += 1


def reference_below(source: Iterator[int], bound: int) -> int:
    limit = 256 - 256 % bound   # bytes at or past it skipped: each value equally likely
    return next(byte for byte in source if byte < limit) % bound


seeds = st.binary(min_size=16, max_size=64)
labels = st.text(max_size=30)


@given(seeds, labels, st.integers(min_value=0, max_value=200))
def test_dice_are_the_published_construction(seed: bytes, label: str, count: int) -> None:
    source = reference_bytes(seed, label)
    expected = tuple(reference_below(source, 6) + 1 for _ in range(count))
    assert DiceStream(seed).dice(label, count) == expected


@given(seeds, labels, st.lists(st.integers(), max_size=256))
def test_a_shuffle_is_the_published_construction(seed: bytes, label: str,
                                                  items: list[int]) -> None:
    """Fisher-Yates, each swap's index drawn below its bound (at most 256: the list's
    length)."""
    source = reference_bytes(seed, label)
    expected = list(items)
    for i in range(len(expected) - 1, 0, -1):
        j = reference_below(source, i + 1)
        expected[i], expected[j] = expected[j], expected[i]
    assert DiceStream(seed).shuffle(label, items) == expected


def test_a_known_seed_rolls_known_dice() -> None:
    """Pinned figures, so a change of the construction and its reference together shows."""
    stream = DiceStream(seed_from_number(7))
    assert stream.dice("hand/1/1", 10) == (1, 6, 2, 6, 5, 4, 2, 4, 3, 4)
    assert stream.shuffle("seats", [1, 2, 3, 4, 5]) == [2, 1, 4, 5, 3]
