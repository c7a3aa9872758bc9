"""Dice faces and the provably fair dice stream.

Every roll of a game comes from one secret seed. A roll is keyed by a label
that names what it is for ("hand/2/4": mini-game 2, seat 4), so a die
depends only on the seed and on which roll it is, never on the order in
which the referee happened to process mail. The referee publishes
``commitment(seed)`` (SHA-256 of the seed) before the first roll and reveals
the seed when the game ends; anyone can then recompute every roll.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, TypeVar

Face = int
STAR: Final = 6
NUMBER_FACES: Final = (1, 2, 3, 4, 5)
FACES: Final = (1, 2, 3, 4, 5, STAR)

T = TypeVar("T")


def face_json(face: Face) -> int | str:
    """A face as the JSON views and records write it: 1..5 or "*"."""
    return "*" if face == STAR else face


def face_from_json(value: object) -> Face:
    if value == "*":
        return STAR
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5:
        return value
    raise ValueError(f"not a die face: {value!r}")


def face_symbol(face: Face) -> str:
    return "*" if face == STAR else str(face)


@dataclass(frozen=True)
class Die:
    """One die. A super die (anniversary edition) counts twice in every count."""

    face: Face
    super: bool = False

    @property
    def weight(self) -> int:
        return 2 if self.super else 1


def new_seed() -> bytes:
    return secrets.token_bytes(32)


def seed_from_number(number: int) -> bytes:
    """A reproducible seed for a referee who asked for SEED <n>.

    Such a seed is guessable from its commitment by trying small numbers,
    so a referee-chosen seed is for tests and tournaments with a trusted
    referee only.
    """
    return hashlib.sha256(f"pbem-seed/{number}".encode()).digest()


def commitment(seed: bytes) -> str:
    """The published commitment: hex SHA-256 of the raw seed bytes."""
    return hashlib.sha256(seed).hexdigest()


_DIE_LIMIT: Final = 256 - 256 % 6   # bytes from it on are skipped: each face equally likely


class DiceStream:
    """Deterministic, label-keyed random draws from a secret seed.

    Block i of label L is HMAC-SHA256(seed, "L/i"). Bytes >= 252 are
    skipped (rejection sampling), so each die is exactly uniform: the die is
    byte % 6 + 1, with 6 the star. The same construction with a different
    modulus serves shuffles (seat draw).
    """

    def __init__(self, seed: bytes) -> None:
        if len(seed) < 16:
            raise ValueError("a dice seed needs at least 16 bytes")
        self._seed = seed

    def _bytes(self, label: str) -> ByteSource:
        return ByteSource(self._seed, label)

    def dice(self, label: str, count: int) -> tuple[Face, ...]:
        # ByteSource.below(6) inlined: a game's start rolls 25 hands (its replay too)
        faces: list[Face] = []
        block = 0
        while len(faces) < count:
            for byte in hmac.digest(self._seed, f"{label}/{block}".encode(), "sha256"):
                if byte < _DIE_LIMIT:
                    faces.append(byte % 6 + 1)
                    if len(faces) == count:
                        break
            block += 1
        return tuple(faces)

    def shuffle(self, label: str, items: Sequence[T]) -> list[T]:
        """Fisher-Yates shuffle driven by the stream."""
        result = list(items)
        source = self._bytes(label)
        for i in range(len(result) - 1, 0, -1):
            j = source.below(i + 1)
            result[i], result[j] = result[j], result[i]
        return result


class ByteSource:
    """Unbiased small integers from an HMAC-SHA256 counter stream."""

    def __init__(self, seed: bytes, label: str) -> None:
        self._seed = seed
        self._label = label
        self._block = 0
        self._buffer = b""
        self._at = 0   # the next byte of the block: an index, not a slice (a copy a byte)

    def _next_byte(self) -> int:
        if self._at == len(self._buffer):
            message = f"{self._label}/{self._block}".encode()
            self._buffer = hmac.digest(self._seed, message, "sha256")
            self._block += 1
            self._at = 0
        byte = self._buffer[self._at]
        self._at += 1
        return byte

    def below(self, bound: int) -> int:
        """A uniform integer in [0, bound), bound <= 256."""
        if not 1 <= bound <= 256:
            raise ValueError("bound must be in 1..256")
        limit = 256 - 256 % bound
        while True:
            byte = self._next_byte()
            if byte < limit:
                return byte % bound


def hand_label(minigame: int, seat: int) -> str:
    return f"hand/{minigame}/{seat}"


def reroll_label(minigame: int, seat: int, nth: int) -> str:
    return f"reroll/{minigame}/{seat}/{nth}"


SEATS_LABEL: Final = "seats"
