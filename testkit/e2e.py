"""Whole games over the real mail stack (testkit/mailstack.py: Dovecot IMAP in, SMTP out),
for tests/test_e2e_*.py: a server on the stack, the players' and the referee's mailboxes,
the reports and the answers they get, replies to the reports, and the checks every such
game ends with (one report per player per turn, one threaded answer per mail sent, the
export passing `pbem verify`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Self

import jsonschema
from sqlmodel import Session

from pbem.demo.robot_client import client_order_lines, parse_mail, reply_to, report_view
from pbem.games.records import find_game
from pbem.games.turn_in_play import pending_orders
from pbem.runner.server import Server
from pbem.services.export import export_json, schema
from pbem.store.work import Work
from testkit.stack import stack_settings

REFEREE_KEY = "letmein-referee"
SCHEMA = "game-record-generic.schema.json"   # with the kinds registered (export.schema)

View = dict[str, Any]


class Client:
    """One mailbox as a person sees it: the mails that arrived since the last look."""

    def __init__(self, stack: Any, user: str) -> None:
        self.stack, self.user, self.last_uid = stack, user, 0
        self.address = stack.address(user)
        self.imap: Any = None   # one IMAP session for the whole game, as a mail client keeps

    def new_mail(self) -> list[EmailMessage]:
        if self.imap is None:
            self.imap = self.stack.imap(self.user)
            self.imap.select_folder("INBOX", readonly=True)
        self.imap.noop()   # let the server tell of new mail
        uids = [u for u in self.imap.search(["UID", f"{self.last_uid + 1}:*"])
                if u > self.last_uid]
        if not uids:
            return []
        data = self.imap.fetch(uids, ["BODY.PEEK[]"])
        self.last_uid = max(uids)
        return [parse_mail(data[u][b"BODY[]"]) for u in sorted(data)]

    def close(self) -> None:
        if self.imap is not None:
            self.imap.logout()
            self.imap = None

    def send(self, raw: bytes) -> None:
        self.stack.deliver("bluff", raw, mail_from=self.address)


def text_of(msg: EmailMessage) -> str:
    body = msg.get_body(("plain",))
    assert body is not None
    return str(body.get_content())


def stack_server(stack: Any, tmp_path: Path, users: list[str],
                 database: str | None = None, **settings: Any) -> Server:
    """A server on database (default: SQLite in tmp_path) that reads bluff's IMAP inbox
    and sends over the stack's SMTP; the mailboxes of bluff, the referee and users are
    emptied first. settings: any other field."""
    for user in ["bluff", "referee", *users]:
        stack.clear(user)
    return Server(stack_settings(stack, database or f"sqlite:///{tmp_path / 'pbem.db'}",
                                 REFEREE_KEY, **settings))


class Table:
    """A game over the stack as its players see it. collect() reads every player's new
    mail: a report (report.json, not a reply) counts for its turn and becomes the latest;
    anything else is an answer. check(user, msg, view) looks at every report; with
    rounds_key, the reveal under that key in a view is kept by round, the same for all.
    database: the server's database URL (the ``database`` fixture), else SQLite; settings:
    the server's other settings."""

    def __init__(self, stack: Any, tmp_path: Path, players: list[str], *,
                 check: Callable[[str, EmailMessage, View], None] | None = None,
                 rounds_key: str | None = None, database: str | None = None,
                 settings: dict[str, Any] | None = None) -> None:
        self.stack, self.players, self.tmp_path = stack, players, tmp_path
        self.server = stack_server(stack, tmp_path, players, database, **(settings or {}))
        self.clients = {u: Client(stack, u) for u in players}
        self.referee = Client(stack, "referee")
        self.check, self.rounds_key = check, rounds_key
        self.reports: dict[str, Counter[int]] = defaultdict(Counter)   # user -> turn -> count
        self.latest: dict[str, tuple[EmailMessage, View]] = {}
        self.first_reports: dict[str, EmailMessage] = {}
        self.rounds: dict[int, View] = {}
        self.sent_ids: dict[str, list[str]] = defaultdict(list)       # user -> Message-IDs
        self.answers: dict[str, list[EmailMessage]] = defaultdict(list)
        self.turn = 0   # the turn of the final reports, once turns() is done

    def close(self) -> None:
        for client in [*self.clients.values(), self.referee]:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- the referee ---------------------------------------------------------------------

    def referee_sends(self, *lines: str) -> None:
        """One referee mail: KEY and the command lines."""
        msg = EmailMessage()
        msg["From"] = self.stack.address("referee")
        msg["To"] = self.stack.address("bluff")
        msg["Subject"] = "setup"
        msg.set_content("\n".join([f"KEY {REFEREE_KEY}", *lines]) + "\n")
        self.referee.send(msg.as_bytes(policy=policy.SMTP))

    def setup(self, game: str, newgame: str) -> list[str]:
        """The lines that make game with the NEWGAME line, seat every player and start it."""
        return [newgame, *(f"ADD {game} {self.stack.address(u)} Player-{u}"
                           for u in self.players), f"START {game}"]

    # --- the players ---------------------------------------------------------------------

    def collect(self) -> None:
        for user, client in self.clients.items():
            for msg in client.new_mail():
                view = report_view(msg)
                if view is None or msg["In-Reply-To"] is not None:
                    self.answers[user].append(msg)
                    continue
                self.reports[user][view["turn"]] += 1
                self.latest[user] = (msg, view)
                self.first_reports.setdefault(user, msg)
                if self.rounds_key is not None and view[self.rounds_key] is not None:
                    r = view[self.rounds_key]
                    assert self.rounds.setdefault(r["round"], r) == r   # the same for all
                if self.check is not None:
                    self.check(user, msg, view)

    def send(self, user: str, raw: bytes) -> None:
        self.sent_ids[user].append(str(parse_mail(raw)["Message-ID"]))
        self.clients[user].send(raw)

    def reply(self, user: str, lines: list[str], to: EmailMessage | None = None) -> None:
        """user replies to `to` (their latest report) with lines as the body."""
        msg = to if to is not None else self.latest[user][0]
        self.send(user, reply_to(msg, self.clients[user].address, lines))

    def views(self) -> dict[str, View]:
        return {u: v for u, (_, v) in self.latest.items()}

    def first_reports_in(self) -> dict[str, int]:
        """Collects the reports of turn 1: every player has one, which states the commitment
        to the seed, and a seat of their own, 1..n; returns user -> seat."""
        self.collect()
        assert set(self.latest) == set(self.players)
        assert all(v["turn"] == 1 for v in self.views().values())
        for user, msg in self.first_reports.items():
            # the commitment to the seed, in whichever language the report is
            assert self.views()[user]["commitment"] in text_of(msg)
        seat_of = {u: v["you"] for u, v in self.views().items()}
        assert sorted(seat_of.values()) == list(range(1, len(self.players) + 1))
        return seat_of

    def refused_on_turn_1(self, game: str, *users: str) -> list[str]:
        """After a tick, the mail of turn 1 that users sent changed nothing: no new report,
        game still at turn 1 with no order pending. Returns the texts of users' answers."""
        self.server.tick()
        self.collect()
        assert all(set(self.reports[u]) == {1} for u in self.players)   # no new report
        with Work(self.server.engine) as session:
            found = find_game(session, game)
            assert found.turn == 1 and pending_orders(session, found) == {}
        return [text_of(a) for u in users for a in self.answers[u]
                if a["In-Reply-To"] is not None]

    def turns(self, limit: int) -> Iterator[tuple[int, dict[str, View]]]:
        """(turn, the views of its reports) for every turn until the game is over; after
        each the server runs a tick and the players' mail is collected. Everyone has this
        turn's report when it is yielded. self.turn ends as the final reports' turn."""
        turn = 1
        while True:
            views = self.views()
            if all(v["game_over"] for v in views.values()):
                self.turn = turn
                return
            assert {v["turn"] for v in views.values()} == {turn}
            yield turn, views
            self.server.tick()
            self.collect()
            turn += 1
            assert turn < limit, "the game did not end"

    def robot_turns(self, rng: Any, before: list[str], after: list[str],
                    limit: int) -> Iterator[tuple[str, list[str]]]:
        """turns() of a game of one move a turn, played by the orders pbem.demo.robot_client
        writes from report.json alone, between the lines before and after: every turn the
        players agree whose move it is and that player alone has orders. Yields (the
        mover, their order lines) once they are sent, before the tick."""
        for _, views in self.turns(limit):
            (to_move,) = {v["to_move"] for v in views.values()}
            sent = {}
            for user, (msg, view) in sorted(self.latest.items()):
                lines = client_order_lines(view, rng)
                if lines:
                    sent[user] = lines
                    self.reply(user, [*before, *lines, *after], msg)
            assert [views[u]["you"] for u in sent] == [to_move]
            ((mover, lines),) = sent.items()
            yield mover, lines

    # --- what every game ends with -------------------------------------------------------

    def check_the_mail(self, refusals: int) -> list[str]:
        """Every player got exactly one report for every turn, the final one included;
        every mail a player sent got exactly one answer, threaded to it, marked as an
        automatic reply; refusals of them refused the mail. Returns the refusals' texts."""
        for user in self.players:
            assert set(self.reports[user].values()) == {1}, self.reports[user]
            assert sorted(self.reports[user]) == list(range(1, self.turn + 1))
        for user in self.players:
            # notices that answer no mail (the welcome of ADD, table talk) are not answers
            replied_to = Counter(str(a["In-Reply-To"]) for a in self.answers[user]
                                 if a["In-Reply-To"] is not None)
            assert replied_to == Counter(self.sent_ids[user]), user
            for a in self.answers[user]:
                if a["In-Reply-To"] is not None:
                    assert a["Auto-Submitted"] == "auto-replied"
        texts = [text_of(a) for u in self.players for a in self.answers[u]
                 if "nothing was applied" in str(a["Subject"]).lower()]
        assert len(texts) == refusals, texts
        return texts

    def assert_rounds_numbered(self) -> None:
        """The reveals the players saw are those of rounds 1, 2, ..., none missing."""
        assert sorted(self.rounds) == list(range(1, len(self.rounds) + 1))

    def verified_export(self, game: str, standings: list[dict[str, int]]) -> str:
        """The game's export follows the generic schema, has the standings as its result
        and a move for every turn, and passes `pbem verify`; returns what that printed."""
        with Session(self.server.engine) as session:
            record = export_json(session, find_game(session, game))
        jsonschema.validate(record, schema(SCHEMA))
        # the keys the caller recounted (pbem.record/2 adds classic's dice held)
        assert set(record["result"]) == {"standings"}
        assert [{k: s[k] for k in expected} for s, expected in zip(
            record["result"]["standings"], standings, strict=True)] == standings
        assert len(record["moves"]) == self.turn - 1
        return pbem_verify(record, self.tmp_path / f"{game}.json")


def pbem_verify(record: dict[str, Any], path: Path) -> str:
    """`pbem verify` on record (written to path) as a process; returns what it printed."""
    path.write_text(json.dumps(record))
    done = subprocess.run([sys.executable, "-m", "pbem.cli", "verify", str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout
