"""The values of Cup of Bluff (see pbem.rules.cupofbluff): moves, turn records, events.

Each move is a frozen dataclass; ``to_json`` gives {"move": <kind>, ...} and
``move_from_json`` reads it back, raising MalformedMove on anything else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal, TypedDict

from pbem.rules.errors import MalformedMove
from pbem.text.wording import _

# The moves' JSON, by name. from_json reads a move's JSON as the database or a record gives
# it back, unchecked (values Any): what is not a move raises MalformedMove.


class AnnounceJSON(TypedDict):
    move: Literal["announce"]
    total: int
    guesser: int


class StealJSON(TypedDict):
    move: Literal["steal"]
    token: int
    victim: int


class DoubletJSON(TypedDict):
    move: Literal["doublet"]
    take: int
    give: list[int]


class AnswerJSON(TypedDict):
    move: Literal["answer"]
    ok: bool


class GiveJSON(TypedDict):
    move: Literal["give"]
    token: int


MoveJSON = AnnounceJSON | StealJSON | DoubletJSON | AnswerJSON | GiveJSON


def _int(data: Mapping[str, Any], key: str) -> int:
    value = data[key]
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedMove(_("{key} must be a whole number, not {value}", key=key,
                              value=repr(value)))
    return value


@dataclass(frozen=True)
class Announce:
    total: int
    guesser: int

    def to_json(self) -> AnnounceJSON:
        return {"move": "announce", "total": self.total, "guesser": self.guesser}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Announce:
        return cls(_int(data, "total"), _int(data, "guesser"))

    def __str__(self) -> str:
        return f"ANNOUNCE {self.total} TO {self.guesser}"


@dataclass(frozen=True)
class Steal:
    token: int
    victim: int

    def to_json(self) -> StealJSON:
        return {"move": "steal", "token": self.token, "victim": self.victim}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Steal:
        return cls(_int(data, "token"), _int(data, "victim"))

    def __str__(self) -> str:
        return f"STEAL {self.token} FROM {self.victim}"


@dataclass(frozen=True)
class Doublet:
    take: int
    give: tuple[int, ...]

    def to_json(self) -> DoubletJSON:
        return {"move": "doublet", "take": self.take, "give": list(self.give)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Doublet:
        give = data["give"]
        if not isinstance(give, list):
            raise MalformedMove(_("give must be a list of tokens, not {give}",
                                  give=repr(give)))
        return cls(_int(data, "take"), tuple(_int({"give": g}, "give") for g in give))

    def __str__(self) -> str:
        return f"DOUBLET TAKE {self.take} GIVE {' '.join(map(str, self.give))}"


@dataclass(frozen=True)
class Answer:
    ok: bool

    def to_json(self) -> AnswerJSON:
        return {"move": "answer", "ok": self.ok}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Answer:
        ok = data["ok"]
        if not isinstance(ok, bool):
            raise MalformedMove(_("ok must be true or false, not {ok}", ok=repr(ok)))
        return cls(ok)

    def __str__(self) -> str:
        return "OK" if self.ok else "BLUFF"


@dataclass(frozen=True)
class Give:
    token: int

    def to_json(self) -> GiveJSON:
        return {"move": "give", "token": self.token}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Give:
        return cls(_int(data, "token"))

    def __str__(self) -> str:
        return f"GIVE {self.token}"


Move = Announce | Steal | Doublet | Answer | Give
_MOVES: Final[dict[str, type[Move]]] = {
    "announce": Announce, "steal": Steal, "doublet": Doublet, "answer": Answer, "give": Give}


def move_from_json(data: Mapping[str, Any]) -> Move:
    kind = _MOVES.get(str(data.get("move")))
    if kind is None:
        raise MalformedMove(_("not a Cup of Bluff move: {data}", data=repr(data)))
    try:
        return kind.from_json(data)
    except KeyError as exc:
        raise MalformedMove(_("not a Cup of Bluff move: {data}", data=repr(data))) from exc


# --- records and events ---------------------------------------------------

@dataclass(frozen=True)
class Claim:
    action: str          # "announce" | "steal"
    total: int           # the announced total = the token at stake
    guesser: int
    ok: bool | None = None   # set once answered (only kept while the Bluffer must GIVE)


@dataclass(frozen=True)
class TurnRecord:
    """A finished Bluffer turn, with its reveal."""

    number: int
    bluffer: int
    roll: tuple[int, ...]
    action: str                       # "announce" | "steal" | "doublet"
    total: int                        # announced total, named token, or the token taken
    guesser: int | None = None
    ok: bool | None = None
    winner: int | None = None         # who was right (announce and steal)
    given: int | None = None          # failed steal: the token the Bluffer gave
    returned: tuple[int, ...] = ()    # doublet: the tokens put back in the centre

    @property
    def truthful(self) -> bool:
        return sum(self.roll) == self.total


@dataclass(frozen=True)
class Standing:
    rank: int
    seat: int
    points: int
    tokens: int


@dataclass(frozen=True)
class Claimed:
    number: int
    bluffer: int
    action: str
    total: int
    guesser: int


@dataclass(frozen=True)
class Revealed:
    record: TurnRecord      # given is None while the Bluffer still has to GIVE


@dataclass(frozen=True)
class Given:
    number: int
    bluffer: int
    guesser: int
    token: int


@dataclass(frozen=True)
class DoubletMade:
    record: TurnRecord


@dataclass(frozen=True)
class Rolled:
    number: int
    bluffer: int
    roll: tuple[int, ...]   # secret: for the game record, never for a public report


@dataclass(frozen=True)
class GameEnded:
    standings: tuple[Standing, ...]


Event = Claimed | Revealed | Given | DoubletMade | Rolled | GameEnded
