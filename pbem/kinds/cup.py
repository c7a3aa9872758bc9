"""Cup of Bluff (docs/rules.md section 5) as a game kind: 3 to 5 players, 16 tokens.

The rules live in pbem.rules.cupofbluff; this module reads orders, words
notes and views. The server sees one turn per move: the Bluffer's action,
then the Guesser's answer, then (after a failed steal) the Bluffer's GIVE.
A "round" in the texts below is one Bluffer's turn of the rulebook.

Standing orders: CHALLENGE makes a Guesser who sent nothing answer BLUFF;
any other policy (RAISE ...) has no meaning here, so standing_move returns
None and the robot plays for the missing player.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence

from pbem.kinds.base import OWN_SCHEMA_PARTS, Demo, GameKind, Resolution, TakenOrder, Understood
from pbem.kinds.jsontypes import BidChart, CupRound, JSONMap, MoveExtra
from pbem.kinds.tables import POINTS_TABLE, CupScore, CupTable, Viewer, cup_scores, cup_tables
from pbem.kinds.views import CupExtras, CupRules, CupView
from pbem.kinds.words import KIND_TITLES, Told
from pbem.orders.parsing import Command, Order, SeatByName
from pbem.rules import cupofbluff as cb
from pbem.rules import robot_cup
from pbem.rules.cupofbluff import (
    Announce,
    Answer,
    Claimed,
    CupState,
    Doublet,
    DoubletMade,
    Event,
    GameEnded,
    Give,
    Given,
    Move,
    Revealed,
    Rolled,
    Steal,
    TurnRecord,
)
from pbem.rules.cupofbluff_moves import MoveJSON
from pbem.rules.dice import DiceStream
from pbem.rules.errors import IllegalMove, RulesError
from pbem.text.errors import Refusal
from pbem.text.wording import Message, Said, _, _n

RULES_VERSION = 1
SEAT_HINT = _("write the player's number or name, e.g. TO 3, TO player 3 or TO Ann")
_NAME = re.compile(r"^[^\W\d_][\w.' -]{0,59}$")
TOKEN_HINT = _("tokens and totals are the numbers 3 to 18")
_WORDS = dict(zip(("three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                   "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
                   "eighteen"), range(3, 19), strict=True))
_SEAT = re.compile(r"^(?:player|seat|p|#)?\s*(\d+)$")


# --- order parsing ----------------------------------------------------------


def _clean(word: str) -> str:
    return word.lower().strip(".,;:!?")


def parse_token(word: str) -> int:
    text = _clean(word)
    value = int(text) if text.isdigit() else _WORDS.get(text)
    if value is None or not 3 <= value <= 18:
        raise Refusal(_("'{word}' is not a token or total", word=word), TOKEN_HINT)
    return value


def parse_seat(words: Sequence[str]) -> int:
    match = _SEAT.match(" ".join(_clean(w) for w in words))
    if match is None or not 1 <= int(match.group(1)) <= 5:
        raise Refusal(_("'{words}' is not a player number", words=" ".join(words)), SEAT_HINT)
    return int(match.group(1))


def _write_it(usage: str) -> Message:
    return _("write it as {usage}", usage=usage)


def _split(args: list[str], word: str, usage: str) -> tuple[list[str], list[str]]:
    upper = [_clean(a).upper() for a in args]
    if word not in upper:
        raise Refusal(_("'{word}' is missing", word=word), _write_it(usage))
    at = upper.index(word)
    return args[:at], args[at + 1:]


def _one_token(words: list[str], usage: str) -> int:
    if len(words) != 1:
        raise Refusal(_("expected one token or total, not '{words}'", words=" ".join(words)),
                      _write_it(usage))
    return parse_token(words[0])


def _seat_or_name(words: Sequence[str], build: Callable[[int], Move]) -> Move | SeatByName:
    """A player by number (the move at once) or by name (found by the shell)."""
    try:
        return build(parse_seat(words))
    except Refusal:
        name = " ".join(w.strip(".,;:!?") for w in words).strip()
        if not _NAME.match(name):
            raise
        return SeatByName(name, build)


def parse_announce(args: list[str]) -> Move | SeatByName:
    usage = "ANNOUNCE <total> TO <player>, e.g. ANNOUNCE 12 TO 3"
    total, seat = _split(args, "TO", usage)
    value = _one_token(total, usage)
    return _seat_or_name(seat, lambda s: Announce(value, s))


def parse_steal(args: list[str]) -> Move | SeatByName:
    usage = "STEAL <token> FROM <player>, e.g. STEAL 15 FROM 2"
    token, seat = _split(args, "FROM", usage)
    value = _one_token(token, usage)
    return _seat_or_name(seat, lambda s: Steal(value, s))


def parse_doublet(args: list[str]) -> Doublet:
    usage = "DOUBLET TAKE <token> GIVE <token> <token> ..., e.g. DOUBLET TAKE 4 GIVE 8 13"
    before, after = _split(args, "GIVE", usage)
    if not before or _clean(before[0]) != "take":
        raise Refusal(_("'{word}' is missing", word="TAKE"), _write_it(usage))
    parts = [p for a in after for p in a.split(",") if p and _clean(p) not in ("", "and")]
    if not parts:
        raise Refusal(_("name the tokens you give back"), _write_it(usage))
    return Doublet(_one_token(before[1:], usage), tuple(parse_token(p) for p in parts))


def parse_give(args: list[str]) -> Give:
    return Give(_one_token(args, "GIVE <token>, e.g. GIVE 9"))


def _answer(ok: bool) -> Callable[[list[str]], Answer]:
    def parse(args: list[str]) -> Answer:
        # "Bluff you!" and "OK!" are the rulebook's words; anything more is a mistake
        if any(_clean(a) not in ("", "you") for a in args):
            raise Refusal(_("this order takes nothing after it, not '{words}'",
                            words=" ".join(args)))
        return Answer(ok)
    return parse


COMMANDS: tuple[Command, ...] = (
    Command("ANNOUNCE", "ANNOUNCE <total> TO <player number or name>",
            _("as the Bluffer: claim your dice show this total (3-18, its token in the centre)"),
            parse_announce),
    Command("STEAL", "STEAL <token> FROM <player number or name>",
            _("as the Bluffer: claim your dice show the total of that player's token"),
            parse_steal),
    Command("DOUBLET", "DOUBLET TAKE <token> GIVE <token> [<token> ...]",
            _("as the Bluffer with a double: swap your tokens for a centre token of equal points"),
            parse_doublet),
    Command("OK", "OK", _("as the Guesser: you believe the Bluffer's claim"), _answer(True),
            aliases=("OK!", "OKAY")),
    Command("BLUFF", "BLUFF", _("as the Guesser: you do not believe it"), _answer(False),
            aliases=("BLUFF!", "BLUFF YOU", "BLUFF YOU!")),
    Command("GIVE", "GIVE <token>",
            _("as the Bluffer after a failed steal: the token you give the Guesser"), parse_give),
)
MOVE_NAMES = tuple(c.name for c in COMMANDS)


# --- words ------------------------------------------------------------------


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


def _due_words(state: CupState) -> dict[int, str]:
    """What the seat due must do (CupState.due_said), as Told lines."""
    return {seat: Told(what) for seat, what in state.due_said().items()}


def _waiting_words(state: CupState) -> str:
    """Whose move it is, said to everyone (CupState.waiting_for_said), as a Told line."""
    return Told(state.waiting_for_said())


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


def _pending(state: CupState) -> TurnRecord | None:
    """The answered steal whose gift is still owed (its dice are shown)."""
    claim = state.claim
    if state.phase != cb.GIVE or claim is None:
        return None
    return TurnRecord(state.number, state.bluffer, state.roll, claim.action, claim.total,
                      claim.guesser, claim.ok, claim.guesser)


def record_json(r: TurnRecord, you: int | None = None) -> CupRound:
    return {"round": r.number, "bluffer": r.bluffer, "action": r.action, "total": r.total,
            "guesser": r.guesser, "roll": list(r.roll), "roll_total": sum(r.roll),
            "truthful": r.truthful if r.action != "doublet" else None,
            "answer": None if r.ok is None else ("OK" if r.ok else "BLUFF"),
            "winner": r.winner, "given": r.given, "returned": list(r.returned),
            "lines": record_lines(r, you)}


# --- the kind ---------------------------------------------------------------


class CupKind(GameKind[CupState, Move]):
    name = "cup"
    schema_dir = OWN_SCHEMA_PARTS / name
    title = Told(KIND_TITLES["cup"])
    min_players = cb.MIN_PLAYERS
    max_players = cb.MAX_PLAYERS
    commands = COMMANDS
    report_template = "cup_report"
    web_look = "web/looks/cup.html.j2"
    demo = Demo(4)
    course_label = "points"
    option_help = _("Cup of Bluff takes no options: 3 to 5 players, 3 dice, 16 tokens "
                    "(docs/rules.md section 5)")
    help_note = _("Three ordinary dice (1 to 6) and sixteen tokens, 3 to 18, each worth 1 to 5 "
                  "points. The Bluffer claims a total to a Guesser (a player's number or "
                  "name), who believes it (OK) or not (BLUFF).")
    standing_orders_said: Mapping[str, Message] = {
        "CHALLENGE": _("answer BLUFF when you are the Guesser (as the Bluffer, the robot "
                       "plays)"),
        "ROBOT": _("let the robot choose your move"),
        "NONE": _("no standing order: the game's policy decides (normally the robot)")}
    standing_orders: Mapping[str, Said] = standing_orders_said

    def parse_options(self, words: Sequence[str]) -> CupRules:
        if words:
            raise Refusal(_("Cup of Bluff has no options yet, so '{word}' is not understood",
                            word=words[0]), _("write just RULES cup"))
        return {"version": RULES_VERSION}

    def describe_rules(self, rules: JSONMap) -> str:
        return Told(_("Cup of Bluff: three dice, sixteen tokens 3 to 18, most points wins"))

    def start(self, rules: JSONMap, stream: DiceStream, players: int) -> CupState:
        if rules.get("version", RULES_VERSION) != RULES_VERSION:
            raise ValueError(f"unknown Cup of Bluff rules version {rules.get('version')!r}")
        return cb.new_game(stream, players)

    def due(self, state: CupState) -> dict[int, str]:
        return _due_words(state)

    def orders_now(self, state: CupState, seat: int) -> list[str]:
        if seat not in state.due():
            return []
        if state.phase == cb.ANSWER:
            return ["OK", "BLUFF"]
        if state.phase == cb.GIVE:
            return ["GIVE"]
        return (["ANNOUNCE"] + (["STEAL"] if cb.can_steal(state) else [])
                + (["DOUBLET"] if cb.doublets(state) else []))

    def place(self, state: CupState, seat: int) -> int:
        return 0

    def take_order(self, state: CupState, seat: int,
                   orders: Sequence[Order]) -> TakenOrder[Move]:
        moves = [o for o in orders if o.name in MOVE_NAMES]
        now = state.due_said().get(seat) or _("nothing: {waiting}",
                                                waiting=state.waiting_for_said())
        may = _("what you may do now: {now}", now=now)
        if not moves:
            raise Refusal(_("I found no move in your mail"), may)
        if len(moves) > 1:
            raise Refusal(_("one move a mail: yours has {count} ({names})", count=len(moves),
                            names=", ".join(o.name for o in moves)),
                          _("send just the one you mean; a later mail replaces an earlier "
                            "order"), moves[1])
        order = moves[0]
        move: Move = order.args
        try:
            state.check_move(seat, move)
        except RulesError as exc:
            exc.quoting(order, hint=may)
            raise
        said = self.describe_move_said(move)
        return TakenOrder(move, [Understood(order, said)], str(said))

    def check(self, state: CupState, seat: int, move: Move) -> None:
        state.check_move(seat, move)

    def apply(self, state: CupState, moves: Mapping[int, Move],
              stream: DiceStream) -> Resolution[CupState]:
        due = state.due()
        if set(moves) - set(due):
            raise IllegalMove(_("player {seat} has no move this turn",
                                seat=min(set(moves) - set(due))))
        if set(due) - set(moves):
            raise ValueError(f"no move for seats {sorted(set(due) - set(moves))}")
        seat = next(iter(due))
        after, events = cb.apply_move(state, seat, moves[seat], stream)
        extras: dict[int, list[object]] = {}
        # pbem.record/2: the roll of Bluffer turn n is recorded with that Bluffer's claim or
        # doublet, the move it belongs to (the GIVE and the Guesser's answer have none)
        record: dict[int, MoveExtra] = ({seat: {"dealt": list(state.roll)}}
                                        if state.phase == cb.ACT and seat == state.bluffer
                                        else {})
        for e in events:
            if isinstance(e, Rolled):   # the roll itself is secret: only for the record
                extras[e.bluffer] = list(e.roll)   # pbem.record/1 kept the next roll here
        return Resolution(after, event_lines(events), extras, record,
                          seat_notes={s: event_lines(events, s) for s in state.seats})

    def robot_move(self, state: CupState, seat: int, rng: random.Random,
                   level: str = "strong") -> Move:
        return robot_cup.robot_move(state, seat, rng, level)

    def standing_move(self, state: CupState, seat: int, policy: str) -> Move | None:
        claim = state.claim
        if (policy == "CHALLENGE" and state.phase == cb.ANSWER and claim is not None
                and claim.guesser == seat):
            return Answer(False)
        return None

    def move_to_json(self, move: Move) -> MoveJSON:
        return move.to_json()

    def move_from_json(self, data: JSONMap) -> Move:
        return cb.move_from_json(data)

    def describe_move(self, move: Move) -> str:
        return str(self.describe_move_said(move))

    def describe_move_said(self, move: Move) -> Message:
        if isinstance(move, Announce):
            return _("ANNOUNCE {total} TO player {seat}", total=move.total, seat=move.guesser)
        if isinstance(move, Steal):
            return _("STEAL token {token} FROM player {seat}", token=move.token,
                     seat=move.victim)
        if isinstance(move, Doublet):
            return _("DOUBLET: take token {take}, give back {give}", take=move.take,
                     give=", ".join(map(str, move.give)))
        if isinstance(move, Answer):
            return (_("OK (you believe the claim)") if move.ok
                    else _("BLUFF (you do not believe it)"))
        return _("GIVE token {token}", token=move.token)

    def over(self, state: CupState) -> bool:
        return state.game_over

    def standings(self, state: CupState) -> list[dict[str, int]]:
        return [{"rank": s.rank, "seat": s.seat, "score": s.points, "tokens": s.tokens}
                for s in state.standings()]

    def view(self, state: CupState, seat: int | None) -> CupView:
        """Keys other than the server's own (game, turn, you, key, players, deadline)."""
        due = state.due()
        claim = state.claim
        mine = seat == state.bluffer and not state.game_over
        pending = _pending(state)
        return {
            "phase": state.phase,
            "round": state.number,
            "bluffer": None if state.game_over else state.bluffer,
            "to_move": next(iter(due), None),
            "waiting_for": _waiting_words(state),
            "centre": list(state.centre),
            "centre_points": sum(cb.points(t) for t in state.centre),
            "holdings": [{"seat": s, "tokens": list(state.tokens(s)), "points": state.score(s),
                          "count": len(state.tokens(s))} for s in state.seats],
            "claim": None if claim is None else {
                "action": claim.action, "total": claim.total, "guesser": claim.guesser,
                "chance": cb.TOTAL_ODDS[claim.total],   # of that total with three dice
                "answer": None if claim.ok is None else ("OK" if claim.ok else "BLUFF")},
            "your_roll": list(state.roll) if mine else None,
            "your_roll_total": sum(state.roll) if mine else None,
            "can_doublet": bool(mine and state.phase == cb.ACT and cb.doublets(state)),
            "can_steal": bool(mine and state.phase == cb.ACT and cb.can_steal(state)),
            "shown_roll": list(pending.roll) if pending is not None else None,
            "last_turn": record_json(state.log[-1]) if state.log else None,
            "points_table": POINTS_TABLE,
            "game_over": state.game_over,
        }

    def history(self, state: CupState) -> list[str]:
        lines = [line for r in state.log for line in record_lines(r)]
        claim = state.claim
        if claim is not None:
            lines.append(claim_line(state.number, state.bluffer, claim.action, claim.total,
                                    claim.guesser))
            pending = _pending(state)
            if pending is not None:
                lines.append(reveal_line(pending))
        return lines

    def score_words(self, standing: Mapping[str, int]) -> str:
        return Told(_("{points}, {tokens}",
                      points=_n("{n} point", "{n} points", standing["score"]),
                      tokens=_n("{n} token", "{n} tokens", standing.get("tokens", 0))))

    def waiting_for(self, state: CupState) -> str | None:
        return _waiting_words(state)

    def web_tables(self, state: CupState, viewer: Viewer) -> list[CupTable]:
        return cup_tables(state, viewer, [record_json(r) for r in reversed(state.log)])

    def web_scores(self, state: CupState) -> list[CupScore]:
        return cup_scores(state)

    def legal_moves(self, state: CupState, seat: int) -> list[Move]:
        return state.legal_moves() if seat in state.due() else []

    def client_order_lines(self, view: JSONMap, rng: random.Random,
                           level: str = "normal") -> list[str]:
        return client_order_lines(view, rng)

    def bid_charts(self, state: CupState, seat: int) -> list[BidChart]:
        """The Guesser's chart: how likely each total of three dice is, the claim marked
        (it holds only if the roll is exactly that total)."""
        claim = state.claim
        if state.phase != cb.ANSWER or claim is None or claim.guesser != seat:
            return []
        dist = cb.total_distribution()
        return [{"title": _("the claim of {total}", total=claim.total),
                 "quantity": claim.total, "rule": "exactly",
                 "question": _("What may the three dice total?"),
                 "bars": [[t, dist[t]] for t in sorted(dist)]}]

    def report_extras(self, state: CupState, seat: int | None) -> CupExtras:
        """The last round told to the report's reader ("you"); report.json keeps the
        public wording, the same for everyone."""
        return {"last_lines": record_lines(state.log[-1], seat) if state.log else []}


# --- a robot at the other end of the mail -------------------------------------
# It reads a report.json as the mail brings it, json.loads's and unchecked: a JSONMap.


def client_state(view: JSONMap) -> CupState:
    """The position as the player of a report.json sees it: the public tokens and
    claim, and the roll only if it is theirs (else no dice at all)."""
    holdings = sorted(view["holdings"], key=lambda h: h["seat"])
    claim = view["claim"]
    return CupState(
        players=len(holdings), centre=tuple(view["centre"]),
        holdings=tuple(tuple(h["tokens"]) for h in holdings),
        bluffer=view["bluffer"], number=view["round"], phase=view["phase"],
        roll=tuple(view["your_roll"] or ()),
        claim=None if claim is None else cb.Claim(
            claim["action"], claim["total"], claim["guesser"],
            None if claim["answer"] is None else claim["answer"] == "OK"))


def client_order_lines(view: JSONMap, rng: random.Random) -> list[str]:
    """The order line of a robot player reading its report.json (pbem.cup.view/1):
    the kind's robot decides from the player's own roll (as the Bluffer) or the
    claim and the centre (as the Guesser); [] when it is not that player's move."""
    if view.get("game_over") or view.get("you") is None or view.get("to_move") != view["you"]:
        return []
    return [str(cb.robot_move(client_state(view), int(view["you"]), rng))]


CUP = CupKind()
