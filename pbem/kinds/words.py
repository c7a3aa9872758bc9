"""Telling a move to one reader: "you" for the reader's own seat, "player 3" for the others.

Every kind's report notes are made once for all (a watcher's report) and once for each
seat, so a player reads "you announce" where the others read "player 3 announces".
"""

from __future__ import annotations


class Words:
    """A round told to one reader: "you" for the reader's own seat (None: told to all)."""

    def __init__(self, you: int | None = None) -> None:
        self.you = you

    def who(self, seat: int) -> str:
        return "you" if seat == self.you else f"player {seat}"

    def whose(self, seat: int) -> str:
        return "your" if seat == self.you else f"player {seat}'s"

    def verb(self, seat: int, mine: str, theirs: str) -> str:
        """The verb after who(seat): "you say" / "player 3 says"."""
        return mine if seat == self.you else theirs


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]
