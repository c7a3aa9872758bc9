"""pbem.store.security.within, the one counter behind every limit on what an address can make
the server do (failing mail, answers to strangers, answers an hour): over a real SQLite
file, an event is taken exactly when fewer than ``most`` of its kind and address were
taken within the window, and it says how many are left (hypothesis and examples)."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlmodel import Session

from pbem.store import security
from pbem.store.db import open_database

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
_folder = Path(tempfile.mkdtemp(prefix="pbem-limits-"))
ENGINE = open_database(f"sqlite:///{_folder / 'limits.db'}")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=40), st.sampled_from("ab")),
                max_size=60),
       st.integers(min_value=1, max_value=5), st.integers(min_value=1, max_value=90))
def test_an_event_is_taken_exactly_when_its_window_has_room(steps, most, minutes) -> None:
    window, now = timedelta(minutes=minutes), T0
    taken: dict[str, list[datetime]] = {}
    with Session(ENGINE) as session:
        for step, who in steps:
            now += timedelta(minutes=step)
            address = f"{who}@x.test"
            recent = [t for t in taken.get(address, []) if t > now - window]
            left = security.within(session, address, now, "test", most, window)
            if len(recent) < most:
                assert left == most - len(recent) - 1
                taken.setdefault(address, []).append(now)
            else:
                assert left == -1
        session.rollback()


def test_failing_mail_past_the_limit_is_dropped_and_the_owner_told_once_a_day() -> None:
    limits = security.Limits(auth_failures=3, auth_window=timedelta(hours=1))
    with Session(ENGINE) as session:
        dropped = [security.note_failure(session, "v@x.test", T0 + timedelta(minutes=i),
                                         limits) for i in range(6)]
        assert dropped == [False] * 3 + [True] * 3
        assert security.tell_owner(session, "v@x.test", T0)
        assert not security.tell_owner(session, "v@x.test", T0 + timedelta(hours=23))
        assert security.tell_owner(session, "v@x.test", T0 + timedelta(hours=25))
        # the window passes: the next failing mail is answered again
        assert not security.note_failure(session, "v@x.test", T0 + timedelta(hours=2), limits)
        session.rollback()
