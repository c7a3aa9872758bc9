"""The registry of game kinds: the one table the server looks kinds up in.

Adding a kind touches only its module, its templates and this table.

The pure core: kinds import the rules (pbem.rules) and the order language
(pbem.orders), never the database, the mail or the server.
"""

from __future__ import annotations

from typing import Protocol

from pbem.kinds.base import GameKind, Resolution, TakenOrder, Understood
from pbem.kinds.classic import CLASSIC
from pbem.kinds.cup import CUP
from pbem.kinds.postal import POSTAL


class HasKind(Protocol):
    """Anything that names its game kind (a Game row does)."""

    @property
    def kind(self) -> str: ...


KINDS: dict[str, GameKind] = {kind.name: kind for kind in (POSTAL, CLASSIC, CUP)}


def kind_named(name: str) -> GameKind:
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown game kind '{name}' (kinds: {', '.join(KINDS)})") from None


def kind_of(game: HasKind) -> GameKind:
    return kind_named(game.kind)


__all__ = ["KINDS", "GameKind", "HasKind", "Resolution", "TakenOrder", "Understood",
           "kind_named", "kind_of"]
