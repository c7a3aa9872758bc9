"""`pbem demo`: robot players play a whole game through the real path.

The default kind (postal Bluff, five players) unless ``--rules <kind>`` names
another: as many robots as the kind's ``demo`` says (pbem.kinds.base.Demo).

Mail bytes go in through the embedded SMTP listener, the referee keeps its
state in SQLite, and every mail it sends lands as an .eml file; the robots
read their reports from those files and answer them by SMTP, as players would.

The demo's database is thrown away, so it trades durability for speed: SQLite
does not wait for the disk at each commit (``PRAGMA synchronous=OFF``).
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

from sqlalchemy import Engine, event
from sqlmodel import Session

from pbem.config import ListenSettings, Settings
from pbem.demo.robot_client import ReadReport, client_order_lines, parse_mail, read_report, reply_to
from pbem.games.records import find_game
from pbem.kinds import DEFAULT_KIND, Demo, JSONMap, kind_named
from pbem.kinds.verify import score_words
from pbem.runner.server import Server
from pbem.services.export import export_json
from pbem.text.errors import Refusal

DEMO_PLAYERS = [("ann", "Ann"), ("bob", "Bob"), ("cyd", "Cyd"), ("dee", "Dee"), ("eve", "Eve")]
DOMAIN = "demo.invalid"


def send(port: int, mails: list[tuple[str, bytes]], to: str) -> None:
    """(sender, raw) mails to ``to`` over one SMTP connection."""
    with smtplib.SMTP("127.0.0.1", port, timeout=30) as smtp:
        for mail_from, raw in mails:
            smtp.sendmail(mail_from, [to], raw)


def _no_disk_waits(dbapi_connection, _record) -> None:  # type: ignore[no-untyped-def]
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=OFF")
    cursor.close()


def throwaway(engine: Engine) -> None:
    """The demo's own database: commits do not wait for the disk (fsync), a crash of the
    machine may lose it. Connections opened from now on."""
    engine.dispose()
    event.listen(engine, "connect", _no_disk_waits)


def new_reports(outbox: Path, seen: set[str], addresses: dict[str, str]) -> dict[str, ReadReport]:
    """The newest report to each player among the .eml files not seen yet."""
    latest: dict[str, tuple[int, ReadReport]] = {}
    for path in sorted(outbox.glob("*.eml")):
        if path.name in seen:
            continue
        seen.add(path.name)
        report = read_report(path.read_bytes())   # no full MIME parse: the demo's hot loop
        to, view = str(report.msg["To"]).strip("<>"), report.view
        if view is not None and to in addresses and (to not in latest
                                                     or view["turn"] >= latest[to][0]):
            latest[to] = (view["turn"], report)
    return {to: report for to, (_turn, report) in latest.items()}


def referee_mail(settings: Settings, lines: list[str]) -> bytes:
    msg = EmailMessage()
    msg["From"] = settings.referee
    msg["To"] = settings.address
    msg["Subject"] = "commands"
    msg.set_content("\n".join([f"KEY {settings.referee_key}", *lines]) + "\n")
    return msg.as_bytes(policy=policy.SMTP)


def run_demo(folder: Path | None = None, *, seed: int | None = None, quiet: bool = False,
             rules: str = DEFAULT_KIND, options: str | None = None,
             robot: str = "strong") -> int:
    """options: the NEWGAME words after RULES <kind> (e.g. "anniversary DICE 3");
    robot: the game's robot level (NEWGAME ROBOT), which the robot players use too."""
    kind = kind_named(rules)
    demo = kind.demo or Demo(kind.min_players)
    count, most = demo.players, demo.most_turns
    words = f" {options or demo.options}".rstrip()
    folder = folder or Path(tempfile.mkdtemp(prefix="pbem-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    outbox = folder / "outbox"
    settings = Settings(database=f"sqlite:///{folder / 'pbem.db'}", address=f"bluff@{DOMAIN}",
                        referee=f"referee@{DOMAIN}", referee_key=secrets.token_hex(8),
                        outbox_dir=outbox, listen=ListenSettings("127.0.0.1", 0))
    server = Server(settings)
    throwaway(server.engine)
    listener = server.listener()
    assert listener is not None
    listener.start()
    say = (lambda *_: None) if quiet else print
    try:
        game = f"demo-{secrets.token_hex(2)}"
        addresses = {f"{login}@{DOMAIN}": name for login, name in DEMO_PLAYERS[:count]}
        setup = [f"NEWGAME {game}" + (f" SEED {seed}" if seed is not None else "")
                 + f" ROBOT {robot}" + f" RULES {rules}{words}"]
        setup += [f"ADD {game} {addr} {name}" for addr, name in addresses.items()]
        setup.append(f"START {game}")
        send(listener.port, [(settings.referee, referee_mail(settings, setup))], settings.address)
        server.tick()
        refused = _refused(server, outbox, game, settings.referee)
        if refused is not None:
            say(f"The demo could not set up its game:\n{refused}")
            return 2
        rng = random.Random(seed)
        seen: set[str] = set()
        turns = 0
        while True:
            latest = new_reports(outbox, seen, addresses)
            over = False
            orders: list[tuple[str, bytes]] = []
            for addr, report in sorted(latest.items()):
                assert report.view is not None
                over = over or report.view["game_over"]
                lines = client_order_lines(report.view, rng, level=robot)
                if lines:
                    orders.append((addr, reply_to(report.msg, addr, lines, original=report.text)))
            if orders:
                send(listener.port, orders, settings.address)
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
        return _finish(server, folder, outbox, game, turns, say)
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
    """The end of a demo: the standings and the game's record (as its kind writes it)."""
    with Session(server.engine) as session:
        # a record of any kind's format, read as verify reads one: open JSON
        record: JSONMap = export_json(session, find_game(session, game))
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
        except Refusal:
            pass
    for path in sorted(outbox.glob("*.eml"), reverse=True):
        msg = parse_mail(path.read_bytes())
        if referee in str(msg["To"]):
            body = msg.get_body(("plain",))
            text = str(body.get_content()) if body is not None else str(msg["Subject"])
            return text.split("\nCOMMANDS")[0].strip()   # the problem, not the command list
    return "no answer from the referee"
