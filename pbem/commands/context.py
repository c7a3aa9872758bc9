"""What a command's action sees, and how it says no.

An action is ``action(ctx, order) -> str | Done``: it does the command inside
``ctx.session`` (the mail's transaction), answers through ``ctx`` and
returns one line on what happened (the mail's outcome, or the referee's
answer), with what it changed that may complete a turn (``Done.turn``): what
follows from that (the turn resolved, its reports) the runner decides
(pbem.commands.registry, pbem.services.turns.settle), never the command.
A request that cannot be done raises a ``Refusal`` (pbem.text.errors):
the sender gets the error mail, with the line quoted (the referee at the
shell: the line and what is wrong).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from pbem.orders.commands import Command, Order, SeatByName
from pbem.services.post import AnswerPart, Incoming, Post, answer, answer_parts
from pbem.services.turns import TurnChange
from pbem.store.rows import GameRow, GameView, PlayerRow
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import Message, Said, _


def refusal(message: Said, hint: Said = "", line_no: int | None = None,
            line: str | None = None, game: str | None = None) -> Refusal:
    return Refusal(message, hint, line_no=line_no, line=line, game=game)


def refuse(message: Said, hint: Said, order: Order, game: str | None = None) -> Refusal:
    """A refusal that quotes the order's line."""
    return Refusal(message, hint, order, game=game)


def line_quoted(order: Order) -> Message:
    """The order's line, quoted at the top of its answer: "line 3: LANGUAGE de"."""
    return _("line {n}: {line}", n=order.line_no, line=order.line)


def game_is(game: GameView) -> Message:
    """"game g1 is over" / "... is cancelled" (or another state), said in the reader's
    language."""
    states = {"over": _("game {game} is over", game=game.name),
              "cancelled": _("game {game} is cancelled", game=game.name),
              "new": _("game {game} has not started yet", game=game.name),
              "paused": _("game {game} is paused", game=game.name),
              "running": _("game {game} is running", game=game.name)}
    return states.get(game.status) or _("game {game} is {state}", game=game.name,
                                        state=game.status)


def with_seats(orders: Sequence[Order], names: dict[int, str], game: str) -> list[Order]:
    """The orders with every player named (ANNOUNCE 5 TO Finn) turned into a seat; a name
    that fits no player (or several) is refused, with the players listed."""
    out = []
    for order in orders:
        if isinstance(order.args, SeatByName):
            seat = order.args.seat_for(names)
            if seat is None:
                players = ", ".join(f"{s} {n}" for s, n in sorted(names.items()))
                raise refuse(_("no player of game {game} is called {name}", game=game,
                               name=order.args.name),
                             _("write the player's number or name; the players: {players}",
                               players=players),
                             order, game)
            order = replace(order, args=order.args.build(seat))
        out.append(order)
    return out


@dataclass(frozen=True)
class Turnkey:
    """Who a player mail is from and which turn it speaks to: the game and the player as
    rows (pbem.store.rows), read once a mail."""

    game: GameRow
    player: PlayerRow
    turn: int

    def after(self, game: GameRow, players: Sequence[PlayerRow]) -> Turnkey:
        """The same mail's key once ``game`` and ``players`` have changed (a turn played)."""
        player = next((p for p in players if p.id == self.player.id), self.player)
        return replace(self, game=game, player=player)


@dataclass
class CommandContext:
    """A command's world: the transaction, the post, the time, and where the command came
    from (a mail, and who sent it, or the shell: ``pbem admin``)."""

    session: Work
    post: Post
    now: datetime
    mail: Incoming | None = None     # None: a referee command from the shell
    who: Turnkey | None = None       # the player the mail speaks for, if known
    orders: Sequence[Order] = ()     # every order of the mail (SAY relays them together)
    by_referee: bool = False
    # a player mail gets one answer: its commands' answers are held here until it is done
    # (pbem.services.post.answer_parts); None: each answer goes at once
    parts: list[AnswerPart] | None = None
    line_no: int = 0                 # the line of the command running now
    # the language the sender reads (pbem.runner.triage.reader_language): every answer's
    language: str = "en"
    # the turns its commands play have their reports queued as drafts for the tick's
    # composer (pbem.services.turns.report_turn), else made with the turn
    draft_reports: bool = False

    @property
    def zone(self) -> str | None:
        """The time zone of the player the mail speaks for (TIMEZONE), if any."""
        return self.who.player.timezone if self.who is not None else None

    @property
    def sender(self) -> str:
        assert self.mail is not None
        return self.mail.sender

    def answer(self, template: str, subject: Said, context: dict[str, Any],
               attachments: Sequence[tuple[str, str, bytes]] = ()) -> None:
        """Answer the sender (threaded to their mail); held with the mail's other answers
        when the mail collects them."""
        assert self.mail is not None
        if self.parts is not None:
            self.parts.append(AnswerPart(self.line_no, template, subject, context,
                                         tuple(attachments)))
            return
        who = self.who
        answer(self.session, self.post, self.mail, template, subject, context,
               language=self.language, zone=self.zone,
               game_id=who.game.id if who else None, seat=who.player.seat if who else None,
               turn=who.game.turn if who else None, attachments=attachments)

    def send_answers(self) -> None:
        """The one answer of the mail, its parts in the order of the mail's lines."""
        assert self.mail is not None
        parts, self.parts = self.parts or [], None
        who = self.who
        answer_parts(self.session, self.post, self.mail, parts, language=self.language,
                     zone=self.zone,
                     game=who.game.name if who else next(
                         (str(p.context["game"]) for p in parts if p.context.get("game")),
                         None),
                     game_id=who.game.id if who else None,
                     seat=who.player.seat if who else None, turn=who.game.turn if who else None)

    def notice(self, subject: Said, paragraphs: Sequence[Said], game: str | None) -> None:
        """Answer the sender with a notice (subject, paragraphs)."""
        self.answer("notice", subject, {"subject": subject, "paragraphs": list(paragraphs),
                                        "game": game})


@dataclass(frozen=True)
class Done:
    """What a command did: the line it says, and what it changed that may complete a turn
    (``turn``, for the runner to settle), with what the line adds if the turn was resolved
    (``if_resolved``) and if that ended the game (``if_over``)."""

    said: str
    turn: TurnChange | None = None
    if_resolved: str = ""
    if_over: str = ""


Action = Callable[[CommandContext, Order], "str | Done"]


@dataclass(frozen=True)
class MailCommand(Command):
    """A command the referee runs (Mailman's IEmailCommand): its syntax, who may use it,
    its phase and help text (pbem.orders.commands.Command), and its action. One declaration each;
    pbem.commands.registry lists them all."""

    action: Action = field(kw_only=True)

    def run(self, ctx: CommandContext, order: Order) -> Done:
        """Do the command inside ctx's transaction; returns what it did."""
        done = self.action(ctx, order)
        return done if isinstance(done, Done) else Done(done)
