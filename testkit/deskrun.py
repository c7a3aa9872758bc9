"""Commands run straight through the registry (pbem.commands.registry), not through Server:
a line is parsed with the registry's table and run in one transaction on a real SQLite file
database (testkit/desk.py's server, for its engine, post and clock); the answers land in the
outbox, where the deskkit helpers read them."""

from __future__ import annotations

from sqlmodel import Session, col, select

from pbem.commands.context import CommandContext, Turnkey
from pbem.commands.registry import (
    answer_then_reports,
    move_names,
    move_step,
    player_commands,
    referee_commands,
    run,
)
from pbem.games.records import game_named, players_of
from pbem.kinds import kind_of
from pbem.mail.read import read_message
from pbem.mail.text import BodyLine
from pbem.orders.commands import ParsedText
from pbem.orders.parsing import parse_text
from pbem.runner.inbox import read_held
from pbem.runner.server import Server
from pbem.services.post import Incoming
from pbem.store.models import InboundMail
from pbem.store.work import Work
from testkit.desk import SERVER, mail


def lines_of(*texts: str) -> list[BodyLine]:
    return [BodyLine(number, text) for number, text in enumerate(texts, start=1)]


def referee(server: Server, *texts: str) -> list[str]:
    """Referee command lines, as from the shell: parsed with referee_commands(), run()."""
    parsed = parse_text(lines_of(*texts), referee_commands())
    assert not parsed.problems, parsed.problems
    with Work(server.engine) as session:
        ctx = CommandContext(session, server.referee.post, server.referee.clock(),
                             by_referee=True)
        out = run(ctx, parsed.orders)
        session.commit()
    return out


def _incoming(session: Session, server: Server, sender: str, body: str) -> Incoming:
    """Store the mail (its own transaction: before ``session`` begins one, since a SQLite
    transaction holds the write lock from its first statement) and read it back."""
    assert server.referee.store_inbound(mail(sender, body), source="smtp")
    newest = session.exec(select(InboundMail.id).order_by(col(InboundMail.id).desc())).first()
    assert newest is not None
    row = read_held(session, newest)
    return Incoming(row, read_message(row.raw, own_addresses=[SERVER]))


def _turnkey(session: Work, sender: str, game_name: str | None) -> Turnkey | None:
    if game_name is None:
        return None
    game = game_named(session, game_name)
    player = next(p for p in players_of(session, game) if p.email == sender)
    return Turnkey(game, player, game.turn)


def player(server: Server, sender: str, *texts: str, game: str | None = None) -> list[str]:
    """A player's (or, without ``game``, a stranger's) command lines: parsed with
    player_commands() of the game's kind, run() in one transaction, one answer sent."""
    with Work(server.engine) as session:
        incoming = _incoming(session, server, sender, "\n".join(texts))
        who = _turnkey(session, sender, game)
        parsed = parse_text(lines_of(*texts),
                            player_commands(kind_of(who.game) if who is not None else None))
        assert not parsed.problems, parsed.problems
        ctx = CommandContext(session, server.referee.post, server.referee.clock(), incoming,
                             who, parsed.orders, parts=[])
        out = run(ctx, parsed.orders)
        ctx.send_answers()
        session.commit()
    return out


def moves(server: Server, sender: str, *texts: str, game: str = "g1") -> str:
    """A player's move lines: the move phase (pbem.commands.registry.move_step: the order
    taken, the turn it completes settled) with the registry's move names."""
    with Work(server.engine) as session:
        incoming = _incoming(session, server, sender, "\n".join(texts))
        who = _turnkey(session, sender, game)
        assert who is not None
        parsed: ParsedText = parse_text(lines_of(*texts), player_commands(kind_of(who.game)))
        assert not parsed.problems, parsed.problems
        ctx = CommandContext(session, server.referee.post, server.referee.clock(), incoming,
                             who, parsed.orders, parts=[])
        reports: list = []
        out = move_step(ctx, parsed, move_names(), reports)
        answer_then_reports(ctx, reports)
        session.commit()
    return out
