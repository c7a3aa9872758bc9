"""TIMEZONE: a player's own time zone (pbem.text.zones), set by mail, and every deadline they
read written in it with UTC beside; examples and properties of the pure part, and the
command through the registry on a real SQLite file."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, available_timezones

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlmodel import Session, select

from pbem.commands.registry import player_commands
from pbem.kinds.postal import POSTAL
from pbem.orders.parsing import parse_text
from pbem.runner.server import Server
from pbem.store.models import Player
from pbem.text.errors import Refusal
from pbem.text.zones import in_zone, zone_named
from testkit.desk import PLAYERS, last_text
from testkit.deskrun import lines_of, player, referee

ANN, BOB = PLAYERS[0], PLAYERS[1]
ZONES = sorted(available_timezones())


def test_zone_names_are_read_in_any_case_and_utc_means_none() -> None:
    assert zone_named("europe/prague") == "Europe/Prague"
    assert zone_named("America/New_York") == "America/New_York"
    assert zone_named("UTC") is None and zone_named("none") is None


@pytest.mark.parametrize(("typed", "hint"), [
    ("Europe/Pragu", "did you mean Europe/Prague"),
    ("Mars/Olympus", "IANA time zone database"),
    ("x" * 500, "IANA time zone database")])
def test_an_unknown_zone_is_refused_with_the_nearest_names(typed: str, hint: str) -> None:
    with pytest.raises(Refusal) as refused:
        zone_named(typed)
    assert "is not a time zone I know" in refused.value.message
    assert hint in refused.value.hint
    assert len(refused.value.message) < 120


def test_a_deadline_in_prague_names_its_zone_with_utc_beside() -> None:
    winter = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)
    assert in_zone(winter, "Europe/Prague") == "2026-12-05 19:00 CET (Europe/Prague), 18:00 UTC"
    summer = "2026-07-01T23:30:00Z"
    assert in_zone(summer, "Europe/Prague") == \
        "2026-07-02 01:30 CEST (Europe/Prague), 2026-07-01 23:30 UTC"
    assert in_zone(winter, None) == "2026-12-05 18:00 UTC"
    assert in_zone(None, "Europe/Prague") == ""


@given(st.sampled_from(ZONES),
       st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2060, 1, 1)))
def test_the_local_time_written_is_the_utc_time_in_that_zone(zone: str,
                                                            when: datetime) -> None:
    when = when.replace(tzinfo=UTC, second=0, microsecond=0)
    text = in_zone(when, zone)
    match = re.fullmatch(r"(\d{4}-\d\d-\d\d \d\d:\d\d) \S+ \((\S+)\), (.+) UTC", text)
    assert match, text
    assert match[2] == zone
    local = datetime.strptime(match[1], "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(zone),
                                                                   fold=0)
    # the local time written is the deadline (either reading of an hour that repeats)
    candidates = {local.astimezone(UTC), local.replace(fold=1).astimezone(UTC)}
    assert when in candidates
    assert match[3].endswith(f"{when:%H:%M}")


@pytest.fixture
def started(server: Server) -> Server:
    referee(server, "NEWGAME g1 SEED 3 DEADLINE 48", "NEWGAME g2 SEED 4",
            *(f"ADD g1 {p} Name{i}" for i, p in enumerate(PLAYERS, start=1)),
            f"ADD g2 {ANN} Ann", "START g1")
    return server


def zones_of(server: Server, email: str) -> list[str | None]:
    with Session(server.engine) as session:
        return [p.timezone for p in session.exec(select(Player).where(Player.email == email))]


def test_timezone_holds_for_every_game_of_the_address_and_later_ones(started: Server) -> None:
    out = player(started, ANN, "TIMEZONE europe/prague", game="g1")
    assert out == [f"time zone of {ANN}: Europe/Prague (2 games)"]
    assert zones_of(started, ANN) == ["Europe/Prague", "Europe/Prague"]
    assert zones_of(started, BOB) == [None]
    assert "written in Europe/Prague with UTC beside them" in last_text(started, ANN)
    referee(started, "NEWGAME g3 SEED 5", f"ADD g3 {ANN} Ann")
    assert zones_of(started, ANN) == ["Europe/Prague"] * 3
    player(started, ANN, "TIMEZONE UTC", game="g1")
    assert zones_of(started, ANN) == [None] * 3


def test_a_bad_zone_is_refused_quoting_its_line(started: Server) -> None:
    parsed = parse_text(lines_of("TIMEZONE Europe/Pragu"), player_commands(POSTAL))
    (problem,) = parsed.problems
    assert problem.line == "TIMEZONE Europe/Pragu" and problem.line_no == 1
    assert problem.hint.startswith("did you mean Europe/Prague")
    assert zones_of(started, ANN) == [None, None]


def test_the_deadlines_a_player_reads_are_in_their_zone(started: Server) -> None:
    player(started, ANN, "TIMEZONE Asia/Tokyo", game="g1")
    player(started, ANN, "ORDERS", game="g1")
    assert re.search(r"Deadline: \d{4}-\d\d-\d\d \d\d:\d\d JST \(Asia/Tokyo\), .+ UTC\.",
                     last_text(started, ANN))
    player(started, BOB, "ORDERS", game="g1")
    assert re.search(r"Deadline: \d{4}-\d\d-\d\d \d\d:\d\d UTC\.", last_text(started, BOB))
    referee(started, "PROCESS g1")          # the next turn's reports
    report = last_text(started, ANN)
    assert "JST (Asia/Tokyo)" in report and "Deadline:" in report
    assert "(Asia/Tokyo)" not in last_text(started, BOB)
    with Session(started.engine) as session:
        ann = session.exec(select(Player).where(Player.email == ANN)).first()
        assert ann is not None and ann.timezone == "Asia/Tokyo"
    assert timedelta(hours=9) == datetime(2026, 1, 1, tzinfo=ZoneInfo("Asia/Tokyo")).utcoffset()
