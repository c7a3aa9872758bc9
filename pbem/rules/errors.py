"""Errors of the rules core: malformed (cannot be read) vs illegal (not allowed now)."""

from pbem.errors import PbemError
from pbem.wording import Said


class RulesError(PbemError):
    """Base of every rules error; the message is meant for the player (``message``: said
    in the player's language, ``str()``: English)."""

    def __init__(self, message: Said) -> None:
        super().__init__(str(message))
        self.message = message


class MalformedMove(RulesError):
    """The move cannot be understood (e.g. a face of 7, a quantity of 0)."""


class IllegalMove(RulesError):
    """The move is understood but the rules do not allow it now."""
