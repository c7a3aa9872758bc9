"""A game kind written here from scratch, as python-chess lets a variant be written
outside it: "guess the die", in which every player guesses the face of a die the seed
rolls each round, and a right guess scores.

It has its own state, its own move and its own templates (tests/kinds/toy_templates/: its
turn report and its look on the web pages), subclasses nothing but ``GameKind`` and is
put in the table with ``pbem.kinds.register``. Through the real mail stack (Dovecot IMAP
in, SMTP out) it is set up, refused, played, reported, exported and verified (the
`pbem verify` command), and its web pages are served, with no change to pbem for it and
no patching: whatever outside pbem/kinds/ named a kind would fail here.
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sqlmodel import Session

from pbem.cli import build_parser, main
from pbem.demo.robot_client import client_order_lines
from pbem.games.records import find_game, seated
from pbem.kinds import (
    DEFAULT_KIND,
    JSON,
    KINDS,
    GameKind,
    JSONMap,
    Resolution,
    TakenOrder,
    Understood,
    Viewer,
    kinds_note,
    register,
    unregister,
)
from pbem.kinds.classic import ClassicKind
from pbem.kinds.verify import check_record
from pbem.orders.commands import Command, Order
from pbem.rules.dice import DiceStream
from pbem.rules.errors import IllegalMove, MalformedMove, RulesError
from pbem.services.export import export_json, schema
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.links import key_generation, private_link
from testkit.e2e import SCHEMA, Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3"]
GAME = "guess-1"
SECRET = "toy-web-secret"
FACES = range(1, 7)


@dataclass(frozen=True)
class Guess:
    """The one move: the face a player guesses the round's die shows."""

    face: int


@dataclass(frozen=True)
class GuessState:
    players: int
    rounds: int
    rolls: tuple[int, ...] = ()
    right: tuple[int, ...] = ()        # per seat, seat 1 first

    @property
    def over(self) -> bool:
        return len(self.rolls) >= self.rounds


def parse_guess(args: list[str]) -> Guess:
    if len(args) != 1 or not args[0].isdigit():
        raise MalformedMove("GUESS takes one face, not '" + " ".join(args) + "'")
    return Guess(int(args[0]))


class GuessTheDie(GameKind[GuessState, Guess]):
    name = "guess"
    title = "guess the die"
    min_players = 2
    max_players = 5
    commands = (Command("GUESS", "GUESS <face>", "guess the face of this round's die",
                        parse_guess),)
    option_help = "ROUNDS <n>: how many rounds (3)"
    help_note = "One ordinary die, rolled by the seed each round."
    standing_orders: Mapping[str, str] = {}
    template_dir = Path(__file__).parent / "toy_templates"
    report_template = "toy/report"
    web_look = "toy/look.html.j2"

    def parse_options(self, words: Sequence[str]) -> JSON:
        if not words:
            return {"rounds": 3}
        if len(words) == 2 and words[0].upper() == "ROUNDS" and words[1].isdigit():
            return {"rounds": int(words[1])}
        raise Refusal(f"unknown option '{' '.join(words)}' for guess the die",
                      self.option_help)

    def describe_rules(self, rules: JSONMap) -> str:
        return f"guess the die, {rules['rounds']} rounds"

    def start(self, rules: JSONMap, stream: DiceStream, players: int) -> GuessState:
        return GuessState(players, int(rules["rounds"]), (), (0,) * players)

    def due(self, state: GuessState) -> dict[int, str]:
        if state.over:
            return {}
        return {s: f"guess the die of round {len(state.rolls) + 1}"
                for s in range(1, state.players + 1)}

    def orders_now(self, state: GuessState, seat: int) -> list[str]:
        return ["GUESS"] if seat in self.due(state) else []

    def take_order(self, state: GuessState, seat: int,
                   orders: Sequence[Order]) -> TakenOrder[Guess]:
        guesses = [o for o in orders if o.name == "GUESS"]
        if len(guesses) != 1:
            raise Refusal("one GUESS a mail, please", "e.g. GUESS 4")
        (order,) = guesses
        try:
            self.check(state, seat, order.args)
        except RulesError as exc:   # the rules' refusal, quoting the line it is about
            exc.quoting(order, hint="a die shows 1 to 6")
            raise
        said = f"GUESS {order.args.face}"
        return TakenOrder(order.args, [Understood(order, said)], said)

    def check(self, state: GuessState, seat: int, move: Guess) -> None:
        if seat not in self.due(state):
            raise IllegalMove(f"player {seat} has no guess to make now")
        if move.face not in FACES:
            raise IllegalMove(f"a die shows 1 to 6, not {move.face}")

    def apply(self, state: GuessState, moves: Mapping[int, Guess],
              stream: DiceStream) -> Resolution[GuessState]:
        (roll,) = stream.dice(f"guess/roll/{len(state.rolls) + 1}", 1)
        right = tuple(n + (moves[s].face == roll if s in moves else 0)
                      for s, n in enumerate(state.right, start=1))
        return Resolution(dataclasses.replace(state, rolls=(*state.rolls, roll), right=right),
                          notes=[f"The die showed {roll}."],
                          record={s: {"dealt": [roll]} for s in moves})

    def robot_move(self, state: GuessState, seat: int, rng: random.Random,
                   level: str = "strong") -> Guess:
        return Guess(rng.choice(FACES))

    def move_to_json(self, move: Guess) -> JSON:
        return {"guess": move.face}

    def move_from_json(self, data: JSONMap) -> Guess:
        return Guess(int(data["guess"]))

    def over(self, state: GuessState) -> bool:
        return state.over

    def standings(self, state: GuessState) -> list[dict[str, int]]:
        rows = [{"rank": 1 + sum(other > n for other in state.right), "seat": s, "score": n}
                for s, n in enumerate(state.right, start=1)]
        return sorted(rows, key=lambda row: (row["rank"], row["seat"]))

    def view(self, state: GuessState, seat: int | None) -> JSON:
        return {"game_over": state.over, "rolls": list(state.rolls),
                "due": seat is not None and seat in self.due(state),
                "players": [{"seat": s, "right": n}
                            for s, n in enumerate(state.right, start=1)]}

    def history(self, state: GuessState) -> list[str]:
        return [f"round {i}: the die showed {r}" for i, r in enumerate(state.rolls, start=1)]

    def web_tables(self, state: GuessState, viewer: Viewer) -> list[JSON]:
        return [{"type": "rolls", "title": "The rolls", "rolls": list(state.rolls)}]

    def web_scores(self, state: GuessState) -> list[JSON]:
        return [{"seat": s, "right": n} for s, n in enumerate(state.right, start=1)]

    def legal_moves(self, state: GuessState, seat: int) -> list[Guess]:
        return [Guess(f) for f in FACES] if seat in self.due(state) else []

    def order_lines(self, move: Guess) -> list[str]:
        return [f"GUESS {move.face}"]

    def client_order_lines(self, view: JSONMap, rng: random.Random,
                           level: str = "normal") -> list[str]:
        return [f"GUESS {rng.choice(FACES)}"] if view["due"] else []


GUESS = GuessTheDie()


@pytest.fixture
def guess() -> Iterator[GuessTheDie]:
    register(GUESS)
    yield GUESS
    unregister(GUESS)   # the other tests see the three kinds of pbem only


def web_client(table: Table) -> Any:
    from starlette.testclient import TestClient

    from pbem.web import create_app
    settings = table.server.settings
    return TestClient(create_app(dataclasses.replace(
        settings, web=dataclasses.replace(settings.web, secret=SECRET))))


def private_path(table: Table, seat: int) -> str:
    with Work(table.server.engine) as session:
        game = find_game(session, GAME)
        player = seated(session, game)[seat]
        assert game.id is not None and player.id is not None
        url = private_link("http://x", SECRET, 30, game_id=game.id, seat=seat,
                           player_id=player.id,
                           generation=key_generation(player.key_hash, player.key),
                           now=datetime.now(UTC))
    assert url is not None
    return url.removeprefix("http://x")


def check_view(user: str, msg: Any, view: Mapping[str, Any]) -> None:
    assert view["format"] == "pbem.guess.view/1"
    assert f"GUESS THE DIE -- game {GAME}" in text_of(msg)   # the kind's own report


def test_a_name_belongs_to_one_kind() -> None:
    classic = KINDS["classic"]
    with pytest.raises(ValueError, match="'classic' exists already"):
        register(ClassicKind())
    assert register(classic) is classic and KINDS["classic"] is classic   # again: no change


def test_what_lists_the_kinds_lists_a_registered_one(guess: GuessTheDie) -> None:
    assert KINDS["guess"] is guess and guess.view_format == "pbem.guess.view/1"
    assert "guess the die" in str(kinds_note())        # HELP to a sender without a game
    args = build_parser().parse_args(["demo", "--rules", "guess"])   # pbem demo's choices
    assert args.rules == "guess" and build_parser().parse_args(["demo"]).rules == DEFAULT_KIND
    assert schema(SCHEMA)["properties"]["kind"]["enum"] == ["classic", "cup", "guess"]
    assert "guess" in schema("web-api.schema.json")["$defs"]["kind"]["enum"]


@pytest.mark.parametrize("compose_apart", [False, True], ids=["reports-in-turn", "composer"])
def test_a_kind_written_from_scratch_plays_by_mail_and_shows_everywhere(
        guess: GuessTheDie, mailstack: Any, tmp_path: Path,
        capsys: pytest.CaptureFixture[str], compose_apart: bool) -> None:
    """With the composer on too: its process does not know a kind registered here, so
    such a game's reports are made in the turn's transaction."""
    settings = {"compose_apart": compose_apart, "composer_from_turn": 1}
    with Table(mailstack, tmp_path, PLAYERS, check=check_view, settings=settings) as table:
        # the shell's answer to an unknown kind names the registered ones
        with pytest.raises(Refusal, match=r"unknown game kind 'nosuch' \(kinds: .*guess\)"):
            table.server.referee.admin(["NEWGAME", "other-1", "RULES", "nosuch"])
        table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED 4 RULES guess ROUNDS 3"))
        table.server.tick()
        (started,) = table.referee.new_mail()
        said = " ".join(text_of(started).split())
        assert f"game {GAME}" in said and "guess the die, 3 rounds" in said, said
        table.first_reports_in()

        # the rules' refusal is what the player is told, quoting the line
        table.reply("p1", ["GUESS 9"])
        (refusal,) = table.refused_on_turn_1(GAME, "p1")
        assert "GUESS 9" in refusal and "a die shows 1 to 6, not 9" in refusal, refusal

        # a seat's private page offers its orders as mails, from the kind's moves
        with web_client(table) as client:
            mine = client.get("/api" + private_path(table, 2)).json()["you"]
            assert [o["lines"] for o in mine["orders"]] == [[f"GUESS {f}"] for f in FACES]
            assert "GAME%20guess-1" in mine["orders"][0]["mailto"]

        rng = random.Random(7)
        for _, _views in table.turns(limit=10):
            for user, (msg, view) in sorted(table.latest.items()):
                lines = client_order_lines(view, rng)   # the robot finds the kind by format
                assert lines
                table.reply(user, lines, msg)
        table.check_the_mail(refusals=1)
        assert table.turn == 4   # three rounds

        final = table.views()["p1"]
        assert final["game_over"] and len(final["rolls"]) == 3
        assert "THE GUESSING IS OVER" in text_of(table.latest["p2"][0])

        # the export: the generic record, by the kind, in the schema, and it verifies
        with Session(table.server.engine) as session:
            record = export_json(session, find_game(session, GAME))
        jsonschema.validate(record, schema(SCHEMA))     # its kinds: the registry's
        assert record["kind"] == "guess" and len(record["moves"]) == 3 * len(PLAYERS)
        assert [{k: s[k] for k in ("rank", "seat", "score")} for s in final["standings"]] \
            == record["result"]["standings"]
        assert all(m["dealt"] == [final["rolls"][m["turn"] - 1]] for m in record["moves"])
        verdict = check_record(record)
        assert verdict.ok and "(guess the die)" in verdict.lines[0], verdict.lines
        path = tmp_path / "guess-1.json"
        path.write_text(json.dumps(record))
        assert main(["verify", str(path)]) == 0                # `pbem verify`
        assert "OK" in capsys.readouterr().out
        tampered = {**record, "moves": [{**record["moves"][0], "move": {"guess": 7}},
                                        *record["moves"][1:]]}
        assert not check_record(tampered).ok

        # the web pages: the index, the game in the kind's look, its replay, its record
        with web_client(table) as client:
            index = client.get("/")
            assert index.status_code == 200 and "guess the die" in index.text
            page = client.get(f"/api/games/{GAME}").json()
            assert (page["kind"], page["kind_title"], page["status"]) == (
                "guess", "guess the die", "over")
            assert page["verification"]["ok"] and page["standings"][0]["rank"] == 1
            html = client.get(f"/games/{GAME}")
            assert html.status_code == 200, html.text
            assert 'id="toy-rolls"' in html.text and "Right guesses" in html.text
            assert html.text.count('class="toy-right"') == len(PLAYERS)
            replay = client.get(f"/api/games/{GAME}/replay/1").json()
            assert replay["kind"] == "guess" and len(replay["moves"]) == len(PLAYERS)
            drawn = client.get(f"/games/{GAME}/replay/1?lang=de")
            assert drawn.status_code == 200 and 'id="toy-rolls"' in drawn.text
            assert client.get(f"/games/{GAME}/record.json").json() == record
