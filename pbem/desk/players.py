"""Player desk commands (placeholder: filled in by the referee's-desk work)."""

from __future__ import annotations

from pbem.desk import PlayerAction
from pbem.orders import Command

COMMANDS: tuple[Command, ...] = ()
ACTIONS: dict[str, PlayerAction] = {}
NEEDS_PLAYER: set[str] = set()
