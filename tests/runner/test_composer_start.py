"""The composer ([server] compose_apart, SQLite) is started only once a tick has
``composer_from_turn`` turns to report: a tick with fewer makes their reports itself, in
each turn's transaction, with no draft written on the way, and starts no process. Either
way every player gets every report, sent once, and no draft is left. Over the real mail
stack (Dovecot IMAP in, SMTP out); two games side by side, so that one tick plays two
turns."""

from __future__ import annotations

import random
from collections import Counter
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest

from pbem.demo.robot_client import client_order_lines, parse_mail, reply_to, report_view
from pbem.runner.server import Server
from pbem.services.drafts import DRAFT
from testkit.e2e import REFEREE_KEY, stack_server
from testkit.stored import count_drafts_written, drafts_written, outbound_rows

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4", "p5"]   # a postal game has five
GAMES = ["start-1", "start-2"]


def player(stack: Any, user: str, game: str) -> str:
    """A player's address in one game (user+game@: the user's mailbox)."""
    local, _, domain = stack.address(user).partition("@")
    return f"{local}+{game}@{domain}"


def reports_by_turn(stack: Any) -> Counter[tuple[str, str, int]]:
    """(user, game, turn) -> reports in the user's mailbox."""
    seen: Counter[tuple[str, str, int]] = Counter()
    for user in PLAYERS:
        for raw in stack.fetch_all(user):
            mail = parse_mail(raw)
            view = report_view(mail)
            if view is not None and mail["In-Reply-To"] is None:
                seen[user, view["game"], view["turn"]] += 1
    return seen


def play_two_turns_in_one_tick(stack: Any, server: Server) -> None:
    """Both games started (a tick), then every player orders in both; one tick plays
    both turns."""
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = (stack.address("referee"),
                                              stack.address("bluff"), "go")
    lines = [f"KEY {REFEREE_KEY}"]
    for n, game in enumerate(GAMES):
        lines += [f"NEWGAME {game} SEED {n + 3}",
                  *(f"ADD {game} {player(stack, u, game)} {u}" for u in PLAYERS),
                  f"START {game}"]
    msg.set_content("\n".join(lines) + "\n")
    stack.deliver("bluff", msg.as_bytes(policy=policy.SMTP), mail_from=stack.address("referee"))
    server.tick()
    assert len(reports_by_turn(stack)) == len(PLAYERS) * len(GAMES)
    rng = random.Random(5)
    for user in PLAYERS:
        for raw in stack.fetch_all(user):
            report = parse_mail(raw)
            view = report_view(report)
            assert view is not None and view["turn"] == 1
            sender = player(stack, user, view["game"])
            order = client_order_lines(view, rng)
            stack.deliver("bluff", reply_to(report, sender, order), mail_from=sender)
    ticked = server.tick()
    assert ticked.resolved + ticked.processed >= 2 * len(PLAYERS), ticked


@pytest.mark.parametrize(("from_turn", "composer"), [(3, False), (2, True)],
                         ids=["under-the-threshold", "at-it"])
def test_a_tick_starts_the_composer_only_with_enough_turns(
        mailstack: Any, tmp_path: Path, from_turn: int, composer: bool) -> None:
    server = stack_server(mailstack, tmp_path, PLAYERS, compose_apart=True,
                          composer_from_turn=from_turn)
    try:
        assert server.composer is not None and server.composer.pid is None
        count_drafts_written(server.engine)
        play_two_turns_in_one_tick(mailstack, server)
        # two turns in the tick: the composer started at the second, or not at all; under
        # the threshold no draft was written (made with the turn, from the data in hand)
        assert (server.composer.pid is not None) == composer
        assert drafts_written(server.engine) == (1 if composer else 0)
        seen = reports_by_turn(mailstack)
        assert seen == Counter({(u, g, t): 1 for u in PLAYERS for g in GAMES
                                for t in (1, 2)}), seen
        rows = outbound_rows(server.engine)
        assert not [r for r in rows if r.kind == DRAFT]
        assert {r.status for r in rows} == {"sent"}
    finally:
        server.close()
