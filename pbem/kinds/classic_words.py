"""A classic Bluff game's moves told in words, to everyone or to one seat ("you bid",
"player 2 bid"): the report's notes and the history (pbem.kinds.classic)."""

from __future__ import annotations

from collections.abc import Sequence

from pbem.kinds.words import Told, bid_words
from pbem.rules.classic import BidPlaced, Event, GameEnded, RoundEnd, RoundEnded, RoundStarted
from pbem.rules.dice import Face, face_symbol
from pbem.text.wording import Message, _, _n, joined


def face_symbols(values: Sequence[Face]) -> str:
    return " ".join(face_symbol(f) for f in values)


def _paid(seat: int, lost: int, you: int | None) -> Message:
    """What one player paid at a cups up: "you lose 1 die", "player 2 gains 1 die"."""
    if seat == you:
        return (_n("you lose {n} die", "you lose {n} dice", lost) if lost > 0 else
                _n("you gain {n} die", "you gain {n} dice", -lost))
    return (_n("player {seat} loses {n} die", "player {seat} loses {n} dice", lost, seat=seat)
            if lost > 0 else
            _n("player {seat} gains {n} die", "player {seat} gains {n} dice", -lost,
               seat=seat))


def round_lines(end: RoundEnd, you: int | None = None) -> list[str]:
    r, bid = end.result, end.result.bid
    if r.outcome == "short":
        how = _("short by {missing}", missing=bid.quantity - r.actual)
    else:
        how = _("exact") if r.outcome == "exact" else _("{extra} over",
                                                        extra=r.actual - bid.quantity)
    paid = (joined([_paid(s, n, you) for s, n in sorted(end.lost.items())], "; ")
            if end.lost else _("nobody loses a die"))
    values = {"round": end.round, "bid": bid_words(bid), "actual": r.actual, "how": how,
              "paid": paid, "challenger": end.challenger, "bidder": r.bidder}
    if end.challenger == you:
        said = _("Round {round}: you challenged {bid} (bid by player {bidder}); the table "
                 "held {actual}, {how}: {paid}.", **values)
    elif r.bidder == you:
        said = _("Round {round}: player {challenger} challenged {bid} (bid by you); the "
                 "table held {actual}, {how}: {paid}.", **values)
    else:
        said = _("Round {round}: player {challenger} challenged {bid} (bid by player "
                 "{bidder}); the table held {actual}, {how}: {paid}.", **values)
    lines: list[str] = [Told(said)]
    lines += [Told(_("Round {round}: you are out.", round=end.round) if s == you else
                   _("Round {round}: player {seat} is out.", round=end.round, seat=s))
              for s in end.out]
    return lines


def _bid_line(e: BidPlaced, you: int | None) -> Message:
    values = {"round": e.round, "seat": e.seat, "bid": bid_words(e.bid),
              "faces": face_symbols(e.exposed)}
    if e.seat == you:
        return (_("Round {round}: you bid {bid}, exposing {faces} and re-rolling the rest.",
                  **values) if e.exposed else _("Round {round}: you bid {bid}.", **values))
    return (_("Round {round}: player {seat} bid {bid}, exposing {faces} and re-rolling the "
              "rest.", **values) if e.exposed else
            _("Round {round}: player {seat} bid {bid}.", **values))


def event_lines(events: Sequence[Event], you: int | None = None) -> list[str]:
    """A move's events in words for the report, told to all (you None) or to seat you."""
    notes: list[str] = []
    for e in events:
        if isinstance(e, BidPlaced):
            notes.append(Told(_bid_line(e, you)))
        elif isinstance(e, RoundEnded):
            notes += round_lines(e.end, you)
        elif isinstance(e, RoundStarted):
            notes.append(Told(
                _("Round {round}: new dice are rolled; you open.", round=e.round)
                if e.opener == you else
                _("Round {round}: new dice are rolled; player {seat} opens.", round=e.round,
                  seat=e.opener)))
        elif isinstance(e, GameEnded):
            notes.append(Told(
                _("You win: the last player with dice.") if e.winner == you else
                _("Player {seat} wins: the last player with dice.", seat=e.winner)))
    return notes
