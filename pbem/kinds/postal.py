"""The postal game (docs/rules.md section 4) as a game kind: five players, five mini-games at once."""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence

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
from pbem.kinds.generic_record import GameRows
from pbem.kinds.jsontypes import BidChart, JSONMap, Odds
from pbem.kinds.tables import BluffTable, PostalScore, Viewer, postal_scores, postal_tables
from pbem.kinds.views import PostalExtras
from pbem.kinds.words import KIND_TITLES, Told, bid_words
from pbem.orders.commands import PLAYER_COMMANDS, Order
from pbem.rules.bid_moves import BidMove, Move, move_from_json
from pbem.rules.dice import DiceStream, Die, face_from_json, face_symbol
from pbem.rules.dice_cup import Cup
from pbem.rules.errors import RulesError
from pbem.rules.ladder import Bid, Ladder
from pbem.rules.odds import Answer, OtherSeat, SeatView, answers, bid_odds, bids_since_reroll
from pbem.rules.postal import (
    PLAYERS,
    BidPlaced,
    ChallengeResolved,
    Event,
    PostalState,
    apply_turn,
    new_game,
)
from pbem.rules.postal_record import (
    RECORD_FORMAT,
    GameRecord,
    PostalRecordJSON,
    RecordedMove,
    result_json,
)
from pbem.rules.robot import DEFAULT_LEVEL, choose_move
from pbem.rules.ruleset import RuleSet, RulesJSON
from pbem.rules.view import PostalView, dice_known, holdings, odds_view
from pbem.text.errors import Refusal
from pbem.text.wording import Message, Said, _, _n, joined

# the postal record (pbem.bluff.record/1) as an object: `pbem demo` and tests read it
PostalRecord = GameRecord

MOVE_NAMES = ("BID", "CHALLENGE", "EXPOSE")


def _event_lines(events: Sequence[Event], you: int | None = None) -> list[str]:
    """The turn's challenges in words, told to all (you None) or to seat you."""
    return [Told(_("Mini-game {number} ended: you challenged {bid} and the table held "
                   "{actual}.", number=e.minigame, bid=bid_words(e.result.bid),
                   actual=e.result.actual) if e.seat == you else
                 _("Mini-game {number} ended: player {seat} challenged {bid} and the table "
                   "held {actual}.", number=e.minigame, seat=e.seat,
                   bid=bid_words(e.result.bid), actual=e.result.actual))
            for e in events if isinstance(e, ChallengeResolved)]


class PostalKind(BidMoves[PostalState]):
    name = "postal"
    schema_dir = OWN_SCHEMA_PARTS / name
    title = Told(KIND_TITLES["postal"])
    min_players = PLAYERS
    max_players = PLAYERS
    commands = tuple(c for c in PLAYER_COMMANDS if c.name in MOVE_NAMES)
    report_template = "postal_report"
    web_look = "web/looks/postal.html.j2"
    demo = Demo(5, most_turns=200)
    record_format = RECORD_FORMAT
    course_label = "virtual dice"
    option_help = _("postal takes no options: five players, five mini-games (docs/rules.md "
                    "section 4)")
    help_note = HELP_NOTE
    standing_orders_said: Mapping[str, Message] = STANDING_ORDERS_SAID
    standing_orders: Mapping[str, Said] = STANDING_ORDERS_SAID

    @property
    def view_format(self) -> str:
        return "pbem.bluff.view/1"   # the first kind's view kept the game's name

    def parse_options(self, words: Sequence[str]) -> RulesJSON:
        if words:
            raise Refusal(_("unknown option {word} for a postal game", word=words[0]),
                          self.option_help)
        return RuleSet().to_json()

    def describe_rules(self, rules: JSONMap) -> str:
        return Told(_("postal Bluff: five mini-games, virtual dice"))

    def start(self, rules: JSONMap, stream: DiceStream, players: int) -> PostalState:
        return new_game(stream, RuleSet.from_json(dict(rules)))

    def due(self, state: PostalState) -> dict[int, str]:
        return {seat: Told(what) for seat, what in self.due_said(state).items()}

    def due_seats(self, state: PostalState) -> Collection[int]:
        return state.due().keys()

    def due_said(self, state: PostalState) -> dict[int, Said]:
        out: dict[int, Said] = {}
        for seat, number in state.due().items():
            game = state.minigame(number)
            out[seat] = (_("bid or challenge in mini-game {number}", number=number)
                         if game.current_bid
                         else _("open mini-game {number} with a bid", number=number))
        return out

    def orders_now(self, state: PostalState, seat: int) -> list[str]:
        number = state.due().get(seat)
        if number is None:
            return []
        game = state.minigame(number)
        raise_left = state.ladder(number).lowest_raise(game.current_bid) is not None
        return ((["BID"] if raise_left else []) + (["CHALLENGE"] if game.current_bid else [])
                + (["EXPOSE"] if state.rules.expose and raise_left else []))

    def place(self, state: PostalState, seat: int) -> int:
        return state.due().get(seat, 0)

    def take_order(self, state: PostalState, seat: int,
                   orders: Sequence[Order]) -> TakenOrder[Move]:
        order, exposes, move = read_bid_order(orders)
        try:
            minigame = state.check_move(seat, move)
        except RulesError as exc:
            bad = exposes[0] if exposes and "expose" in str(exc).lower() else order
            exc.quoting(bad, hint=_("your report lists what you may do this turn"))
            raise
        odds = None
        if isinstance(move, BidMove):
            o = bid_odds(dice_known(state, seat, minigame), move.bid)
            odds = {"holds": o.holds, "exact": o.exact}
        lines = [Understood(order, _("{move} in mini-game {number}", move=move.said(),
                                     number=minigame), odds)]
        lines += [Understood(e, _("expose {faces}",
                                  faces=" ".join(face_symbol(f) for f in e.args)))
                  for e in exposes]
        return TakenOrder(move, lines, f"{move} in mini-game {minigame}")


    def check(self, state: PostalState, seat: int, move: Move) -> None:
        state.check_move(seat, move)

    def apply(self, state: PostalState, moves: Mapping[int, Move],
              stream: DiceStream) -> Resolution[PostalState]:
        after, events = apply_turn(state, moves, stream)
        extras: dict[int, list[object]] = {e.seat: list(e.rerolled) for e in events
                                        if isinstance(e, BidPlaced)}
        return Resolution(after, _event_lines(events), extras,
                          seat_notes={s: _event_lines(events, s) for s in range(1, PLAYERS + 1)})

    def robot_move(self, state: PostalState, seat: int, rng: random.Random,
                   level: str = DEFAULT_LEVEL) -> Move:
        return choose_move(state.seat_view(seat, state.due()[seat]), rng, level)

    def standing_move(self, state: PostalState, seat: int, policy: str) -> Move | None:
        number = state.due().get(seat)
        if number is None:
            return None
        current = state.minigame(number).current_bid
        return standing_bid_move(policy, current, state.ladder(number))

    def over(self, state: PostalState) -> bool:
        return state.game_over

    def standings(self, state: PostalState) -> list[dict[str, int]]:
        return [{"rank": s.rank, "seat": s.seat, "score": s.virtual_dice}
                for s in state.standings()]

    def score_words(self, standing: Mapping[str, int]) -> str:
        # the record's standings (pbem.bluff.record/1) name the score virtual_dice
        n = standing["virtual_dice"] if "virtual_dice" in standing else standing["score"]
        return Told(_n("{n} virtual die", "{n} virtual dice", n))

    def report_standing(self, standing: Mapping[str, int]) -> dict[str, int]:
        return {"virtual_dice": standing["score"]}

    def view(self, state: PostalState, seat: int | None) -> PostalView:
        return holdings(state, seat)

    def history(self, state: PostalState) -> list[str]:
        lines: list[tuple[int, Told]] = []
        for game in state.minigames:
            for placed in game.bids:
                values = {"turn": placed.turn, "number": game.number, "seat": placed.seat,
                          "bid": bid_words(placed.bid)}
                lines.append((placed.turn, Told(
                    _("turn {turn}, mini-game {number}: player {seat} bid {bid}, exposing "
                      "{faces}", faces=" ".join(face_symbol(f) for f in placed.exposed),
                      **values) if placed.exposed else
                    _("turn {turn}, mini-game {number}: player {seat} bid {bid}", **values))))
            if game.challenge is not None:
                c = game.challenge
                paid = joined([_n("player {seat} loses {n}", "player {seat} loses {n}", n,
                                  seat=s) if n > 0 else
                               _n("player {seat} gains {n}", "player {seat} gains {n}", -n,
                                  seat=s)
                               for s, n in sorted(c.result.losses.items())], ", ")
                lines.append((c.turn, Told(_(
                    "turn {turn}, mini-game {number}: player {seat} challenged; the table "
                    "held {actual} ({paid})", turn=c.turn, number=game.number, seat=c.seat,
                    actual=c.result.actual, paid=paid))))
        return [line for _turn, line in sorted(lines, key=lambda item: item[0])]

    def bid_charts(self, state: PostalState, seat: int) -> list[BidChart]:
        number = state.due().get(seat)
        if number is None:
            return []
        bid = state.minigame(number).current_bid
        if bid is None:
            return []
        return [{**count_chart(dice_known(state, seat, number), bid),
                 "title": _("{bid} in mini-game {number}", bid=bid_words(bid),
                            number=number)}]

    def report_extras(self, state: PostalState, seat: int | None) -> PostalExtras:
        return {"odds": odds_view(state, seat) if seat is not None else {}}

    def web_tables(self, state: PostalState, viewer: Viewer) -> list[BluffTable]:
        return postal_tables(state, viewer)

    def web_scores(self, state: PostalState) -> list[PostalScore]:
        return postal_scores(state)

    def legal_moves(self, state: PostalState, seat: int) -> list[Move]:
        number = state.due().get(seat)
        return [] if number is None else state.legal_moves(number)

    def move_odds(self, state: PostalState, seat: int, move: Move) -> Odds | None:
        number = state.due().get(seat)
        if not isinstance(move, BidMove) or number is None:
            return None
        o = bid_odds(state.seat_view(seat, number), move.bid)
        return {"holds": o.holds, "exact": o.exact}

    def game_record(self, rows: GameRows, state: PostalState | None) -> PostalRecord:
        """pbem.bluff.record/1, checked by pbem.rules.postal_record.verify: the moves as kept, with
        the mini-game and the faces an expose re-rolled."""
        over = state is not None and state.game_over
        return GameRecord(
            game=rows.game, rules=RuleSet.from_json(dict(rows.rules)),
            commitment=rows.commitment, entrants=[e.name for e in rows.entrants],
            seats=[e.seat or 0 for e in rows.entrants],
            moves=[RecordedMove(m.turn, m.seat, m.place, move_from_json(m.move), m.by,
                                tuple(m.dealt)) for m in rows.moves],
            seed=rows.seed.hex() if over else None,
            result=result_json(state) if over and state is not None else None)

    def record(self, rows: GameRows, state: PostalState | None) -> PostalRecordJSON:
        return self.game_record(rows, state).to_json()

    def client_order_lines(self, view: JSONMap, rng: random.Random,
                           level: str = "normal") -> list[str]:
        move = choose_order(view, rng, level)
        return order_lines(move) if move is not None else []


# --- a robot at the other end of the mail -------------------------------------
# It reads a report.json as the mail brings it, json.loads's and unchecked: a JSONMap.


def client_seat_view(view: JSONMap, minigame: int, rules: RuleSet | None = None) -> SeatView:
    """What the player of a report.json (pbem.bluff.view/1) knows of one mini-game."""
    mg = view["minigames"][minigame - 1]
    me = str(view["you"])

    def dice(faces: list[object]) -> tuple[Die, ...]:
        return tuple(Die(face_from_json(f)) for f in faces)

    own = Cup(dice(mg["your_dice"]["hidden"]), dice(mg["your_dice"]["exposed"]))
    others = [s for s in mg["exposed"] if s != me]
    exposed = tuple(d for s in others for d in dice(mg["exposed"][s]))
    per_player = mg["dice_per_player"]
    unknown = sum(per_player - len(mg["exposed"][s]) for s in others)
    current = mg["current_bid"]
    bid = Bid(current["quantity"], face_from_json(current["face"])) if current else None
    rules = rules or RuleSet()
    ladder = Ladder(per_player * len(mg["exposed"]), star_bids=rules.star_bids,
                    board_cap=rules.board_cap)
    # what each other player's bids since their last re-roll say (the strong robot reads it)
    placed = [(int(b["player"]), Bid(int(b["quantity"]), face_from_json(b["face"])),
               bool(b.get("exposed"))) for b in mg["bids"]]
    seen = tuple(OtherSeat(int(s), per_player - len(mg["exposed"][s]), 0,
                           bids_since_reroll(placed, int(s))) for s in others)
    return SeatView(int(me), own, exposed, unknown, 0, bid, ladder, rules, seen,
                    int(me) % len(mg["exposed"]) + 1, bids_since_reroll(placed, int(me)),
                    client_answers(view, int(me)),
                    *client_standings(view, minigame))


def client_standings(view: JSONMap, minigame: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Every seat's virtual dice, and the dice a player of each other running mini-game."""
    scores = view.get("virtual_dice") or {}
    virtual = tuple(int(scores[s]) for s in sorted(scores, key=int))
    later = tuple(int(m["dice_per_player"]) for i, m in enumerate(view["minigames"], start=1)
                  if m.get("challenge") is None and i != minigame)
    return virtual, later


def client_answers(view: JSONMap, me: int) -> tuple[Answer, ...]:
    """The other players' answers in every mini-game of a report.json, the cups of the
    ended ones shown (what the strong robot reads a player's calling from)."""
    out: list[Answer] = []
    for mg in view["minigames"]:
        placed = tuple((int(b["player"]), Bid(int(b["quantity"]), face_from_json(b["face"])),
                        tuple(face_from_json(f) for f in b.get("exposed", ())))
                       for b in mg["bids"])
        sizes = {int(s): int(mg["dice_per_player"]) for s in mg["exposed"]}
        challenge = mg.get("challenge")
        if challenge is None:
            found = answers(placed, sizes)
        else:
            table = {int(s): tuple(Die(face_from_json(f)) for f in faces)
                     for s, faces in challenge["dice"].items()}
            found = answers(placed, sizes, int(challenge["player"]), table)
        out += [a for a in found if a.seat != me]
    return tuple(out)


def choose_order(view: JSONMap, rng: random.Random, level: str = "normal") -> Move | None:
    """The robot's move for the player of a report.json; None when it has none to make."""
    if view.get("game_over") or view.get("to_move") is None:
        return None
    return choose_move(client_seat_view(view, view["to_move"]), rng, level)


POSTAL = PostalKind()
