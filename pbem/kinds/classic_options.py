"""The options of classic Bluff: its editions (docs/rules.md section 4), NEWGAME's
options on top of one, and the rules in words.

Czech edition: 6 dice a player, 5 with six players. The number of players is not known
when the options are read, so the rules JSON keeps ``dice_if_six_players`` (SIX_KEY: 5
for Czech, else None), and the kind (pbem.kinds.classic) resolves it at the start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from pbem.kinds.jsontypes import JSONMap
from pbem.kinds.views import ClassicRules
from pbem.kinds.words import Told
from pbem.rules.ruleset import ExactRule, RuleSet
from pbem.text.errors import Refusal
from pbem.text.wording import Message, _, _n

SIX_KEY: Final = "dice_if_six_players"

# docs/rules.md section 4, classic Bluff: what each published edition uses
EDITIONS: dict[str, tuple[RuleSet, int | None]] = {
    "english": (RuleSet(exact_rule=ExactRule.ALL_BUT_BIDDER, expose=True), None),
    "german": (RuleSet(exact_rule=ExactRule.CHALLENGER, expose=False), None),
    "czech": (RuleSet(dice_per_player=6, exact_rule=ExactRule.NOBODY, expose=False), 5),
    "anniversary": (RuleSet(super_die=True, exact_rule=ExactRule.ALL_BUT_BIDDER,
                            expose=False), None),
}
OPTION_HELP = _("classic options: an edition (english, german, czech, anniversary) first, "
                "then DICE <1-10>, SUPER on|off, EXACT {exact}, STARS on|off, EXPOSE on|off, "
                "BOARD <n>|off", exact="|".join(r.value for r in ExactRule))
_EXACT_TEXT = {
    ExactRule.ALL_BUT_BIDDER: _("all but the bidder lose 1"),
    ExactRule.NOBODY: _("nobody loses a die, the bidder opens the next round"),
    ExactRule.CHALLENGER: _("the challenger loses 1"),
    ExactRule.EVERYONE: _("every player loses 1"),
    ExactRule.CHALLENGER_GIVES: _("the challenger gives the bidder a die"),
}
# how the rules text names each edition, as it is and with changes (whole phrases: an
# edition's name is an adjective in German and Czech)
_EDITION_NAMES = {
    "english": (_(", English edition"), _(", English edition with changes")),
    "german": (_(", German edition"), _(", German edition with changes")),
    "czech": (_(", Czech edition"), _(", Czech edition with changes")),
    "anniversary": (_(", Anniversary edition"), _(", Anniversary edition with changes")),
}


def _switch(name: str, value: str) -> bool:
    if value in ("on", "yes", "true"):
        return True
    if value in ("off", "no", "false"):
        return False
    raise Refusal(_("{name} is on or off, not '{value}'", name=name.upper(), value=value),
                  OPTION_HELP)


def _number(name: str, value: str) -> int:
    if not value.isdigit():
        raise Refusal(_("{name} takes a number, not '{value}'", name=name.upper(),
                        value=value), OPTION_HELP)
    return int(value)


def _changes_from(name: str, rules: JSONMap) -> int:
    """How many settings ``rules`` changed from an edition's. A game under way has the
    Czech "5 with six players" resolved (null), its dice then either count; a view's rules
    leave that key out."""
    preset, preset_six = EDITIONS[name]
    wanted = preset.to_json()
    changed = {key for key, value in wanted.items() if rules.get(key) != value}
    six = rules.get(SIX_KEY)
    if six is None and preset_six is not None and rules.get("dice_per_player") == preset_six:
        changed.discard("dice_per_player")
    return len(changed) + (1 if isinstance(six, int) and six != preset_six else 0)


def _edition_words(rules: JSONMap) -> Message:
    """", German edition", or the edition the rules changed least: "German edition with
    changes" (a game started as `german DICE 1` still says where it comes from)."""
    changes = {name: _changes_from(name, rules) for name in EDITIONS}
    nearest = min(EDITIONS, key=lambda name: changes[name])   # ties: the first named
    as_it_is, changed = _EDITION_NAMES[nearest]
    return changed if changes[nearest] else as_it_is


def parse_classic_options(words: Sequence[str]) -> ClassicRules:
    """NEWGAME's options of a classic game: an edition first (english, german, czech,
    anniversary), then single options on top of it; the rules JSON."""
    rules, six = RuleSet(), None
    tokens = [w.lower() for w in words]
    if tokens and tokens[0] in EDITIONS:
        rules, six = EDITIONS[tokens.pop(0)]
    while tokens:
        name = tokens.pop(0)
        if name in EDITIONS:
            raise Refusal(_("name the edition ({name}) first, before single options",
                            name=name), OPTION_HELP)
        if name not in ("dice", "super", "exact", "stars", "expose", "board"):
            raise Refusal(_("unknown option '{name}' for a classic game", name=name),
                          OPTION_HELP)
        if not tokens:
            raise Refusal(_("{name} needs a value", name=name.upper()), OPTION_HELP)
        value = tokens.pop(0)
        try:
            if name == "dice":
                rules, six = rules.with_options(dice_per_player=_number(name, value)), None
            elif name == "super":
                rules = rules.with_options(super_die=_switch(name, value))
            elif name == "exact":
                rules = rules.with_options(exact_rule=ExactRule(value))
            elif name == "stars":
                rules = rules.with_options(star_bids=_switch(name, value))
            elif name == "expose":
                rules = rules.with_options(expose=_switch(name, value))
            else:
                cap = None if value in ("off", "none") else _number(name, value)
                rules = rules.with_options(board_cap=cap)
        except ValueError as exc:
            raise Refusal(_("{name} {value}: {why}", name=name.upper(), value=value,
                            why=str(exc)), OPTION_HELP) from None
    return {**rules.to_json(), SIX_KEY: six}


def describe_classic_rules(rules: JSONMap) -> str:
    """The rules of a classic game in words (its edition, or the nearest one)."""
    r = RuleSet.from_json(dict(rules))
    dice: Message = _n("{n} die each", "{n} dice each", r.dice_per_player)
    if isinstance(rules.get(SIX_KEY), int):
        dice += _(" ({six} with six players)", six=rules[SIX_KEY])
    if r.super_die:
        dice += _(", one of them the super die that counts twice")
    on, off = _("on"), _("off")
    board = _(", board ends at {cap}", cap=r.board_cap) if r.board_cap else ""
    return Told(_("classic Bluff{edition}: {dice}; exact bid: {exact}; star bids {stars}; "
                  "expose and re-roll {expose}{board}", edition=_edition_words(rules),
                  dice=dice, exact=_EXACT_TEXT[r.exact_rule],
                  stars=on if r.star_bids else off, expose=on if r.expose else off,
                  board=board))
