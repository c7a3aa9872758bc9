"""The one step that resolves a turn (pbem.services.turns.settle), and who takes it.

Every path that can complete a turn says what it changed and the step decides: an
order in or WAIT off resolves only a complete turn, PROCESS and the deadline resolve
now. A command says what it did (pbem.commands.context.Done) and the command table's
runner settles it (pbem.commands.registry.run); the order mail that completes a turn
reads the game's state once in its transaction. On SQLite, with the desk's server.
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from pbem.commands.context import CommandContext, Done, MailCommand
from pbem.commands.registry import run
from pbem.games.records import find_game, players_of
from pbem.games.states import load_state
from pbem.games.turn_in_play import facts_of, pending_orders
from pbem.orders.arguments import game_name
from pbem.orders.commands import Order
from pbem.runner.server import Server
from pbem.services.turns import TurnChange, complete, settle
from pbem.store.work import Work
from pbem.text.errors import Refusal
from testkit.desk import (
    PLAYERS,
    game_turn,
    key_of,
    mail,
    new_game,
    order,
    outbox_rows,
    raise_line,
    seat_of,
    started_game,
)


def _settle(server: Server, why: str) -> bool:
    """settle(TurnChange(g1, why)) in a transaction of its own; True if it played a turn."""
    with Work(server.engine) as session:
        game = find_game(session, "g1")
        played = settle(session, server.referee.post, TurnChange(game, why))
        session.commit()
    return played is not None


def _all_but_last(server: Server) -> None:
    """Every player but the last sends an order for turn 1."""
    for email in PLAYERS[:-1]:
        assert "are accepted" in order(server, email, raise_line(server,
                                                               seat_of(server, email)))


def test_an_order_or_wait_off_settles_only_a_complete_turn(server: Server) -> None:
    started_game(server)
    _all_but_last(server)
    assert not _settle(server, "order")
    assert not _settle(server, "wait-off")
    assert game_turn(server) == 1
    reports = len([r for r in outbox_rows(server) if r.kind == "report"])
    assert _settle(server, "process")   # PROCESS: now, the robot plays the missing seat
    assert game_turn(server) == 2
    assert len([r for r in outbox_rows(server) if r.kind == "report"]) == reports + 5


def test_a_complete_turn_under_wait_waits_for_the_deadline(server: Server) -> None:
    started_game(server, "DEADLINE 48 WAIT")
    _all_but_last(server)
    last = PLAYERS[-1]
    order(server, last, raise_line(server, seat_of(server, last)))
    with Work(server.engine) as session:
        facts = facts_of(session, find_game(session, "g1"))
        assert facts.missing() == [] and not complete(facts)   # every order in, yet WAIT
    assert not _settle(server, "order")
    assert game_turn(server) == 1
    assert _settle(server, "deadline")
    assert game_turn(server) == 2


def test_process_of_a_game_not_started_is_refused(server: Server) -> None:
    new_game(server)
    with pytest.raises(Refusal, match="is not running"):
        _settle(server, "process")


def _resolve_now(ctx: CommandContext, order: Order) -> Done:
    game = find_game(ctx.session, order.args)
    return Done("asked", TurnChange(game, "process"), if_resolved="; resolved",
                if_over="; over")


def test_the_runner_settles_what_a_command_changed(server: Server) -> None:
    """A command does not resolve the turn itself: it says what changed, and run()
    settles it, adding to the command's line what its Done says of the resolution."""
    started_game(server)
    command = MailCommand("NOW", "NOW <game>", "resolve now", game_name,
                          action=_resolve_now, who="referee", phase="change")
    line = Order(1, "NOW g1", command, "g1")
    with Work(server.engine) as session:
        ctx = CommandContext(session, server.referee.post, server.referee.clock(),
                             by_referee=True)
        assert run(ctx, [line]) == ["asked; resolved"]
        session.commit()
    assert game_turn(server) == 2


def _counting(codes: dict[Any, str], seen: Counter[str]) -> Callable[..., None]:
    def profile(frame: FrameType, event: str, _arg: object) -> None:
        if event == "call" and frame.f_code in codes:
            seen[codes[frame.f_code]] += 1
    return profile


def test_the_order_that_completes_a_turn_reads_the_game_once(server: Server) -> None:
    """The mail's transaction reads the game's state, players and orders once (facts_of),
    and hands them down to the turn it plays and the reports it queues."""
    started_game(server)
    _all_but_last(server)
    last = PLAYERS[-1]
    raw = mail(last, f"GAME g1\nKEY {key_of(server, last)}\n"
                     f"{raise_line(server, seat_of(server, last))}\n")
    assert server.referee.store_inbound(raw, source="smtp")
    codes = {f.__code__: f.__name__ for f in (load_state, pending_orders,
                                              players_of, facts_of)}
    seen: Counter[str] = Counter()
    sys.setprofile(_counting(codes, seen))
    try:
        server.referee.process_pending()
    finally:
        sys.setprofile(None)
    assert game_turn(server) == 2
    assert seen["load_state"] == 1
    assert seen["pending_orders"] == 1
    assert seen["facts_of"] == 1
