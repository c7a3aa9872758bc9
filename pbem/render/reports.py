"""Rendering of every mail the server sends, from Jinja2 templates: the Renderer, the
parts of a turn's report that every reader shares, and the parts of a rendered answer.

Each mail kind is a pair of templates, ``NAME.txt.j2`` (the text part) and
``NAME.html.j2`` (the HTML part).  Templates are looked up first in the
referee's override folder, then in the packaged templates: ``pbem/_templates``
inside an installed wheel, or the repository's top-level ``templates/``
folder in a checkout.

Autoescaping is on for ``.html.j2`` templates only, and every variable a
template uses must be in its context (``StrictUndefined``); optional values
are passed as ``None`` by the caller. The templates' filters are pbem.render.filters,
how a value is put out pbem.render.said, the Environments pbem.render.environment.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

from pbem.render.environment import rendered, template_environment
from pbem.render.filters import Shown
from pbem.render.said import reader, said_context
from pbem.store.paths import packaged_dir
from pbem.text.errors import PbemError
from pbem.text.i18n import SOURCE_LANGUAGE, known_language
from pbem.text.usertext import shown
from pbem.text.wording import say

__all__ = ["Renderer", "SharedParts", "TemplateProblem", "html_part", "rules_document",
           "rules_file", "text_part"]

PART_START, PART_END = "<!--pbem-part-->", "<!--/pbem-part-->"


def text_part(text: str) -> str:
    """A rendered text answer without its signature (the lines from "-- " on)."""
    head, sep, _signature = text.rpartition("\n-- \n")
    return (head if sep else text).strip("\n")


def html_part(html: str) -> markupsafe.Markup:
    """The content of a rendered HTML answer (between the layout's part markers), as
    markup: it was rendered, and escaped, by our own templates."""
    rest = html.partition(PART_START)[2]
    inner, found, _after = rest.partition(PART_END)
    return markupsafe.Markup(inner.strip() if found else html)


def rules_file(language: str = "en") -> str:
    """The name of the rules document in a language: rules.md (English, the reference),
    rules.de.md, rules.cs.md; English where a language has none."""
    name = f"rules.{language}.md"
    return name if language != "en" and (packaged_dir("docs") / name).is_file() else "rules.md"


def rules_document(language: str = "en") -> bytes:
    """docs/rules.md, the rules of every kind (attached to HELP answers), or its version
    in the reader's language: ``pbem/_docs`` in an installed wheel, else the repository's
    ``docs/`` folder."""
    return (packaged_dir("docs") / rules_file(language)).read_bytes()


class TemplateProblem(PbemError):
    """A mail template that does not compile: which file, which line, what is wrong."""


class Renderer:
    """Renders the (text, html) pair of one mail kind."""

    def __init__(self, override_dir: Path | None = None,
                 kind_dirs: Sequence[Path] = ()) -> None:
        self.override_dir = Path(override_dir) if override_dir is not None else None
        self.kind_dirs = tuple(kind_dirs)    # the game kinds' own templates
        self.env = template_environment(self.override_dir, SOURCE_LANGUAGE, self.kind_dirs)

    def environment(self, language: str = SOURCE_LANGUAGE) -> jinja2.Environment:
        """The templates in ``language`` (one Environment each, shared)."""
        if language == SOURCE_LANGUAGE:
            return self.env
        return template_environment(self.override_dir, known_language(language), self.kind_dirs)

    @staticmethod
    def say(value: Any, language: str = SOURCE_LANGUAGE, zone: str | None = None) -> Any:
        """A message (or a list of them) to a reader of ``language`` in ``zone``; a
        subject line, say."""
        return say(value, reader(language, zone))

    @property
    def shipped_only(self) -> bool:
        """Only the shipped templates (no referee's overrides): their HTML loads nothing
        remote (tests/mail/test_mail_headers.py), so it need not be searched for it."""
        return self.override_dir is None

    def compile_all(self) -> int:
        """Compile every mail template now; the number compiled.

        ``pbem serve`` does this at start: a long-running server then spends nothing on
        compiling at its first mails (about a second in all), and a referee's override
        that does not compile stops it at start, not at the first mail that needs it.
        Raises TemplateProblem. (The web pages' templates, ``web/``, are the web
        server's.)"""
        names = [name for name in self.env.list_templates(extensions=["j2"])
                 if not name.startswith("web/")]
        for name in names:
            try:
                self.env.get_template(name)
            except jinja2.TemplateSyntaxError as exc:   # an unknown filter or test too
                where = exc.filename or exc.name or name
                raise TemplateProblem(f"template {where}, line {exc.lineno}: "
                                      f"{exc.message}") from exc
        return len(names)

    def render(self, name: str, context: Mapping[str, Any],
               language: str = SOURCE_LANGUAGE, zone: str | None = None,
               shared: SharedParts | None = None) -> tuple[str, str]:
        """Render ``NAME.txt.j2`` and ``NAME.html.j2`` with ``context`` for a reader of
        ``language`` in time ``zone``: (text, html). ``shared``: the parts every reader
        of the turn shares, rendered once (``shared_parts``, in the same language), which
        the templates then put in as they are instead of rendering them again."""
        env = self.environment(language)
        if language != SOURCE_LANGUAGE or zone is not None:
            # the messages (and times) in the context said to the reader at once, so that a
            # filter (join, wrap ...) that makes text of one gets it said, not in English
            context = said_context(context, reader(language, zone))
        if shared is None:
            text = rendered(env.get_template(f"{name}.txt.j2"), context)
            html = rendered(env.get_template(f"{name}.html.j2"), context)
        else:
            text = rendered(env.get_template(f"{name}.txt.j2"), context, shared.text)
            html = rendered(env.get_template(f"{name}.html.j2"), context, shared.html)
        return text, html

    def shared_parts(self, name: str, public: Mapping[str, Any],
                     language: str = SOURCE_LANGUAGE) -> SharedParts | None:
        """The parts of report ``NAME`` that every reader of a turn shares, rendered once
        from ``NAME_shared.txt.j2`` and ``NAME_shared.html.j2`` with ``public``, the
        turn's public context (nobody's dice, notes, talk or key): each top-level
        ``{% set part %}...{% endset %}`` of those templates, by name (docs/templates.md).

        None when the report is rendered whole for each reader, the slow way: it has no
        shared templates, or a referee overrides ``NAME.txt.j2`` or ``NAME.html.j2``
        without its shared template beside it (an override written before shared parts
        existed renders everything itself)."""
        env = self.environment(language)
        names = (f"{name}.txt.j2", f"{name}_shared.txt.j2",
                 f"{name}.html.j2", f"{name}_shared.html.j2")
        try:
            text_main, text_shared, html_main, html_shared = (
                env.get_template(each) for each in names)
        except jinja2.TemplateNotFound:
            return None
        for main, shared in ((text_main, text_shared), (html_main, html_shared)):
            if self._overridden(main) and not self._overridden(shared):
                return None
        if language != SOURCE_LANGUAGE:
            public = said_context(public, reader(language, None))
        return SharedParts(text=_parts_of(text_shared, public, cleaned=True),
                           html=_parts_of(html_shared, public))

    def _overridden(self, template: jinja2.Template) -> bool:
        """Whether ``template`` is read from the referee's override folder."""
        if self.override_dir is None or template.filename is None:
            return False
        return Path(template.filename).resolve().is_relative_to(self.override_dir.resolve())


@dataclass(frozen=True)
class SharedParts:
    """The parts of a turn's report that every reader shares, in one language: the text
    part's and the HTML part's (markup), each by its name in the shared template (a
    rendered part, or a dict or list of them: the rows of a table by seat)."""

    text: Mapping[str, Any]
    html: Mapping[str, Any]


def _parts_of(template: jinja2.Template, context: Mapping[str, Any],
              cleaned: bool = False) -> dict[str, Any]:
    """The top-level ``{% set %}`` values of ``template`` rendered with ``context`` (its
    module's exported names, jinja2's Template.make_module); ``cleaned``: a text part's
    text cleaned now (_cleaned; an HTML part's is markup, and a str in it is cleaned and
    escaped where it is put out)."""
    module = template.make_module(dict(context))
    parts = {key: value for key, value in vars(module).items() if not key.startswith("_")}
    return _cleaned(parts, {}) if cleaned else parts


def _cleaned(value: Any, done: dict[int, Any]) -> Any:
    """A shared part's text (and the text in its dicts and lists) cleaned now, once a turn,
    as each report's output of it would be (Shown); anything else as it is. ``done``: the
    values cleaned already, by id (a row is in its table's part and in a reader's)."""
    kind = type(value)
    if kind is str:
        if id(value) not in done:
            done[id(value)] = (value, Shown(shown(value)))   # the value kept: its id stays
        return done[id(value)][1]
    if kind is dict:
        return {key: _cleaned(item, done) for key, item in value.items()}
    if kind is list:
        return [_cleaned(item, done) for item in value]
    return value
