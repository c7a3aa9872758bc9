"""Referee desk commands (placeholder: filled in by the referee's-desk work)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pbem.orders import Command

if TYPE_CHECKING:
    from pbem.admin import AdminContext

COMMANDS: tuple[Command, ...] = ()
ACTIONS: dict[str, Callable[["AdminContext", Any], str]] = {}
