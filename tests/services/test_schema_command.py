"""`pbem schema NAME`: the schema of schema/ whole, as a user validating outside pbem needs it."""

from __future__ import annotations

import json

import pytest

from pbem.cli import main
from pbem.services.export import schema
from pbem.store.paths import packaged_dir


@pytest.mark.parametrize("name", ["game-record-generic.schema.json", "web-api.schema.json"])
def test_the_command_prints_the_schema_with_every_kinds_part(
        name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", name]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed == schema(name)
    on_disk = json.loads((packaged_dir("schema") / name).read_text(encoding="utf-8"))
    assert len(json.dumps(printed)) > len(json.dumps(on_disk))   # the kinds' parts are in it
    assert set(printed["$defs"]) > set(on_disk.get("$defs", {}))


def test_an_unknown_schema_is_named_with_the_ones_there_are(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "nope.json"]) == 2
    err = capsys.readouterr().err
    assert "nope.json" in err and "web-api.schema.json" in err
