"""The JSON the kinds read and write (rules, views, records, web tables), by name."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# A JSON object as json.loads reads it: its values are any JSON, so they are typed Any.
JSON = dict[str, Any]
JSONMap = Mapping[str, Any]   # the same, read only
# a move's odds as the confirmation and the web pages show them: {"holds", "exact"}
Odds = dict[str, float]
