"""One Jinja2 Environment a template folder and language (the referee's overrides, the
game kinds' templates, the packaged ones), and a template rendered in it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import jinja2

from pbem.render.charts import GLOBALS as CHARTS
from pbem.render.filters import (
    bid,
    count_in,
    count_of,
    dice,
    die,
    die_pictures_in,
    face_name,
    lookup,
    name_of,
    pct,
    plain,
    plural_in,
    seen_by,
    utc,
    wrap,
)
from pbem.render.said import SaidWhenCompiled, gettext_in, said_escaped_in, said_in
from pbem.store.paths import packaged_dir
from pbem.text.i18n import SOURCE_LANGUAGE, known_language, translator
from pbem.text.wording import listing, usage_said
from pbem.text.zones import in_zone


def packaged_template_dir() -> Path:
    """The folder of the templates that ship with pbem (pbem.store.paths.packaged_dir).

    ``pbem/_templates`` when installed from a wheel, else the repository's
    top-level ``templates/`` folder (a source checkout).
    """
    return packaged_dir("templates")


# The names a template had before (new -> old): a referee's override under the old name
# still wins for the new one, and a caller or an override's {% extends %} of the old name
# still finds the packaged template.
RENAMED = {"postal_report.txt.j2": "report.txt.j2", "postal_report.html.j2": "report.html.j2"}


class _Renamed(jinja2.BaseLoader):
    """Another loader's templates under the names in ``names`` (wanted -> its own)."""

    def __init__(self, loader: jinja2.BaseLoader, names: Mapping[str, str]) -> None:
        self.loader = loader
        self.names = names

    def get_source(self, environment: jinja2.Environment,
                   template: str) -> tuple[str, str | None, Callable[[], bool] | None]:
        if template not in self.names:
            raise jinja2.TemplateNotFound(template)
        return self.loader.get_source(environment, self.names[template])

    def list_templates(self) -> list[str]:
        return []   # the other loader lists them under their own names


@functools.lru_cache(maxsize=16)
def template_environment(override_dir: Path | None, language: str = SOURCE_LANGUAGE,
                         kind_dirs: tuple[Path, ...] = ()) -> jinja2.Environment:
    """One Environment per template folder, shared: a plain jinja2.Environment, set up
    through its public options, filters and globals only (no class of Jinja2's is
    subclassed or patched: tests/render/test_render_fast.py). Jinja2 compiles each
    template once per Environment, and compiling all of them takes about a second. A changed override
    file is still picked up (the loaders check modification times); the packaged
    templates alone are not checked (they change only with pbem itself), which saves a
    stat() a template, include and import of every mail. ``kind_dirs``: the folders of
    the game kinds' own templates (pbem.kinds.kind_template_dirs), after the override.

    One Environment a language, too: its ``_()``, ``{% trans %}``, ``plural`` and
    ``ngettext``, its filters that name things (``bid``, ``face_name``) and the messages
    (pbem.text.wording.Message) a context carries are said in that language (pbem.text.i18n)."""
    tr = translator(known_language(language))
    loaders: list[jinja2.BaseLoader] = []
    if override_dir is not None:
        override = jinja2.FileSystemLoader(str(override_dir))
        loaders += [override, _Renamed(override, RENAMED)]
    loaders += [jinja2.FileSystemLoader(str(folder)) for folder in kind_dirs]
    packaged = jinja2.FileSystemLoader(str(packaged_template_dir()))
    loaders += [packaged, _Renamed(packaged, {old: new for new, old in RENAMED.items()})]
    env = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html.j2",),
            disabled_extensions=("txt.j2",),
            default_for_string=False,
            default=False,
        ),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        auto_reload=override_dir is not None,
        finalize=said_in(tr),
        extensions=["jinja2.ext.i18n", "jinja2.ext.do", SaidWhenCompiled],
    )
    env.extend(said_by=tr)         # the language SaidWhenCompiled says messages in
    # the i18n extension's method, which Environment does not declare
    env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=tr.gettext, ngettext=tr.ngettext, newstyle=True)
    said_at_render = gettext_in(tr)
    env.globals.update(gettext=said_at_render, _=said_at_render)
    said_value = said_in(tr)
    env.filters.update(
        die=die,
        dice=dice,
        plain=plain,
        face_name=lambda face, quantity=1: face_name(face, quantity, tr),
        bid=lambda b: bid(b, tr),
        pct=lambda p: pct(p, tr),
        plural=lambda n, one, many: count_of(n, one, many, tr),
        utc=utc,
        wrap=wrap,
        lookup=lookup,
        name_of=name_of,
        count_in=count_in,
        seen_by=seen_by,
        when=in_zone,        # a time in the reader's zone, UTC beside (pbem.text.zones)
        said=said_value,     # a value put into a sentence (SaidWhenCompiled)
        usage=lambda value: usage_said(str(said_value(value)), tr),  # HELP's commands
        said_escaped=said_escaped_in(tr),
    )
    env.globals.update(lookup=lookup, plural=plural_in(tr), ngettext=tr.ngettext,
                       listing=lambda items, none=None: listing(items, none, tr),
                       language=known_language(language), die_pictures=die_pictures_in(tr))
    # the pictures: course_chart_html, odds_chart_text ... (pbem.render.charts), in this language
    env.globals.update({name: functools.partial(draw, tr=tr) for name, draw in CHARTS.items()})
    return env


def rendered(template: jinja2.Template, context: Mapping[str, Any],
             shared: Mapping[str, Any] | None = None) -> str:
    """``template`` rendered with ``context`` (and the turn's ``shared`` parts, as the
    variable ``shared``) by Jinja2's public API, Template.render. Making the Context by
    hand would save some 20 us a template and 20 us an import of ``_macros`` (the
    globals read through their ChainMap), about 1% of an order: not worth rendering
    through Jinja2's internals (docs/performance.md, "Rendering by Jinja2's public API
    only")."""
    if shared is None:
        return template.render(context)
    return template.render(context, shared=shared)

