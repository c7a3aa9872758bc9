"""The JSON schemas of schema/ name no game kind: each kind's part (its rules, moves, web
tables and player columns) lives beside the kind (GameKind.schema_part) and
pbem.services.export.schema joins the parts of the registered kinds to the schema."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest

from pbem.kinds import KINDS, register, unregister
from pbem.kinds.classic import ClassicKind
from pbem.services.export import schema
from pbem.store.paths import packaged_dir

RECORD = "game-record-generic.schema.json"


@pytest.mark.parametrize("path", sorted(packaged_dir("schema").glob("*.json")),
                         ids=lambda p: p.name)
def test_no_kind_is_named_in_the_schemas(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    named = [name for name in KINDS if re.search(rf"[\"']{re.escape(name)}[\"']", text)]
    assert named == [], f"{path.name} names {named}: that belongs in the kind's schema part"


class Shadow(ClassicKind):
    """Classic Bluff under another name, with a schema part of its own."""

    name = "shadow"
    title = "shadow Bluff"


@pytest.fixture
def shadow(tmp_path: Path) -> Iterator[Shadow]:
    kind = Shadow()
    kind.schema_dir = tmp_path
    (tmp_path / RECORD).write_text(json.dumps({
        "then": {"properties": {"rules": {"$ref": "#/$defs/shadow_rules"}}},
        "$defs": {"shadow_rules": {"type": "object", "required": ["shade"]}}}))
    register(kind)
    yield kind
    unregister(kind)


def a_record(kind: str, rules: dict[str, object]) -> dict[str, object]:
    """The smallest record of a game not started, as pbem export writes it."""
    return {"format": "pbem.record/2", "kind": kind, "game": "g", "rules": rules,
            "commitment": "0" * 64, "seed": None, "players": [], "moves": [], "result": None}


def test_a_kinds_part_joins_the_schema(shadow: Shadow) -> None:
    joined = schema(RECORD)
    assert "shadow" in joined["properties"]["kind"]["enum"]
    assert {"if": {"properties": {"kind": {"const": "shadow"}}},
            "then": {"properties": {"rules": {"$ref": "#/$defs/shadow_rules"}}}} in joined["allOf"]
    # classic's part (its rules) still holds for classic records only
    assert "classic_rules" in joined["$defs"] and "shadow_rules" in joined["$defs"]
    errors = [e.message for e in jsonschema.Draft202012Validator(joined).iter_errors(
        a_record("shadow", {"dice_per_player": 5}))]
    assert any("'shade' is a required property" in e for e in errors), errors


def test_a_part_may_not_take_a_definition_of_another(shadow: Shadow) -> None:
    assert shadow.schema_dir is not None
    (shadow.schema_dir / RECORD).write_text(json.dumps({"$defs": {"face": {"const": 1}}}))
    with pytest.raises(ValueError, match=r"'shadow' defines \['face'\] again"):
        schema(RECORD)


def test_the_web_schema_takes_the_kinds_tables_and_columns() -> None:
    defs = schema("web-api.schema.json")["$defs"]
    assert {"$ref": "#/$defs/cup_table"} in defs["table"]["oneOf"]
    assert {"$ref": "#/$defs/public_cup_table"} in defs["public_table"]["oneOf"]
    assert {"virtual_dice", "dice", "points"} <= set(defs["player"]["properties"])
