"""`pbem demo`: five robot players play a whole postal game through the real path.

Mail bytes go in through the embedded SMTP listener, the referee keeps its
state in SQLite, and every mail it sends lands as an .eml file; the robots
read their reports from those files and answer them by SMTP, as players would.
"""

from __future__ import annotations

import random
import secrets
import smtplib
import tempfile
from email import policy
from email.message import EmailMessage
from pathlib import Path

from sqlmodel import Session

from pbem.config import ListenSettings, Settings
from pbem.games import export_record, find_game
from pbem.robot_client import choose_order, order_lines, parse_mail, reply_to, report_view
from pbem.server import Server

DEMO_PLAYERS = [("ann", "Ann"), ("bob", "Bob"), ("cyd", "Cyd"), ("dee", "Dee"), ("eve", "Eve")]
DOMAIN = "demo.invalid"


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


def run_demo(folder: Path | None = None, *, seed: int | None = None, quiet: bool = False) -> int:
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
        addresses = {f"{login}@{DOMAIN}": name for login, name in DEMO_PLAYERS}
        setup = [f"NEWGAME {game}" + (f" SEED {seed}" if seed is not None else "")]
        setup += [f"ADD {game} {addr} {name}" for addr, name in addresses.items()]
        setup.append(f"START {game}")
        send(listener.port, referee_mail(settings, setup), settings.referee, settings.address)
        server.tick()
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
                move = choose_order(view, rng)
                if move is not None:
                    send(listener.port, reply_to(msg, addr, order_lines(move)), addr,
                         settings.address)
            if over or not latest:
                break
            server.tick()
            turns += 1
            if turns > 200:
                say("the demo did not finish in 200 turns")
                return 1
        with Session(server.engine) as session:
            record = export_record(session, find_game(session, game))
        say(f"Game {game} is over after {turns} turns.")
        say("Final standings:")
        for s in record.result["standings"] if record.result else []:
            name = record.entrants[record.seats.index(s["seat"])]
            say(f"  {s['rank']}. player {s['seat']} ({name}): {s['virtual_dice']} virtual dice")
        say(f"Mails sent by the referee ({len(list(outbox.glob('*.eml')))}): {outbox}")
        say(f"Database: {folder / 'pbem.db'}")
        record_path = folder / f"{game}.json"
        import json
        record_path.write_text(json.dumps(record.to_json(), indent=2), encoding="utf-8")
        say(f"Game record: {record_path}  (check it with: pbem verify {record_path})")
        return 0
    finally:
        listener.stop()
