"""A whole game of Cup of Bluff over the real mail stack: Dovecot IMAP in, SMTP out.

Four robot players read their reports from their own IMAP mailboxes and answer
them by replying over SMTP with the orders pbem.robot_client writes from
report.json alone (the Bluffer from its own roll, the Guesser from the claim).
On the way: a wrong order and an order out of turn are answered with polite
errors that change nothing; every player gets one report after every move,
and only the Bluffer ever sees the roll before it is shown; every mail is
answered once; the final standings equal a recount from the rounds in the
reports; the export follows the generic schema and passes `pbem verify`.
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
REFEREE_KEY = "letmein-cup"
GAME = "cup-of-bluff-1"
SEED = 247   # a short game (35 moves) with a steal that fails and a GIVE
SCHEMA = Path(__file__).parent.parent / "schema" / "game-record-generic.schema.json"
POINTS = {3: 5, 18: 5, 4: 4, 17: 4, 5: 3, 6: 3, 15: 3, 16: 3,
          7: 2, 8: 2, 13: 2, 14: 2, 9: 1, 10: 1, 11: 1, 12: 1}   # RULES.md section 6


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


def recount(rounds: dict[int, dict[str, Any]], seats: list[int]) -> list[dict[str, int]]:
    """The tokens and standings from the rounds as the reports showed them (RULES.md 6):
    who was right follows from the shown dice and the answer alone."""
    held: dict[int, set[int]] = {s: set() for s in seats}
    centre = set(POINTS)
    for number in sorted(rounds):
        r = rounds[number]
        b, g, total, roll = r["bluffer"], r["guesser"], r["total"], r["roll"]
        if r["action"] == "doublet":
            assert len(set(roll)) < 3 and len(r["returned"]) >= 2
            assert sum(POINTS[t] for t in r["returned"]) == POINTS[total]
            assert set(r["returned"]) <= held[b] and total in centre
            held[b] -= set(r["returned"])
            centre |= set(r["returned"])
            centre.remove(total)
            held[b].add(total)
            continue
        guesser_right = (r["answer"] == "OK") == (sum(roll) == total)
        winner = g if guesser_right else b
        assert r["winner"] == winner, r
        if r["action"] == "announce":
            centre.remove(total)
            held[winner].add(total)
        elif winner == b:
            held[g].remove(total)
            held[b].add(total)
        else:
            assert r["given"] in held[b], r
            held[b].remove(r["given"])
            held[g].add(r["given"])
    assert not centre, "the game ends when the centre is empty"
    key = {s: (-sum(POINTS[t] for t in held[s]), len(held[s])) for s in seats}
    ordered = sorted(seats, key=lambda s: (key[s], s))
    return [{"rank": 1 + sum(1 for o in seats if key[o] < key[s]), "seat": s,
             "score": -key[s][0], "tokens": key[s][1]} for s in ordered]


def test_whole_cup_of_bluff_game_over_dovecot(mailstack: Any, server: Server,
                                              clients: dict[str, Client], tmp_path: Path) -> None:
    referee = clients["referee"]
    clients = {u: clients[u] for u in PLAYERS}
    referee.send(referee_mail(mailstack, ["NEWGAME cup-bad RULES cup FAST"]))
    setup = [f"NEWGAME {GAME} SEED {SEED} RULES cup"]
    setup += [f"ADD {GAME} {mailstack.address(u)} Player-{u}" for u in PLAYERS]
    setup.append(f"START {GAME}")
    referee.send(referee_mail(mailstack, setup))
    server.tick()
    notices = referee.new_mail()
    assert len(notices) == 2
    assert "NEWGAME cup-bad RULES cup FAST" in text_of(notices[0])
    assert "Cup of Bluff has no options" in text_of(notices[0])
    assert "Cup of Bluff" in text_of(notices[1]) and "started" in text_of(notices[1])

    rng = random.Random(5)
    reports: dict[str, Counter[int]] = defaultdict(Counter)   # user -> turn -> reports
    latest: dict[str, tuple[EmailMessage, dict[str, Any]]] = {}
    rounds: dict[int, dict[str, Any]] = {}
    sent_ids: dict[str, list[str]] = defaultdict(list)
    answers: dict[str, list[EmailMessage]] = defaultdict(list)
    moves = Counter()

    def collect() -> None:
        for user, client in clients.items():
            for msg in client.new_mail():
                view = report_view(msg)
                if view is None or msg["In-Reply-To"] is not None:
                    answers[user].append(msg)
                    continue
                assert view["format"] == "pbem.cup.view/1"
                reports[user][view["turn"]] += 1
                latest[user] = (msg, view)
                if view["last_turn"] is not None:
                    r = view["last_turn"]
                    assert rounds.setdefault(r["round"], r) == r   # the same for everyone
                # the roll is the Bluffer's secret until the dice are shown
                if view["you"] == view["bluffer"]:
                    assert len(view["your_roll"]) == 3
                else:
                    assert view["your_roll"] is None and "Your dice (secret)" not in text_of(msg)

    def send(user: str, raw: bytes) -> None:
        sent_ids[user].append(str(parse_mail(raw)["Message-ID"]))
        clients[user].send(raw)

    collect()
    assert set(latest) == set(PLAYERS)
    assert "commitment" in text_of(latest["p1"][0]).lower()
    seat_of = {u: v["you"] for u, (_, v) in latest.items()}
    user_at = {s: u for u, s in seat_of.items()}
    assert sorted(seat_of.values()) == [1, 2, 3, 4]

    # turn 1: the Bluffer cannot be their own Guesser, a player out of turn cannot
    # answer; both get a polite error and nothing changes
    bluffer = user_at[latest["p1"][1]["bluffer"]]
    waiter = user_at[latest["p1"][1]["bluffer"] % 4 + 1]
    send(bluffer, reply_to(latest[bluffer][0], clients[bluffer].address,
                           [f"ANNOUNCE 10 TO {seat_of[bluffer]}"]))
    send(waiter, reply_to(latest[waiter][0], clients[waiter].address, ["BLUFF"]))
    server.tick()
    collect()
    assert all(set(reports[u]) == {1} for u in PLAYERS)   # no new report
    with Session(server.engine) as session:
        game = find_game(session, GAME)
        assert game.turn == 1 and pending_orders(session, game) == {}
    texts = [text_of(a) for u in (bluffer, waiter) for a in answers[u]]
    assert len(texts) == 2
    assert f"ANNOUNCE 10 TO {seat_of[bluffer]}" in texts[0]
    assert "must be another player" in texts[0]
    assert "BLUFF" in texts[1] and "no move this turn" in texts[1]

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
                moves[lines[0].split()[0]] += 1
                send(user, reply_to(msg, clients[user].address, ["Hi,", *lines, "thanks"]))
        assert movers == [user_at[to_move]]
        server.tick()
        collect()
        turn += 1
        assert turn < 120, "the game did not end"

    assert {"ANNOUNCE", "OK", "BLUFF", "STEAL", "GIVE"} <= set(moves), moves
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

    # the standings equal a recount from the rounds the players saw
    final = latest["p1"][1]
    assert sorted(rounds) == list(range(1, len(rounds) + 1))
    counted = recount(rounds, [1, 2, 3, 4])
    assert [{k: s[k] for k in ("rank", "seat", "score")} for s in final["standings"]] == [
        {k: s[k] for k in ("rank", "seat", "score")} for s in counted]
    assert {h["seat"]: h["count"] for h in final["holdings"]} == {
        s["seat"]: s["tokens"] for s in counted}
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
    assert done.stdout.startswith(f"OK: game {GAME} (Cup of Bluff)")
