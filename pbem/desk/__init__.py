"""The referee's desk: the commands beyond the moves of a game.

Each module here adds commands to one of the two tables and keeps their
actions beside them:

- referee commands (mail from the referee and `pbem admin`): ``schedule``
  (deadlines, pause, resume) and ``seats`` (remove, replace, order, preview,
  resend, cancel, rollback). ``pbem.admin`` assembles REFEREE_COMMANDS.
- player commands: ``players`` (join, leave, watch, say, absent) and
  ``turns`` (default, history, orders). ``player_commands()`` assembles them
  with the move orders; ``run_player_desk`` runs them.

A module exports COMMANDS (a tuple of pbem.orders.Command), ACTIONS (name ->
function) and, for player modules, NEEDS_PLAYER (names that need a known
player: a reply to a report or GAME + KEY).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlmodel import Session

from pbem.orders import PLAYER_COMMANDS, Command, Order

if TYPE_CHECKING:
    from pbem.kinds.base import GameKind
    from pbem.mail.read import InboundMessage
    from pbem.models import InboundMail
    from pbem.referee import Referee, Turnkey


@dataclass
class PlayerContext:
    """What a player desk command sees: the mail, who sent it (if known), the referee."""

    session: Session
    referee: "Referee"
    row: "InboundMail"
    msg: "InboundMessage"
    now: datetime
    who: "Turnkey | None"

    def answer(self, template: str, subject: str, context: dict[str, Any]) -> None:
        """Answer the sender (threaded to their mail)."""
        self.referee._answer(self.session, self.row, self.msg, template, subject, context,
                             who=self.who)


PlayerAction = Callable[[PlayerContext, Order], str]

# postal move orders live in pbem.orders.PLAYER_COMMANDS too; they come in through the kinds
MOVE_ONLY = {"BID", "CHALLENGE", "EXPOSE"}


def _player_modules() -> list[Any]:
    from pbem.desk import players, turns
    return [players, turns]


def move_commands(kind: "GameKind | None" = None) -> tuple[Command, ...]:
    """The move orders of a kind, or of every kind (before the mail's game is known)."""
    from pbem.kinds import KINDS
    seen: dict[str, Command] = {}
    for each in [kind] if kind is not None else KINDS.values():
        for command in each.commands:
            seen.setdefault(command.name, command)
    return tuple(seen.values())


def move_names() -> set[str]:
    return {c.name for c in move_commands()}


def player_commands(kind: "GameKind | None" = None) -> tuple[Command, ...]:
    """Every order a player may write: the moves (of the kind, or of every kind) and the
    desk commands."""
    moves = move_commands(kind)
    names = {c.name for c in moves}
    generic = [c for c in PLAYER_COMMANDS if c.name not in names and c.name not in MOVE_ONLY]
    extra = [c for m in _player_modules() for c in m.COMMANDS]
    return (*moves, *generic, *extra)


def player_actions() -> dict[str, PlayerAction]:
    return {name: fn for m in _player_modules() for name, fn in m.ACTIONS.items()}


def needs_player() -> set[str]:
    return {name for m in _player_modules() for name in m.NEEDS_PLAYER}


def desk_orders(orders: Sequence[Order]) -> list[Order]:
    actions = player_actions()
    return [o for o in orders if o.name in actions]
