"""The short cuts of pbem.render.reports that make reports render faster give the same results
as the long way: remembered filter answers, the count_in filter, and override
templates still picked up when a referee edits them; and none of them goes through
Jinja2's internals."""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path
from typing import Any

import jinja2
import markupsafe
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pbem.render.environment import packaged_template_dir, template_environment
from pbem.render.filters import count_in, die, face_name, utc, wrap
from pbem.render.reports import Renderer
from tests.render.test_render import example_view, final_context, report_context

MEMO = (die, face_name, utc, wrap)


def forget() -> None:
    for fn in MEMO:
        fn.cache_clear()  # type: ignore[attr-defined]


def cold(name: str, context: dict[str, Any]) -> tuple[str, str]:
    forget()
    return Renderer().render(name, context)


def test_remembered_answers_do_not_leak_between_contexts() -> None:
    """Two different reports rendered alternately, with everything remembered from the
    other, come out as each does from cold."""
    a = report_context()
    b = report_context(example_view(you=4), notes=["Another note, long enough to be "
                                                    "wrapped onto a second line of text."])
    c = final_context()
    want = {k: cold("postal_report", ctx) for k, ctx in (("a", a), ("b", b), ("c", c))}
    assert want["a"] != want["b"] != want["c"]
    renderer = Renderer()
    for k, ctx in (("a", a), ("b", b), ("c", c), ("a", a), ("c", c), ("b", b), ("a", a)):
        assert renderer.render("postal_report", ctx) == want[k], k


def test_remembered_filters_tell_types_apart() -> None:
    forget()
    assert die(1) == "\u2680" and die(True) == "?" and die("1") == "\u2680"
    assert die(1.0) == "?" and die(1) == "\u2680"
    assert face_name(1) == "one" and face_name(True) == "True" and face_name("1") == "one"
    assert face_name(2, 2) == "twos" and face_name(2, 1.0) == "two"    # 1.0 == 1
    assert wrap(1) == "1" and wrap(True) == "True"
    # unhashable arguments are computed, not remembered
    assert wrap(["a", "b"]) == "['a', 'b']"
    assert face_name([3]) == "[3]"
    assert die([1]) == "?"
    with pytest.raises(TypeError):
        wrap("x", [72])     # the filter's own error still comes out


@pytest.mark.parametrize("ds", [[], [3, "*", 1, 3], ["3", "*", "*"], [markupsafe.Markup("3"), 5],
                                [3.0, "3 ", "\u2605"]])
@pytest.mark.parametrize("match", [["*"], ["3", "*"], []])
def test_count_in_counts_as_the_filter_chain_did(ds: list[Any], match: list[str]) -> None:
    env = template_environment(None)
    chain = env.from_string('{{ ds|map("string")|select("in", match)|list|length }}')
    assert str(count_in(ds, match)) == chain.render(ds=ds, match=match)
    assert env.from_string("{{ ds|count_in(match) }}").render(ds=ds, match=match) == \
        chain.render(ds=ds, match=match)


def test_dict_keys_and_attributes_read_as_jinja2_reads_them() -> None:
    env = template_environment(None)
    plain = jinja2.Environment(undefined=jinja2.StrictUndefined)
    source = "{{ d.name }} {{ d.items is callable }} {{ d.get('name') }} {{ o.real }}"
    values = {"d": {"name": "Ann", "items": "not the method"}, "o": 5}
    assert env.from_string(source).render(values) == plain.from_string(source).render(values)
    assert env.from_string(source).render(values) == "Ann True Ann 5"
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ d.missing }}").render(d={})


class Shown:
    def __html__(self) -> str:
        return "<b>shown</b>"


class Odd(int):
    def __str__(self) -> str:
        return "<odd>"


def test_html_escaping_is_unchanged() -> None:
    source = ("{% autoescape true %}{% macro m(x) %}<i>{{ x }}</i>{% endmacro %}"
              "{{ a }}|{{ b }}|{{ c }}|{{ m(a) }}|{{ 3 }}|{{ -4 }}|{{ true }}|{{ odd }}|"
              "{{ none }}{% set s %}{{ a }}{{ 5 }}{% endset %}{{ s ~ a }}{% endautoescape %}")
    values = {"a": "<x & y>", "b": markupsafe.Markup("<ok>"), "c": Shown(), "odd": Odd(1)}
    out = template_environment(None).from_string(source).render(values)
    assert out == jinja2.Environment().from_string(source).render(values)
    assert out == ("&lt;x &amp; y&gt;|<ok>|<b>shown</b>|<i>&lt;x &amp; y&gt;</i>|3|-4|True|"
                   "&lt;odd&gt;|None&lt;x &amp; y&gt;5&lt;x &amp; y&gt;")


def test_macros_take_defaults_keywords_and_caller() -> None:
    env = template_environment(None)
    source = ("{% macro f(a, b=2) %}{{ a }}-{{ b }}{% endmacro %}"
              "{% macro g(a) %}{{ a }}{{ caller() }}{% endmacro %}"
              "{% macro h() %}{{ varargs|length }}{{ kwargs|dictsort }}{% endmacro %}"
              "{{ f(1) }} {{ f(1, b=3) }} {% call g(0) %}!{% endcall %} {{ h(1, 2, x=3) }}")
    plain = jinja2.Environment(undefined=jinja2.StrictUndefined)
    assert env.from_string(source).render() == plain.from_string(source).render()
    assert env.from_string(source).render() == "1-2 1-3 0! 2[('x', 3)]"
    with pytest.raises(TypeError):
        env.from_string("{% macro f(a) %}{% endmacro %}{{ f(1, z=2) }}").render()


def test_packaged_templates_are_not_rechecked_but_overrides_are(tmp_path: Path) -> None:
    assert template_environment(None).auto_reload is False
    override = tmp_path / "notice.txt.j2"
    override.write_text("first: {{ subject }}\n", encoding="utf-8")
    renderer = Renderer(tmp_path)
    context = {"subject": "x", "paragraphs": [], "game": None}
    assert renderer.render("notice", context)[0] == "first: x\n"
    override.write_text("second: {{ subject }}\n", encoding="utf-8")
    later = override.stat().st_mtime + 5       # a later time than the file had
    os.utime(override, (later, later))
    assert renderer.render("notice", context)[0] == "second: x\n"


def test_rendering_uses_jinja2_as_published() -> None:
    """No class of Jinja2's is subclassed or patched: the Environment, its templates,
    their contexts and the escape their code calls are Jinja2's and markupsafe's own
    (a short cut through Jinja2's internals is hidden from whoever reads a template)."""
    for env in (template_environment(None), template_environment(None, "de")):
        assert type(env) is jinja2.Environment
        assert env.context_class is jinja2.runtime.Context
        assert env.template_class is jinja2.Template
        template = env.get_template("postal_report.html.j2")
        assert type(template) is jinja2.Template
        assert template.root_render_func.__globals__["escape"] is markupsafe.escape
        assert template.new_context({}).__class__ is jinja2.runtime.Context


def test_rendering_calls_no_internals_of_jinja2() -> None:
    """The render package renders by Template.render and make_module only: no Context
    made by hand, no compiled template's root function called, no TemplateModule built
    (each saves microseconds and hides how a template renders from whoever reads it)."""
    package = Path(__file__).resolve().parents[2] / "pbem" / "render"
    for source in sorted(package.glob("*.py")):
        code = source.read_text(encoding="utf-8")
        for internal in ("root_render_func", "context_class(", "TemplateModule(",
                         "new_context(", "handle_exception(", ".concat("):
            assert internal not in code, f"{source.name} calls {internal}"


def test_web_pages_use_jinja2_as_published(tmp_path: Path) -> None:
    from pbem.config import Settings
    from pbem.web.language import template_environment as web_environment
    env = web_environment(Settings(), "en")
    assert type(env) is jinja2.Environment
    assert env.context_class is jinja2.runtime.Context and env.template_class is jinja2.Template


def test_written_out_styles_are_the_macros_own() -> None:
    """The shipped templates write out the cell styles and section titles (m.th, m.td,
    m.section, which a referee's own templates use): each copy is the macro's, so a
    change of a style in _macros.html.j2 fails here until every copy has it."""
    env = template_environment(None)
    m = env.get_template("_macros.html.j2").module
    styles = {"th": str(m.th), "td": str(m.td)}   # type: ignore[attr-defined]
    section = str(m.section("x"))                  # type: ignore[attr-defined]
    h2 = section[:section.index(">") + 1]
    folder = packaged_template_dir()
    found = {"th": 0, "td": 0, "h2": 0}
    for path in sorted(folder.glob("*.html.j2")):
        if path.name == "_macros.html.j2":
            continue
        text = path.read_text(encoding="utf-8")
        for tag, style in styles.items():
            for cell in re.findall(rf"<{tag} (style=\"[^\"]*\")", text):
                assert cell == style, (path.name, cell)
                found[tag] += 1
        for title in re.findall(r"<h2 [^>]*>", text):
            if "border-bottom" in title:    # a section title (the others are the layout's)
                assert title == h2, (path.name, title)
                found["h2"] += 1
    assert min(found.values()) > 10, found


faces = st.lists(st.sampled_from([1, 2, 3, 4, 5, "1", "3", "*", "\u2605", 7, "x", "<b>"]),
                 max_size=6)


@settings(max_examples=200, deadline=None)
@given(dice=faces, exposed=st.booleans(), values=st.booleans(),
       match=st.none() | st.lists(st.sampled_from(["1", "3", "*"]), max_size=2),
       language=st.sampled_from(["en", "de", "cs"]))
def test_pics_draws_what_a_pic_a_die_draws(dice: list[Any], exposed: bool, values: bool,
                                           match: list[str] | None, language: str) -> None:
    """m.pics (die_pictures, in Python) puts out what the loop over m.pic it replaced did:
    a picture a die, its border marking the matched dice, then the values."""
    env = template_environment(None, language)
    loop = env.from_string(
        '{% import "_macros.html.j2" as m %}{% for face in dice %}'
        '{{ m.pic(face, exposed, match is not none and face|string in match) }}{% endfor %}'
        '{% if values and dice %} <span style="font-family:Menlo,Consolas,monospace;'
        'color:#555;">({{ dice|plain }})</span>{% endif %}')
    pics = env.from_string('{% import "_macros.html.j2" as m %}'
                           '{{ m.pics(dice, exposed, values, match) }}')
    given_values = {"dice": dice, "exposed": exposed, "values": values, "match": match}
    assert pics.render(given_values) == loop.render(given_values)


@pytest.mark.parametrize("language", ["en", "de", "cs"])
def test_a_bare_message_is_put_out_as_the_global_would(language: str) -> None:
    """{{ _("...") }} is made text when the template compiles: what the _ global puts out
    at render time (escaped in HTML as markup, "%%" a "%", cleaned in text)."""
    env = template_environment(None, language)
    for source in ("Players", "Nobody loses any dice.", "100%% <b>sure</b>", "a\u202eb"):
        compiled = '{{ _("' + source + '") }}|{{ x }}'
        at_render = '{{ _(s) }}|{{ x }}'
        for name in ("t.html.j2", "t.txt.j2"):
            loader = jinja2.DictLoader({name: compiled, "r" + name: at_render})
            copy = env.overlay(loader=loader)
            assert copy.get_template(name).render(x="<i>") == \
                copy.get_template("r" + name).render(x="<i>", s=source)


def test_a_bare_message_in_an_autoescape_block_is_escaped_as_before() -> None:
    """A text template's {% autoescape true %} block escapes a message put out in it (the
    compile-time text would not be): such a template keeps the _ global's way."""
    env = template_environment(None)
    copy = env.overlay(loader=jinja2.DictLoader(
        {"t.txt.j2": '{% autoescape true %}{{ _("a <b>") }}{% endautoescape %}'}))
    assert copy.get_template("t.txt.j2").render() == "a &lt;b&gt;"


def test_a_template_renders_as_template_render_renders_it() -> None:
    """pbem.render.environment.rendered, with and without the turn's shared parts: the same
    text as Template.render, the context's values before the globals, an imported
    template's macros there, a template's error raised as Jinja2 raises it (the
    template's line in the traceback), and a template's own globals used."""
    from pbem.render.environment import rendered
    env = jinja2.Environment(loader=jinja2.DictLoader({
        "m.j2": "{% macro hi(x) %}<{{ x }}>{% endmacro %}",
        "page.j2": '{% import "m.j2" as m %}{{ m.hi(a) }} {{ range(2)|list }} {{ own }}'
                   '{% if shared is defined %} {{ shared["x"] }}{% endif %}',
        "broken.j2": "line one\n{{ nothing.at_all() }}",
    }), undefined=jinja2.StrictUndefined)
    env.globals["own"] = "global"
    page = env.get_template("page.j2")
    for context in ({"a": 1}, {"a": "&", "own": "mine"}, {"a": 2, "range": lambda n: "r"}):
        assert rendered(page, context) == page.render(context)
        assert rendered(page, context, {"x": 5}) == page.render(context, shared={"x": 5})
    with pytest.raises(jinja2.UndefinedError) as raised:
        rendered(env.get_template("broken.j2"), {})
    assert ("<template>", 2) in [(frame.filename, frame.lineno)   # a DictLoader template
                                for frame in traceback.extract_tb(raised.value.__traceback__)]
    with_globals = env.get_template("page.j2", globals={"own": "the template's"})
    assert rendered(with_globals, {"a": 3}) == "<3> [0, 1] the template's"
