"""A game's desk options (NEWGAME words), kept as JSON in Game.options_json.

The turn length stays in Game.turn_hours (None: no deadline, a turn waits
for every order). Everything else a referee may choose at NEWGAME lives in
``GameOptions``; an option missing from the stored JSON takes its default,
and unknown keys are ignored, so old games read with newer code.

NEWGAME words (any case, any order; RULES takes the rest of the line)::

    SEED <n>            reproducible dice (tests only)
    DEADLINE <hours>    turn length                          default: none
    AT <hour>           deadline moved to the next HH:00 UTC default: none
    GRACE <hours>       grace after the deadline             default: 0
    REMIND <hours>      reminder lead before the deadline    default: 12 if the
                        (0: no reminders)                    turn is >= 24 h, else
                                                             a quarter of the turn
    MISSED <n>          missed turns in a row before the     default: 3
                        referee is asked to replace (0: never)
    VACATION <days>     ABSENT days per player per game      default: 14
    MISSING <policy>    robot | challenge | raise            default: robot
    ROBOT <level>       easy | normal | strong: how well the default: strong
                        robot plays a missing seat
    PRESS <press>       public | private | none: SAY to all, default: public
                        also SAY TO one player, or no talk
    LANGUAGE <lang>     en | de | cs: the game's language     default: en
                        (a player's own LANGUAGE comes first)
    OPEN                open for sign-up by JOIN             default: closed
    AUTOSTART           start when the seats fill (implies OPEN)
    WAIT                resolve only at the deadline, never early
    RULES <kind> [...]  the game kind and its own options    default: postal

Pure: imports only the order language (pbem.orders.parsing). This module owns the
option constants (POLICIES, DEFAULT_MISSED_LIMIT ...).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from datetime import timedelta
from typing import Any, Protocol

from pbem.kinds.jsontypes import KindJSON
from pbem.text.errors import Refusal
from pbem.text.wording import LANGUAGES, Message, _, _n, count_of, joined

POLICIES = ("robot", "challenge", "raise")   # MISSING <policy>: what plays a missed order
ROBOT_LEVELS = ("easy", "normal", "strong")   # ROBOT <level>: pbem.rules.robot.LEVELS
DEFAULT_ROBOT_LEVEL = "strong"
PRESS = ("public", "private", "none")   # PRESS <press>: what table talk may be
GAME_LANGUAGES = tuple(LANGUAGES)       # LANGUAGE <lang>: en, de, cs
DEFAULT_MISSED_LIMIT = 3
DEFAULT_VACATION_DAYS = 14.0
MAX_HOURS = 24 * 365

USAGE = ("NEWGAME <game> [SEED <n>] [DEADLINE <hours>] [AT <hour>] [GRACE <hours>] "
         "[REMIND <hours>] [MISSED <n>] [VACATION <days>] [MISSING robot|challenge|raise] "
         "[ROBOT easy|normal|strong] [PRESS public|private|none] [LANGUAGE en|de|cs] [OPEN] "
         "[AUTOSTART] [WAIT] [RULES <kind> ...]")
OPTION_HINT = _("options: SEED <n>, DEADLINE <hours>, AT <hour UTC>, GRACE <hours>, "
                "REMIND <hours>, MISSED <n>, VACATION <days>, MISSING robot|challenge|raise, "
                "ROBOT easy|normal|strong, PRESS public|private|none, LANGUAGE en|de|cs, "
                "OPEN, AUTOSTART, WAIT, RULES <kind> ... (last)")

# the levels and policies as a reader reads them (the words to write stay English)
LEVEL_NAMES: dict[str, Message] = {"easy": _("easy"), "normal": _("normal"),
                                   "strong": _("strong")}
POLICY_NAMES: dict[str, Message] = {"robot": _("robot"), "challenge": _("challenge"),
                                    "raise": _("raise")}


@dataclass
class GameOptions:
    deadline_hour: int | None = None      # the deadline moves to the next HH:00 UTC
    grace_hours: float = 0.0              # after the deadline, before orders count as missed
    reminder_hours: float | None = None   # None: automatic (see reminder_lead); 0: none
    missed_limit: int = DEFAULT_MISSED_LIMIT   # missed turns in a row; 0: never ask
    vacation_days: float = DEFAULT_VACATION_DAYS   # ABSENT cap per player per game
    policy: str = "robot"                 # the policy for a missed order (services.turns)
    robot: str = DEFAULT_ROBOT_LEVEL      # the robot's level when it plays a seat
    press: str = "public"                 # SAY: public, private (SAY TO one too), none
    language: str = "en"                  # the game's language; a player's own comes first
    press_published: bool = False         # PUBLISH: the private press shown once it is over
    open: bool = False                    # JOIN may sign up
    autostart: bool = False               # start when the seats fill by JOIN
    wait: bool = False                    # never resolve before the deadline
    extra: dict[str, Any] = field(default_factory=dict)   # keys of newer versions, kept

    def to_json(self) -> str:
        data = asdict(self)
        extra = data.pop("extra")
        return json.dumps({**extra, **data}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> GameOptions:
        data = json.loads(text or "{}")
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {k: v for k, v in data.items() if k in names}
        return cls(**known, extra={k: v for k, v in data.items() if k not in names})

    def reminder_lead(self, turn_hours: float | None) -> timedelta | None:
        """How long before the deadline the reminder goes out (None: no reminder)."""
        if turn_hours is None:
            return None
        if self.reminder_hours is None:
            hours = 12.0 if turn_hours >= 24 else turn_hours / 4
        else:
            hours = self.reminder_hours
        if hours <= 0 or hours >= turn_hours:
            return None
        return timedelta(hours=hours)

    @property
    def grace(self) -> timedelta:
        return timedelta(hours=self.grace_hours)

    @property
    def vacation_cap(self) -> timedelta:
        return timedelta(days=self.vacation_days)

    def describe(self, turn_hours: float | None, *, signing_up: bool = True) -> str:
        """One line for STATUS and NEWGAME's answer, in English (describe_said: the same
        in the reader's language; signing_up: the game has not started, so OPEN and
        AUTOSTART still mean something)."""
        return str(self.describe_said(turn_hours, signing_up=signing_up))

    def describe_said(self, turn_hours: float | None, *,
                      signing_up: bool = True) -> Message:
        """The options as a line of a mail, said in its reader's language: "turns of 48
        hours, deadlines at 18:00 UTC, reminder 12 h before, ..."."""
        parts: list[Message] = [
            _n("turns of {hours} hour", "turns of {hours} hours", count_of(turn_hours),
               hours=format(turn_hours, "g")) if turn_hours else _("no deadline")]
        if self.deadline_hour is not None:
            parts.append(_("deadlines at {hour}:00 UTC", hour=format(self.deadline_hour, "02d")))
        if self.grace_hours:
            parts.append(_("grace {hours} h", hours=format(self.grace_hours, "g")))
        lead = self.reminder_lead(turn_hours)
        if lead is not None:
            parts.append(_("reminder {hours} h before",
                           hours=format(lead.total_seconds() / 3600, "g")))
        parts.append(_n("missed-turn limit {n}", "missed-turn limit {n}", self.missed_limit)
                     if self.missed_limit
                     else _("no missed-turn limit"))
        parts.append(_n("vacation cap {days} day", "vacation cap {days} days",
                        count_of(self.vacation_days), days=format(self.vacation_days, "g")))
        parts.append(_("missing orders: {policy}", policy=POLICY_NAMES.get(
            self.policy, self.policy)))
        parts.append(_("robot {level}", level=LEVEL_NAMES.get(self.robot, self.robot)))
        if self.language != "en":
            parts.append(_("language {language}", language=self.language))
        if self.press != "public":
            parts.append(_("private press (SAY TO one player)") if self.press == "private"
                         else _("no press (no SAY)"))
        if self.open and signing_up:
            parts.append(_("open for sign-up, starts when full") if self.autostart
                         else _("open for sign-up by mail"))
        if self.wait:
            parts.append(_("WAIT (no early resolution)"))
        return joined(parts, ", ")


@dataclass
class NewGame:
    """What NEWGAME's words say."""

    name: str
    seed: int | None = None
    hours: float | None = None
    options: GameOptions = field(default_factory=GameOptions)
    rules: str | None = None   # RULES <kind>; None: the default kind (pbem.kinds)
    rules_words: list[str] = field(default_factory=list)   # the kind's own option words
    rules_json: KindJSON | None = None   # what the kind made of them (NEWGAME)


_HOUR = re.compile(r"^(\d{1,2})(?::00)?h?$")


def _number(word: str, value: str, *, lo: float = 0, hi: float = MAX_HOURS,
            integer: bool = False, positive: bool = False) -> float:
    try:
        number = int(value) if integer else float(value)
    except ValueError:
        raise Refusal(_("{word} {value}: not a valid number", word=word, value=value),
                      _("write it as {word} <number>", word=word)) from None
    if number != number or number < lo or number > hi or (positive and number <= 0):
        raise Refusal(_("{word} {value}: out of range", word=word, value=value),
                      _("{word} takes a number above {lo} up to {hi}", word=word,
                        lo=format(lo, "g"), hi=format(hi, "g")) if positive else
                      _("{word} takes a number from {lo} up to {hi}", word=word,
                        lo=format(lo, "g"), hi=format(hi, "g")))
    return number


def parse_hour(value: str) -> int:
    match = _HOUR.match(value.strip().lower())
    if match is None or int(match.group(1)) > 23:
        raise Refusal(_("AT {value}: not an hour of the day", value=value),
                      _("AT takes the hour in UTC, 0 to 23, e.g. AT 18 or AT 18:00"))
    return int(match.group(1))


def _choice(word: str, value: str, allowed: tuple[str, ...], what: Message) -> str:
    """One of ``allowed`` (any case), or a refusal that lists them."""
    if value.lower() not in allowed:
        raise Refusal(_("{word} {value}: not {what}", word=word, value=value, what=what),
                      _("{word} takes {first} or {last}", word=word,
                        first=", ".join(allowed[:-1]), last=allowed[-1]))
    return value.lower()


def _set_valued(new: NewGame, word: str, value: str) -> None:
    """Set the NEWGAME option ``word`` that takes ``value``."""
    opts = new.options
    if word == "SEED":
        new.seed = int(_number(word, value, integer=True, hi=2 ** 63))
    elif word == "DEADLINE":
        new.hours = _number(word, value, positive=True)
    elif word == "AT":
        opts.deadline_hour = parse_hour(value)
    elif word == "GRACE":
        opts.grace_hours = _number(word, value)
    elif word == "REMIND":
        opts.reminder_hours = _number(word, value)
    elif word == "MISSED":
        opts.missed_limit = int(_number(word, value, integer=True, hi=1000))
    elif word == "VACATION":
        opts.vacation_days = _number(word, value, hi=365)
    elif word == "MISSING":
        opts.policy = _choice(word, value, POLICIES, _("a policy"))
    elif word == "ROBOT":
        opts.robot = _choice(word, value, ROBOT_LEVELS, _("a level"))
    elif word == "PRESS":
        opts.press = _choice(word, value, PRESS, _("a kind of press"))
    elif word == "LANGUAGE":
        opts.language = _choice(word, value, GAME_LANGUAGES, _("a language"))


def parse_options(words: list[str], name: str) -> NewGame:
    """NEWGAME's words after the game name; raises Refusal quoting the bad word."""
    new = NewGame(name)
    opts = new.options
    rest = list(words)
    while rest:
        word = rest.pop(0).upper()
        if word in ("OPEN", "AUTOSTART", "WAIT"):
            if word == "AUTOSTART":
                opts.autostart = opts.open = True
            else:
                setattr(opts, word.lower(), True)
            continue
        if word == "RULES":
            if not rest:
                raise Refusal(_("RULES needs a game kind"), _("e.g. RULES postal"))
            new.rules, new.rules_words = rest[0].lower(), rest[1:]
            break
        if word not in ("SEED", "DEADLINE", "AT", "GRACE", "REMIND", "MISSED", "VACATION",
                        "MISSING", "ROBOT", "PRESS", "LANGUAGE"):
            raise Refusal(_("unknown NEWGAME option {word}", word=word), OPTION_HINT)
        if not rest:
            raise Refusal(_("{word} needs a value", word=word), OPTION_HINT)
        _set_valued(new, word, rest.pop(0))
    if opts.deadline_hour is not None and new.hours is None:
        raise Refusal(_("AT needs a turn length"), _("e.g. DEADLINE 48 AT 18"))
    return new


class HasOptions(Protocol):
    """A stored game, or a row read with its options (the pure core names no table)."""

    @property
    def options_json(self) -> str | None: ...


class KeepsOptions(Protocol):
    """A stored game whose options may be written."""

    options_json: str


def options_of(game: HasOptions) -> GameOptions:
    """The desk options of a Game row."""
    return GameOptions.from_json(game.options_json)


def robot_level(game: HasOptions, options: GameOptions | None = None) -> str:
    """The level the robot plays a game's missing seats at (NEWGAME ROBOT, LEVEL):
    strong unless set (``options``: the game's, if the caller has them)."""
    level = (options or options_of(game)).robot
    return level if level in ROBOT_LEVELS else DEFAULT_ROBOT_LEVEL


def save_options(game: KeepsOptions, options: GameOptions) -> None:
    game.options_json = options.to_json()
