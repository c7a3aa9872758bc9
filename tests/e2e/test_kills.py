"""Promise 3 under kills: a kill is not the mail's fault. Postal games over the real mail
stack whose ticks are SIGKILLed (the whole process group, as systemd stops a service)
at random moments, one to three times in a row, then one full tick; and a kill at each
crash point of a tick, then one full tick. Every time:

- no mail is set aside: every order is handled, its player answered, and the turn
  resolves when the fifth order is in;
- the one full tick after the kills handles and sends everything (a dead holder of a
  claim, a lane, a share or a lease on this host is seen dead at once).

The long form, many games' worth of kills with the figures: bench/kills.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from pbem.store import faults
from testkit.crash import Zygote
from testkit.kills import KilledGame
from testkit.pgstack import PgCluster

pytestmark = pytest.mark.mailstack


@pytest.fixture(scope="module")
def zygote() -> Iterator[Zygote]:
    with Zygote() as z:
        yield z


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_kills_set_no_order_aside_and_one_tick_catches_up(
        mailstack: Any, tmp_path: Path, zygote: Zygote, seed: int) -> None:
    game = KilledGame(mailstack, tmp_path, zygote, seed=seed)
    kills = 0
    for _ in range(6):
        done = game.round(most_kills=3)
        assert done is not None
        kills += done.kills
        assert done.ticks_to_catch_up == 1, done
        assert done.turn_after == done.turn_before + 1, done   # the five orders played it
        assert game.set_aside() == []
    assert kills >= 3, "the kills landed (the ticks did not all finish first)"


# the points a tick passes (the listener's is not a tick's), at a pass of each: mid-batch
# and mid-page where the point is passed more than once
POINTS = ["imap-fetched", "imap-stored", "imap-moved", "inbound-handled:3",
          "inbound-committed:5", "outbox-enqueued:4", "outbox-claimed:2",
          "outbox-handed-off:3", "outbox-marked:2"]


def test_the_points_are_every_point_of_a_tick() -> None:
    # the schema work has its own kill tests (tests/data/test_schema_kills.py), and the
    # composer's hand-off its own (tests/e2e/test_crash_composer.py)
    assert {p.partition(":")[0] for p in POINTS} == \
        set(faults.POINTS) - {"listener-stored", "schema-statement", "drafts-queued"}


def test_one_tick_after_a_kill_at_each_point_handles_and_sends_everything(
        mailstack: Any, tmp_path: Path, zygote: Zygote) -> None:
    game = KilledGame(mailstack, tmp_path, zygote, seed=3)
    for point in POINTS:
        before = game.turn()
        assert game.send_orders(), "the players have moves to make"
        assert zygote.tick(game.config, crash=point) == -9, f"never reached {point}"
        assert game.catch_up(most=1) == 1, point
        assert game.turn() == before + 1, point
        assert game.set_aside() == []


@pytest.mark.postgresql
def test_a_kill_in_a_games_group_on_postgresql_loses_and_repeats_no_order(
        mailstack: Any, tmp_path: Path, zygote: Zygote, pgcluster: PgCluster) -> None:
    """On PostgreSQL a game's lane is handled several mails a transaction
    (pbem.runner.referee.Referee.handle_group): a kill in the middle of the group, or
    after its commit, and one full tick handles every order once (those the kill cut
    short each in a bounded child), plays the turn once and sets nothing aside."""
    game = KilledGame(mailstack, tmp_path, zygote, seed=4, database=pgcluster.new_database())
    for point in ("inbound-handled:3", "outbox-enqueued:2", "inbound-committed:2"):
        before = game.turn()
        assert game.send_orders() == 5
        assert zygote.tick(game.config, crash=point) == -9, f"never reached {point}"
        assert game.catch_up(most=1) == 1, point
        assert game.turn() == before + 1, point
        assert game.set_aside() == []
    with game.server.engine.connect() as conn:   # each order answered once, none twice
        assert conn.execute(sa.text(
            "SELECT count(*), count(DISTINCT inbound_id) FROM outbound_mail "
            "WHERE kind = 'confirm'")).one() == (15, 15)
