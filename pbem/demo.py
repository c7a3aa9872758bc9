"""`pbem demo`: robot players play a whole game through the real path.

Postal Bluff by default (five players); ``--rules classic`` or ``--rules cup``
plays classic Bluff or Cup of Bluff with four.

Mail bytes go in through the embedded SMTP listener, the referee keeps its
state in SQLite, and every mail it sends lands as an .eml file; the robots
read their reports from those files and answer them by SMTP, as players would.
"""

from __future__ import annotations

import json
import random
import secrets
import smtplib
import sys
import tempfile
from collections.abc import Callable
from email import policy
from email.message import EmailMessage
from pathlib import Path

from sqlmodel import Session

from pbem.config import ListenSettings, Settings
from pbem.games import GameError, find_game
from pbem.kinds.verify import score_words
from pbem.robot_client import client_order_lines, parse_mail, reply_to, report_view
from pbem.server import Server
from pbem.services.export import export_json, export_record

DEMO_PLAYERS = [("ann", "Ann"), ("bob", "Bob"), ("cyd", "Cyd"), ("dee", "Dee"), ("eve", "Eve")]
DOMAIN = "demo.invalid"
# the kinds a demo plays: (players, NEWGAME words after RULES <kind>, most turns)
DEMO_KINDS = {"postal": (5, "", 200), "classic": (4, " english", 2000), "cup": (4, "", 2000)}


def send(port: int, raw: bytes, mail_from: str, to: str) -> None:
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
        smtp.sendmail(mail_from, [to], raw)


def referee_mail(settings: Settings, lines: list[str]) -> bytes:
    msg = EmailMessage()
    msg["From"] = settings.referee
    msg["To"] = settings.address
    msg["Subject"] = "commands"
    msg.set_content("\n".join([f"KEY {settings.referee_key}", *lines]) + "\n")
    return msg.as_bytes(policy=policy.SMTP)


def run_demo(folder: Path | None = None, *, seed: int | None = None, quiet: bool = False,
             rules: str = "postal", options: str | None = None) -> int:
    """options: the NEWGAME words after RULES <kind> (e.g. "anniversary DICE 3")."""
    count, words, most = DEMO_KINDS[rules]
    words = f" {options}" if options else words
    folder = folder or Path(tempfile.mkdtemp(prefix="pbem-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    outbox = folder / "outbox"
    settings = Settings(database=f"sqlite:///{folder / 'pbem.db'}", address=f"bluff@{DOMAIN}",
                        referee=f"referee@{DOMAIN}", referee_key=secrets.token_hex(8),
                        outbox_dir=outbox, listen=ListenSettings("127.0.0.1", 0))
    server = Server(settings)
    listener = server.listener()
    assert listener is not None
    listener.start()
    say = (lambda *_: None) if quiet else print
    try:
        game = f"demo-{secrets.token_hex(2)}"
        addresses = {f"{login}@{DOMAIN}": name for login, name in DEMO_PLAYERS[:count]}
        setup = [f"NEWGAME {game}" + (f" SEED {seed}" if seed is not None else "")
                 + (f" RULES {rules}{words}" if rules != "postal" or options else "")]
        setup += [f"ADD {game} {addr} {name}" for addr, name in addresses.items()]
        setup.append(f"START {game}")
        send(listener.port, referee_mail(settings, setup), settings.referee, settings.address)
        server.tick()
        refused = _refused(server, outbox, game, settings.referee)
        if refused is not None:
            say(f"The demo could not set up its game:\n{refused}")
            return 2
        rng = random.Random(seed)
        seen: set[Path] = set()
        turns = 0
        while True:
            latest: dict[str, tuple[int, bytes]] = {}
            for path in sorted(outbox.glob("*.eml")):
                if path in seen:
                    continue
                seen.add(path)
                msg = parse_mail(path.read_bytes())
                view = report_view(msg)
                to = str(msg["To"]).strip("<>")
                if view is not None and to in addresses:
                    if to not in latest or view["turn"] >= latest[to][0]:
                        latest[to] = (view["turn"], path.read_bytes())
            over = False
            for addr, (_turn, raw) in sorted(latest.items()):
                msg = parse_mail(raw)
                view = report_view(msg)
                assert view is not None
                over = over or view["game_over"]
                lines = client_order_lines(view, rng)
                if lines:
                    send(listener.port, reply_to(msg, addr, lines), addr, settings.address)
            if over or not latest:
                break
            server.tick()
            turns += 1
            if not quiet:
                show_progress(turns, len(list(outbox.glob("*.eml"))))
            if turns > most:
                say(f"the demo did not finish in {most} turns")
                return 1
        if not quiet:
            show_progress(turns, len(list(outbox.glob("*.eml"))), done=True)
        if rules != "postal":
            return _finish(server, folder, outbox, game, turns, say)
        with Session(server.engine) as session:
            record = export_record(session, find_game(session, game))
        say(f"Game {game} is over after {turns} turns.")
        say("Final standings:")
        for s in record.result["standings"] if record.result else []:
            name = record.entrants[record.seats.index(s["seat"])]
            say(f"  {s['rank']}. player {s['seat']} ({name}): {s['virtual_dice']} virtual "
                f"{'die' if s['virtual_dice'] == 1 else 'dice'}")
        say(f"Mails sent by the referee ({len(list(outbox.glob('*.eml')))}): {outbox}")
        say(f"Database: {folder / 'pbem.db'}")
        record_path = folder / f"{game}.json"
        record_path.write_text(json.dumps(record.to_json(), indent=2), encoding="utf-8")
        say(f"Game record: {record_path}  (check it with: pbem verify {record_path})")
        return 0
    finally:
        listener.stop()


def show_progress(turns: int, mails: int, *, done: bool = False) -> None:
    """Turns and mails so far, on stderr (stdout keeps the result): one line rewritten in
    place on a terminal, else a line every 10 turns."""
    line = f"playing: turn {turns}, {mails} mails so far"
    if sys.stderr.isatty():
        print("\r" + line, end="\n" if done else "", file=sys.stderr, flush=True)
    elif done or turns % 10 == 0:
        print(line, file=sys.stderr, flush=True)


def _finish(server: Server, folder: Path, outbox: Path, game: str, turns: int,
            say: Callable[..., None]) -> int:
    """The end of a classic or Cup of Bluff demo: standings and the generic record."""
    with Session(server.engine) as session:
        record = export_json(session, find_game(session, game))
    names = {p["seat"]: p["name"] for p in record["players"]}
    say(f"Game {game} ({record['kind']}) is over after {turns} turns.")
    say("Final standings:")
    for s in record["result"]["standings"] if record["result"] else []:
        say(f"  {s['rank']}. player {s['seat']} ({names[s['seat']]}): "
            f"{score_words(record['kind'], s)}")
    say(f"Mails sent by the referee ({len(list(outbox.glob('*.eml')))}): {outbox}")
    say(f"Database: {folder / 'pbem.db'}")
    record_path = folder / f"{game}.json"
    record_path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    say(f"Game record: {record_path}  (check it with: pbem verify {record_path})")
    return 0


def _refused(server: Server, outbox: Path, game: str, referee: str) -> str | None:
    """None when the game was set up, else the referee's answer saying why not."""
    with Session(server.engine) as session:
        try:
            find_game(session, game)
            return None
        except GameError:
            pass
    for path in sorted(outbox.glob("*.eml"), reverse=True):
        msg = parse_mail(path.read_bytes())
        if referee in str(msg["To"]):
            body = msg.get_body(("plain",))
            text = str(body.get_content()) if body is not None else str(msg["Subject"])
            return text.split("\nCOMMANDS")[0].strip()   # the problem, not the command list
    return "no answer from the referee"
