"""Classic Bluff (docs/rules.md section 4) as a game kind: 2 to 6 players, rounds until one is left.

The server sees one turn per move: the one player to move is due. The options (the
editions of docs/rules.md section 4 and single options on top of one) are read in
pbem.kinds.classic_options, the moves told in words in pbem.kinds.classic_words; this
module is the kind: orders taken, moves applied, views, and the robot that plays from a
report.json.

Czech edition: 6 dice a player, 5 with six players. The rules JSON keeps
``dice_if_six_players`` (5 for Czech, else None) and ``start`` resolves it;
the state's RuleSet holds the dice really dealt. A replay must start from the
same rules JSON (the extra key included).
"""
from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from pbem.kinds.base import OWN_SCHEMA_PARTS, Demo, Resolution, TakenOrder, Understood
from pbem.kinds.bidding import (
    HELP_NOTE,
    STANDING_ORDERS_SAID,
    BidMoves,
    count_chart,
    order_lines,
    read_bid_order,
    standing_bid_move,
)
from pbem.kinds.classic_options import (
    OPTION_HELP,
    SIX_KEY,
    describe_classic_rules,
    parse_classic_options,
)
from pbem.kinds.classic_words import event_lines, face_symbols, round_lines
from pbem.kinds.jsontypes import BidChart, JSONMap, MoveExtra, Odds
from pbem.kinds.tables import (
    BluffTable,
    ClassicScore,
    Viewer,
    bid_json,
    classic_scores,
    classic_tables,
    faces,
    lifted_cups,
    orange,
)
from pbem.kinds.views import ClassicBidJSON, ClassicRound, ClassicRules, ClassicView
from pbem.kinds.words import KIND_TITLES, Told, bid_words
from pbem.orders.commands import PLAYER_COMMANDS, Order
from pbem.rules.bid_moves import BidMove, Move
from pbem.rules.classic import (
    BidPlaced,
    ClassicState,
    PlacedBid,
    RoundEnd,
    apply_move,
    new_game,
)
from pbem.rules.dice import DiceStream, Die, Face, face_from_json, face_json
from pbem.rules.dice_cup import Cup
from pbem.rules.errors import IllegalMove, RulesError
from pbem.rules.ladder import Bid
from pbem.rules.odds import Answer, OtherSeat, SeatView, answers, bid_odds, bids_since_reroll
from pbem.rules.postal import make_ladder
from pbem.rules.robot import DEFAULT_LEVEL, choose_move
from pbem.rules.ruleset import RuleSet
from pbem.text.wording import Message, Said, _, _n

MOVE_NAMES = ("BID", "CHALLENGE", "EXPOSE")


def _bids_json(bids: Sequence[PlacedBid]) -> list[ClassicBidJSON]:
    return [{"player": b.seat, "quantity": b.bid.quantity, "face": face_json(b.bid.face),
             "exposed": [face_json(f) for f in b.exposed]} for b in bids]


def _round_json(end: RoundEnd) -> ClassicRound:
    """A finished round with every cup shown (public once the cups are up)."""
    bid = end.result.bid
    return {
        "round": end.round, "opener": end.opener, "bids": _bids_json(end.bids),
        "challenger": end.challenger, "bidder": end.result.bidder, "bid": bid_json(bid),
        "actual": end.result.actual, "outcome": end.result.outcome,
        "cups": lifted_cups(end.table, bid),
        "losses": [{"seat": s, "lost": n} for s, n in sorted(end.lost.items())],
        "out": list(end.out), "next_opener": end.next_opener,
    }


class ClassicKind(BidMoves[ClassicState]):
    name = "classic"
    schema_dir = OWN_SCHEMA_PARTS / name
    title = Told(KIND_TITLES["classic"])
    min_players = 2
    max_players = 6
    commands = tuple(c for c in PLAYER_COMMANDS if c.name in MOVE_NAMES)
    report_template = "classic_report"
    web_look = "web/looks/classic.html.j2"
    demo = Demo(4, "english")
    course_key = "dice"
    course_label = "dice held"
    option_help = OPTION_HELP
    help_note = HELP_NOTE
    standing_orders_said: Mapping[str, Message] = STANDING_ORDERS_SAID
    standing_orders: Mapping[str, Said] = STANDING_ORDERS_SAID

    def parse_options(self, words: Sequence[str]) -> ClassicRules:
        return parse_classic_options(words)

    def rules_of(self, rules: JSONMap, players: int) -> RuleSet:
        """The RuleSet of a game of that many players (the Czech six-player rule resolved)."""
        resolved = RuleSet.from_json(dict(rules))
        six = rules.get(SIX_KEY)
        if players == 6 and isinstance(six, int):
            resolved = resolved.with_options(dice_per_player=six)
        return resolved

    def played_rules(self, rules: JSONMap, players: int) -> ClassicRules:
        """The Czech six-player rule resolved: six players of the Czech edition play 5 dice,
        and the record and report.json both say dice_per_player 5."""
        return {**self.rules_of(rules, players).to_json(), SIX_KEY: None}

    def describe_rules(self, rules: JSONMap) -> str:
        return describe_classic_rules(rules)

    def start(self, rules: JSONMap, stream: DiceStream, players: int) -> ClassicState:
        return new_game(stream, self.rules_of(rules, players), players)

    def due(self, state: ClassicState) -> dict[int, str]:
        return {seat: Told(what) for seat, what in state.due_said().items()}

    def due_said(self, state: ClassicState) -> dict[int, Message]:
        return state.due_said()

    def orders_now(self, state: ClassicState, seat: int) -> list[str]:
        if seat not in state.due():
            return []
        raise_left = state.ladder.lowest_raise(state.current_bid) is not None
        expose = state.rules.expose and raise_left and len(state.cup(seat).hidden) > 1
        return ((["BID"] if raise_left else []) + (["CHALLENGE"] if state.current_bid else [])
                + (["EXPOSE"] if expose else []))

    def place(self, state: ClassicState, seat: int) -> int:
        return 0   # one table, no mini-games

    def take_order(self, state: ClassicState, seat: int,
                   orders: Sequence[Order]) -> TakenOrder[Move]:
        order, exposes, move = read_bid_order(orders)
        # the bid alone first, so that a refusal quotes the line at fault
        for bad, trial in ((order, BidMove(move.bid) if isinstance(move, BidMove) else move),
                           (exposes[0] if exposes else order, move)):
            try:
                state.check_move(seat, trial)
            except RulesError as exc:
                exc.quoting(bad, hint=_("your report lists what you may do now"))
                raise
        where = f"in round {state.round}"
        if isinstance(move, BidMove):
            o = bid_odds(state.seat_view(seat), move.bid)
            first = Understood(order, _("BID {bid} in round {round}", bid=move.bid.said(),
                                        round=state.round),
                               {"holds": o.holds, "exact": o.exact})
        else:
            current = state.current_bid
            first = Understood(order, _("CHALLENGE {bid} (bid by player {seat}) in round "
                                        "{round}", bid=current.said() if current else "None",
                                        seat=state.bidder, round=state.round))
        lines = [first] + [Understood(e, _("expose {faces}, re-roll the rest",
                                           faces=face_symbols(e.args)))
                           for e in exposes]
        return TakenOrder(move, lines, f"{move} {where}")

    def check(self, state: ClassicState, seat: int, move: Move) -> None:
        state.check_move(seat, move)

    def apply(self, state: ClassicState, moves: Mapping[int, Move],
              stream: DiceStream) -> Resolution[ClassicState]:
        due = state.due()
        extra = sorted(set(moves) - set(due))
        if extra:
            raise IllegalMove(_("player {seat} has no move now", seat=extra[0]))
        if set(due) - set(moves):
            raise ValueError(f"no move for seats {sorted(set(due) - set(moves))}")
        (seat,) = due
        after, events = apply_move(state, seat, moves[seat], stream)
        extras: dict[int, list[object]] = {}
        record: dict[int, MoveExtra] = {}
        for e in events:
            if isinstance(e, BidPlaced):
                if e.rerolled:
                    extras[e.seat] = list(e.rerolled)
                if e.exposed:
                    # which dice were shown (the orange one?), and the faces re-rolled
                    dice = after.cup(e.seat).exposed[len(state.cup(e.seat).exposed):]
                    record[e.seat] = {
                        "dealt": [face_json(f) for f in e.rerolled],
                        "shown": [{"face": face_json(d.face), "orange": d.super} for d in dice]}
        return Resolution(after, event_lines(events), extras, record,
                          seat_notes={s: event_lines(events, s) for s in state.seats})

    def robot_move(self, state: ClassicState, seat: int, rng: random.Random,
                   level: str = DEFAULT_LEVEL) -> Move:
        return choose_move(state.seat_view(seat), rng, level)

    def standing_move(self, state: ClassicState, seat: int, policy: str) -> Move | None:
        if seat not in state.due():
            return None
        current = state.current_bid
        return standing_bid_move(policy, current, state.ladder)

    def over(self, state: ClassicState) -> bool:
        return state.game_over

    def standings(self, state: ClassicState) -> list[dict[str, int]]:
        """score: the dice value left, as losses count it (the orange die is two; 0 once
        out); dice: the dice held. The order follows the round each went out in."""
        return [{"rank": s.rank, "seat": s.seat, "score": s.dice, "dice": s.held}
                for s in state.standings()]

    def view(self, state: ClassicState, seat: int | None) -> ClassicView:
        current = state.current_bid
        running = not state.game_over
        own: Cup | None = state.cup(seat) if seat is not None else None
        odds = None
        if seat is not None and running and current is not None and state.is_in(seat):
            o = bid_odds(state.seat_view(seat), current)
            odds = {"holds": o.holds, "exact": o.exact}
        return {
            "kind": self.name, "round": state.round, "you": seat,
            # the rules as played, as the game's record has them (the Czech rule resolved)
            "rules": {**state.rules.to_json(), SIX_KEY: None},
            "rules_text": self.describe_rules(state.rules.to_json()),
            # the dice on the table, and what they count for the track (a super die twice)
            "dice_in_play": state.dice_in_play, "dice_count": sum(h.count for h in state.hands),
            "opener": state.opener,
            "to_move": state.to_move, "game_over": state.game_over, "winner": state.winner,
            "players": [{"seat": s, "dice": state.hand(s).count, "value": state.hand(s).value,
                         "super": state.hand(s).super, "in": state.is_in(s),
                         "out_round": state.out_round[s - 1],
                         "hidden": len(state.cup(s).hidden),
                         "exposed": faces(state.cup(s).exposed),
                         "exposed_super": orange(state.cup(s).exposed)} for s in state.seats],
            "your_dice": None if own is None else {
                "hidden": faces(own.hidden), "hidden_super": orange(own.hidden),
                "exposed": faces(own.exposed), "exposed_super": orange(own.exposed)},
            "bids": _bids_json(state.bids),
            "current_bid": bid_json(current), "bidder": state.bidder,
            "lowest_raise": bid_json(state.ladder.lowest_raise(current)) if running else None,
            "odds": odds,
            "last_round": _round_json(state.finished[-1]) if state.finished else None,
            "standings": None if running else [
                {"rank": s.rank, "seat": s.seat, "dice": s.held, "value": s.dice,
                 "out_round": s.out_round} for s in state.standings()],
        }

    def history(self, state: ClassicState) -> list[str]:
        def bid_lines(round_no: int, bids: Sequence[PlacedBid]) -> list[str]:
            return [Told(_("Round {round}: player {seat} bid {bid}, exposing {faces}",
                           round=round_no, seat=b.seat, bid=bid_words(b.bid),
                           faces=face_symbols(b.exposed)) if b.exposed else
                         _("Round {round}: player {seat} bid {bid}", round=round_no,
                           seat=b.seat, bid=bid_words(b.bid))) for b in bids]

        lines: list[str] = []
        for end in state.finished:
            lines += bid_lines(end.round, end.bids) + round_lines(end)
        if not state.game_over:
            lines += bid_lines(state.round, state.bids)
        return lines

    def score_words(self, standing: Mapping[str, int]) -> str:
        held = standing.get("dice", standing["score"])   # pbem.record/1 kept the value only
        if held != standing["score"]:
            return Told(_n("{n} die left (worth {worth})", "{n} dice left (worth {worth})",
                           held, worth=standing["score"]))
        return Told(_n("{n} die left", "{n} dice left", held))

    def web_tables(self, state: ClassicState, viewer: Viewer) -> list[BluffTable]:
        return classic_tables(state, viewer)

    def web_scores(self, state: ClassicState) -> list[ClassicScore]:
        return classic_scores(state)

    def bid_charts(self, state: ClassicState, seat: int) -> list[BidChart]:
        bid = state.current_bid
        if bid is None or seat not in state.due():
            return []
        return [count_chart(state.seat_view(seat), bid)]

    def legal_moves(self, state: ClassicState, seat: int) -> list[Move]:
        return state.legal_moves() if seat in state.due() else []

    def client_order_lines(self, view: JSONMap, rng: random.Random,
                           level: str = "normal") -> list[str]:
        return client_order_lines(view, rng, level)

    def move_odds(self, state: ClassicState, seat: int, move: Move) -> Odds | None:
        if not isinstance(move, BidMove):
            return None
        o = bid_odds(state.seat_view(seat), move.bid)
        return {"holds": o.holds, "exact": o.exact}


# --- a robot at the other end of the mail -------------------------------------
# It reads a report.json as the mail brings it, json.loads's and unchecked: a JSONMap.


def _view_dice(faces: Sequence[int | str], orange: int | str | None) -> tuple[Die, ...]:
    plain = tuple(Die(face_from_json(f)) for f in faces)
    return plain + ((Die(face_from_json(orange), True),) if orange is not None else ())


def client_seat_view(view: JSONMap) -> SeatView:
    """What the player of a report.json knows (their dice, the exposed dice, the
    bids), as the robot and the odds read it."""
    me = int(view["you"])
    mine = view["your_dice"]
    own = Cup(_view_dice(mine["hidden"], mine["hidden_super"]),
              _view_dice(mine["exposed"], mine["exposed_super"]))
    others = [p for p in view["players"] if p["seat"] != me and p["in"]]
    exposed = tuple(d for p in others for d in _view_dice(p["exposed"], p["exposed_super"]))
    # a player's orange die is hidden while they hold it and have not exposed it
    unknown_super = sum(1 for p in others if p["super"] and p["exposed_super"] is None)
    unknown_plain = sum(p["hidden"] for p in others) - unknown_super
    rules = RuleSet.from_json(dict(view["rules"]))
    current = view["current_bid"]
    bid = None if current is None else Bid(current["quantity"], face_from_json(current["face"]))
    # what each other player's bids since their last re-roll say (the strong robot reads
    # them), and who answers this player's bid: as the referee's own view has them
    placed = [(int(b["player"]), Bid(int(b["quantity"]), face_from_json(b["face"])),
               bool(b["exposed"])) for b in view["bids"]]
    seen = []
    for p in others:
        orange = 1 if p["super"] and p["exposed_super"] is None else 0
        seen.append(OtherSeat(int(p["seat"]), int(p["hidden"]) - orange, orange,
                              bids_since_reroll(placed, int(p["seat"]))))
    seated = [int(p["seat"]) for p in view["players"] if p["in"]]
    later = [s for s in seated if s > me] + [s for s in seated if s < me]
    return SeatView(me, own, exposed, unknown_plain, unknown_super, bid,
                    make_ladder(view["dice_in_play"], rules.star_bids, rules.board_cap), rules,
                    tuple(seen), later[0] if later else None, bids_since_reroll(placed, me),
                    client_answers(view, me))


def _placed(bids: Sequence[JSONMap]) -> tuple[tuple[int, Bid, tuple[Face, ...]], ...]:
    return tuple((int(b["player"]), Bid(int(b["quantity"]), face_from_json(b["face"])),
                  tuple(face_from_json(f) for f in b["exposed"])) for b in bids)


def client_answers(view: JSONMap, me: int) -> tuple[Answer, ...]:
    """The other players' answers in the last finished round of a report.json (its
    cups shown) and in this one, as the referee's own view has them."""
    found: tuple[Answer, ...] = ()
    end = view.get("last_round")
    if end is not None:
        table = {int(c["seat"]): _view_dice(c["dice"], c["super"]) for c in end["cups"]}
        found = answers(_placed(end["bids"]), {s: len(d) for s, d in table.items()},
                        int(end["challenger"]), table)
    found += answers(_placed(view["bids"]),
                     {int(p["seat"]): int(p["dice"]) for p in view["players"] if p["in"]})
    return tuple(a for a in found if a.seat != me)


def client_order_lines(view: JSONMap, rng: random.Random,
                       level: str = "normal") -> list[str]:
    """The order lines of a robot player reading its report.json (pbem.classic.view/1),
    playing at level; [] when it is not that player's move."""
    if view.get("game_over") or view.get("you") is None or view.get("to_move") != view["you"]:
        return []
    return order_lines(choose_move(client_seat_view(view), rng, level))


CLASSIC = ClassicKind()
