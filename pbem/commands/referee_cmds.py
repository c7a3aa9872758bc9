"""Referee commands about games: NEWGAME, ADD, START, STATUS, PROCESS, LIST.

They come in referee mail (with the KEY line) and from `pbem admin`; the
registry (pbem.commands.registry) puts them in the one table with the desk's
commands (schedule, seats, rollback) and HELP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlmodel import col, select

from pbem.commands.context import CommandContext, Done, MailCommand
from pbem.commands.schedule import desk_status
from pbem.games.lifecycle import add_player, create_game, start_game
from pbem.games.records import find_game, players_of
from pbem.games.states import load_state
from pbem.games.turn_in_play import missing_seats, pending_orders
from pbem.kinds import DEFAULT_KIND, kind_named, kind_of
from pbem.kinds.options import USAGE as NEWGAME_USAGE
from pbem.kinds.options import NewGame, options_of, parse_options, save_options
from pbem.mail.addresses import address_problem
from pbem.orders.arguments import GAME_NAME, GAME_NAME_HINT, game_name, no_args
from pbem.orders.commands import Order
from pbem.rules.dice import new_seed, seed_from_number
from pbem.services.bounces import describe, failing_players
from pbem.services.drafts import remake_failed
from pbem.services.failures import delay_over, retried, tell_made
from pbem.services.post import notice, tagged
from pbem.services.reports import compose_draft, enqueue_reports
from pbem.services.turns import TurnChange
from pbem.store.models import Game, InboundMail, OutboundMail, Player, ServerState
from pbem.text.errors import Refusal
from pbem.text.wording import Message, _, plural


def not_an_address(written: str, problem: str) -> Message:
    """An address a referee's command names that mail cannot go to (ADD, REPLACE)."""
    return _("'{address}' is not a mail address this server can write to: {problem}",
             address=written, problem=problem)


def parse_newgame(args: list[str]) -> NewGame:
    if not args:
        raise Refusal(_("NEWGAME needs a game name"), _("e.g. NEWGAME cup-1 DEADLINE 48"))
    name = args[0].lower()
    if not GAME_NAME.match(name):
        raise Refusal(_("'{value}' is not a valid game name", value=args[0]), GAME_NAME_HINT)
    new = parse_options(args[1:], name)   # the game's options (pbem.kinds.options)
    kind = kind_named(new.rules or DEFAULT_KIND)   # a refusal for a kind there is not
    new.rules_json = kind.parse_options(new.rules_words)
    return new


def parse_add(args: list[str]) -> tuple[str, str, str]:
    if len(args) < 2:
        raise Refusal(_("ADD needs a game and an address"),
                      _("e.g. ADD cup-1 ann@example.org Ann"))
    name, email = game_name([args[0]]), args[1].strip("<>").lower()
    problem = address_problem(email)   # the rule the reader and the composer apply
    if problem is not None:
        raise Refusal(not_an_address(args[1], problem))
    return name, email, " ".join(args[2:])[:60]


def do_newgame(ctx: CommandContext, order: Order) -> str:
    new: NewGame = order.args
    seed = seed_from_number(new.seed) if new.seed is not None else new_seed()
    game = create_game(ctx.session, new.name, seed=seed, now=ctx.now, turn_hours=new.hours,
                       kind=new.rules or DEFAULT_KIND, rules_json=new.rules_json)
    save_options(game, new.options)
    ctx.session.add(game)
    rules = kind_of(game).describe_rules(json.loads(game.rules_json))   # edition, options
    return (f"game {game.name} created ({rules}; "
            f"{new.options.describe(new.hours)}); dice commitment {game.commitment}")


def do_add(ctx: CommandContext, order: Order) -> str:
    args: tuple[str, str, str] = order.args
    game = find_game(ctx.session, args[0])
    player = add_player(ctx.session, game, args[1], args[2])
    welcome(ctx, game, player)
    return f"{player.name} <{player.email}> joins {game.name} as entrant {player.entrant}"


WELCOME = "welcome"


def welcome(ctx: CommandContext, game: Game, player: Player) -> None:
    """A player the referee ADDs hears at once: the game, its kind and options, who
    referees it, their key, and that the first report comes at the start."""
    kind = kind_of(game)
    count = len(players_of(ctx.session, game))
    notice(ctx.session, ctx.post, player.email, tagged(game.name, _("you are signed up")), [
        _("Welcome, {name}: the referee <{referee}> signed you up for game "
          "{game} ({count} of {most} seats taken so far).", name=player.name,
          referee=ctx.post.referee, game=game.name, count=count, most=kind.max_players),
        _("The game: {rules}; {options}.", rules=kind.describe_rules(json.loads(game.rules_json)),
          options=options_of(game).describe_said(game.turn_hours)),
        _("Your first report, with your dice and what to do, comes when the game starts. The "
          "rules: send HELP to this address (the answer carries them)."),
        _("Your key: {key}. A fresh mail about this game needs the lines GAME "
          "{game} and KEY {key} (they are in every report too).", key=player.key,
          game=game.name)],
        ctx.now, game=game, kind=WELCOME)


def do_start(ctx: CommandContext, order: Order) -> str:
    return start(ctx, order.args)


def start(ctx: CommandContext, name: str) -> str:
    """START: the seats drawn, the first reports queued (AUTOSTART uses it too)."""
    game = find_game(ctx.session, name)
    start_game(ctx.session, game, ctx.now)
    # a welcome that has not left yet is said better by the first report, which follows now
    for row in ctx.session.exec(select(OutboundMail).where(
            OutboundMail.game_id == game.id, OutboundMail.kind == WELCOME,
            OutboundMail.status == "pending", col(OutboundMail.claimed_by).is_(None))):
        ctx.session.delete(row)
    state = load_state(ctx.session, game)
    rows = enqueue_reports(ctx.session, ctx.post, game, state, now=ctx.now)
    seats = ", ".join(f"{p.seat}: {p.name}" for p in sorted(players_of(ctx.session, game),
                                                            key=lambda p: p.seat or 0))
    return (f"game {game.name} started; seats {seats}; "
            f"{plural('{n} first report', '{n} first reports', len(rows))} queued")


def do_status(ctx: CommandContext, order: Order) -> str:
    name: str = order.args
    game = find_game(ctx.session, name)
    kind = kind_of(game)
    players = [p for p in players_of(ctx.session, game) if p.active]
    line = (f"game {game.name} ({kind.describe_rules(json.loads(game.rules_json))}): "
            f"{game.status}, {plural('{n} player', '{n} players', len(players))}")
    rows: list[str] = []
    if game.status in ("running", "over", "paused"):
        state = load_state(ctx.session, game)
        scores = {s["seat"]: s["score"] for s in kind.standings(state)}
        line += (f", over after {game.turn - 1} turns" if game.status == "over"
                 else f", turn {game.turn}")
        have = pending_orders(ctx.session, game) if game.status == "running" else {}
        waiting = (set(missing_seats(ctx.session, game, state))
                   if game.status == "running" else set())
        for p in sorted(players, key=lambda p: p.seat or 0):
            seat = p.seat or 0
            doing = ("order in" if seat in have else "waiting for their order"
                     if seat in waiting else "nothing due")
            rows.append(f"  {seat}. {p.name} <{p.email}>: score {scores.get(seat, '-')}"
                        + (f"; {doing}" if game.status == "running" else ""))
        if game.status == "running" and game.deadline:
            line += f"; deadline {game.deadline:%Y-%m-%d %H:%M} UTC"
    else:
        rows = [f"  {p.entrant}. {p.name} <{p.email}>" for p in players]
    bouncing = failing_players(ctx.session, game)
    if bouncing:
        line += "; mail bouncing: " + ", ".join(
            (f"player {p.seat} " if p.seat is not None else "") + f"{p.name} <{p.email}> "
            + describe(s) for p, s in bouncing)
    return "\n".join([line + desk_status(ctx.session, game, ctx.now), *rows])


def do_process(ctx: CommandContext, order: Order) -> Done:
    """PROCESS: the turn is to be resolved now; the runner resolves it
    (pbem.services.turns.settle: a game not running is refused there)."""
    name: str = order.args
    game = find_game(ctx.session, name)
    return Done(f"game {game.name}: turn {game.turn} resolved", TurnChange(game, "process"),
                if_over=" - the game is over")


def do_list(ctx: CommandContext, order: Order) -> str:
    games = list(ctx.session.exec(select(Game).order_by(col(Game.name))))
    if not games:
        return "no games yet"
    return "\n".join(list_line(ctx, g) for g in games)


def list_line(ctx: CommandContext, game: Game) -> str:
    """One game in the referee's LIST: kind, players, state, turn, deadline."""
    kind = kind_of(game)
    count = len([p for p in players_of(ctx.session, game) if p.active])
    state = {"new": "sign-up" + (" open" if options_of(game).open else ""),
             "over": f"over after {game.turn - 1} turns"}.get(
        game.status, f"{game.status}, turn {game.turn}")
    deadline = (f", deadline {game.deadline:%Y-%m-%d %H:%M} UTC"
                if game.deadline and game.status == "running" else "")
    return f"{game.name} ({kind.title}, {count} of {kind.max_players} players, {state}{deadline})"


#: server_state: when the referee asked for the mails set aside in the IMAP quarantine
#: folder back (RETRY QUARANTINE); the next fetch moves them to the mailbox (pbem.runner.server)
RELEASE_ASKED = "imap-release-asked"


@dataclass(frozen=True)
class ReportsOf:
    """RETRY <game>: the game's turn reports that could not be written, written again."""

    game: str


def parse_retry(args: list[str]) -> int | str | ReportsOf:
    if len(args) == 1 and args[0].upper() == "QUARANTINE":
        return "quarantine"
    if len(args) == 1 and args[0].lstrip("#").isdigit():
        return int(args[0].lstrip("#"))
    if len(args) == 1 and GAME_NAME.match(args[0].lower()):
        return ReportsOf(args[0].lower())
    raise Refusal(_("RETRY takes the number of a stored mail, a game, or QUARANTINE"),
                  _("e.g. RETRY 12 (the referee's notice names it)"))


def retry_reports(ctx: CommandContext, name: str) -> str:
    """The game's turn reports that could not be written (a template that failed: the
    referee was told, pbem.services.failures.tell_made) written again after the fix, in
    this transaction, and sent; if one fails again, nothing changes and the referee hears
    why."""
    game = find_game(ctx.session, name)
    post = ctx.post
    made = remake_failed(ctx.session, lambda session, draft: compose_draft(session, post, draft),
                         int(game.id or 0), lambda work, m: tell_made(work, post, m))
    if not made:
        raise Refusal(_("game {game} has no reports that could not be written", game=name))
    for m in made:
        if m.mails is None:
            raise Refusal(_("the reports of turn {turn} still cannot be written: {error}",
                            turn=m.turn if m.turn is not None else "?",
                            error=m.error or ""))
    # the players, told that the turn is delayed (tell_made), hear that it goes on
    delay_over(ctx.session, post, game, post.clock(), reports=True)
    turns = ", ".join(str(m.turn) for m in made)
    return f"the reports of game {name}, turn {turns}, are written and sent"


def do_retry(ctx: CommandContext, order: Order) -> str:
    """A mail that failed or was set aside (pbem.runner.inbox) is handled again at the next tick;
    RETRY QUARANTINE: the mails the mailbox could not hand over are fetched again."""
    if isinstance(order.args, ReportsOf):
        return retry_reports(ctx, order.args.game)
    if order.args == "quarantine":
        asked = ctx.session.get(ServerState, RELEASE_ASKED) or ServerState(key=RELEASE_ASKED,
                                                                          value="")
        asked.value = ctx.now.isoformat()
        ctx.session.add(asked)
        return ("the mails set aside in the IMAP quarantine folder go back to the mailbox "
                "at the next tick")
    number: int = order.args
    row = ctx.session.get(InboundMail, number)
    if row is None:
        raise Refusal(_("there is no stored mail #{number}", number=number))
    if row.status not in ("failed", "quarantined"):
        raise Refusal(_("mail #{number} is {status}, not failed or set aside", number=number,
                        status=row.status))
    row.status, row.attempts, row.outcome = "new", 0, None
    row.claimed_by = row.claimed_at = row.processed_at = None
    ctx.session.add(row)
    retried(ctx.session, ctx.post, number)   # the players told of a delay hear it is over
    return f"mail #{number} will be handled again at the next tick"


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("NEWGAME", NEWGAME_USAGE,
            _("create a game: turn length, deadline hour (UTC), grace, reminder, missed-turn "
              "limit, vacation cap, missing-order policy, sign-up, auto-start, wait, rule set "
              "(SEED makes the dice reproducible)"), parse_newgame,
            action=do_newgame, who="referee", phase="change"),
    MailCommand("ADD", "ADD <game> <email> [<name>]", _("sign a player up (before the start)"),
            parse_add,
            action=do_add, who="referee", phase="change"),
    MailCommand("START", "START <game>",
            _("draw the seats, roll, mail everyone their first report"),
            game_name, action=do_start, who="referee", phase="change"),
    MailCommand("STATUS", "STATUS <game>", _("where the game stands, whose orders are in"),
            game_name,
            action=do_status, who="referee", phase="look"),
    MailCommand("PROCESS", "PROCESS <game>",
            _("resolve the turn now (the robot plays missing orders)"),
            game_name, action=do_process, who="referee", phase="change"),
    MailCommand("LIST", "LIST", _("every game and its state"), no_args, action=do_list,
            who="referee", phase="look"),
    MailCommand("RETRY", "RETRY <mail id> | <game> | QUARANTINE", _("handle again a mail kept "
            "as failed or set aside (after a fix; the referee's notice of its failure gives "
            "the number); <game>: write again the game's turn reports that could not be "
            "written; QUARANTINE: fetch again the mails set aside in the IMAP quarantine "
            "folder"),
            parse_retry, action=do_retry, who="referee", phase="change"),
)
