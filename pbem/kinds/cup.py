"""Cup of Bluff (docs/rules.md section 5) as a game kind: 3 to 5 players, 16 tokens.

The rules live in pbem.rules.cupofbluff, the orders' parsers in pbem.kinds.cup_orders,
the moves told in words in pbem.kinds.cup_words; this module is the kind: an order
taken, a move applied, the views, and the robot that plays from a report.json. The
server sees one turn per move: the Bluffer's action,
then the Guesser's answer, then (after a failed steal) the Bluffer's GIVE.
A "round" in the texts below is one Bluffer's turn of the rulebook.

Standing orders: CHALLENGE makes a Guesser who sent nothing answer BLUFF;
any other policy (RAISE ...) has no meaning here, so standing_move returns
None and the robot plays for the missing player.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from pbem.kinds.base import OWN_SCHEMA_PARTS, Demo, GameKind, Resolution, TakenOrder, Understood
from pbem.kinds.cup_orders import COMMANDS, MOVE_NAMES
from pbem.kinds.cup_words import claim_line, event_lines, record_lines, reveal_line
from pbem.kinds.jsontypes import BidChart, CupRound, JSONMap, MoveExtra
from pbem.kinds.tables import POINTS_TABLE, CupScore, CupTable, Viewer, cup_scores, cup_tables
from pbem.kinds.views import CupExtras, CupRules, CupView
from pbem.kinds.words import KIND_TITLES, Told
from pbem.orders.commands import Order
from pbem.rules import cupofbluff as cb
from pbem.rules import robot_cup
from pbem.rules.cupofbluff import (
    Announce,
    Answer,
    CupState,
    Doublet,
    Move,
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


def _due_words(state: CupState) -> dict[int, str]:
    """What the seat due must do (CupState.due_said), as Told lines."""
    return {seat: Told(what) for seat, what in state.due_said().items()}


def _waiting_words(state: CupState) -> str:
    """Whose move it is, said to everyone (CupState.waiting_for_said), as a Told line."""
    return Told(state.waiting_for_said())


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
    return [str(robot_cup.robot_move(client_state(view), int(view["you"]), rng))]


CUP = CupKind()
