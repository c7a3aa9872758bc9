"""A player's move order (BID, CHALLENGE, EXPOSE, a Cup of Bluff order ...) and STATUS.

The move lines of a mail are taken together by the game's kind
(``take_order``): checked against the turn in play, recorded as the seat's
pending order (a later one replaces it) and confirmed to the player, line by
line. It says what it changed (``Done.turn``: an order is in); whether that
completes the turn, and resolving it, is the runner's step
(pbem.commands.registry, pbem.services.turns.settle).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pbem.commands.context import CommandContext, Done, MailCommand, refusal, with_seats
from pbem.games.states import load_state
from pbem.games.turn_in_play import facts_of, record_order
from pbem.kinds import kind_of
from pbem.orders.arguments import no_args
from pbem.orders.commands import Command, Order, ParsedText
from pbem.orders.guidance import closest_lines
from pbem.services.post import tagged
from pbem.services.reports import enqueue_reports
from pbem.services.turns import TurnChange, complete
from pbem.store.rows import GameView
from pbem.text.errors import LineProblem, Refusal
from pbem.text.wording import Message, Said, _, joined, listed

MAX_IGNORED_SHOWN = 20   # prose lines a confirmation lists as ignored


def take_moves(ctx: CommandContext, parsed: ParsedText, move_names: set[str]) -> Done:
    """Take the move order of a known player's mail (every kind's move names: move_names);
    the turn is not resolved here: the runner settles ``Done.turn`` (an order is in, with
    what the transaction knows of the game)."""
    assert ctx.who is not None and ctx.mail is not None
    who = ctx.who
    game, player = who.game, who.player
    kind = kind_of(game)
    names = {c.name for c in kind.commands}
    orders = [o for o in parsed.orders if o.name in names]
    foreign = [o for o in parsed.orders if o.name in move_names and o.name not in names]
    if foreign:
        raise refusal(_("{order} is not an order of {game}", order=foreign[0].name,
                        game=kind.title),
                      _("the orders of this game: {usages}",
                        usages=", ".join(c.usage for c in kind.commands)),
                      foreign[0].line_no, foreign[0].line, game=game.name)
    if not orders:
        raise no_order_found(parsed, kind.commands, kind.title, move_names, game.name,
                             ctx.mail.msg.ignored)
    if game.status != "running":
        raise refusal(*not_running(game), orders[0].line_no, orders[0].line, game=game.name)
    if who.turn < game.turn:
        raise refusal(_("your order is for turn {turn}, which has been resolved already "
                        "(the game is at turn {now})", turn=who.turn, now=game.turn),
                      _("reply to your latest report with your order for this turn"),
                      orders[0].line_no, orders[0].line, game=game.name)
    if who.turn > game.turn:
        raise refusal(_("turn {turn} has not begun (the game is at turn {now})",
                        turn=who.turn, now=game.turn), "", game=game.name)
    facts = facts_of(ctx.session, game, kind)
    state = facts.state
    seat = player.seat
    assert seat is not None
    if seat not in kind.due_seats(state):
        raise refusal(_("you have no move this turn (turn {turn})", turn=game.turn),
                      _("wait for your next report"), orders[0].line_no, orders[0].line,
                      game=game.name)
    player_names = {s: p.name for s, p in facts.seated.items()}
    orders = with_seats(orders, player_names, game.name)
    try:
        taken = kind.take_order(state, seat, orders)
    except Refusal as refused:
        refused.quoting(game=game.name)
        raise
    replaced = record_order(ctx.session, game, seat, taken.move, now=ctx.now,
                            inbound_id=ctx.mail.row.id, facts=facts)
    accepted = [{"line_no": u.order.line_no, "line": u.order.line, "read_as": u.order.read_as,
                 "understood": u.understood, "odds": u.odds} for u in taken.lines]
    pending = facts.missing()
    # what the confirmation may promise: a turn this order completes is resolved now, by the
    # runner (no new order can replace it); during grace the deadline that counts is the
    # grace end
    resolves_now = complete(facts, pending)
    context = {"game": game.name, "turn": game.turn, "seat": seat, "accepted": accepted,
               "resolves_now": resolves_now, "grace": game.grace_until is not None,
               "ignored": [{"line_no": p.number, "line": p.text}
                           for p in parsed.prose[:MAX_IGNORED_SHOWN]],
               "left_out": list(ctx.mail.msg.ignored),
               "replaced": (kind.describe_move(kind.move_from_json(
                   json.loads(replaced.move_json))) if replaced else None),
               "pending": pending,
               "deadline": ((game.grace_until or game.deadline).isoformat()
                            if game.deadline else None),
               "timezone": who.player.timezone}
    ctx.line_no = orders[0].line_no
    ctx.answer("confirm", tagged(game.name, _("turn {turn}: order received", turn=game.turn)),
               context)
    return Done(f"order accepted: {taken.summary} (game {game.name}, turn {who.turn}, "
                f"seat {seat})", TurnChange(game, "order", facts))


def not_running(game: GameView) -> tuple[Message, Message]:
    """Why a game takes no order now, and what to do: a paused game's after RESUME."""
    if game.status == "paused":
        return (_("game {game} is paused: no orders are taken now", game=game.name),
                _("send your order again once the referee has resumed the game (RESUME "
                  "{game}); you will be told", game=game.name))
    return (_("game {game} is over", game=game.name) if game.status == "over"
            else _("game {game} is not running", game=game.name),
            _("no orders are taken now"))


def no_order_found(parsed: ParsedText, commands: Sequence[Command], title: str,
                   move_names: set[str], game: str, ignored: Sequence[Said] = ()) -> Refusal:
    """One problem for a mail without an order: the line that came closest to one (an HTML
    mail's lines too) quoted, why it is none (another kind's order word, say), the fix;
    what the reading left out (a quoted report, a signature) said in brackets."""
    usages = [c.usage for c in commands[:2]]
    fix = (_("write one order a line, e.g. {first} or {second}", first=usages[0],
             second=usages[1]) if len(usages) == 2
           else _("write one order a line, e.g. {first}", first=joined(usages)))
    found = (_("I found no order in your mail (I ignored {what})",
               what=listed(ignored)) if ignored
             else _("I found no order in your mail"))
    near = closest_lines(parsed.prose, commands, most=1)
    if not near:
        return Refusal.of([LineProblem(None, None, found, fix)], game=game)
    line = near[0]
    word = (line.text.split() or [""])[0].upper()
    why = (_("{order} is not an order of {game}", order=word, game=title)
           if word in move_names else _("this line is not an order of {game}", game=title))
    return Refusal.of([LineProblem(line.number, line.text,
                                   _("{found}; {why}", found=found, why=why), fix)],
                      game=game)


def do_status(ctx: CommandContext, order: Order) -> str:
    """STATUS from a player: their latest report again."""
    assert ctx.who is not None and ctx.mail is not None
    game = ctx.who.game
    if game.status not in ("running", "over"):
        raise refusal(_("game {game} has not started", game=game.name), "", game=game.name)
    enqueue_reports(ctx.session, ctx.post, game, load_state(ctx.session, game),
                    now=ctx.post.clock(), only_seat=ctx.who.player.seat,
                    in_reply_to=ctx.mail.msg.message_id, inbound_id=ctx.mail.row.id)
    return "status sent"


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("STATUS", "STATUS", _("send me my latest report again"), no_args,
                action=do_status, who="player", phase="reply"),
)
