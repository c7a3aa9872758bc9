"""The one table of mail commands, and its runner: permission, the command's action, then
what follows from what it changed.

Every command is declared once, in its family's module (``COMMANDS``), or by a
game kind (its move orders, ``GameKind.commands``). ``DECLARED`` lists them
all; the tables are loops over it: player mail is read with
``player_commands(kind)`` (the game's move orders, or every kind's before the
game is known, and every command a player or anyone may write), referee mail
and `pbem admin` with ``referee_commands()``. HELP lists the same tables, so
the help is never out of date.

``run`` runs commands in order; ``player_mail`` runs a player mail's phase by
phase (``PHASES``: what it changes, its move, what it asks to see) and queues its
one answer. A command says what it did (pbem.commands.context.Done); a turn it
may complete is settled here, by the one step that resolves turns
(pbem.services.turns.settle), the same step the clock takes at a deadline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from pbem.commands import (
    address,
    moves,
    player_desk,
    referee_cmds,
    rollback,
    schedule,
    seats,
    signup,
    table_talk,
)
from pbem.commands.context import CommandContext, Done, MailCommand, Turnkey, refusal, refuse
from pbem.commands.moves import take_moves
from pbem.kinds import KINDS, GameKind, kind_of, kinds_note
from pbem.orders.arguments import no_args, one_word
from pbem.orders.commands import MAIL_LINES, Command, Order, ParsedText
from pbem.orders.guidance import help_lines
from pbem.render.reports import rules_document, rules_file
from pbem.services.turns import SomePlayedTurn, report_turn, settle
from pbem.text.errors import Refusal
from pbem.text.wording import _

S = TypeVar("S")   # a game kind's state
M = TypeVar("M")   # a game kind's move

HELP_SUBJECT = _("Bluff by mail: the orders")


def do_player_help(ctx: CommandContext, order: Order) -> str:
    """HELP: the orders of the player's game (of every kind if unknown), what its dice are,
    and the rules of every game attached (docs/rules.md)."""
    kind = kind_of(ctx.who.game) if ctx.who is not None else None
    commands = player_commands(kind)
    language = ctx.language      # the sender's (pbem.runner.triage.reader_language)
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
    *MAIL_LINES, *signup.COMMANDS, *table_talk.COMMANDS,
    *player_desk.COMMANDS, *address.COMMANDS,
    Command("KEY", "KEY <referee key>", _("in referee mail: proves the mail is the referee's"),
            one_word("key"), who="referee", phase="line"),
    *referee_cmds.COMMANDS, *schedule.COMMANDS, *seats.COMMANDS, *rollback.COMMANDS,
    MailCommand("HELP", "HELP", _("this list"), no_args, action=do_referee_help, who="referee",
                phase="look"),
)


def move_commands(kind: GameKind[S, M] | None = None) -> tuple[Command, ...]:
    """The move orders of a kind, or of every kind (before the mail's game is known)."""
    seen: dict[str, Command] = {}
    each_kinds = [kind.commands] if kind is not None else [k.commands for k in KINDS.values()]
    for commands in each_kinds:
        for command in commands:
            seen.setdefault(command.name, command)
    return tuple(seen.values())


def move_names() -> set[str]:
    return {c.name for c in move_commands()}


def player_commands(kind: GameKind[S, M] | None = None) -> tuple[Command, ...]:
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
            out.append(follow(ctx, command.run(ctx, order)))
        except Refusal as refused:
            # the referee's line is the one to quote (a refusal of an inner line too: ORDER)
            if ctx.by_referee:
                refused.quoting(order)
            raise
    return out


def follow(ctx: CommandContext, done: Done) -> str:
    """What follows a command: the turn it may complete settled (resolved, its reports
    queued: pbem.services.turns.settle); what the command's line says then."""
    if done.turn is None:
        return done.said
    played = settle(ctx.session, ctx.post, done.turn, draft=ctx.draft_reports)
    if played is None:
        return done.said
    game = played.facts.game   # as the turn left it
    return done.said + done.if_resolved + (done.if_over if game.status == "over" else "")


# the order a player mail's commands run in (pbem.orders.commands.Command.phase): what it changes,
# its move, what it asks to see (so ORDERS shows the same mail's DEFAULT and move); a
# "reply" answers a mail with nothing else to do
PHASES = ("change", "move", "look", "reply")


def player_mail(ctx: CommandContext, parsed: ParsedText, who: Turnkey | None) -> str:
    """Run a player mail's commands (all of them, or none: one transaction), phase by phase
    (player_phases), then queue its one answer and the reports of the turn its move played
    (its confirmation says they follow; the mails to one address leave in queue order)."""
    played: list[SomePlayedTurn] = []
    outcome = player_phases(ctx, parsed, who, played)
    answer_then_reports(ctx, played)
    return outcome


def answer_then_reports(ctx: CommandContext, played: list[SomePlayedTurn]) -> None:
    """Queue the mail's one answer, then the reports of the turns its move played."""
    assert ctx.mail is not None
    ctx.send_answers()
    for turn in played:
        report_turn(ctx.session, ctx.post, turn, draft=ctx.draft_reports,
                    inbound_id=ctx.mail.row.id)


def move_step(ctx: CommandContext, parsed: ParsedText, names: set[str],
              played: list[SomePlayedTurn]) -> str:
    """A mail's move: the order recorded and confirmed (take_moves), then settled: a turn
    it completes is played now, into ``played`` (its reports are queued after the mail's
    answer: answer_then_reports). Returns what the order's line says."""
    done = take_moves(ctx, parsed, names)
    if done.turn is not None:
        turn = settle(ctx.session, ctx.post, done.turn, report=False)
        if turn is not None:
            played.append(turn)
            if ctx.who is not None:   # the mail's game and player as the turn left them
                ctx.who = ctx.who.after(turn.facts.game, turn.facts.players)
    return done.said


def player_phases(ctx: CommandContext, parsed: ParsedText, who: Turnkey | None,
                  played: list[SomePlayedTurn]) -> str:
    """Run a player mail's commands phase by phase (PHASES); the answers still come in the
    order of the lines."""
    names = move_names()
    phase = {p: [o for o in parsed.orders if o.command.phase == p] for p in PHASES}
    move_orders = phase["move"]
    nothing_else = not phase["change"] and not phase["look"]
    if not move_orders or who is None:
        if nothing_else:
            # a reply answers a mail that has nothing else to do: HELP, which anyone may
            # ask for, before the player's STATUS
            replies = sorted((o for o in phase["reply"] if permitted(ctx, o.command)),
                             key=lambda o: o.command.who != "anyone")
            if replies:
                return run(ctx, replies[:1])[0]
    if who is None and (move_orders or nothing_else):
        raise refusal(_("I could not tell which game and player this mail is for"),
                      _("reply to your latest report, or write a fresh mail with the lines "
                        "GAME <game> and KEY <your key> (both are in your report)"))
    if not move_orders and nothing_else:
        return take_moves(ctx, parsed, names).said   # says that no order was found
    if nothing_else:
        # a move alone needs no savepoint: take_moves refuses before its one write (the
        # order recorded after every check), and settle refuses nothing, so a refusal
        # leaves nothing of it to roll back (a savepoint is two statements an order)
        return move_step(ctx, parsed, names, played)
    with ctx.session.savepoint():   # a move and desk commands in one mail: all or none
        said = run(ctx, phase["change"])
        if move_orders:
            said.insert(0, move_step(ctx, parsed, names, played))
        said += run(ctx, phase["look"])
    return "; ".join(said)
