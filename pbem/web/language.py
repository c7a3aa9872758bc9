"""The web pages in their reader's language: which one a request asks for, the links
that switch it, and one template Environment a language (templates/web/).

A page is said in the language of its ``?lang=`` (which a cookie then remembers), else
of the ``lang`` cookie, else the best of the browser's ``Accept-Language``. The pages'
data (pbem.web.pages) is the same in every language: its messages (pbem.text.wording.Message)
are said when a page is drawn, so the JSON twins stay English.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypedDict
from urllib.parse import urlencode

import jinja2
from markupsafe import Markup
from starlette.requests import Request
from starlette.responses import Response

from pbem.config import Settings
from pbem.kinds import kind_named, kind_template_dirs
from pbem.render.charts import GLOBALS as CHARTS
from pbem.render.environment import packaged_template_dir
from pbem.render.filters import bid, dice, die, face_name, lookup, pct, plain, plural_in, utc
from pbem.render.said import said_in
from pbem.text.i18n import LANGUAGES, best_language, translator
from pbem.text.wording import Translator, listing

COOKIE = "lang"
COOKIE_SECONDS = 365 * 86400
# what the pages vary by, besides their address
VARY = "Accept-Language, Cookie"

def chosen_language(request: Request) -> tuple[str, bool]:
    """The language of the page asked for, and whether the request chose it (``?lang=``:
    then the answer sets the cookie)."""
    asked = request.query_params.get("lang", "")
    if asked in LANGUAGES:
        return asked, True
    kept = request.cookies.get(COOKIE, "")
    if kept in LANGUAGES:
        return kept, False
    return best_language(request.headers.get("accept-language")), False


def remember_language(response: Response, language: str) -> None:
    """The cookie that keeps a language chosen with ``?lang=`` for the pages after."""
    response.set_cookie(COOKIE, language, max_age=COOKIE_SECONDS, path="/", httponly=True,
                        samesite="lax")


class LanguageLink(TypedDict):
    code: str
    name: str
    current: bool
    url: str


def switch_links(request: Request, current: str) -> list[LanguageLink]:
    """A link to this page in each language (its other query parameters kept)."""
    others = [(k, v) for k, v in request.query_params.multi_items() if k != "lang"]
    return [{"code": code, "name": name, "current": code == current,
             "url": f"{request.url.path}?{urlencode([*others, ('lang', code)])}"}
            for code, name in LANGUAGES.items()]


def _gettext_callables(tr: Translator) -> dict[str, Callable[..., str]]:
    """The templates' ``_``/``gettext`` and ``ngettext``: the i18n extension's newstyle ones
    (the translation is a %-format filled with the keyword values, marked up where the
    template escapes), called at once rather than through two more context calls, and
    with the values said in the same language when they are messages (the extension puts
    them in as their English ``str()``) and cleaned as every ``{{ ... }}`` output is (the
    extension puts them in without ``finalize``): pbem.render.reports.said_in, as in the mails."""
    plain: dict[str, str] = {}    # a text without values, marked up: said once a process
    output = said_in(tr)

    def filled(eval_ctx: jinja2.nodes.EvalContext, text: str, values: dict[str, Any]) -> str:
        if not eval_ctx.autoescape:
            return text % {k: output(v) for k, v in values.items()}
        if values:
            return Markup(text) % {k: output(v) for k, v in values.items()}
        said = plain.get(text)
        if said is None:
            said = plain[text] = Markup(text) % {}
        return said

    # the eval context, not the context: Jinja2 would copy a context with the
    # variables of the loop or macro around every call
    @jinja2.pass_eval_context
    def gettext(eval_ctx: jinja2.nodes.EvalContext, string: str, /, **values: Any) -> str:
        return filled(eval_ctx, tr.gettext(string), values)

    @jinja2.pass_eval_context
    def ngettext(eval_ctx: jinja2.nodes.EvalContext, singular: str, plural: str, n: int, /,
                 **values: Any) -> str:
        values.setdefault("num", n)
        return filled(eval_ctx, tr.ngettext(singular, plural, n), values)

    return {"gettext": gettext, "_": gettext, "ngettext": ngettext}


def template_environment(settings: Settings, language: str) -> jinja2.Environment:
    """The web templates (templates/web/) in ``language``: ``{% trans %}``, ``_()``,
    ``plural`` and the filters that name things (``bid``, ``face_name``) speak it."""
    tr = translator(language)
    # a referee's own, the kinds' own (GameKind.template_dir), pbem's
    folders = [str(folder) for folder in (settings.templates_dir, *kind_template_dirs(),
                                          packaged_template_dir()) if folder is not None]
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(folders),
        autoescape=jinja2.select_autoescape(enabled_extensions=("html.j2",),
                                            default_for_string=True, default=True),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        finalize=said_in(tr), extensions=["jinja2.ext.i18n"])
    # the i18n extension's method, which Environment does not declare; it makes
    # {% trans %} pass its values as keywords (newstyle), to the callables set after it
    env.install_gettext_callables(  # type: ignore[attr-defined]
        gettext=tr.gettext, ngettext=tr.ngettext, newstyle=True)
    env.globals.update(_gettext_callables(tr))
    env.filters.update(die=die, dice=dice, plain=plain, pct=pct, utc=utc, lookup=lookup,
                       face_name=lambda face, quantity=1: face_name(face, quantity, tr),
                       bid=lambda b: bid(b, tr),
                       said=said_in(tr),
                       english=str)    # a kind's text (a Told) as its English: an attribute
    env.globals.update(lookup=lookup, plural=plural_in(tr),
                       listing=lambda items, none=None: listing(items, none, tr),
                       language=language)
    # the pictures: course_chart_svg ... (pbem.render.charts), in the page's language
    env.globals.update({name: functools.partial(draw, tr=tr) for name, draw in CHARTS.items()})
    # the template of macros that draw a kind's tables and scores (GameKind.web_look)
    env.globals["web_look"] = lambda name: kind_named(name).web_look
    return env


def environments(settings: Settings) -> dict[str, jinja2.Environment]:
    """One Environment a language pbem speaks (each compiles a template at its first use)."""
    return {code: template_environment(settings, code) for code in LANGUAGES}
