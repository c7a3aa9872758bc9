"""A draft is data (pbem.services.draft_data): what a turn's reports are made of, written as
JSON and read back, makes byte for byte the mails the reports made at once do, for every
kind (postal, classic editions, cup), every turn to the final report (its record and
course), with notes, seat notes, table talk (private press too), a watcher, one seat's
report alone and a reply's headers."""

from __future__ import annotations

import json
import pickletools
import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pbem.config import Settings
from pbem.games.lifecycle import add_player, create_game, start_game
from pbem.games.records import find_game, players_of, seated, seats_of, update_players
from pbem.kinds import kind_named
from pbem.kinds.words import Told
from pbem.outbox import Composed
from pbem.render.reports import Renderer
from pbem.services.draft_data import (
    FORMAT,
    DraftUnfit,
    draft_bytes,
    moves_until,
    reports_from_draft,
    value_data,
    value_of,
)
from pbem.services.post import Post
from pbem.services.reports import compose_reports, turn_reports
from pbem.services.turns import played_for_notes, resolve_turn
from pbem.store.db import open_database
from pbem.store.models import TalkMessage, Watcher
from pbem.store.rows import game_row
from pbem.store.work import Work
from pbem.text.wording import Message, _, _n
from pbem.text.zones import When

START = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
NAMES = ["Ann", "Bob", "Cyd", "Dee", "Eve", "Fay"]


def _normal(mails: list[Composed]) -> list[tuple[Any, ...]]:
    """The mails with what is drawn at random each time (the Message-ID, the bounce token,
    the MIME boundaries) numbered in order of appearance."""
    out = []
    for mail in mails:
        values = dict(mail.values)
        raw = bytes(values.pop("raw"))   # type: ignore[call-overload]
        for name in ("message_id", "bounce_token"):
            token = str(values.pop(name))
            raw = raw.replace(token.encode(), name.encode())
        for n, mark in enumerate(dict.fromkeys(re.findall(rb'boundary="([^"]+)"', raw))):
            raw = raw.replace(mark, b"boundary-%d" % n)
        out.append((sorted(values.items()), raw))
    return out


def _game_of_drafts(tmp: Path, kind: str, options: str, players: int, seed: int,
                    *, most_turns: int = 400) -> int:
    """A whole game of robots (as testkit.reports.play); at every turn what its reports
    are made of goes through a draft's bytes and back, and makes the same mails. The
    number of turns checked."""
    engine = open_database(f"sqlite:///{tmp / f'{kind}-{seed}.db'}")
    clock = [START]
    post = Post(Settings(address="bluff@example.org"), Renderer(), lambda: clock[0])
    checked = 0
    with Work(engine) as session:
        k = kind_named(kind)
        game = create_game(session, "g1", seed=seed.to_bytes(32, "big"), now=START,
                           turn_hours=24, kind=kind,
                           rules_json=k.parse_options(options.split()))
        game.options_json = json.dumps({"policy": "challenge", "robot": "normal"})
        for i in range(players):
            add_player(session, game, f"p{i + 1}@example.org", NAMES[i])
        start_game(session, game, START)
        session.add(Watcher(game_id=game.id, email="watcher@example.org", created_at=START))
        seats = seated(session, game)
        update_players(session, game, {seats[1].id: {"default_order": "RAISE"},
                                       seats[2].id: {"default_order": "ROBOT"},
                                       seats[3].id: {"language": "de", "timezone":
                                                     "Europe/Prague"}})
        now = START
        while game.status == "running" and game.turn <= most_turns:
            speaker = 1 + game.turn % players
            session.add(TalkMessage(game_id=game.id, turn=game.turn, seat=speaker,
                                    name=seats[speaker].name, text="I <b>never</b> bluff.",
                                    created_at=now))
            session.add(TalkMessage(game_id=game.id, turn=game.turn, seat=speaker,
                                    name=seats[speaker].name, text="Only you know.",
                                    to_seat=1 + speaker % players, created_at=now))
            session.add(TalkMessage(game_id=game.id, turn=game.turn, seat=None,
                                    name="the referee", text="Play nicely.", created_at=now))
            now += timedelta(hours=1)
            clock[0] = now
            outcome = resolve_turn(session, game, now)
            game = find_game(session, "g1")
            notes = [*outcome.notes, *played_for_notes(game, outcome, seated(session, game)),
                     _("the deadline was {when}", when=When(now))]
            seat_notes = {s: [*outcome.seat_notes.get(s, []),
                              Told(_n("{n} die", "{n} dice", s))] for s in (1, 2)}
            turn = turn_reports(session, game_row(game), outcome.state, now=now,
                                notes=notes, seat_notes=seat_notes, inbound_id=7)
            raw = draft_bytes(turn, seats_of(players_of(session, game)),
                              moves_until(session, game))
            assert json.loads(raw)["format"] == FORMAT
            back = reports_from_draft(session, raw)
            assert back == turn
            variants = [turn]
            if checked % 5 == 0 or game.status == "over":   # a reply; one seat's alone
                variants += [replace(turn, in_reply_to="<order@example.org>"),
                             replace(turn, only_seat=2)]
            for made in variants:
                again = reports_from_draft(session, draft_bytes(
                    made, seats_of(players_of(session, game)), moves_until(session, game)))
                assert _normal(compose_reports(session, post, again)) == \
                    _normal(compose_reports(session, post, made))
            checked += 1
        assert game.status == "over", f"{kind} did not end in {most_turns} turns"
        assert turn.record and turn.drawn is not None   # the final report's
        session.rollback()
    engine.dispose()
    return checked


@pytest.mark.parametrize(("kind", "options", "players", "seed"), [
    ("postal", "", 5, 11),
    ("classic", "anniversary DICE 3 EXPOSE on", 4, 30),
    ("classic", "czech", 6, 33),
    ("cup", "", 4, 31),
], ids=["postal", "classic-anniversary", "classic-czech-six", "cup"])
def test_a_draft_makes_the_mails_the_reports_make_at_once(
        tmp_path: Path, kind: str, options: str, players: int, seed: int) -> None:
    assert _game_of_drafts(tmp_path, kind, options, players, seed) > 1


def test_a_draft_is_json_and_holds_no_pickle(tmp_path: Path) -> None:
    """No Python object in a draft: its bytes are JSON, and no pickle opcode reads them."""
    engine = open_database(f"sqlite:///{tmp_path / 'p.db'}")
    post = Post(Settings(address="bluff@example.org"), Renderer(), lambda: START)
    with Work(engine) as session:
        game = create_game(session, "g1", seed=bytes(32), now=START, turn_hours=24,
                           kind="postal", rules_json=kind_named("postal").parse_options([]))
        for i in range(5):
            add_player(session, game, f"p{i + 1}@example.org", NAMES[i])
        start_game(session, game, START)
        outcome = resolve_turn(session, game, START + timedelta(hours=1))
        game = find_game(session, "g1")
        turn = turn_reports(session, game_row(game), outcome.state, now=START,
                            notes=list(outcome.notes))
        raw = draft_bytes(turn, 5, moves_until(session, game))
        data = json.loads(raw)
        assert data["format"] == "pbem.draft/1" and len(data["moves"]) == 5
        with pytest.raises(ValueError):
            list(pickletools.genops(raw))
        assert len(compose_reports(session, post, reports_from_draft(session, raw))) == 5
        session.rollback()


_PLAIN = st.one_of(st.none(), st.booleans(), st.integers(),
                   st.floats(allow_nan=False, allow_infinity=False), st.text())


def _values(leaves: Any) -> Any:
    def inner(children: Any) -> Any:
        messages = st.builds(lambda s, kv, n, c: Message(s, tuple(kv), None, n, c),
                             st.text(), st.lists(st.tuples(st.text(), children), max_size=3),
                             st.integers(), st.booleans())
        return st.one_of(st.lists(children, max_size=3),
                         st.lists(children, max_size=3).map(tuple),
                         st.dictionaries(st.one_of(st.text(), st.integers()), children,
                                         max_size=3),
                         messages, messages.map(Told),
                         st.datetimes(timezones=st.just(UTC)).map(When),
                         st.datetimes(), st.binary(max_size=8))
    return st.recursive(leaves, inner, max_leaves=12)


@given(_values(_PLAIN))
def test_a_value_is_read_back_as_it_was_written(value: Any) -> None:
    back = value_of(json.loads(json.dumps(value_data(value))))
    assert back == value and type(back) is type(value)
    assert repr(back) == repr(value)


def test_a_value_of_a_class_a_draft_does_not_know_is_refused() -> None:
    class Mine(str):
        pass

    for value in (Mine("x"), {1.5}, [object()], {"a": frozenset()}):
        with pytest.raises(DraftUnfit):
            value_data(value)
