"""Table talk: SAY, relayed at once to the other players and shown in the next report.

``SAY <text>`` is relayed at once to every other player of the game (one notice each)
and shown in the "table talk" section of the next report (pbem.games.reporting). The
SAY lines of one mail make one message to each destination; it is cut at MAX_TALK
characters, with a note. ``SAY TO <seat or first name>``, in a game with private press,
reaches that one player and the referee. Names and text go into mail only through the
mail composer (headers) and autoescaped templates (HTML). A known player's command
(who="player"), as the other desk commands (pbem.commands.player_desk).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pbem.commands.context import CommandContext, MailCommand, game_is, refuse
from pbem.games.records import active_players, id_of
from pbem.kinds.options import options_of
from pbem.orders.commands import Order
from pbem.orders.words import folded, spellings_of
from pbem.services.post import notice, tagged
from pbem.store.models import TalkMessage
from pbem.store.rows import GameView, PlayerView
from pbem.text.errors import Refusal
from pbem.text.wording import Message, Said, _, _n, plural

MAX_TALK = 2000
_SAY = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])?\s*say\b:?\s?", re.IGNORECASE)
_LEAD = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])?\s*")
# SAY's words of the other languages (pbem.orders.words), folded, longest first
_SAY_WORDS = sorted(((lang, folded(w).split()) for lang, w in spellings_of("SAY")),
                    key=lambda item: -len(item[1]))


def parse_say(args: list[str]) -> None:
    if not args:
        raise Refusal(_("SAY needs something to say"), _("e.g. SAY Nobody has three stars."))


def say_parts(line: str) -> tuple[str, str]:
    """The SAY word of a line, folded ("SAY", "AN ALLE", "VZKAZ" ...), and its text as
    written (spacing kept), without that word."""
    said = _SAY.sub("", line, count=1)
    if said != line:
        return "SAY", said.rstrip()
    lead = _LEAD.match(line)
    start = lead.end() if lead else 0
    tokens = list(re.finditer(r"\S+", line[start:]))
    words = [folded(t[0]).rstrip(":") for t in tokens]
    for _language, spelling in _SAY_WORDS:
        if words[:len(spelling)] == spelling:
            end = start + tokens[len(spelling) - 1].end()
            said = line[end:][1:] if line[end:end + 1].isspace() else line[end:]
            return " ".join(spelling), said.rstrip()
    return "SAY", line.rstrip()


def say_text(line: str) -> str:
    """The text of a SAY line as written (spacing kept), without the SAY word (or its
    German or Czech words: AN ALLE, VZKAZ)."""
    return say_parts(line)[1]


# the SAY words that say "to everyone" themselves: a line opening with one is for the table
_TO_ALL_WORDS = {"AN ALLE", "VSEM"}
# SAY TO ALL <text> (TO EVERYONE, TO ALLE, TO VŠEM): the table's, after a SAY TO
_ALL = {"ALL", "EVERYONE", "EVERYBODY", "ALLE", "VSEM", "VSICHNI"}
_TO = re.compile(r"^TO\s+(\S+)\s*", re.IGNORECASE)


@dataclass
class Talk:
    """One message of a mail's SAY lines: who it is for (None: the whole table) and its
    lines."""

    to: PlayerView | None
    lines: list[str]
    first: Order


def talk_of_mail(ctx: CommandContext, game: GameView, says: list[Order],
                 press: str) -> list[Talk]:
    """The messages of a mail's SAY lines, each to where its lines say. A SAY TO line goes
    to that one player; SAY TO ALL (and AN ALLE, VŠEM, which say "to everyone") to the
    table; any other SAY line goes with the line above it, so a private message may run
    over several SAY lines (and the lines before any SAY TO are the table's). The lines to
    one destination make one message, in the order written."""
    talks: dict[int | None, Talk] = {}
    to: PlayerView | None = None
    for order in says:
        word, text = say_parts(order.line)
        found = _TO.match(text)
        if word in _TO_ALL_WORDS:
            to = None
        elif found is not None and folded(found[1]).rstrip(":,") in _ALL:
            to, text = None, text[found.end():]
            if not text.strip():
                raise refuse(_("SAY needs something to say"),
                             _("e.g. SAY Nobody has three stars."), order, game.name)
        elif found is not None:
            to, text = said_to(ctx, game, found, text, press, order)
        key = to.seat if to is not None else None
        if key in talks:
            talks[key].lines.append(text)
        else:
            talks[key] = Talk(to, [text], order)
    return list(talks.values())


def do_say(ctx: CommandContext, order: Order) -> str:
    assert ctx.who is not None
    game, player = ctx.who.game, ctx.who.player
    says = sorted((o for o in ctx.orders if o.name == "SAY"), key=lambda o: o.line_no)
    if says and says[0].line_no != order.line_no:
        return "relayed with the first SAY line"   # the first SAY relays them all
    if game.status in ("over", "cancelled"):
        raise refuse(game_is(game), "", order, game.name)
    press = options_of(game).press
    if press == "none":
        raise refuse(_("game {game} has no table talk (its press is none)", game=game.name),
                     "", order, game.name)
    speaker: Said = (_("{name} (player {seat})", name=player.name, seat=player.seat)
                     if player.seat is not None else player.name)
    done = []
    for talk in talk_of_mail(ctx, game, says or [order], press):
        text = "\n".join(talk.lines)
        cut = len(text) > MAX_TALK
        if cut:
            text = text[:MAX_TALK]
        to = talk.to
        ctx.session.add(TalkMessage(game_id=id_of(game), turn=game.turn, seat=player.seat,
                                    name=player.name, text=text, created_at=ctx.now,
                                    to_seat=to.seat if to is not None else None))
        note = ([_("(The message was cut at {count} characters.)",
                   count=format(MAX_TALK, ","))] if cut else [])
        said = plural("{n} character", "{n} characters", len(text)) + (" (cut)" if cut else "")
        if to is not None:
            _say_privately(ctx, game, speaker, to, text, note)
            done.append(f"{ctx.sender} said {said} to seat {to.seat} in {game.name}")
        else:
            _say_to_table(ctx, game, player, speaker, text, note)
            done.append(f"{player.email} said {said} in {game.name}")
    return "; ".join(done)


def _say_to_table(ctx: CommandContext, game: GameView, player: PlayerView, speaker: Said, text: str,
                  note: list[Message]) -> None:
    """Public talk: every other player hears it at once, and the next report shows it."""
    others = [p for p in active_players(ctx.session, game) if p.id != player.id]
    for other in others:
        notice(ctx.session, ctx.post, other.email,
               tagged(game.name, _("table talk from {name}", name=player.name)),
               [_("{speaker} says:", speaker=speaker), text, *note,
                _("Answer with SAY <text> in a reply to this mail or to your report.")],
               ctx.now, game=game, seat=other.seat,
               turn=game.turn if other.seat is not None else None, kind="talk")
    subject = tagged(game.name, _("your table talk was relayed"))
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [_n("Relayed to {n} player, and in the next report:",
                          "Relayed to {n} players, and in the next report:", len(others)),
                       text, *note]})


def said_to(ctx: CommandContext, game: GameView, found: re.Match[str], text: str, press: str,
            order: Order) -> tuple[PlayerView, str]:
    """SAY TO <seat or name> <text>: the one player it is for (private press) and the text
    without those words."""
    if press != "private":
        raise refuse(_("SAY TO is for games with private press; in this game SAY reaches "
                       "every player"), _("write SAY and your text"), order, game.name)
    word, rest = found[1], text[found.end():]
    seated_now = [p for p in active_players(ctx.session, game) if p.seat is not None]
    to = next((p for p in seated_now if word.isdigit() and p.seat == int(word)), None)
    if to is None:
        named = [p for p in seated_now if p.name.split()[:1] and
                 p.name.split()[0].casefold() == word.rstrip(":,").casefold()]
        to = named[0] if len(named) == 1 else None
    if to is None or to.email == ctx.sender or not rest.strip():
        raise refuse(_("SAY TO {word}: say it to another player by seat or first name, "
                       "then the text", word=word[:40]),
                     _("e.g. SAY TO 3 Shall we both challenge player 2?"), order, game.name)
    return to, rest


def _say_privately(ctx: CommandContext, game: GameView, speaker: Said, to: PlayerView, text: str,
                   note: list[Message]) -> None:
    """Private press: the message reaches that one player and the referee, and only their
    reports show it."""
    notice(ctx.session, ctx.post, to.email,
           tagged(game.name, _("a private word from {speaker}", speaker=speaker)),
           [_("{speaker} says to you only:", speaker=speaker), text, *note,
            _("Answer with SAY TO and their seat in a reply to this mail or to your report.")],
           ctx.now, game=game, seat=to.seat, turn=game.turn, kind="talk")
    notice(ctx.session, ctx.post, ctx.post.referee,
           tagged(game.name, _("private press: {speaker} to player {seat}", speaker=speaker,
                               seat=to.seat)),
           [_("{speaker} says to {name} (player {seat}) only:", speaker=speaker, name=to.name,
              seat=to.seat), text, *note], ctx.now, game=game)
    subject = tagged(game.name, _("your private word was passed on"))
    ctx.answer("notice", subject, {
        "subject": subject, "game": game.name,
        "paragraphs": [_("Passed on to {name} (player {seat}) only, and to the "
                         "referee; it shows in your and their next report:", name=to.name,
                         seat=to.seat), text, *note]})


COMMANDS: tuple[MailCommand, ...] = (
    MailCommand("SAY", "SAY <text> | SAY TO <seat> <text>",
            _("table talk: relayed at once to the other players, and in the next report "
              "(SAY TO: to one player only, in a game with private press)"),
            parse_say, action=do_say, who="player", phase="change"),
)
