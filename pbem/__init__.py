"""pbem: a play-by-email referee for the dice game Bluff."""

__version__ = "0.1.0"
