"""A player's cup: hidden dice, exposed dice, and expose-and-re-roll (docs/rules.md section 3)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pbem.rules.dice import FACES, Die, Face, face_symbol
from pbem.rules.errors import IllegalMove
from pbem.text.wording import _, _n

# every die there can be, made once: a Die is frozen, so cups share them (a game's start
# rolls 25 cups, and each made its dice anew: two fifths of the start's CPU)
_DICE: dict[tuple[Face, bool], Die] = {(face, big): Die(face, big)
                                       for face in FACES for big in (False, True)}


@dataclass(frozen=True)
class Cup:
    hidden: tuple[Die, ...]
    exposed: tuple[Die, ...] = ()
    rerolls: int = 0   # exposes made so far; the next re-roll draws label index rerolls + 1

    @property
    def dice(self) -> tuple[Die, ...]:
        return self.hidden + self.exposed

    @classmethod
    def rolled(cls, faces: Sequence[Face], *, super_die: bool = False) -> Cup:
        """A fresh cup; with the super die, the last die rolled is the orange one."""
        last = len(faces) - 1
        return cls(tuple(_DICE[f, super_die and i == last] for i, f in enumerate(faces)))

    def check_expose(self, faces: Sequence[Face]) -> None:
        if not faces:
            raise IllegalMove(_("EXPOSE needs at least one die to show"))
        if len(faces) >= len(self.hidden):
            raise IllegalMove(_n(
                "you have {n} hidden die and at least one must stay hidden: expose at "
                "most {most}",
                "you have {n} hidden dice and at least one must stay hidden: expose at "
                "most {most}", len(self.hidden), most=len(self.hidden) - 1))
        have = Counter(d.face for d in self.hidden)
        want = Counter(faces)
        for face, count in sorted(want.items()):
            if have[face] < count:
                yours = " ".join(face_symbol(d.face) for d in self.hidden)
                raise IllegalMove(_("you cannot expose {count} x {face}: your hidden dice "
                                    "are {yours}", count=count, face=face_symbol(face),
                                    yours=yours))

    def expose(self, faces: Sequence[Face], rerolled: Sequence[Face]) -> Cup:
        """Show the named dice, re-roll the rest (rerolled holds their new faces)."""
        self.check_expose(faces)
        remaining = list(self.hidden)
        shown: list[Die] = []
        for face in faces:
            # plain dice first, so the super die stays hidden unless it must show
            pick = min((d for d in remaining if d.face == face), key=lambda d: d.super)
            remaining.remove(pick)
            shown.append(pick)
        if len(rerolled) != len(remaining):
            raise ValueError("one new face is needed per re-rolled die")
        new_hidden = tuple(_DICE[f, d.super] for d, f in zip(remaining, rerolled))
        return Cup(new_hidden, self.exposed + tuple(shown), self.rerolls + 1)
