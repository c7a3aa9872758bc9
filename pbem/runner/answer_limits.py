"""What an address may make the server do: the failed attempts counted, the answers held
back (pbem.runner.sender_check says who sent a mail).

- ``auth_failed``: failed attempts (a wrong key, a key from another address, a
  reply to another player's mail) are counted; past a limit such a mail is
  dropped unanswered and the owner of the address told once a day. Nobody is
  ever locked out: the right key, and a genuine reply, always work
  (pbem.store.security holds the counts and limits);
- ``limit_answers``: at most a few answers a day, of any kind, to an address
  that is unknown here; at most ``answers_per_hour`` to a known one for mail
  that is no game mail (the last one allowed says so: ``said_limit``); none to
  failing mail past its limit.
"""

from __future__ import annotations

import json
from email import message_from_bytes, policy
from email.message import EmailMessage
from html import escape

from sqlmodel import select

from pbem.mail.read import InboundMessage
from pbem.outbox import enqueue
from pbem.runner.sender_check import token_reply
from pbem.services.post import Post, notice
from pbem.store import security
from pbem.store.bodies import HeldMail, outbound_body
from pbem.store.models import OutboundMail
from pbem.store.work import Work
from pbem.text.i18n import translator
from pbem.text.wording import _, _n


def auth_failed(session: Work, post: Post, address: str | None) -> bool:
    """Count a failed attempt; True when the mail is past the limit, to be dropped
    unanswered. The owner of a known address hears of it once a day, in their language
    (an unknown one is a stranger: its answers a day bound it)."""
    if address is None:
        return False
    limits = security.Limits.from_settings(post.settings)
    now = post.clock()
    if not security.note_failure(session, address, now, limits):
        return False
    known = address == post.referee.lower() or security.known_address(session, address)
    if known and security.tell_owner(session, address, now):
        minutes = limits.auth_window.total_seconds() / 60
        count = security.failures(session, address, now, limits)
        notice(session, post, address, _("Mail with a wrong key in your name"), [
            _n("{n} mail with a wrong key (or a reply to another player's mail) came in "
               "your name within {minutes} minutes; nothing in it was applied.",
               "{n} mails with a wrong key (or a reply to another player's mail) came in "
               "your name within {minutes} minutes; nothing in them was applied.", count,
               minutes=format(minutes, "g")),
            _("Your own mail with your key, and your replies to your reports, are read as "
              "ever. Such mail past the first {most} within {minutes} minutes is not "
              "answered; you hear of it at most once a day. If you did not send it, "
              "someone may be trying to act in your name: tell the referee <{referee}>.",
              most=limits.auth_failures, minutes=format(minutes, "g"),
              referee=post.referee)], now)
    return True


def limit_answers(session: Work, post: Post, row: HeldMail, msg: InboundMessage,
                  outcome: str, *, proven: bool = False, game_mail: bool = False,
                  dropped: bool = False, about_signup: bool = False) -> str:
    """Hold back the answers to a mail that its sender may not have now:

    - a failing mail (a wrong key ...) past its limit (``dropped``, pbem.store.security
      note_failure) gets none;
    - an unknown address gets at most stranger_answers_per_day a day, of every kind (an
      error, HELP, a sign-up's code mail ...): no backscatter from forged mail, no loop
      with a robot; one with a pending sign-up hears about its code (``about_signup``: a
      CONFIRM that matched none) within a bound of its own
      (pbem.store.security.SIGNUP_ANSWERS_PER_DAY); a mail ``proven`` to come from its address
      (it brought back the sign-up code we mailed there) is answered;
    - a known address gets at most answers_per_hour an hour to mail that is no game mail
      (HELP, LIST, errors, refusals of mail without the right key); the last one allowed
      says so. ``game_mail`` (the right key, the referee's or a player's) and a player's
      reply to their own report (its reply token stands for the key) are never held back.
    """
    address = msg.from_addr
    if address is None or proven:
        return outcome
    if game_mail or token_reply(session, msg):
        return outcome
    session.flush()
    answers = session.exec(select(OutboundMail).where(
        OutboundMail.inbound_id == row.id, OutboundMail.status == "pending")).all()
    mine = [a for a in answers if json.loads(a.rcpts_json) == [address]]
    if not mine:
        return outcome
    limits = security.Limits.from_settings(post.settings)
    now = post.clock()
    known = address == post.referee.lower() or security.known_address(session, address)
    if dropped:
        why = (f"dropped: more than {limits.auth_failures} failing mails from this address "
               f"within {format(limits.auth_window.total_seconds() / 60, 'g')} minutes")
    elif known:
        left = security.answer_budget(session, address, now, limits)
        if left > 0:
            return outcome
        if left == 0:
            said_limit(session, post, mine, limits.answers_per_hour)
            return outcome + f"; answered, the last of {limits.answers_per_hour} an hour"
        why = f"{limits.answers_per_hour} answers an hour to mail that is no game mail"
    elif about_signup:
        if security.may_answer_about_signup(session, address, now):
            return outcome + "; answered about its pending sign-up"
        why = f"{security.SIGNUP_ANSWERS_PER_DAY} answers a day about a pending sign-up"
    elif security.may_answer(session, address, now, limits):
        return outcome
    else:
        why = security.STRANGER_LIMIT
    for answer in mine:
        session.delete(answer)
    return outcome + f"; not answered ({why})"


def said_limit(session: Work, post: Post, answers: list[OutboundMail], most: int) -> None:
    """The last answer an address may have this hour says so: each answer is queued again
    with a closing paragraph, in its reader's language, in place of the one composed."""
    for row in answers:
        address = json.loads(row.rcpts_json)[0]
        sentence = _n(
            "This is the last answer you get this hour to mail that is no game mail (HELP, "
            "LIST, a mail without your key ...): at most {n} an hour are sent, so you will "
            "get no more answers to such mail for an hour. Your orders and replies to your "
            "reports are answered as ever.",
            "This is the last answer you get this hour to mail that is no game mail (HELP, "
            "LIST, a mail without your key ...): at most {n} an hour are sent, so you will "
            "get no more answers to such mail for an hour. Your orders and replies to your "
            "reports are answered as ever.", most).said(
                translator(post.language_of(session, address)))
        parsed = message_from_bytes(outbound_body(session, row.id), policy=policy.default)
        assert isinstance(parsed, EmailMessage)
        plain, rich = parsed.get_body(("plain",)), parsed.get_body(("html",))
        text = (str(plain.get_content()) if plain is not None else "").rstrip("\n")
        page = str(rich.get_content()) if rich is not None else None
        if page is not None:
            closing = f"<p>{escape(sentence)}</p>"
            at = page.rfind("</body>")
            page = page[:at] + closing + page[at:] if at >= 0 else page + closing
        files = [(part.get_filename() or "attachment", part.get_content_type(),
                  bytes(part.get_payload(decode=True) or b""))
                 for part in parsed.iter_attachments()]
        parent, auto = parsed.get("In-Reply-To"), parsed.get("Auto-Submitted")
        enqueue(session, post.origin, kind=row.kind, to=address,
                subject=str(parsed["Subject"]), text=f"{text}\n\n{sentence}\n", html=page,
                now=post.clock(), attachments=files,
                in_reply_to=str(parent) if parent else None,
                references=str(parsed.get("References", "")).split(),
                game_id=row.game_id, seat=row.seat, turn=row.turn, inbound_id=row.inbound_id,
                auto_submitted=str(auto) if auto else None,
                shipped_html=True)   # its HTML was cleaned when it was first queued
        session.delete(row)
