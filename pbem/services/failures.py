"""When something fails on our side: the referee hears of it, without being flooded; the
players of the game hear that their turn is delayed; nothing stalls silently.

A mail that failed with an internal error, or that was set aside because it killed the
bounded processes that handled it on their own twice (pbem.runner.referee.suspect), is noted
here with what failed, the mail and its game.
The first one after a quiet hour is told at once; the ones that follow within the hour
wait and are told together, in one notice with their count, when the hour is over
(``flush``, at every tick). So a stream of failing mail, forged or not, costs the
referee at most one notice an hour, and each mail is in exactly one notice.

A failed mail about a game holds its turn (it may carry a due order) until ``RETRY``
handles it again; a game whose clock work fails is tried again every tick and told once
per distinct failure and turn; a turn whose reports could not be written after it was
played (the composer's draft, pbem.services.drafts, marked failed) waits for ``RETRY
<game>``; the game's players get one delay notice per turn, and when the referee RETRYs
what held it, a notice that the turn goes on.
"""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from sqlmodel import Session, col, select

from pbem.games.audit import already_told, audit
from pbem.games.records import find_game
from pbem.mail.read import InboundMessage
from pbem.services.drafts import Made, failed_drafts
from pbem.services.post import Post, announce, replied_to, tagged, tell_referee
from pbem.store.bodies import HeldMail
from pbem.store.models import AuditEntry, Game, InboundMail, OutboundMail, ServerState
from pbem.store.work import Work
from pbem.text.errors import Refusal
from pbem.text.wording import Message, Said, _, _n, joined

__all__ = ["NOTICE_EVERY", "delay_over", "flush", "game_failed", "held_by", "mail_failed",
           "note", "note_line", "retried", "tell_made", "turn_delayed", "turn_held",
           "what_failed"]

NOTICE_EVERY = timedelta(hours=1)
MAX_LISTED = 20          # mails named in one notice (the count covers the rest)
STATE_KEY = "failure-notices"


@dataclass
class _Waiting:
    told_at: datetime | None = None
    count: int = 0
    listed: list[str] = field(default_factory=list)


def _load(session: Session) -> _Waiting:
    # locked to the end of the transaction (PostgreSQL; SQLite has one writer): workers
    # that handle different games at once note their failures one after the other
    row = session.get(ServerState, STATE_KEY, with_for_update=True)
    if row is None:
        return _Waiting()
    data = json.loads(row.value)
    told = data.get("told_at")
    return _Waiting(datetime.fromisoformat(told) if told else None, int(data.get("count", 0)),
                    [str(x) for x in data.get("listed", [])])


def _save(session: Session, waiting: _Waiting) -> None:
    value = json.dumps({"told_at": waiting.told_at.isoformat() if waiting.told_at else None,
                        "count": waiting.count, "listed": waiting.listed})
    row = session.get(ServerState, STATE_KEY)
    if row is None:
        session.add(ServerState(key=STATE_KEY, value=value))
    else:
        row.value = value
        session.add(row)


def note(session: Work, post: Post, inbound_id: int, what: Said) -> None:
    """Note that stored mail #inbound_id could not be handled (``what`` says how); the
    referee is told now or with the next summary."""
    note_line(session, post, _("Inbound mail #{id}: {what}.", id=inbound_id, what=what))


def note_line(session: Work, post: Post, line: Said) -> None:
    """Note a mail that could not be handled, as ``line`` says (a fetched mail that could
    not even be stored has no number); told as ``note`` tells. The line is kept as the
    referee reads it (in their language) until the notice goes out."""
    waiting = _load(session)
    waiting.count += 1
    if len(waiting.listed) < MAX_LISTED:
        waiting.listed.append(_to_referee(post, line))
    _save(session, waiting)
    flush(session, post)


def flush(session: Work, post: Post) -> bool:
    """Tell the referee of the mails waiting to be told, if the last notice is an hour old;
    True if a notice was queued."""
    waiting = _load(session)
    now = post.clock()
    if waiting.count == 0 or (waiting.told_at is not None and
                              now - waiting.told_at < NOTICE_EVERY):
        return False
    subject = _n("A mail could not be handled", "{n} mails could not be handled",
                 waiting.count)
    more = waiting.count - len(waiting.listed)
    paragraphs: list[Said] = [*waiting.listed]
    paragraphs += [_n("And {n} more.", "And {n} more.", more)] if more > 0 else []
    paragraphs.append(_("Each is kept as it came. Of mail that keeps failing you hear at "
                        "most once an hour."))
    tell_referee(session, post, subject, paragraphs)
    _save(session, _Waiting(told_at=now))
    return True


# --- what failed, the mail, the game ----------------------------------------------------

MAIL_LINES_SHOWN = 12   # of the failed mail's text, in the referee's notice


def what_failed(error: BaseException) -> str:
    """The error and where it happened: "UndefinedError: 'dict object' has no attribute
    'name' (templates/classic_report.txt.j2, line 78)"."""
    where = ""
    frames = traceback.extract_tb(error.__traceback__)
    # the innermost frame of ours: a template line, else a line of pbem, else the last one
    ours = ([f for f in frames if f.filename.endswith(".j2")]
            or [f for f in frames if "/pbem/" in f.filename.replace("\\", "/")] or frames)
    if ours:
        last = ours[-1]
        name = last.filename.replace("\\", "/")
        name = name.rsplit("/", 1)[-1] if name.endswith(".j2") else name.rsplit("/pbem/", 1)[-1]
        where = f" ({name}, line {last.lineno})"
    return f"{type(error).__name__}: {error}"[:600] + where


def retry_line(inbound_id: int) -> Message:
    """How to handle a failed mail again: said once, with the mail (not again at the end)."""
    return _("After the fix, handle the mail again: RETRY {id} in a referee mail, or "
             "`pbem admin -c <your pbem.toml> RETRY {id}` on the server", id=inbound_id)


def _to_referee(post: Post, text: Said) -> str:
    """``text`` as the referee reads it (their language)."""
    return str(post.renderer.say(text, post.settings.referee_language))


def game_of_mail(session: Session, msg: InboundMessage | None) -> Game | None:
    """The game a mail is about: the one of the report it replies to, or its GAME line."""
    if msg is None:
        return None
    sent = replied_to(session, msg, OutboundMail.game_id != None)  # noqa: E711 - SQL
    if sent is not None and sent.game_id is not None:
        return session.get(Game, sent.game_id)
    # a GAME line, or a game named by a command (a referee's PROCESS <game> ...)
    for line in msg.lines[:MAIL_LINES_SHOWN]:
        words = line.text.split()
        if len(words) >= 2 and words[0].isalpha():
            try:
                return find_game(session, words[1].lower())
            except Refusal:
                continue
    return None


def mail_failed(session: Work, post: Post, row: HeldMail, msg: InboundMessage | None,
                error: BaseException) -> None:
    """A mail that could not be handled (kept as failed): tell the referee what failed, the
    mail and its game; tell the game's players their turn is delayed."""
    game = game_of_mail(session, msg)
    sender = msg.from_addr if msg is not None and msg.from_addr else row.envelope_from
    subject = msg.subject if msg is not None else ""
    lines = [line.text for line in msg.lines[:MAIL_LINES_SHOWN]] if msg is not None else []
    received = f"{row.received_at:%Y-%m-%d %H:%M} UTC"
    the_mail = _("The mail: from {sender} (subject \"{subject}\", received {received}).",
                 sender=sender or _("an unknown sender"), subject=subject, received=received)
    paragraphs: list[Said] = [
        _("an internal error ({error}); it is kept as failed and nothing in it was applied, "
          "and its sender was told that something went wrong on our side.",
          error=what_failed(error)),
        the_mail if game is None else the_mail + _(" It is about game {game} (turn {turn}).",
                                                   game=game.name, turn=game.turn),
    ]
    if lines:
        quoted = "\n".join(f"> {t}" for t in lines) + (
            "\n> ..." if msg is not None and len(msg.lines) > len(lines) else "")
        paragraphs.append(_("Its text as read:\n{quoted}", quoted=quoted))
    paragraphs.append(retry_line(int(row.id or 0)))
    # the referee hears at once, or with the hour's summary when mail keeps failing
    note(session, post, int(row.id or 0), joined(paragraphs, "\n\n"))
    if game is not None:
        # the turn waits for this mail: it may hold the order of a player who is due
        audit(session, game, post.clock(), HELD, f"turn {game.turn}: mail #{row.id}")
        turn_delayed(session, post, game, post.clock())


HELD = "held-by-failed-mail"


def held_by(session: Session, game: Game) -> list[int]:
    """The failed mails about this game's turn that are not handled yet (RETRY): while
    there are any, the deadline resolves nothing (the mail may hold a due order)."""
    prefix = f"turn {game.turn}: mail #"
    rows = session.exec(select(AuditEntry.detail).where(
        AuditEntry.game_id == game.id, AuditEntry.action == HELD,
        col(AuditEntry.detail).startswith(prefix)))
    ids = [int(detail.removeprefix(prefix)) for detail in rows]
    return [i for i in ids if (row := session.get(InboundMail, i)) is not None
            and row.status == "failed"]


def turn_held(session: Session, game: Game) -> bool:
    """Does the game's turn wait for the referee: a failed mail about it (``held_by``), or
    its reports not written (a draft marked failed)? The deadline resolves nothing then."""
    return bool(held_by(session, game)) or bool(failed_drafts(session, int(game.id or 0),
                                                              game.turn))


def game_failed(session: Work, post: Post, game: Game, what: Said,
                error: BaseException) -> bool:
    """The clock work or a referee command of a game failed (rolled back): tell the referee
    (once per distinct failure and turn) and the players (once per turn). Returns whether
    this failure was new."""
    failed = what_failed(error)
    detail = f"turn {game.turn}: {what}: {failed}"
    if already_told(session, game, "failure", detail[:2000]):
        return False
    audit(session, game, post.clock(), "failure", detail)
    said = _to_referee(post, what)
    tell_referee(session, post, tagged(game.name, _("turn {turn} is stuck", turn=game.turn)), [
        _("{what} of game {game} failed in turn {turn}: {failed}.",
          what=said[:1].upper() + said[1:], game=game.name, turn=game.turn, failed=failed),
        _("Nothing of it was applied. The server tries again at every tick and tells you "
          "again only if the failure changes; the players were told that the turn is "
          "delayed."),
        _("After a fix the turn goes on by itself, or at once with PROCESS {game}.",
          game=game.name)])
    turn_delayed(session, post, game, post.clock())
    return True


DELAYED, GOES_ON = "delayed", "delay-over"


def _delay_told(session: Session, game: Game) -> bool:
    """Were the game's players told that its turn is delayed, and not since that it goes on?"""
    last = session.exec(select(AuditEntry.action).where(
        AuditEntry.game_id == game.id, col(AuditEntry.action).in_([DELAYED, GOES_ON]),
        AuditEntry.detail == f"turn {game.turn}").order_by(col(AuditEntry.id).desc())).first()
    return last == DELAYED


def turn_delayed(session: Work, post: Post, game: Game, now: datetime) -> None:
    """Once a delay: the game's players hear that the turn waits for the referee (again,
    if it is delayed again after they heard that it goes on)."""
    if game.status != "running" or _delay_told(session, game):
        return
    announce(session, post, game, _("turn {turn} is delayed", turn=game.turn), [
        _("The server hit a problem of its own in turn {turn} of game {game}. The referee "
          "has been told, and the turn waits until it is fixed: no deadline plays a move "
          "for you meanwhile.", turn=game.turn, game=game.name),
        _("Orders that were confirmed stand. If you sent an order and got no confirmation, "
          "it will be read again once the problem is fixed; you may also send it again.")],
        now, action=DELAYED)
    audit(session, game, now, DELAYED, f"turn {game.turn}")


def retried(session: Work, post: Post, inbound_id: int) -> None:
    """The referee handles failed mail #inbound_id again (RETRY): the players of each game
    whose turn it held, told that the turn is delayed, hear that it goes on, once no other
    failed mail holds it."""
    game_ids = set(session.exec(select(AuditEntry.game_id).where(
        AuditEntry.action == HELD, col(AuditEntry.detail).endswith(f": mail #{inbound_id}"))))
    for game_id in sorted(i for i in game_ids if i is not None):
        game = session.get(Game, game_id)
        if game is not None:
            delay_over(session, post, game, post.clock())


def delay_over(session: Work, post: Post, game: Game, now: datetime, *,
               reports: bool = False) -> None:
    """The game's players, told that its turn is delayed, hear that it goes on (once a
    delay), if nothing holds it any more (``turn_held``); ``reports``: what held it was the
    turn's reports, written now (RETRY <game>), not a mail."""
    if game.status != "running" or not _delay_told(session, game) or turn_held(session, game):
        return
    waited = (_("Orders that were confirmed stand. The turn's reports, which waited for the "
                "fix, are sent now: reply to yours with your order.") if reports else
              _("Orders that were confirmed stand. The mail that waited for the fix is read "
                "again now, and its sender gets the answer."))
    announce(session, post, game, _("turn {turn} goes on", turn=game.turn), [
        _("The problem in turn {turn} of game {game} has been fixed, and the turn goes on: "
          "its deadline counts again (one that passed meanwhile resolves the turn now).",
          turn=game.turn, game=game.name), waited], now, action=GOES_ON)
    audit(session, game, now, GOES_ON, f"turn {game.turn}")


# --- a turn's reports that could not be written (the composer's drafts) ------------


def tell_made(work: Work, post: Post, made: Made) -> None:
    """The referee hears of a draft that could not be made into mails (marked failed: the
    game's players hear that the turn is delayed, as when the turn's own transaction
    fails), or that was made again from the stored game (its turn's notes lost)."""
    game = work.get(Game, made.game_id) if made.game_id is not None else None
    name = game.name if game is not None else "?"
    turn = made.turn if made.turn is not None else "?"
    if made.mails is not None:
        tell_referee(work, post, tagged(name, _("the reports of turn {turn} were sent "
                                                "without their notes", turn=turn)),
                     [_("The turn's draft could not be read ({why}): its reports were "
                        "written again from the stored game, without the notes the turn "
                        "left in them.", why=made.remade or ""),
                      _("The players have been sent them; what those notes said (who played "
                        "for a player whose order was missing, a mail that bounced) is not in "
                        "them.")])
        return
    tell_referee(work, post, tagged(name, _("the reports of turn {turn} were not written",
                                            turn=turn)),
                 [_("The turn was played, but its reports could not be written: {error}",
                    error=made.error or ""),
                  _("The players have not been sent them: their orders for the next turn "
                    "need them. The error is kept with the draft, outgoing mail {id}.",
                    id=made.draft_id),
                  _("After the fix, write them: RETRY {game} in a referee mail, or "
                    "`pbem admin -c <your pbem.toml> RETRY {game}` on the server.",
                    game=name)])
    if game is not None:   # once a failure: a RETRY that fails again marks nothing
        turn_delayed(work, post, game, post.clock())
