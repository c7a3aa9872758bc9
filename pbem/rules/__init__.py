"""The pure rules core: dice, the bid ladder, challenges, the postal game, odds, robot, record.

No I/O, no clocks, no global random state: dice come from a DiceStream
built on the game's seed, robot choices from a random.Random passed in.

The bottom of the game layers: imports only the standard library and
itself, nothing else of pbem (pyproject.toml: the import contracts).
"""

from pbem.rules.bid_moves import CHALLENGE, BidMove, ChallengeMove, Move
from pbem.rules.challenge import ChallengeResult, count_matching, resolve_challenge
from pbem.rules.dice import STAR, DiceStream, Die, commitment, new_seed, seed_from_number
from pbem.rules.dice_cup import Cup
from pbem.rules.errors import IllegalMove, MalformedMove, RulesError
from pbem.rules.ladder import Bid, Ladder, is_raise
from pbem.rules.odds import Odds, SeatView, bid_odds
from pbem.rules.postal import PostalState, apply_turn, minigame_of, mover, new_game
from pbem.rules.postal_record import GameRecord, RecordedMove, replay, verify
from pbem.rules.robot import choose_move, random_move
from pbem.rules.ruleset import POSTAL_RULES, ExactRule, RuleSet

__all__ = [
    "CHALLENGE", "POSTAL_RULES", "STAR", "Bid", "BidMove", "ChallengeMove", "ChallengeResult",
    "Cup", "DiceStream", "Die", "ExactRule", "GameRecord", "IllegalMove", "Ladder",
    "MalformedMove", "Move", "Odds", "PostalState", "RecordedMove", "RuleSet", "RulesError",
    "SeatView", "apply_turn", "bid_odds", "choose_move", "commitment", "count_matching",
    "is_raise", "minigame_of", "mover", "new_game", "new_seed", "random_move", "replay",
    "resolve_challenge", "seed_from_number", "verify",
]
