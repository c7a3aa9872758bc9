"""The templates' ``_()`` said when a template compiles (pbem.render.reports.SaidWhenCompiled)
says exactly what the ``gettext`` of jinja2.ext.i18n's newstyle says at render time: the
same text, values cleaned and said as every output is, escaped in HTML."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.render.environment import template_environment
from pbem.text.wording import _ as message

SENTENCES = [
    ('"You are watching this game."', ""),
    ('"You are player %(n)s (%(name)s).", n=who, name=name', ""),
    ('"Deadline: <strong>%(when)s</strong>", when=name', ""),
    ('"Next to move: %(who)s; lowest raise %(bid)s.", who=name, bid=(name ~ "x")|upper',
     ""),
    ('"Nobody loses any dice."', "|wrap(72)"),
]


# between the two sayings: a control character, which no said value keeps
APART = "\x1f"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each sentence twice, said when compiled (``_``) and at render time (``gettext``),
    in a text and an HTML template of its own."""
    folder = tmp_path_factory.mktemp("said")
    for i, (args, tail) in enumerate(SENTENCES):
        for part in ("txt", "html"):
            (folder / f"t{i}.{part}.j2").write_text(
                f"{{{{ _({args}){tail} }}}}{APART}{{{{ gettext({args}){tail} }}}}", "utf-8")
    return folder


@settings(max_examples=40, deadline=None)
@given(name=st.text(max_size=30) | st.sampled_from(["<b>Ann</b>", "A & B", "Eve\u202e"]),
       who=st.integers(-3, 99) | st.just(message("player {n}", n=2)),
       language=st.sampled_from(["en", "de", "cs"]), part=st.sampled_from(["txt", "html"]))
def test_said_when_compiled_is_said_at_render_time(folder: Path, name: str, who: object,
                                                    language: str, part: str) -> None:
    env = template_environment(folder, language)
    for i in range(len(SENTENCES)):
        out = env.get_template(f"t{i}.{part}.j2").render(name=name, who=who)
        compiled, at_render = out.split(APART)
        assert compiled == at_render


def test_the_compiled_sentence_is_a_constant(folder: Path) -> None:
    env = template_environment(folder, "de")
    source = env.loader.get_source(env, "t0.txt.j2")[0]
    code = env.compile(source, "t0.txt.j2", raw=True)
    assert "Du schaust diesem Spiel zu." in code         # said when compiled
    assert "'_'" not in code
