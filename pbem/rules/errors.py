"""Errors of the rules core: malformed (cannot be read) vs illegal (not allowed now)."""

from pbem.errors import PbemError


class RulesError(PbemError):
    """Base of every rules error; the message is meant for the player."""


class MalformedMove(RulesError):
    """The move cannot be understood (e.g. a face of 7, a quantity of 0)."""


class IllegalMove(RulesError):
    """The move is understood but the rules do not allow it now."""
