"""The walk of one order mail: which pbem modules its handling enters.

A small postal game in this process (a SQLite file, the .eml outbox, no IMAP, no
network): the referee starts it by mail, four players answer their first report with
an order, then the fifth player's order, the one that completes the turn, is stored
and one tick (pbem.runner.server.Server.tick: handling, the clock's work, sending) is traced
with sys.setprofile. Prints how many pbem modules the tick entered and which, with
the number of calls into each, and which of them the mail's own handling entered
(between the tick's marks "mail>" and "mail<": its transaction, without the fetch,
the clock's work and the sending).

Then three measures of that transaction, the house's (issue 44):

- runner revisits: the runner is pbem.runner.triage, where a mail's handling begins
  (``handle``). Each call made from one of its frames into a function of another pbem
  module is a visit to that module; a visit to a module the runner had visited before,
  with a visit to another module in between, is a revisit (triage -> sender_check ->
  registry -> sender_check: one). Calls into pbem.text.wording (the ``_`` marker of a text)
  and into a dataclass's generated methods (a value built, nothing run) are no visits.
  Printed: the visits in order, then the revisits per module and their total.
- repeated fact look-ups: a fact is what one of the look-up functions in ``FACTS``
  returns (they read the game's or the sender's stored state, or settle what a game's
  kind and options are, and change nothing). A call of one of them is repeated when the
  same function was called before in the transaction with equal arguments: equal by
  ``==`` at the time of the call, where a database row (a SQLModel) is equal only to
  itself with the same column values (so a call after the row was written is a new
  fact), the session only to itself; keyword and positional arguments are matched by
  parameter name. A call made inside another look-up is counted too (missing_seats
  asking pending_orders), as it is a computation of its own; whether a unit of work's
  memo (pbem.store.work.Work) answers it does not matter here: the call is the repetition.
  Printed: the repeated calls per function, with the calls in all, and the total.
- calls up a layer: a call from a function of one pbem module into a function of a
  module in a higher layer of the same ``[tool.importlinter]`` layers contract in
  pyproject.toml (a callback or an injected callable: the import contract cannot see
  it). The Post's clock, pbem.runner.server.utc_now, is injected on purpose (the tests pass
  another) and is counted on its own line, not in the total.

    python bench/order_walk.py            # run from the repository root
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
import sys
import tempfile
import tomllib
from collections import Counter
from email import policy
from email.message import EmailMessage
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlmodel import Session, SQLModel  # noqa: E402

from pbem import kinds  # noqa: E402
from pbem.config import Settings  # noqa: E402
from pbem.demo.robot_client import client_order_lines, read_report, reply_to  # noqa: E402
from pbem.games import records, reporting, states, turn_in_play  # noqa: E402
from pbem.kinds import options
from pbem.runner import sender_check
from pbem.runner.server import Server, utc_now  # noqa: E402
from pbem.services import post, turns  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUNNER = "pbem.runner.triage"
NO_VISIT = ("pbem.text.wording",)   # the marker of a text: no step of the handling

# the look-ups whose answers are the facts of a transaction (see the docstring); a name
# the code at hand does not have is passed over (the bench runs on older code too)
FACTS: tuple[Any, ...] = tuple(
    getattr(owner, name) for owner, names in (
        (kinds, "kind_of"), (options, "options_of"),
        (records, "find_game players_of seated active_players"),
        (turn_in_play, "pending_orders missing_seats facts_of"),
        (states, "load_state moves_of"), (reporting, "talk_lines watchers_of latest_report"),
        (post.Post, "reader_of"), (sender_check, "replied_report replied_seat"),
        (turns, "turn_complete"))
    for name in names.split() if hasattr(owner, name))

SERVER = "bluff@walk.test"
REFEREE = "referee@walk.test"
KEY = "walk-referee-key"
PLAYERS = [f"p{n}@walk.test" for n in range(1, 6)]
_ids = itertools.count(1)


def referee_mail(*lines: str) -> bytes:
    msg = EmailMessage()
    msg["From"], msg["To"], msg["Subject"] = REFEREE, SERVER, "a game"
    msg["Message-ID"] = f"<walk-{next(_ids)}@walk.test>"
    msg.set_content("\n".join([f"KEY {KEY}", *lines]) + "\n")
    return msg.as_bytes(policy=policy.SMTP)


def replies(database: Path, rng: random.Random) -> list[bytes]:
    """Each player's reply to its turn-1 report, with a legal order (as bench/scale.py)."""
    conn = sqlite3.connect(database)
    try:
        rows = conn.execute("SELECT raw, rcpts_json FROM outbound_mail JOIN outbound_body"
                            " ON mail_id = id WHERE kind = 'report' AND turn = 1"
                            " ORDER BY id").fetchall()
    finally:
        conn.close()
    mails = []
    for raw, rcpts in rows:
        report = read_report(raw)
        assert report.view is not None
        lines = client_order_lines(report.view, rng)
        assert lines
        mails.append(reply_to(report.msg, json.loads(rcpts)[0], lines,
                              quote=True, original=report.text))
    return mails


def layer_ranks() -> list[dict[str, int]]:
    """Each layers contract of pyproject.toml as module -> rank (0: the top layer)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    ranks = []
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract["type"] != "layers":
            continue
        for container in contract["containers"]:
            ranks.append({f"{container}.{name.strip()}": rank
                          for rank, layer in enumerate(contract["layers"])
                          for name in layer.split("|")})
    return ranks


def layer_of(ranks: dict[str, int], module: str) -> tuple[str, int] | None:
    """The layer a module belongs to in one contract (a submodule: its package's)."""
    for name, rank in ranks.items():
        if module == name or module.startswith(name + "."):
            return name, rank
    return None


def fact_key(value: object) -> object:
    """An argument as compared: a row by itself and its column values at the call, the
    session by itself, anything else by ``==``."""
    if isinstance(value, SQLModel):
        return (Same(value), tuple(sorted((k, repr(v)) for k, v in vars(value).items()
                                          if not k.startswith("_"))))
    if isinstance(value, Session):
        return Same(value)
    return value


class Same:
    """Equal only to itself: what a row or a session is compared by (kept alive by the
    walk, so no other object takes its id meanwhile)."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Same) and other.value is self.value

    __hash__ = None   # type: ignore[assignment]


def is_generated(frame: FrameType) -> bool:
    """A dataclass's generated __init__, __eq__ ... (its file is no source file)."""
    return frame.f_code.co_filename.startswith("<")


class Walk:
    """The pbem modules a traced call enters (Python frames only), with how many calls:
    in all, and while the mail is handled (``mark`` is the tick's marks); and while it is
    handled, the runner's visits, the fact look-ups and the calls up a layer."""

    def __init__(self) -> None:
        self.entered: Counter[str] = Counter()
        self.handling: Counter[str] = Counter()
        self._in_mail = False
        self.visits: list[str] = []
        self.facts: dict[Any, str] = {}
        for fn in FACTS:
            self.facts[fn.__code__] = f"{fn.__module__}.{fn.__qualname__}"
        self.asked: dict[str, list[dict[str, object]]] = {}
        self.repeated: Counter[str] = Counter()
        self.calls: Counter[str] = Counter()
        self.ranks = layer_ranks()
        self.up: Counter[str] = Counter()
        self.injected: Counter[str] = Counter()

    def mark(self, tag: str) -> None:
        if tag in ("mail>", "mail<"):
            self._in_mail = tag == "mail>"

    def _profile(self, frame: FrameType, event: str, _arg: object) -> None:
        if event != "call":
            return
        name = frame.f_globals.get("__name__", "")
        if name != "pbem" and not name.startswith("pbem."):
            return
        self.entered[name] += 1
        if not self._in_mail:
            return
        self.handling[name] += 1
        caller = frame.f_back
        by = caller.f_globals.get("__name__", "") if caller is not None else ""
        if by == RUNNER and name != RUNNER and name not in NO_VISIT \
                and not is_generated(frame) and (not self.visits or self.visits[-1] != name):
            self.visits.append(name)
        fact = self.facts.get(frame.f_code)
        if fact is not None:
            self._look_up(fact, frame)
        if by.startswith("pbem") and by != name:
            self._layers(by, name, frame)

    def _look_up(self, fact: str, frame: FrameType) -> None:
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        args = {n: fact_key(frame.f_locals[n]) for n in code.co_varnames[:count]
                if n != "self"}
        self.calls[fact] += 1
        before = self.asked.setdefault(fact, [])
        if any(args == earlier for earlier in before):
            self.repeated[fact] += 1
        else:
            before.append(args)

    def _layers(self, by: str, name: str, frame: FrameType) -> None:
        for ranks in self.ranks:
            caller, callee = layer_of(ranks, by), layer_of(ranks, name)
            if caller and callee and caller[0] != callee[0] and callee[1] < caller[1]:
                call = f"{by} -> {name}.{frame.f_code.co_qualname}"
                if frame.f_code is utc_now.__code__:
                    self.injected[call] += 1
                else:
                    self.up[call] += 1

    def revisits(self) -> Counter[str]:
        """Per module: the visits to it after the first (the visits are already without
        a repeat in a row: a module called twice with nothing between is one visit)."""
        seen: Counter[str] = Counter(self.visits)
        return Counter({m: n - 1 for m, n in seen.items() if n > 1})

    def trace(self, run: Any) -> None:  # noqa: ANN401
        sys.setprofile(self._profile)
        try:
            run()
        finally:
            sys.setprofile(None)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pbem-walk-") as tmp:
        database = Path(tmp) / "walk.db"
        server = Server(Settings(database=f"sqlite:///{database}", address=SERVER,
                                 referee=REFEREE, referee_key=KEY,
                                 outbox_dir=Path(tmp) / "outbox"))
        server.compile_templates()   # not part of any mail's walk
        lines = ["NEWGAME walk SEED 7", *(f"ADD walk {p} P{n}" for n, p in
                                          enumerate(PLAYERS, 1)), "START walk"]
        assert server.referee.store_inbound(referee_mail(*lines), source="smtp")
        server.tick()
        orders = replies(database, random.Random(7))
        assert len(orders) == len(PLAYERS)
        for raw in orders[:-1]:          # four orders in: the turn waits for the fifth
            assert server.referee.store_inbound(raw, source="smtp")
            server.tick()
        assert server.referee.store_inbound(orders[-1], source="smtp")
        reports: list[Any] = []
        walk = Walk()
        walk.trace(lambda: reports.append(server.tick(walk.mark)))
        entered = walk.entered
        tick = reports[0]
        assert tick.processed == 1, tick
        conn = sqlite3.connect(database)
        try:
            second = conn.execute("SELECT count(*) FROM outbound_mail "
                                  "WHERE kind = 'report' AND turn = 2").fetchone()[0]
        finally:
            conn.close()
        assert second == len(PLAYERS), f"the turn did not complete: {second} turn-2 reports"
        server.engine.dispose()
    print(f"one order mail that completes a turn ({tick}):")
    print(f"{len(entered)} pbem modules entered, {sum(entered.values())} calls")
    for name, calls in sorted(entered.items()):
        print(f"  {name:32} {calls:6}")
    print(f"of them, {len(walk.handling)} entered while the mail itself was handled "
          f"(its transaction: read, record, play the turn, compose the reports):")
    print("  " + ", ".join(sorted(walk.handling)))
    report_measures(walk)


def report_measures(walk: Walk) -> None:
    """The three measures of the mail's transaction (see the module's docstring)."""
    revisits = walk.revisits()
    print(f"runner revisits: {sum(revisits.values())}  (the runner, {RUNNER}, visits in "
          "order:)")
    print("  " + " -> ".join(v.removeprefix("pbem.") for v in walk.visits))
    for module, count in sorted(revisits.items()):
        print(f"  {module:40} {count:4} revisits")
    print(f"repeated fact look-ups: {sum(walk.repeated.values())}  "
          f"(of {sum(walk.calls.values())} look-ups)")
    for fact, calls in sorted(walk.calls.items()):
        print(f"  {fact:40} {walk.repeated[fact]:4} repeated of {calls:4}")
    print(f"calls up a layer: {sum(walk.up.values())}")
    for call, count in sorted(walk.up.items()):
        print(f"  {call}  x{count}")
    for call, count in sorted(walk.injected.items()):
        print(f"  (the injected clock, not counted: {call}  x{count})")


if __name__ == "__main__":
    main()
