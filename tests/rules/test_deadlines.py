"""The pure date arithmetic of pbem.text.deadlines: examples and properties."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.text.deadlines import (
    RETURN_MARGIN,
    absence_interval,
    align_to_hour,
    outage_gap,
    reminder_due,
    shift_if_passed,
    turn_deadline,
    vacation_shift,
)

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)

times = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 1, 1),
                     timezones=st.just(UTC))
hours = st.integers(min_value=0, max_value=23)
spans = st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=40))


# --- examples -----------------------------------------------------------------------------


def test_turn_deadline_is_start_plus_length() -> None:
    assert turn_deadline(T0, 48) == T0 + timedelta(hours=48)
    assert turn_deadline(T0, None) is None
    assert turn_deadline(T0, 1.5) == T0 + timedelta(minutes=90)


def test_fixed_hour_moves_the_deadline_to_the_next_such_hour() -> None:
    assert turn_deadline(T0, 48, 18) == datetime(2026, 12, 3, 18, 0, tzinfo=UTC)
    assert turn_deadline(T0, 48, 9) == datetime(2026, 12, 4, 9, 0, tzinfo=UTC)
    assert turn_deadline(T0, 48, 12) == datetime(2026, 12, 3, 12, 0, tzinfo=UTC)   # exact


def test_absence_covers_whole_days() -> None:
    start, end = absence_interval(date(2026, 12, 24), date(2026, 12, 27))
    assert start == datetime(2026, 12, 24, tzinfo=UTC)
    assert end == datetime(2026, 12, 28, tzinfo=UTC)


def test_deadline_in_an_absence_moves_a_day_past_its_end() -> None:
    away = {"ann": [absence_interval(date(2026, 12, 2), date(2026, 12, 4))]}
    shift = vacation_shift(T0 + timedelta(days=2), away, {"ann": timedelta(days=14)})
    assert shift.deadline == datetime(2026, 12, 5, tzinfo=UTC) + RETURN_MARGIN
    assert shift.used == {"ann": shift.deadline - (T0 + timedelta(days=2))}
    assert shift.capped == []


def test_the_cap_stops_a_shift_part_way() -> None:
    away = {"ann": [absence_interval(date(2026, 12, 2), date(2026, 12, 20))]}
    deadline = T0 + timedelta(days=2)
    shift = vacation_shift(deadline, away, {"ann": timedelta(days=3)})
    assert shift.deadline == deadline + timedelta(days=3)
    assert shift.capped == ["ann"]
    spent = vacation_shift(deadline, away, {"ann": timedelta(0)})
    assert spent.deadline == deadline and not spent.moved and spent.capped == ["ann"]


def test_two_players_away_one_after_the_other() -> None:
    away = {"ann": [absence_interval(date(2026, 12, 2), date(2026, 12, 4))],
            "bob": [absence_interval(date(2026, 12, 5), date(2026, 12, 8))]}
    shift = vacation_shift(datetime(2026, 12, 3, 12, tzinfo=UTC), away,
                           {"ann": timedelta(days=14), "bob": timedelta(days=14)}, hour=18)
    assert shift.deadline == datetime(2026, 12, 10, 18, tzinfo=UTC)
    assert set(shift.used) == {"ann", "bob"}


def test_outage_gap_and_shift() -> None:
    last, now = T0, T0 + timedelta(hours=5)
    assert outage_gap(last, now, timedelta(minutes=15)) == timedelta(hours=5)
    assert outage_gap(last, T0 + timedelta(minutes=10), timedelta(minutes=15)) is None
    assert outage_gap(None, now, timedelta(minutes=15)) is None
    assert outage_gap(last, now, None) is None
    assert shift_if_passed(T0 + timedelta(hours=1), last, now, timedelta(hours=5)) == \
        T0 + timedelta(hours=6)
    assert shift_if_passed(T0 + timedelta(hours=6), last, now, timedelta(hours=5)) is None
    assert shift_if_passed(T0 - timedelta(hours=1), last, now, timedelta(hours=5)) is None


def test_reminder_window() -> None:
    deadline, lead = T0 + timedelta(hours=48), timedelta(hours=12)
    assert not reminder_due(deadline, lead, T0)
    assert reminder_due(deadline, lead, T0 + timedelta(hours=36))
    assert not reminder_due(deadline, lead, deadline)
    assert not reminder_due(deadline, None, T0 + timedelta(hours=40))


# --- properties ---------------------------------------------------------------------------


@given(times, hours)
def test_align_is_the_first_such_hour_at_or_after(t: datetime, hour: int) -> None:
    at = align_to_hour(t, hour)
    assert at >= t and at - t < timedelta(days=1)
    assert (at.hour, at.minute, at.second, at.microsecond) == (hour, 0, 0, 0)
    assert align_to_hour(at, hour) == at


@given(times, st.floats(min_value=0.25, max_value=24 * 30), st.none() | hours)
def test_turn_deadline_bounds(start: datetime, length: float, hour: int | None) -> None:
    deadline = turn_deadline(start, length, hour)
    assert deadline is not None
    base = start + timedelta(hours=length)
    assert base <= deadline < base + timedelta(days=1)
    if hour is None:
        assert deadline == base


@st.composite
def absences(draw: st.DrawFn) -> dict[str, list[tuple[datetime, datetime]]]:
    out: dict[str, list[tuple[datetime, datetime]]] = {}
    for who in draw(st.lists(st.sampled_from(["ann", "bob", "cyd"]), unique=True)):
        firsts = draw(st.lists(st.integers(min_value=-5, max_value=40), max_size=3))
        out[who] = [absence_interval(T0.date() + timedelta(days=f),
                                     T0.date() + timedelta(days=f + draw(
                                         st.integers(min_value=0, max_value=20))))
                    for f in firsts]
    return out


@settings(max_examples=300)
@given(absences(), st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=30)),
       st.dictionaries(st.sampled_from(["ann", "bob", "cyd"]),
                       st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=20))),
       st.none() | hours)
def test_vacation_shift_properties(away: dict[str, list[tuple[datetime, datetime]]],
                                   offset: timedelta, allowance: dict[str, timedelta],
                                   hour: int | None) -> None:
    deadline = T0 + offset
    shift = vacation_shift(deadline, away, allowance, hour)
    # never earlier; the whole move is charged to someone, within their allowance
    assert shift.deadline >= deadline
    assert shift.deadline - deadline == sum(shift.used.values(), timedelta(0))
    for who, used in shift.used.items():
        assert timedelta(0) < used <= allowance.get(who, timedelta(0))
    # it ends outside every absence of a player whose allowance did not run out
    for who, intervals in away.items():
        if who not in shift.capped:
            assert not any(s <= shift.deadline < e for s, e in intervals)
    # a deadline in no absence stays
    if not any(s <= deadline < e for ivs in away.values() for s, e in ivs):
        assert shift.deadline == deadline and not shift.capped


@given(times, spans, spans, st.timedeltas(min_value=timedelta(minutes=1),
                                            max_value=timedelta(hours=2)))
def test_outage_moves_exactly_what_passed_while_down(last: datetime, down: timedelta,
                                                     offset: timedelta,
                                                     threshold: timedelta) -> None:
    now = last + down
    gap = outage_gap(last, now, threshold)
    if down <= threshold:
        assert gap is None
        return
    assert gap == down
    t = last + offset
    moved = shift_if_passed(t, last, now, down)
    if last < t <= now:
        assert moved == t + down and moved > now     # never resolved in a rush
    else:
        assert moved is None
