"""The registry of game kinds: the one table the server looks kinds up in.

Adding a kind touches only its module, its templates and this table: a kind is a
``GameKind[State, Move]`` subclass, and ``register`` puts it in ``KINDS``. Everything
outside pbem/kinds/ asks the table, never a kind's name: a kind written elsewhere (a
test's toy kind, tests/kinds/test_toy_kind.py, with its own state, moves and templates)
plays by mail, reports, exports, verifies and shows on the web pages as pbem's own do.

The pure core: kinds import the rules (pbem.rules) and the order language
(pbem.orders), never the database, the mail or the server.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pbem.kinds.base import Demo, GameKind, Resolution, TakenOrder, Understood
from pbem.kinds.classic import CLASSIC
from pbem.kinds.cup import CUP
from pbem.kinds.jsontypes import JSON, JSONMap, KindJSON
from pbem.kinds.postal import POSTAL
from pbem.kinds.tables import PUBLIC, REVEAL, Viewer
from pbem.text.errors import Refusal
from pbem.text.wording import Message, _, listed

# a kind of any state and move: what the server holds when it looks a game's kind up by
# name. The table holds kinds of different states, so its values can only be existential
# ("some S, some M"), which Python's types say as Any. This is the one place that erasure
# is made: what takes a kind and its state is generic (GameKind[S, M] with a state S:
# pbem.games.turn_in_play.GameFacts, pbem.services.turns, reports, replay), so a state handed on
# together with its kind keeps S and M, and none is typed Any outside pbem/kinds/.
AnyKind = GameKind[Any, Any]


class HasKind(Protocol):
    """Anything that names its game kind (a Game row does)."""

    @property
    def kind(self) -> str: ...


KINDS: dict[str, AnyKind] = {}


def register(kind: AnyKind) -> AnyKind:
    """Put a kind in the table under its name (RULES <name>); returns it. A name taken by
    another kind is refused; registering the same kind again changes nothing."""
    known = KINDS.get(kind.name)
    if known is not None and known is not kind:
        raise ValueError(f"a game kind named '{kind.name}' exists already")
    KINDS[kind.name] = kind
    return kind


def unregister(kind: AnyKind) -> None:
    """Take a kind out of the table (a test's toy kind, once its test is done)."""
    if KINDS.get(kind.name) is kind:
        del KINDS[kind.name]


for _kind in (POSTAL, CLASSIC, CUP):
    register(_kind)

# the kinds any interpreter that imports pbem knows; one that code registers at run time
# (register) is its process's alone: the composer's process does not know it
SHIPPED = frozenset(KINDS)

# what NEWGAME without RULES, `pbem demo` without --rules and a report.json without a
# "format" (written before views had one) play
DEFAULT_KIND = POSTAL.name


def kind_named(name: str) -> AnyKind:
    """The kind called ``name`` (RULES <name>); a refusal that lists the kinds if none is."""
    kind = KINDS.get(name)
    if kind is None:
        raise Refusal(f"unknown game kind '{name}' (kinds: {', '.join(KINDS)})",
                      _("e.g. RULES postal"))
    return kind


def kind_of(game: HasKind) -> AnyKind:
    return kind_named(game.kind)


def kinds_note() -> Message:
    """What HELP tells a sender who plays no game: the games this server runs."""
    return _("This server runs these games: {games}; your reports say which one you play, "
             "and HELP in a reply to a report lists just its orders.",
             games=listed(kind.title for kind in KINDS.values()))


def kind_template_dirs() -> list[Path]:
    """The folders of the kinds' own templates (GameKind.template_dir), for the template
    loaders of the mails and the web pages."""
    return [kind.template_dir for kind in KINDS.values() if kind.template_dir is not None]


def kind_for_view(view_format: str | None) -> AnyKind:
    """The kind whose report.json has this format ("pbem.classic.view/1"; None: a view
    without one, the default kind's); KeyError if none."""
    if view_format is None:
        return kind_named(DEFAULT_KIND)
    for kind in KINDS.values():
        if kind.view_format == view_format:
            return kind
    raise KeyError(f"no game kind writes views of format {view_format!r}")


__all__ = ["DEFAULT_KIND", "JSON", "KINDS", "SHIPPED", "Demo", "PUBLIC", "REVEAL", "AnyKind", "GameKind", "HasKind", "JSONMap", "KindJSON",
           "Resolution", "TakenOrder", "Understood", "Viewer", "kind_for_view", "kind_template_dirs", "kinds_note",
           "kind_named", "kind_of", "register", "unregister"]
