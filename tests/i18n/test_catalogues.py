"""The German and Czech catalogues against the code: every message of the code and the
templates is translated, with the same fields, and the template file is in step."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pbem.text.i18n import LANGUAGES, translator
from testkit.catalogue import TEMPLATE, TRANSLATED, extract, problems, read

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def extracted():
    return extract()


@pytest.mark.parametrize("language", TRANSLATED)
def test_every_message_is_translated(extracted, language: str) -> None:
    found = problems(language, extracted)
    assert not found, "\n".join(found[:40]) + "\n(python -m testkit.catalogue update, " \
        "then translate)"


def test_the_template_is_in_step_with_the_code(extracted) -> None:
    written = {m.id if isinstance(m.id, str) else m.id[0] for m in read(TEMPLATE) if m.id}
    wanted = {m.id if isinstance(m.id, str) else m.id[0] for m in extracted if m.id}
    assert written == wanted, "run python -m testkit.catalogue update"


def test_the_languages_are_the_catalogues() -> None:
    assert set(LANGUAGES) == {"en", *TRANSLATED}


def test_czech_has_three_plural_forms() -> None:
    cs = translator("cs")
    forms = {cs.ngettext("{n} day", "{n} days", n) for n in (1, 2, 5)}   # pbem.text.deadlines
    assert len(forms) == 3, forms


def test_a_module_that_imports_the_marker_never_assigns_it() -> None:
    """``_`` is the message marker where a module imports it from pbem.text.wording; a ``for
    _, x in ...`` in such a module would make it a tuple's item in that function."""
    bad = []
    for path in (ROOT / "pbem").rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        imports = any(isinstance(node, ast.ImportFrom) and node.module == "pbem.text.wording"
                      and any(a.name == "_" and a.asname is None for a in node.names)
                      for node in ast.walk(tree))
        if not imports:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id == "_" and isinstance(node.ctx,
                                                                            ast.Store):
                bad.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not bad, bad
