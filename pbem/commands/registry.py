"""The one table of mail commands, and ``run``: permission, then the command's action.

Every command is declared once, in its family's module (``COMMANDS``), or by a
game kind (its move orders, ``GameKind.commands``). ``DECLARED`` lists them
all; the tables are loops over it: player mail is read with
``player_commands(kind)`` (the game's move orders, or every kind's before the
game is known, and every command a player or anyone may write), referee mail
and `pbem admin` with ``referee_commands()``. HELP lists the same tables, so
the help is never out of date.
"""

from __future__ import annotations

from collections.abc import Sequence

from pbem.commands import (
    address,
    moves,
    player_desk,
    referee_cmds,
    rollback,
    schedule,
    seats,
    signup,
)
from pbem.commands.context import CommandContext, MailCommand, refuse
from pbem.errors import Refusal
from pbem.kinds import KINDS, AnyKind, kind_of, kinds_note
from pbem.orders import MAIL_LINES, Command, Order, help_lines, no_args, one_word
from pbem.render import rules_document, rules_file
from pbem.wording import _

HELP_SUBJECT = _("Bluff by mail: the orders")


def do_player_help(ctx: CommandContext, order: Order) -> str:
    """HELP: the orders of the player's game (of every kind if unknown), what its dice are,
    and the rules of every game attached (docs/rules.md)."""
    kind = kind_of(ctx.who.game) if ctx.who is not None else None
    commands = player_commands(kind)
    language = ctx.language      # the sender's (pbem.triage.reader_language)
    rules = rules_file(language)
    ctx.answer("help", HELP_SUBJECT, {
        "commands": help_lines(commands, language), "referee_commands": [],
        "server_address": ctx.post.settings.address,
        "kind_note": kind.help_note if kind is not None else kinds_note(),
        "rules_file": rules},
        attachments=[(rules, "text/markdown", rules_document(language))])
    return "help sent"


def do_referee_help(ctx: CommandContext, order: Order) -> str:
    return "\n".join(f"{h['usage']}: {h['summary']}" for h in help_lines(referee_commands()))


# every command but the kinds' moves, in the order HELP lists them
DECLARED: tuple[Command, ...] = (
    *moves.COMMANDS,
    MailCommand("HELP", "HELP", _("this summary of the orders"), no_args,
                action=do_player_help, who="anyone", phase="reply"),
    *MAIL_LINES, *signup.COMMANDS, *player_desk.COMMANDS, *address.COMMANDS,
    Command("KEY", "KEY <referee key>", _("in referee mail: proves the mail is the referee's"),
            one_word("key"), who="referee", phase="line"),
    *referee_cmds.COMMANDS, *schedule.COMMANDS, *seats.COMMANDS, *rollback.COMMANDS,
    MailCommand("HELP", "HELP", _("this list"), no_args, action=do_referee_help, who="referee",
                phase="look"),
)


def move_commands(kind: AnyKind | None = None) -> tuple[Command, ...]:
    """The move orders of a kind, or of every kind (before the mail's game is known)."""
    seen: dict[str, Command] = {}
    for each in [kind] if kind is not None else KINDS.values():
        for command in each.commands:
            seen.setdefault(command.name, command)
    return tuple(seen.values())


def move_names() -> set[str]:
    return {c.name for c in move_commands()}


def player_commands(kind: AnyKind | None = None) -> tuple[Command, ...]:
    """Every order a player may write: the moves (of the kind, or of every kind), then what
    a player or anyone may write."""
    moves_of_kind = move_commands(kind)
    names = {c.name for c in moves_of_kind}
    return (*moves_of_kind,
            *(c for c in DECLARED if c.who != "referee" and c.name not in names))


def referee_commands() -> tuple[Command, ...]:
    return tuple(c for c in DECLARED if c.who == "referee")


def permitted(ctx: CommandContext, command: Command) -> bool:
    """May the sender use the command: a known player, the referee, or anyone?"""
    if command.who == "referee":
        return ctx.by_referee
    if command.who == "player":
        return ctx.who is not None
    return True


def run(ctx: CommandContext, orders: Sequence[Order]) -> list[str]:
    """Run the commands in order, each after its permission check; the first that fails
    stops the lot (the caller's transaction then undoes them all). A line or a move order
    (no action: what reads it is elsewhere) is passed over."""
    out = []
    for order in orders:
        command = order.command
        if not isinstance(command, MailCommand):
            continue
        if not permitted(ctx, command):
            raise refuse(_("{order} needs to know who you are", order=order.name),
                         _("reply to your latest report, or add the lines GAME <game> and "
                           "KEY <your key>"), order)
        ctx.line_no = order.line_no
        try:
            out.append(command.run(ctx, order))
        except Refusal as refused:
            # the referee's line is the one to quote (a refusal of an inner line too: ORDER)
            if ctx.by_referee:
                refused.quoting(order)
            raise
    return out
