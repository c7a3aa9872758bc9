"""A whole game of classic Bluff over the real mail stack: Dovecot IMAP in, SMTP out.

Four robot players read their reports from their own IMAP mailboxes and answer
them by replying over SMTP with the orders pbem.robot_client writes from
report.json alone. On the way: NEWGAME with a bad option and an unknown kind
is refused quoting the line; a wrong order and an order out of turn are
answered with polite errors that change nothing; every player gets one report
after every move, their own dice only; every mail is answered once; the
final standings equal a recount from the reveals in the reports; the export
follows the generic schema and passes `pbem verify`.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from email import policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from sqlmodel import Session

from pbem.config import ImapSettings, Settings, SmtpSettings
from pbem.games import export_json, find_game, pending_orders
from pbem.robot_client import client_order_lines, parse_mail, reply_to, report_view
from pbem.server import Server

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3", "p4"]
REFEREE_KEY = "letmein-classic"
GAME = "classic-1"
DICE = 2
SEED = 4   # a short game: 4 players with 2 dice each
SCHEMA = Path(__file__).parent.parent / "schema" / "game-record-generic.schema.json"


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


def referee_mail(stack: Any, lines: list[str]) -> bytes:
    msg = EmailMessage()
    msg["From"] = stack.address("referee")
    msg["To"] = stack.address("bluff")
    msg["Subject"] = "setup"
    msg.set_content("\n".join([f"KEY {REFEREE_KEY}", *lines]) + "\n")
    return msg.as_bytes(policy=policy.SMTP)


def text_of(msg: EmailMessage) -> str:
    body = msg.get_body(("plain",))
    assert body is not None
    return str(body.get_content())


@pytest.fixture
def server(mailstack: Any, tmp_path: Path) -> Server:
    for user in ["bluff", "referee", *PLAYERS]:
        mailstack.clear(user)
    settings = Settings(
        database=f"sqlite:///{tmp_path / 'pbem.db'}", address=mailstack.address("bluff"),
        referee=mailstack.address("referee"), referee_key=REFEREE_KEY,
        imap=ImapSettings(mailstack.imap_host, mailstack.imap_port, ssl=False,
                          username=mailstack.address("bluff"), password="secret"),
        smtp=SmtpSettings(mailstack.smtp_host, mailstack.smtp_port, starttls=False))
    return Server(settings)


@pytest.fixture
def clients(mailstack: Any, server: Server) -> Iterator[dict[str, Client]]:
    """The players' and the referee's mailboxes (emptied by the server fixture)."""
    made = {u: Client(mailstack, u) for u in [*PLAYERS, "referee"]}
    yield made
    for client in made.values():
        client.close()


def matches(face: Any, bid_face: Any) -> bool:
    """RULES.md section 1: a number bid counts its face and the stars; a star bid stars."""
    return face == "*" if bid_face == "*" else face in (bid_face, "*")


def recount(rounds: dict[int, dict[str, Any]], seats: list[int]) -> list[dict[str, int]]:
    """The standings from the reveals alone (English rules: an exact bid costs everyone
    but the bidder a die; no super die): still in by dice, out by the round they went
    out in, later is better."""
    dice = {s: DICE for s in seats}
    out: dict[int, int] = {}
    for number in sorted(rounds):
        r = rounds[number]
        bid = r["bid"]
        actual = sum(1 for c in r["cups"] for f in c["dice"] if matches(f, bid["face"]))
        assert r["actual"] == actual, r
        if actual < bid["quantity"]:
            lost = {r["bidder"]: bid["quantity"] - actual}
        elif actual > bid["quantity"]:
            lost = {r["challenger"]: actual - bid["quantity"]}
        else:
            lost = {s: 1 for s in seats if s != r["bidder"] and dice[s] > 0}
        paid = {s: min(n, dice[s]) for s, n in lost.items()}
        assert {x["seat"]: x["lost"] for x in r["losses"]} == paid, r
        for s, n in paid.items():
            dice[s] -= n
            if dice[s] == 0:
                out[s] = number
        assert sorted(r["out"]) == sorted(s for s in paid if dice[s] == 0)
    key = {s: (1, dice[s]) if s not in out else (0, out[s]) for s in seats}
    ordered = sorted(seats, key=lambda s: (-key[s][0], -key[s][1], s))
    return [{"rank": 1 + sum(1 for o in seats if key[o] > key[s]), "seat": s, "score": dice[s]}
            for s in ordered]


def test_whole_classic_game_over_dovecot(mailstack: Any, server: Server,
                                         clients: dict[str, Client], tmp_path: Path) -> None:
    referee = clients["referee"]
    clients = {u: clients[u] for u in PLAYERS}

    # NEWGAME with a bad option or an unknown kind: a polite error quoting the line
    referee.send(referee_mail(mailstack, ["NEWGAME bad-1 RULES classic DICE 99"]))
    referee.send(referee_mail(mailstack, ["NEWGAME bad-2 RULES chess"]))
    setup = [f"NEWGAME {GAME} SEED {SEED} RULES classic DICE {DICE}"]
    setup += [f"ADD {GAME} {mailstack.address(u)} Player-{u}" for u in PLAYERS]
    setup.append(f"START {GAME}")
    referee.send(referee_mail(mailstack, setup))
    server.tick()
    notices = referee.new_mail()
    assert len(notices) == 3
    refused = [text_of(n) for n in notices[:2]]
    assert "nothing was applied" in str(notices[0]["Subject"]).lower()
    assert "NEWGAME bad-1 RULES classic DICE 99" in refused[0] and "DICE 99" in refused[0]
    assert "NEWGAME bad-2 RULES chess" in refused[1] and "unknown game kind" in refused[1]
    started = text_of(notices[2])
    assert "classic Bluff" in started and "started" in started

    rng = random.Random(5)
    reports: dict[str, Counter[int]] = defaultdict(Counter)   # user -> turn -> reports
    latest: dict[str, tuple[EmailMessage, dict[str, Any]]] = {}
    rounds: dict[int, dict[str, Any]] = {}
    sent_ids: dict[str, list[str]] = defaultdict(list)       # user -> Message-IDs sent
    answers: dict[str, list[EmailMessage]] = defaultdict(list)

    def collect() -> None:
        for user, client in clients.items():
            for msg in client.new_mail():
                view = report_view(msg)
                if view is None or msg["In-Reply-To"] is not None:
                    answers[user].append(msg)
                    continue
                assert view["format"] == "pbem.classic.view/1"
                reports[user][view["turn"]] += 1
                latest[user] = (msg, view)
                if view["last_round"] is not None:
                    r = view["last_round"]
                    assert rounds.setdefault(r["round"], r) == r   # the same reveal for all
                # your own dice, never another player's hidden ones
                assert view["your_dice"] is not None or view["game_over"]
                assert all(set(p) >= {"hidden", "exposed"} and isinstance(p["hidden"], int)
                           for p in view["players"])

    def send(user: str, raw: bytes) -> None:
        sent_ids[user].append(str(parse_mail(raw)["Message-ID"]))
        clients[user].send(raw)

    collect()
    assert set(latest) == set(PLAYERS)
    assert "commitment" in text_of(latest["p1"][0]).lower()
    seat_of = {u: v["you"] for u, (_, v) in latest.items()}
    user_at = {s: u for u, s in seat_of.items()}
    assert sorted(seat_of.values()) == [1, 2, 3, 4]

    # turn 1: the opener may not challenge, a player out of turn may not bid;
    # both get a polite error and nothing changes
    opener = user_at[latest["p1"][1]["to_move"]]
    waiter = user_at[latest["p1"][1]["to_move"] % 4 + 1]
    send(opener, reply_to(latest[opener][0], clients[opener].address, ["CHALLENGE"]))
    send(waiter, reply_to(latest[waiter][0], clients[waiter].address, ["BID 2 threes"]))
    server.tick()
    collect()
    assert all(set(reports[u]) == {1} for u in PLAYERS)   # no new report
    with Session(server.engine) as session:
        game = find_game(session, GAME)
        assert game.turn == 1 and pending_orders(session, game) == {}
    texts = [text_of(a) for u in (opener, waiter) for a in answers[u]]
    assert len(texts) == 2
    assert "CHALLENGE" in texts[0] and "must BID" in texts[0]
    assert "BID 2 threes" in texts[1] and "no move this turn" in texts[1]

    turn = 1
    while True:
        views = {u: v for u, (_, v) in latest.items()}
        if all(v["game_over"] for v in views.values()):
            break
        # everyone got this turn's report and agrees whose move it is
        assert {v["turn"] for v in views.values()} == {turn}
        (to_move,) = {v["to_move"] for v in views.values()}
        movers = []
        for user, (msg, view) in sorted(latest.items()):
            lines = client_order_lines(view, rng)
            if lines:
                movers.append(user)
                send(user, reply_to(msg, clients[user].address,
                                    ["Hello referee,", *lines, "-- ", "CHALLENGE"]))
        assert movers == [user_at[to_move]]
        assert "You must" in text_of(latest[movers[0]][0])
        server.tick()
        collect()
        turn += 1
        assert turn < 80, "the game did not end"

    # every player got exactly one report after every move, the final one included
    for user in PLAYERS:
        assert set(reports[user].values()) == {1}, reports[user]
        assert sorted(reports[user]) == list(range(1, turn + 1))
    # every mail a player sent got exactly one answer, threaded to it
    for user in PLAYERS:
        assert Counter(str(a["In-Reply-To"]) for a in answers[user]) == Counter(sent_ids[user])
    errors = [a for u in PLAYERS for a in answers[u]
              if "nothing was applied" in str(a["Subject"]).lower()]
    assert len(errors) == 2

    # the standings equal a recount from the reveals the players saw
    final = latest["p1"][1]
    assert sorted(rounds) == list(range(1, len(rounds) + 1)) and len(rounds) >= 3
    counted = recount(rounds, [1, 2, 3, 4])
    assert [{k: s[k] for k in ("rank", "seat", "score")} for s in final["standings"]] == counted
    assert final["winner"] == counted[0]["seat"]
    assert "THE GAME IS OVER" in text_of(latest["p2"][0])

    # the export follows the schema and verifies with the real command line
    with Session(server.engine) as session:
        record = export_json(session, find_game(session, GAME))
    jsonschema.validate(record, json.loads(SCHEMA.read_text()))
    assert record["result"] == {"standings": counted}
    assert len(record["moves"]) == turn - 1
    path = tmp_path / f"{GAME}.json"
    path.write_text(json.dumps(record))
    done = subprocess.run([sys.executable, "-m", "pbem.cli", "verify", str(path)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"OK: game {GAME} (classic Bluff)")
