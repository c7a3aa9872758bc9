"""Errors of the rules core: malformed (cannot be read) vs illegal (not allowed now).

A rules error is the refusal the player is told (pbem.text.errors.Refusal): the rules raise
what the shell shows, and a kind that knows the order line it came from fills that in
(``quoting``) rather than saying it again as another error.
"""

from pbem.text.errors import Refusal


class RulesError(Refusal):
    """Base of every rules error; the message is meant for the player (``message``: said
    in the player's language, ``str()``: English)."""


class MalformedMove(RulesError):
    """The move cannot be understood (e.g. a face of 7, a quantity of 0)."""


class IllegalMove(RulesError):
    """The move is understood but the rules do not allow it now."""
