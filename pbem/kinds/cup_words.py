"""A Cup of Bluff game's moves told in words, to everyone or to one seat ("you announce",
"player 2 announces ... to you"): the report's notes, the history and a round's lines
(pbem.kinds.cup)."""

from __future__ import annotations

from collections.abc import Sequence

from pbem.kinds.words import Told
from pbem.rules.cupofbluff_moves import (
    Claimed,
    DoubletMade,
    Event,
    GameEnded,
    Given,
    Revealed,
    Rolled,
    TurnRecord,
)
from pbem.text.wording import Message, _


def _roll(roll: Sequence[int]) -> str:
    return f"{' '.join(map(str, roll))} = {sum(roll)}"


def claim_line(number: int, bluffer: int, action: str, total: int, guesser: int,
               you: int | None = None) -> str:
    values = {"number": number, "bluffer": bluffer, "total": total, "guesser": guesser}
    if action == "steal":
        if bluffer == you:
            return Told(_("Round {number}: you try to steal token {total} from player "
                          "{guesser}, claiming a total of {total}.", **values))
        if guesser == you:
            return Told(_("Round {number}: player {bluffer} tries to steal token {total} "
                          "from you, claiming a total of {total}.", **values))
        return Told(_("Round {number}: player {bluffer} tries to steal token {total} from "
                      "player {guesser}, claiming a total of {total}.", **values))
    if bluffer == you:
        return Told(_("Round {number}: you announce a total of {total} to player "
                      "{guesser}.", **values))
    if guesser == you:
        return Told(_("Round {number}: player {bluffer} announces a total of {total} to "
                      "you.", **values))
    return Told(_("Round {number}: player {bluffer} announces a total of {total} to player "
                  "{guesser}.", **values))


def _reveal_end(r: TurnRecord, you: int | None) -> Message:
    """Who was right at a reveal, and what they take: "player 2 was right and takes
    token 9."."""
    g, b = r.guesser, r.bluffer
    values = {"guesser": g, "bluffer": b, "total": r.total}
    if r.winner == g:
        if r.action == "announce":
            return (_("you were right and take token {total}.", **values) if g == you else
                    _("player {guesser} was right and takes token {total}.", **values))
        if g == you:
            return _("you were right, keep token {total} and get a token from player "
                     "{bluffer}.", **values)
        if b == you:
            return _("player {guesser} was right, keeps token {total} and gets a token from "
                     "you.", **values)
        return _("player {guesser} was right, keeps token {total} and gets a token from "
                 "player {bluffer}.", **values)
    # OK on a lie (the Bluffer fooled the Guesser) / BLUFF on the truth
    steal = r.action != "announce"
    if b == you:
        if r.ok:
            return (_("you fooled them and take player {guesser}'s token {total}.", **values)
                    if steal else _("you fooled them and take token {total}.", **values))
        return (_("you were right and take player {guesser}'s token {total}.", **values)
                if steal else _("you were right and take token {total}.", **values))
    if g == you:
        if r.ok:
            return (_("player {bluffer} fooled you and takes your token {total}.", **values)
                    if steal else
                    _("player {bluffer} fooled you and takes token {total}.", **values))
        return (_("player {bluffer} was right and takes your token {total}.", **values)
                if steal else _("player {bluffer} was right and takes token {total}.",
                                **values))
    if r.ok:
        return (_("player {bluffer} fooled them and takes player {guesser}'s token {total}.",
                  **values) if steal else
                _("player {bluffer} fooled them and takes token {total}.", **values))
    return (_("player {bluffer} was right and takes player {guesser}'s token {total}.",
              **values) if steal else
            _("player {bluffer} was right and takes token {total}.", **values))


def reveal_line(r: TurnRecord, you: int | None = None) -> str:
    g = r.guesser
    assert g is not None
    values = {"guesser": g, "said": "OK" if r.ok else "BLUFF", "roll": _roll(r.roll),
              "truth": _("the truth") if r.truthful else _("a bluff"),
              "end": _reveal_end(r, you)}
    if g == you:
        return Told(_("You say {said}; the dice show {roll}, {truth}: {end}", **values))
    return Told(_("Player {guesser} says {said}; the dice show {roll}, {truth}: {end}",
                  **values))


def given_line(bluffer: int, guesser: int, token: int, you: int | None = None) -> str:
    values = {"bluffer": bluffer, "guesser": guesser, "token": token}
    if bluffer == you:
        return Told(_("You give token {token} to player {guesser}.", **values))
    if guesser == you:
        return Told(_("Player {bluffer} gives token {token} to you.", **values))
    return Told(_("Player {bluffer} gives token {token} to player {guesser}.", **values))


def doublet_line(r: TurnRecord, you: int | None = None) -> str:
    values = {"number": r.number, "bluffer": r.bluffer, "roll": _roll(r.roll),
              "given": ", ".join(map(str, r.returned)), "total": r.total}
    if r.bluffer == you:
        return Told(_("Round {number}: you show a doublet ({roll}) and swap tokens {given} "
                      "for token {total}.", **values))
    return Told(_("Round {number}: player {bluffer} shows a doublet ({roll}) and swaps "
                  "tokens {given} for token {total}.", **values))


def event_lines(events: Sequence[Event], you: int | None = None) -> list[str]:
    """A move's events in words for the report, told to everyone (you None) or to the
    player of seat you ("you announce", "player 2 announces ... to you")."""
    notes: list[str] = []
    for e in events:
        if isinstance(e, Claimed):
            notes.append(claim_line(e.number, e.bluffer, e.action, e.total, e.guesser, you))
        elif isinstance(e, Revealed):
            notes.append(reveal_line(e.record, you))
        elif isinstance(e, Given):
            notes.append(given_line(e.bluffer, e.guesser, e.token, you))
        elif isinstance(e, DoubletMade):
            notes.append(doublet_line(e.record, you))
        elif isinstance(e, Rolled):
            notes.append(Told(
                _("Round {number}: you are the Bluffer.", number=e.number)
                if e.bluffer == you else
                _("Round {number}: player {seat} is the Bluffer.", number=e.number,
                  seat=e.bluffer)))
        elif isinstance(e, GameEnded):
            notes.append(Told(_("The last token has left the centre: the game is over.")))
    return notes


def record_lines(r: TurnRecord, you: int | None = None) -> list[str]:
    """The round in words, told to everyone (you None) or to the player of seat you."""
    if r.action == "doublet":
        return [doublet_line(r, you)]
    assert r.guesser is not None
    lines = [claim_line(r.number, r.bluffer, r.action, r.total, r.guesser, you),
             reveal_line(r, you)]
    if r.given is not None:
        lines.append(given_line(r.bluffer, r.guesser, r.given, you))
    return lines
