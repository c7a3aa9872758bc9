"""A turn's reports as data: what a draft (pbem.services.drafts) holds, as JSON with a
format version, so that a draft a crash left is read by the next version of pbem too.

A draft holds what the reports are made of as the transaction that played the turn read
it (``TurnReports``): the game's row, its seats' rows, the options, the notes, the table
talk, the final report's record and course. The state is not stored as such: it is the
game's as the games table keeps it, the start made from the seed and the rules and the
recorded moves replayed (pbem.games.replayed_state); the draft holds the game's moves up
to the turn it reports (each as the moves table holds it), so that it is replayed to
exactly the state the turn left whatever happens to the game later (a ROLLBACK).

Every value is one of a few kinds, written so that it is read back as it was: JSON's own
(str, int, float, bool, None, a list), and tagged objects for a tuple, a dict, bytes, a
time and pbem's words (a Message, a Told, a When). A value of any other class is not
written (``DraftUnfit``): the turn's reports are then made at once, as without a
composer, rather than written as something the reader could not read back.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Generic, TypeVar

from sqlmodel import Session

from pbem.games.states import moves_before, replayed_state
from pbem.kinds import SHIPPED, kind_of
from pbem.kinds.options import GameOptions
from pbem.kinds.words import Told
from pbem.render.charts import Course
from pbem.store.rows import GAME_COLUMNS, GameRow, GameView, PlayerRow
from pbem.store.work import Work
from pbem.text.wording import Message
from pbem.text.zones import When

S = TypeVar("S")   # the game kind's state

FORMAT = "pbem.draft/1"   # what this code writes and reads; another is made again (drafts)

__all__ = ["FORMAT", "DraftUnfit", "TurnReports", "draft_bytes", "moves_until",
           "reports_from_draft", "value_data", "value_of"]


@dataclass(frozen=True)
class TurnReports(Generic[S]):
    """What a turn's reports are made of, as the transaction that played the turn read it:
    the game, its state and its seats then, the notes, the table talk, the final report's
    record and course. pbem.services.reports.compose_reports makes the mails of it, in
    that transaction or later (a draft: pbem.runner.composer)."""

    game: GameView
    state: S
    now: datetime
    players: Mapping[int, PlayerRow]
    options: GameOptions | None
    talk: list[dict[str, Any]]
    record: list[tuple[str, str, bytes]]
    drawn: Course | None
    notes: list[str] | None = None
    seat_notes: dict[int, list[str]] | None = None
    only_seat: int | None = None
    in_reply_to: str | None = None
    inbound_id: int | None = None


class DraftUnfit(ValueError):
    """A value a draft cannot hold (of a class it does not know)."""


_PLAIN = (str, int, float, bool, type(None))
_PLAYER_FIELDS = tuple(f.name for f in fields(PlayerRow))


def value_data(value: Any) -> Any:
    """``value`` as JSON's data, read back by ``value_of`` as it was (DraftUnfit: a value
    of a class it does not know, a subclass of a known one too)."""
    kind = type(value)
    if kind in _PLAIN:
        return value
    if kind is list:
        return [value_data(item) for item in value]
    if kind is tuple:
        return {"t": [value_data(item) for item in value]}
    if kind is dict:
        return {"d": [[value_data(k), value_data(v)] for k, v in value.items()]}
    if kind is Message:
        return {"m": [value.source, [[k, value_data(v)] for k, v in value.values],
                      value.plural, value.n, value.capital]}
    if kind is Told:
        return {"told": value_data(value.message)}
    if kind is When:
        return {"when": value_data(value.at)}
    if kind is datetime:   # (fold: which of a repeated local hour, which isoformat drops)
        return {"at" if not value.fold else "at_fold": value.isoformat()}
    if kind is bytes:
        return {"b": base64.b64encode(value).decode("ascii")}
    raise DraftUnfit(f"a draft holds no {kind.__module__}.{kind.__qualname__}")


def value_of(data: Any) -> Any:
    """What ``value_data`` made ``data`` of."""
    if isinstance(data, list):
        return [value_of(item) for item in data]
    if not isinstance(data, dict):
        return data
    ((tag, inner),) = data.items()
    if tag == "t":
        return tuple(value_of(item) for item in inner)
    if tag == "d":
        return {value_of(k): value_of(v) for k, v in inner}
    if tag == "m":
        source, values, plural, n, capital = inner
        return Message(source, tuple((k, value_of(v)) for k, v in values), plural, n, capital)
    if tag == "told":
        return Told(value_of(inner))
    if tag == "when":
        return When(value_of(inner))
    if tag == "at":
        return datetime.fromisoformat(inner)
    if tag == "at_fold":
        return datetime.fromisoformat(inner).replace(fold=1)
    if tag == "b":
        return base64.b64decode(inner)
    raise ValueError(f"a draft's value of an unknown kind: {tag!r}")


def moves_until(session: Work, game: GameView) -> list[list[Any]]:
    """The game's recorded moves before its turn now (turn, seat, move's JSON), in the
    order pbem.games.states.replayed_state replays them: the state the turn just played
    left (read once a transaction and turn: moves_before)."""
    return [[turn, seat, move] for turn, seat, move in moves_before(session, game)]


def draft_bytes(turn: TurnReports[Any], seats: int, moves: Sequence[Sequence[Any]]) -> bytes:
    """``turn`` as a draft's bytes: JSON (``seats``, ``moves``: what replays its state)."""
    if turn.game.kind not in SHIPPED:   # read by another process, which lacks the kind
        raise DraftUnfit(f"the game kind '{turn.game.kind}' is registered by this process alone")
    players = turn.players
    if any(type(p) is not PlayerRow for p in players.values()):
        raise DraftUnfit("a draft holds its players as rows")
    data = {
        "format": FORMAT,
        "game": {name: value_data(getattr(turn.game, name)) for name in GAME_COLUMNS},
        "seats": seats,
        "moves": [list(move) for move in moves],
        "now": value_data(turn.now),
        "players": [[seat, {name: value_data(getattr(p, name)) for name in _PLAYER_FIELDS}]
                    for seat, p in players.items()],
        "options": turn.options.to_json() if turn.options is not None else None,
        "talk": value_data(turn.talk),
        "record": value_data(turn.record),
        "drawn": value_data(turn.drawn),
        "notes": value_data(turn.notes),
        "seat_notes": value_data(turn.seat_notes),
        "only_seat": turn.only_seat,
        "in_reply_to": turn.in_reply_to,
        "inbound_id": turn.inbound_id,
    }
    try:
        return json.dumps(data, allow_nan=False, separators=(",", ":")).encode()
    except (TypeError, ValueError) as exc:   # a value JSON cannot hold (NaN, a key)
        raise DraftUnfit(str(exc)) from exc


def draft_format(raw: bytes) -> str | None:
    """The format a draft's bytes say they are in (None: none that JSON reads)."""
    try:
        data = json.loads(raw)
    except ValueError:
        return None
    found = data.get("format") if isinstance(data, dict) else None
    return found if isinstance(found, str) else None


def reports_from_draft(session: Session, raw: bytes) -> TurnReports[Any]:
    """The TurnReports a draft's bytes hold (of FORMAT: ValueError, KeyError or TypeError
    if not), its state replayed from its moves; ``session`` is only read."""
    data = json.loads(raw)
    if data.get("format") != FORMAT:
        raise ValueError(f"a draft of format {data.get('format')!r}, not {FORMAT}")
    game = GameRow(**{name: value_of(data["game"][name]) for name in GAME_COLUMNS})
    state = replayed_state(session, game, seats=int(data["seats"]), kind=kind_of(game),
                           recorded=data["moves"])
    options = data["options"]
    return TurnReports(
        game=game, state=state, now=value_of(data["now"]),
        players={int(seat): PlayerRow(**{k: value_of(v) for k, v in row.items()})
                 for seat, row in data["players"]},
        options=GameOptions.from_json(options) if options is not None else None,
        talk=value_of(data["talk"]), record=value_of(data["record"]),
        drawn=value_of(data["drawn"]), notes=value_of(data["notes"]),
        seat_notes=value_of(data["seat_notes"]), only_seat=data["only_seat"],
        in_reply_to=data["in_reply_to"], inbound_id=data["inbound_id"])
