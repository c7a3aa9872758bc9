"""Mail the way people who never read the manual write it, over the real mail stack
(Dovecot IMAP in, SMTP out): table talk in a classic game (alone and with a bid), an
order ending in "!", "Cups up!" in an HTML-only mail; every report shows the player's
own dice; the game goes on to its end and its record verifies."""

from __future__ import annotations

import random
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, timedelta
from email import policy
from email.message import EmailMessage
from email.utils import make_msgid
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import Session, select

from pbem.demo.robot_client import client_order_lines
from pbem.games.records import find_game
from pbem.services.clock import clock_tick
from pbem.store.models import SenderEvent
from testkit.e2e import Client, Table, text_of

pytestmark = pytest.mark.mailstack

PLAYERS = ["p1", "p2", "p3"]
GAME = "table-1"


@pytest.fixture
def table(mailstack: Any, tmp_path: Path) -> Iterator[Table]:
    with Table(mailstack, tmp_path, PLAYERS, rounds_key="last_round") as made:
        yield made


def html_reply(report: EmailMessage, from_addr: str, html: str) -> bytes:
    """A reply from a client that sends HTML only (no text part)."""
    reply = EmailMessage()
    reply["From"], reply["To"] = from_addr, str(report["From"])
    reply["Subject"] = f"Re: {report['Subject']}"
    reply["Message-ID"] = make_msgid(domain="example.org")
    reply["In-Reply-To"] = reply["References"] = str(report["Message-ID"])
    reply.set_content(html, subtype="html")
    return reply.as_bytes(policy=policy.SMTP)


def test_talk_and_punctuated_orders_in_a_classic_game(table: Table) -> None:
    table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED 3 RULES classic DICE 2"))
    table.server.tick()
    table.referee.new_mail()
    seat_of = table.first_reports_in()
    user_at = {s: u for u, s in seat_of.items()}
    latest = table.latest

    # turn 1: the opener bids and talks in one mail; another player only talks
    opener = user_at[latest["p1"][1]["to_move"]]
    talker = next(u for u in PLAYERS if u != opener)
    table.reply(talker, ["SAY Good luck, all!"])      # read first: it arrived first
    table.reply(opener, ["SAY Sorry Bob, I <b>never</b> bluff.", "BID 1 threes."])
    table.server.tick()
    table.collect()
    for user in PLAYERS:     # the bid resolved the turn: everyone has the report of turn 2
        msg, view = latest[user]
        assert view["turn"] == 2, (user, [text_of(a) for a in table.answers[user]])
        text = text_of(msg)
        assert "TALK" in text and "Sorry Bob, I <b>never</b> bluff." in text
        assert "Good luck, all!" in text
        html = msg.get_body(("html",)).get_content()  # type: ignore[union-attr]
        assert "I &lt;b&gt;never&lt;/b&gt; bluff." in html
    accepted = [text_of(a) for a in table.answers[opener] if "order received" in
                str(a["Subject"])]
    assert accepted and "BID 1 threes." in accepted[0]
    assert not any("went wrong" in text_of(a) for u in PLAYERS for a in table.answers[u])

    # the SAY and the bid in one mail got one answer, both parts in the order of the lines
    (both,) = [a for a in table.answers[opener] if a["In-Reply-To"] is not None]
    assert "order received" in str(both["Subject"]) and "table talk" in str(both["Subject"])
    body = text_of(both)
    assert body.index("relayed") < body.index("BID 1 threes.")
    # the bid completed the turn: the answer promises no second chance it cannot keep
    assert "completes the turn" in " ".join(body.split())
    assert "you may send new orders" not in body

    # desk commands mixed in one mail: one answer; ORDERS sees the same mail's DEFAULT
    asker = talker
    before = len(table.answers[asker])
    table.reply(asker, ["HISTORY", "ORDERS", "DEFAULT CHALLENGE"])
    table.server.tick()
    table.collect()
    (answer,) = table.answers[asker][before:]
    body = " ".join(text_of(answer).split())
    assert body.index("the moves so far") < body.index("your orders for turn")
    assert body.index("your orders for turn") < body.index("Your standing order is now")
    assert "Your standing order for a missed turn: CHALLENGE" in body

    # turn 2: "Challenge!" from the player to move
    mover = user_at[latest["p1"][1]["to_move"]]
    table.reply(mover, ["Challenge!"])
    table.server.tick()
    table.collect()
    assert all(v["turn"] == 3 and v["last_round"] is not None for v in table.views().values())
    assert any("order received" in str(a["Subject"]) for a in table.answers[mover])

    # every report shows its reader's own dice, their move or not
    for user in PLAYERS:
        msg, view = latest[user]
        if not view["game_over"] and any(p["seat"] == view["you"] and p["in"]
                                         for p in view["players"]):
            assert "Your dice:" in text_of(msg)

    # turn 3: "Cups up!" in an HTML-only mail, once there is a bid to challenge
    mover = user_at[latest["p1"][1]["to_move"]]
    table.reply(mover, ["BID 1 fours"])
    table.server.tick()
    table.collect()
    mover = user_at[latest["p1"][1]["to_move"]]
    table.send(mover, html_reply(latest[mover][0], table.clients[mover].address,
                                 "<html><body><p>Cups up!</p><p>Cheers</p></body></html>"))
    table.server.tick()
    table.collect()
    answers = table.answers[mover]
    assert "order received" in str(answers[-1]["Subject"]), text_of(answers[-1])

    # the robots play the rest; the record verifies
    rng = random.Random(3)
    for _ in range(200):
        if all(v["game_over"] for v in table.views().values()):
            break
        for user, (_msg, view) in sorted(table.latest.items()):
            lines = client_order_lines(view, rng)
            if lines:
                table.reply(user, lines)
        table.server.tick()
        table.collect()
    assert table.latest["p1"][1]["game_over"]
    table.turn = table.latest["p1"][1]["turn"]
    # every mail got exactly one answer, threaded to it, none of them a refusal (the
    # talk relayed from the others is no answer: it replies to nothing)
    for user in PLAYERS:
        replied = Counter(str(a["In-Reply-To"]) for a in table.answers[user]
                          if a["In-Reply-To"] is not None)
        assert replied == Counter(table.sent_ids[user]), user
        assert not any("nothing was applied" in str(a["Subject"]).lower()
                       for a in table.answers[user])
    # the final report carries the game's record, and `pbem verify` passes it as attached
    final = table.latest["p2"][0]
    (record,) = [p for p in final.iter_attachments() if p.get_filename() == f"{GAME}-record.json"]
    saved = table.tmp_path / f"{GAME}-record.json"
    saved.write_bytes(record.get_payload(decode=True))
    assert f"pbem verify {GAME}-record.json" in text_of(final)
    done = subprocess.run([sys.executable, "-m", "pbem", "verify", str(saved)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0 and done.stdout.startswith("OK:"), done.stdout + done.stderr
    # RECORD <game>: a player asks for it again, in a fresh mail
    asked = EmailMessage()
    asked["From"], asked["To"] = table.clients["p3"].address, table.stack.address("bluff")
    asked["Subject"], asked["Message-ID"] = "record please", make_msgid(domain="bluff.test")
    asked.set_content(f"RECORD {GAME}.\n")
    table.send("p3", asked.as_bytes(policy=policy.SMTP))
    table.server.tick()
    table.collect()
    answer = table.answers["p3"][-1]
    assert [p.get_filename() for p in answer.iter_attachments()] == [f"{GAME}-record.json"]

    # an order after the end: the game is over, and the answer does not ask to send again
    table.reply("p1", ["BID 3 fives"])
    table.server.tick()
    table.collect()
    over = " ".join(text_of(table.answers["p1"][-1]).split())
    assert f"Game {GAME} is over: it takes no more orders" in over
    assert "send the whole mail again" not in over

    out = table.verified_export(GAME, [
        {k: s[k] for k in ("rank", "seat", "score")}
        for s in table.latest["p1"][1]["standings"]])
    assert out.startswith("OK:")


def test_a_replaced_player_is_told_they_were_replaced(table: Table) -> None:
    table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED 3 RULES classic DICE 2"))
    table.server.tick()
    table.referee.new_mail()
    seat_of = table.first_reports_in()
    old_report, old_view = table.latest["p3"]
    table.stack.clear("p4")
    table.referee_sends(f"REPLACE {GAME} {seat_of['p3']} {table.stack.address('p4')} Newcomer")
    table.server.tick()
    table.collect()
    assert any("replaced" in str(a["Subject"]) for a in table.answers["p3"])

    # a reply to the old report, and a fresh mail with the old key: both say why
    table.reply("p3", ["BID 2 threes"], to=old_report)
    fresh = EmailMessage()
    fresh["From"], fresh["To"] = table.clients["p3"].address, table.stack.address("bluff")
    fresh["Subject"], fresh["Message-ID"] = "my move", make_msgid(domain="bluff.test")
    fresh.set_content(f"GAME {GAME}\nKEY {old_view['key']}\nBID 2 threes\n")
    table.send("p3", fresh.as_bytes(policy=policy.SMTP))
    table.server.tick()
    table.collect()
    said = [text_of(a) for a in table.answers["p3"] if a["In-Reply-To"] is not None]
    assert len(said) == 2
    for text in said:
        flat = " ".join(text.split())
        assert f"you were replaced in game {GAME}" in flat and "Newcomer" in flat
        assert "another player's mail" not in flat and "does not belong" not in flat
    # no failed attempt was counted against the replaced player's address
    with Session(table.server.engine) as session:
        assert session.exec(select(SenderEvent).where(
            SenderEvent.address == table.clients["p3"].address,
            SenderEvent.kind == "auth-failed")).all() == []

    # wrong keys lock nobody out: the right key after them works
    not_locked_out(table, "p2", GAME, table.latest["p2"][1]["key"])

    # RECORD of a game still running: refused, the record is given out when it ends
    table.reply("p1", [f"RECORD {GAME}"])
    table.server.tick()
    table.collect()
    refused = " ".join(text_of(table.answers["p1"][-1]).split())
    assert f"game {GAME} is not over" in refused


def test_a_confirmation_in_grace_gives_the_grace_end(table: Table) -> None:
    table.referee_sends(*table.setup(GAME, f"NEWGAME {GAME} SEED 3 DEADLINE 24 GRACE 6 WAIT "
                                           "RULES classic DICE 2"))
    table.server.tick()
    table.referee.new_mail()
    seat_of = table.first_reports_in()
    user_at = {s: u for u, s in seat_of.items()}
    post = table.server.referee.post
    with Session(table.server.engine) as session:
        deadline = find_game(session, GAME).deadline
    assert deadline is not None
    clock_tick(table.server.engine, post, deadline.replace(tzinfo=UTC) + timedelta(hours=1))
    with Session(table.server.engine) as session:
        grace_end = find_game(session, GAME).grace_until
    assert grace_end is not None
    opener = user_at[table.latest["p1"][1]["to_move"]]
    table.reply(opener, ["BID 1 threes"])
    table.server.tick()
    table.collect()
    confirmed = " ".join(text_of(table.answers[opener][-1]).split())
    assert f"Grace period ends: {grace_end:%Y-%m-%d %H:%M} UTC" in confirmed
    assert f"{deadline:%Y-%m-%d %H:%M}" not in confirmed        # the deadline that passed
    assert "the game waits for its deadline" in confirmed


def test_errors_are_short_and_anyone_may_list_the_games(table: Table) -> None:
    setup = table.setup(GAME, f"NEWGAME {GAME} SEED 3 RULES classic german")
    table.referee_sends(*setup[:-1], "NEWGAME cup-2 OPEN RULES cup")     # START later
    table.server.tick()
    done = " ".join(text_of(table.referee.new_mail()[-1]).split())
    assert f"game {GAME} created (classic Bluff, German edition: 5 dice each" in done
    table.collect()
    table.referee_sends(setup[-1])
    table.server.tick()
    seat_of = table.first_reports_in()
    # a player the referee ADDs hears at once: the game, its kind and options, the referee
    for user in PLAYERS:
        (welcome,) = [m for m in table.answers[user]
                      if "you are signed up" in str(m["Subject"])]
        said = " ".join(text_of(welcome).split())
        assert table.stack.address("referee") in said and "German edition" in said
        assert "Your key:" in said
    user_at = {s: u for u, s in seat_of.items()}
    mover = user_at[table.latest["p1"][1]["to_move"]]

    # no order found: the line that came closest is quoted, with only what fits now
    table.reply(mover, ["Hello all,", "I would like to chalenge this one", "Cheers"])
    table.server.tick()
    table.collect()
    error = table.answers[mover][-1]
    assert str(error["Subject"]) == f"[bluff {GAME}] your mail: nothing was applied"
    text = text_of(error)
    assert "> line 2: I would like to chalenge this one" in text
    assert "I found no order in your mail" in text
    assert "BID <quantity> <face>" in text and "ANNOUNCE" not in text   # this game's kind
    assert "CHALLENGE" not in text.split("WHAT YOU MAY ORDER NOW")[1]   # no bid to challenge
    assert len(text.splitlines()) < 25, text

    # anyone may LIST: the game open for sign-up, and the running one to watch
    stranger = Client(table.stack, "observer")
    table.stack.clear("observer")
    asked = EmailMessage()
    asked["From"], asked["To"] = stranger.address, table.stack.address("bluff")
    asked["Subject"], asked["Message-ID"] = "games?", make_msgid(domain="bluff.test")
    asked.set_content("LIST\n")
    stranger.send(asked.as_bytes(policy=policy.SMTP))
    table.server.tick()
    (listing,) = stranger.new_mail()
    listed = " ".join(text_of(listing).split())
    assert "Open for sign-up: cup-2: Cup of Bluff" in listed and "JOIN cup-2" in listed
    assert f"{GAME}: classic Bluff" in listed and f"WATCH {GAME}" in listed
    assert "0 signed up, for 3 to 5 players" in listed and "3 players, turn 1" in listed

    # JOIN of a game that does not exist: the hint says LIST (another stranger: one answer a
    # day goes to an address unknown here)
    stranger.close()
    stranger = Client(table.stack, "p5")
    table.stack.clear("p5")
    asked = EmailMessage()
    asked["From"], asked["To"] = stranger.address, table.stack.address("bluff")
    asked["Subject"], asked["Message-ID"] = "join", make_msgid(domain="bluff.test")
    asked.set_content("JOIN no-such-game Olga\n")
    stranger.send(asked.as_bytes(policy=policy.SMTP))
    table.server.tick()
    (refused,) = stranger.new_mail()
    assert "send LIST for the games open for sign-up" in " ".join(text_of(refused).split())
    stranger.close()

    # the referee sees who plays, with addresses, and every game with its kind and players
    status = table.server.referee.admin(["STATUS", GAME])[0]
    for user in PLAYERS:
        assert f"Player-{user} <{table.stack.address(user)}>" in status
    assert "waiting for their order" in status and "waiting for [" not in status
    listed = "\n".join(table.server.referee.admin(["LIST"]))
    assert "cup-2 (Cup of Bluff, 0 of 5 players, sign-up open)" in listed
    assert f"{GAME} (classic Bluff, 3 of 6 players, running, turn 1)" in listed

    # an early PROCESS: nobody was late, so no report says "sent no order in time"
    table.server.referee.admin(["PROCESS", GAME])
    table.server.tick()
    table.collect()
    report = " ".join(text_of(table.latest["p1"][0]).split())
    assert "had no order in when the referee played the turn" in report
    assert "sent no order in time" not in report


def fresh_mail(table: Table, user: str, *lines: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"] = table.clients[user].address, table.stack.address("bluff")
    msg["Subject"], msg["Message-ID"] = "orders", make_msgid(domain="bluff.test")
    msg.set_content("\n".join(lines) + "\n")
    return msg.as_bytes(policy=policy.SMTP)


def not_locked_out(table: Table, user: str, game: str, key: str) -> None:
    """Five wrong keys lock nobody out: each is answered (a typo is told), and the right
    key after them is acted on, every time."""
    for n in range(5):
        table.send(user, fresh_mail(table, user, f"GAME {game}", f"KEY wrong-{n}", "HISTORY"))
    table.server.tick()
    table.collect()
    before = len(table.answers[user])
    for _ in range(2):
        table.send(user, fresh_mail(table, user, f"GAME {game}", f"KEY {key}", "HISTORY"))
    table.server.tick()
    table.collect()
    told = table.answers[user][before:]
    assert len(told) == 2, [text_of(t) for t in told]
    for answer in told:
        said = " ".join(text_of(answer).split())
        assert "the moves so far" in said and "locked out" not in said


def test_cup_of_bluff_speaks_cup_of_bluff(mailstack: Any, tmp_path: Path) -> None:
    """Table talk, a desk command with an order, a Guesser by name, HELP of the kind, a
    player's wrong keys and a replaced player, in a Cup of Bluff game."""
    with Table(mailstack, tmp_path, PLAYERS) as table:
        cup_game(table)


def cup_game(table: Table) -> None:
    table.referee_sends(*table.setup("cup-9", "NEWGAME cup-9 SEED 5 RULES cup"))
    table.server.tick()
    table.referee.new_mail()
    seat_of = table.first_reports_in()
    user_at = {s: u for u, s in seat_of.items()}
    bluffer = user_at[table.latest["p1"][1]["bluffer"]]
    guesser = next(u for u in PLAYERS if u != bluffer)
    table.reply(guesser, ["SAY Go on, Bluffer."])
    # HELP in the game: its own orders and dice, no stars; the rules attached
    table.reply(guesser, ["HELP"])
    table.server.tick()
    table.collect()
    (help_mail,) = [a for a in table.answers[guesser] if "orders" in str(a["Subject"])]
    helped = text_of(help_mail)
    assert "ANNOUNCE <total> TO <player number or name>" in " ".join(helped.split())
    assert not re.search(r"\bstars?\b", helped)
    assert "BID <quantity>" not in helped
    assert [p.get_filename() for p in help_mail.iter_attachments()] == ["rules.md"]
    # DEFAULT with the move, the Guesser named: one answer; the standing order in cup words
    table.reply(bluffer, ["DEFAULT CHALLENGE", f"ANNOUNCE 10 TO Player-{guesser}"])
    table.server.tick()
    table.collect()
    (answer,) = [a for a in table.answers[bluffer] if a["In-Reply-To"] is not None]
    said = " ".join(text_of(answer).split())
    assert f"ANNOUNCE 10 TO player {seat_of[guesser]}" in said
    assert "answer BLUFF when you are the Guesser" in said and "current bid" not in said
    assert table.latest[guesser][1]["claim"]["guesser"] == seat_of[guesser]
    assert "Go on, Bluffer." in text_of(table.latest[bluffer][0])
    # the round's notes speak to their reader: "you", not "player 3"
    b, g = seat_of[bluffer], seat_of[guesser]
    to_guesser = " ".join(text_of(table.latest[guesser][0]).split())
    to_bluffer = " ".join(text_of(table.latest[bluffer][0]).split())
    assert f"player {b} announces a total of 10 to you." in to_guesser
    assert f"you announce a total of 10 to player {g}." in to_bluffer
    assert f"to player {g}." not in to_guesser and f"player {b} announces" not in to_bluffer
    html = table.latest[guesser][0].get_body(("html",))
    assert html is not None and "to you." in " ".join(html.get_content().split())
    # DEFAULT RAISE means nothing in Cup of Bluff
    table.reply(guesser, ["DEFAULT RAISE"])
    table.server.tick()
    table.collect()
    assert "DEFAULT RAISE means nothing in Cup of Bluff" in " ".join(
        text_of(table.answers[guesser][-1]).split())
    # wrong keys lock nobody out, then a replaced player
    third = next(u for u in PLAYERS if u not in (bluffer, guesser))
    not_locked_out(table, third, "cup-9", table.latest[third][1]["key"])
    table.stack.clear("p4")
    table.referee_sends(f"REPLACE cup-9 {seat_of[guesser]} {table.stack.address('p4')} "
                        "Newcomer")
    table.server.tick()
    table.collect()
    table.reply(guesser, ["OK"], to=table.latest[guesser][0])
    table.server.tick()
    table.collect()
    assert "you were replaced in game cup-9" in " ".join(
        text_of(table.answers[guesser][-1]).split())
