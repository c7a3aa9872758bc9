"""What an order's answer costs the tick's thread, made in place or made apart.

The answer to an order (pbem.services.post.answer: the "confirm" templates rendered, the
mail built, queued in the order's transaction) and what the tick's thread would still do
if the composer made it (pbem.runner.composer): the answer's data written as a draft in the
order's transaction, and later, a page of drafts at a time, the drafts taken and their
mails queued in their place (pbem.services.drafts.queue_made), the composer's process
rendering and building them. Both on a real SQLite file holding ``--mails`` mails already
(an outbound_mail table of some size: its indexes are what an insert pays for), a
transaction an answer as in a tick.

Prints, µs of this process's CPU an answer (time.process_time, the best of ``--rounds``:
a busy machine's other work does not count): in place, its render, build and queue; made
apart, the tick's part (the draft's data encoded, its row written, the page's take and
queue) and the composer's (decoded, rendered, built); what the tick's thread would save.
The two ways give the same text and HTML (checked).

    python3 bench/answer_cost.py [--answers 2000] [--rounds 3] [--mails 20000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pbem.mail.compose import make_message_id  # noqa: E402
from pbem.outbox import Composed, Origin, compose, queue_all  # noqa: E402
from pbem.outbox.queue import insert_mail  # noqa: E402
from pbem.render.reports import Renderer  # noqa: E402
from pbem.services.drafts import DRAFT, Made, queue_made  # noqa: E402
from pbem.store.db import open_database  # noqa: E402
from pbem.store.work import Work  # noqa: E402
from pbem.text.wording import Message, _  # noqa: E402

PAGE = 10   # drafts a page, as the composer reads them (pbem.runner.composer.PAGE)
NOW = datetime(2026, 12, 7, 6, 0, tzinfo=UTC)
ORIGIN = Origin("bluff@bench.test", "Bluff referee")


def context(n: int) -> dict[str, Any]:
    """An accepted order's answer, as pbem.commands.moves says it in bench/scale.py."""
    return {"game": f"g{n:05d}", "turn": 1, "seat": 1 + n % 5,
            "accepted": [{"line_no": 1, "line": "BID 3 fours", "read_as": None,
                          "understood": _("bid {bid}", bid=_("three fours")),
                          "odds": {"holds": 0.4213, "exact": 0.2108}}],
            "resolves_now": n % 5 == 4, "grace": False, "ignored": [],
            "left_out": [_("the quoted report below your text")], "replaced": None,
            "pending": [s for s in range(1, 6) if s != 1 + n % 5][: 4 - n % 5],
            "deadline": "2026-12-09T18:00:00+00:00", "timezone": None}


def subject(n: int) -> Message:
    return _("[bluff {game}] {text}", game=f"g{n:05d}",
             text=_("turn {turn}: order received", turn=1))


def as_data(value: Any) -> Any:
    """A context as JSON data: a message as its source and values."""
    if isinstance(value, Message):
        return {"said": value.source, "values": [[k, as_data(v)] for k, v in value.values],
                "plural": value.plural, "n": value.n, "capital": value.capital}
    if isinstance(value, dict):
        return {key: as_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [as_data(item) for item in value]
    return value


def of_data(value: Any) -> Any:
    if isinstance(value, dict):
        if "said" in value and "capital" in value:
            return Message(value["said"], tuple((k, of_data(v)) for k, v in value["values"]),
                           value["plural"], value["n"], value["capital"])
        return {key: of_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [of_data(item) for item in value]
    return value


def built(renderer: Renderer, n: int, ctx: dict[str, Any], said: Message) -> Composed:
    text, html = renderer.render("confirm", ctx, "en")
    return compose(ORIGIN, kind="confirm", to=f"p{n}@players.test",
                   subject=str(renderer.say(said, "en")), text=text, html=html, now=NOW,
                   in_reply_to=f"<report{n}@bench.test>", references=[f"<report{n}@bench.test>"],
                   game_id=None, seat=1 + n % 5, turn=1, auto_submitted="auto-replied",
                   shipped_html=True)


def in_place(engine: Any, renderer: Renderer, first: int, count: int) -> dict[str, float]:
    spent = {"render": 0.0, "build": 0.0, "queue": 0.0}
    clock = time.process_time
    for n in range(first, first + count):
        ctx, said = context(n), subject(n)
        t0 = clock()
        text, html = renderer.render("confirm", ctx, "en")
        t1 = clock()
        mail = compose(ORIGIN, kind="confirm", to=f"p{n}@players.test",
                       subject=str(renderer.say(said, "en")), text=text, html=html, now=NOW,
                       in_reply_to=f"<report{n}@bench.test>",
                       references=[f"<report{n}@bench.test>"], game_id=None, seat=1 + n % 5,
                       turn=1, auto_submitted="auto-replied", shipped_html=True)
        t2 = clock()
        with Work(engine) as work:
            t3 = clock()
            queue_all(work, [mail])
            t4 = clock()
            work.commit()
        spent["render"] += t1 - t0
        spent["build"] += t2 - t1
        spent["queue"] += t4 - t3
    return {key: value / count * 1e6 for key, value in spent.items()}


def apart(engine: Any, renderer: Renderer, first: int, count: int) -> dict[str, float]:
    spent = {"encode": 0.0, "draft": 0.0, "take and queue": 0.0, "composer": 0.0}
    clock = time.process_time
    drafts: list[tuple[int, int]] = []
    for n in range(first, first + count):
        ctx, said = context(n), subject(n)
        t0 = clock()
        raw = json.dumps({"template": "confirm", "subject": as_data(said),
                          "context": as_data(ctx), "to": f"p{n}@players.test"},
                         separators=(",", ":")).encode()
        t1 = clock()
        with Work(engine) as work:
            t2 = clock()
            work.flush()
            draft_id = insert_mail(work, {
                "message_id": make_message_id(ORIGIN.domain, DRAFT), "kind": DRAFT,
                "mail_from": ORIGIN.address, "rcpts_json": "[]", "raw": raw, "game_id": None,
                "seat": None, "turn": None, "inbound_id": None, "status": DRAFT, "attempts": 0,
                "next_attempt_at": NOW, "created_at": NOW, "bounce_token": None})
            t3 = clock()
            work.commit()
        drafts.append((draft_id, n))
        spent["encode"] += t1 - t0
        spent["draft"] += t3 - t2
    for start in range(0, len(drafts), PAGE):
        page = drafts[start:start + PAGE]
        t0 = clock()
        made = []
        for draft_id, n in page:   # the composer's part (read from the draft's data)
            with engine.connect() as conn:
                raw = conn.exec_driver_sql("SELECT raw FROM outbound_body WHERE mail_id = ?",
                                           (draft_id,)).scalar_one()
            data = json.loads(raw)
            made.append(Made(draft_id, [built(renderer, n, of_data(data["context"]),
                                              of_data(data["subject"]))]))
        t1 = clock()
        with Work(engine) as work:
            t2 = clock()
            queue_made(work, made)
            t3 = clock()
            work.commit()
        spent["composer"] += t1 - t0
        spent["take and queue"] += t3 - t2
    return {key: value / count * 1e6 for key, value in spent.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mails", type=int, default=20000,
                        help="mails in the outbox before the bench's own")
    args = parser.parse_args()
    renderer = Renderer()
    renderer.compile_all()
    # the same mail both ways (but for the Message-ID)
    for n in range(10):
        ctx = context(n)
        direct = renderer.render("confirm", ctx, "en")
        again = renderer.render("confirm", of_data(json.loads(json.dumps(as_data(ctx)))), "en")
        assert direct == again, "the answer's data does not make the same answer"
    with tempfile.TemporaryDirectory() as folder:
        engine = open_database(f"sqlite:///{Path(folder) / 'pbem.db'}")
        filler = [compose(ORIGIN, kind="report", to=f"f{n}@players.test", subject="report",
                          text="x" * 2000, html=None, now=NOW - timedelta(hours=1))
                  for n in range(args.mails)]
        for start in range(0, len(filler), 500):
            with Work(engine) as work:
                queue_all(work, filler[start:start + 500])
                work.commit()
        best_in: dict[str, float] = {}
        best_apart: dict[str, float] = {}
        first = args.mails
        for _round in range(args.rounds):
            for figures, way in ((best_in, in_place), (best_apart, apart)):
                got = way(engine, renderer, first, args.answers)
                first += args.answers
                for key, value in got.items():
                    figures[key] = min(figures.get(key, value), value)
        engine.dispose()
    tick_in = best_in["render"] + best_in["build"] + best_in["queue"]
    tick_apart = best_apart["encode"] + best_apart["draft"] + best_apart["take and queue"]
    print(f"{args.answers} answers a round, {args.rounds} rounds (best), "
          f"{args.mails} mails in the outbox before; µs of CPU an answer\n")
    print("| way | the tick's thread | its parts | the composer |")
    print("| --- | ---: | --- | ---: |")
    print(f"| in place | {tick_in:.0f} | " + ", ".join(
        f"{key} {value:.0f}" for key, value in best_in.items()) + " | |")
    print(f"| made apart | {tick_apart:.0f} | " + ", ".join(
        f"{key} {value:.0f}" for key, value in best_apart.items() if key != "composer")
        + f" | {best_apart['composer']:.0f} |")
    print(f"\nthe tick's thread would save {tick_in - tick_apart:.0f} µs an answer "
          f"({(tick_in - tick_apart) / tick_in:.0%} of the answer's cost there)")


if __name__ == "__main__":
    main()
