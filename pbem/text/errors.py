"""The root of pbem's errors, and the one polite refusal.

Every exception pbem raises on purpose is a ``PbemError``. A request that
cannot be done (a bad order line, a move the rules forbid, a referee command
on a game that does not exist ...) raises a ``Refusal``, in every layer alike:
it carries what is wrong, the line to quote and the fix, and is said to the
sender as it is (python-chess style: one kind of error, named where raised).
Whoever knows more on the way up fills it in (``quoting``) and raises the same
refusal again; nothing wraps it in another.

Nearly the lowest layer: imports only the standard library and pbem.text.wording (a refusal's
message may be said in its reader's language).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Protocol

from pbem.text.wording import Said


class PbemError(Exception):
    """Anything pbem raises on purpose."""


@dataclass(frozen=True)
class LineProblem:
    """One thing wrong: the line at fault (None: the whole mail), what is wrong, the fix."""

    line_no: int | None
    line: str | None
    message: Said          # text, or a message said in the reader's language (pbem.text.wording)
    hint: Said = ""


class Quotable(Protocol):
    """A line a refusal can quote (an order: pbem.orders.commands.Order)."""

    @property
    def line_no(self) -> int: ...

    @property
    def line(self) -> str: ...


class Refusal(PbemError):
    """The request cannot be done; said politely, nothing applied.

    ``Refusal(message, hint, order)``: what is wrong, the fix, and the order whose line is
    quoted (or ``line_no``/``line``); ``game`` names the game the answer is about.
    ``Refusal.of(problems)`` refuses several lines at once. ``str()`` is the line quoted
    and the message, with the fix in brackets (what the shell prints).
    """

    def __init__(self, message: Said, hint: Said = "", order: Quotable | None = None, *,
                 line_no: int | None = None, line: str | None = None,
                 game: str | None = None) -> None:
        super().__init__(str(message))
        if order is not None:
            line_no, line = order.line_no, order.line
        self.problems = [LineProblem(line_no, line, message, hint)]
        self.game = game
        self.auth_failed = False       # a failed attempt to act as someone (rate-limited)
        # the mail proved that its sender reads mail at its address (the code we mailed
        # there): its answer is not held back as a stranger's (pbem.runner.answer_limits.limit_answers)
        self.sender_proven = False
        # a CONFIRM that matched no pending sign-up of an address that has one: answered
        # within the sign-up's own bound (pbem.store.security.SIGNUP_ANSWERS_PER_DAY)
        self.about_signup = False

    @classmethod
    def of(cls, problems: Sequence[LineProblem], game: str | None = None) -> Refusal:
        """One refusal for every line at fault (at least one)."""
        first = problems[0]
        refused = cls(first.message, first.hint, line_no=first.line_no, line=first.line,
                      game=game)
        refused.problems.extend(problems[1:])
        return refused

    @property
    def message(self) -> Said:
        return self.problems[0].message

    @property
    def hint(self) -> Said:
        return self.problems[0].hint

    def quoting(self, order: Quotable | None = None, *, hint: Said = "",
                game: str | None = None) -> Refusal:
        """This refusal, quoting the order's line (the caller knows best which line the
        sender wrote), with the fix and the game filled in where it has none."""
        first = self.problems[0]
        if order is not None:
            first = replace(first, line_no=order.line_no, line=order.line)
        self.problems[0] = replace(first, hint=first.hint or hint)
        self.game = self.game or game
        return self

    def __str__(self) -> str:
        first = self.problems[0]
        quoted = f"{first.line}: " if first.line is not None else ""
        return f"{quoted}{first.message}" + (f" ({first.hint})" if first.hint else "")
