"""How a value is put out in a mail template: said in its reader's language, cleaned as
every output is (pbem.text.usertext), escaped in HTML; the templates' ``_()``, said when a
template compiles (``SaidWhenCompiled``) or when it renders (``gettext_in``)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, cast

import jinja2
import jinja2.ext
import markupsafe

from pbem.render.filters import Shown, said, told
from pbem.text.i18n import known_language, translator
from pbem.text.usertext import shown
from pbem.text.wording import ENGLISH, Message, Translator, say
from pbem.text.zones import Reader


def _escape(value: Any) -> str:
    """A value put into a sentence of an HTML template, escaped (the ``said_escaped``
    filter of SaidWhenCompiled): markupsafe.escape without its copy of what is already
    markup and without the work for a whole number (digits need none). Its result is
    formatted into the sentence, which is then marked up as a whole, so the same text
    comes out as markupsafe.escape's would give."""
    kind = type(value)
    if kind is markupsafe.Markup:
        return cast(str, value)
    if kind is int:
        return str(value)
    return markupsafe.escape(value)


def reader(language: str, zone: str | None) -> Translator:
    """Who a mail is said to: the language's translator, with the time zone when there is
    one (pbem.text.zones.Reader: a time in a message is said in it)."""
    tr = translator(known_language(language))
    return Reader(tr, zone) if zone is not None else tr


def said_context(context: Mapping[str, Any], tr: Translator) -> dict[str, Any]:
    """A context with its messages said (pbem.text.wording.say) where they are: its values,
    the items of its lists and the values of the dicts in those lists (paragraphs,
    problems, talk lines, help lines, notes). A dict value (a report's view, a course:
    data, thousands of items) is not walked: a message in it would be said by finalize
    when put out."""
    out = dict(context)
    for key, value in context.items():
        kind = type(value)
        if kind is list or kind is tuple:
            out[key] = [_said_item(item, tr) for item in value]
        elif kind is not dict:
            out[key] = say(value, tr)
    return out


def _said_item(item: Any, tr: Translator) -> Any:
    if type(item) is dict:
        return {k: say(v, tr) if type(v) is not dict else v for k, v in item.items()}
    return say(item, tr)


def said_in(tr: Translator) -> Callable[[Any], Any]:
    """The finalize of a language's templates: a message said in that language, then
    cleaned as every output is: text without bidi controls and control characters
    (pbem.text.usertext), whatever a player put into a name or talk. Text that carries its
    message (a kind's note, pbem.kinds.words.Told: a str with a ``message``) is said as
    that message. Markup was made of such outputs already; a number has nothing to
    clean."""
    markup = markupsafe.Markup
    english = tr is ENGLISH      # a Told's text is its English already

    def finalize(value: Any) -> Any:
        kind = type(value)
        if kind is str:
            return shown(value)
        if kind is markup or kind is int or kind is Shown:
            return value
        if kind is Message:
            return shown(said(value, tr))
        if not isinstance(value, str):
            return value
        return shown(str(value) if english else told(value, tr))
    return finalize


def said_escaped_in(tr: Translator) -> Callable[[Any], Any]:
    """A value put into a sentence of an HTML template (SaidWhenCompiled): said and
    cleaned as an output is (said_in), then escaped (``_escape``)."""
    said_value = said_in(tr)

    def escaped(value: Any) -> Any:
        return _escape(said_value(value))
    return escaped


def gettext_in(tr: Translator) -> Callable[..., Any]:
    """A language's ``_()`` / ``gettext`` of the templates, as jinja2.ext.i18n's newstyle
    one (``_("Turn %(n)s", n=turn)``, escaped in HTML) with each value first made what an
    output is made (said_in): a message said in the language, text cleaned. A value put
    into a sentence is output there, and nothing else cleans it. Bound straight to ``_``:
    no look-up of ``gettext`` a call."""
    value = said_in(tr)

    @jinja2.pass_eval_context
    def gettext(eval_ctx: jinja2.nodes.EvalContext, source: str, /, **values: Any) -> str:
        text = tr.gettext(source)
        if eval_ctx.autoescape:
            text = markupsafe.Markup(text)
        # always a format (jinja2's newstyle rule): "%%" is a "%" with or without values
        return text % {k: value(v) for k, v in values.items()}
    return gettext


class SaidWhenCompiled(jinja2.ext.Extension):
    """Each ``_("...")`` of a template said when the template compiles, in its
    Environment's language (one Environment a language, so a template compiles once for
    each): the message is a constant then, not a call a render (a report has a hundred).

    ``_("Notes")`` becomes the translated text (marked up, as jinja2.ext.i18n's newstyle
    gettext returns it, in HTML); ``_("Turn %(n)s", n=turn)`` becomes ``"Zug %(n)s" %
    {"n": turn|said}``: the same text, its values made what an output is made
    (said_in), in HTML escaped (``said_escaped``) and the whole marked up, as
    markup's own ``%`` would make it at about half the cost. Any other use of ``_`` is
    left to the ``_`` global (gettext_in), which does the same at render time."""

    def filter_stream(self, stream: jinja2.lexer.TokenStream) -> Iterable[jinja2.lexer.Token]:
        tr: Translator = getattr(self.environment, "said_by", ENGLISH)
        html = self._escaped(stream.name)
        tokens = list(stream)
        # an {% autoescape %} block changes what an output is made: left to render time
        bare = not any(token.type == "name" and token.value == "autoescape"
                       and tokens[k - 1].type == "block_begin"
                       for k, token in enumerate(tokens) if k)
        out: list[jinja2.lexer.Token] = []
        i = 0
        while i < len(tokens):
            text = self._bare(tokens, i, tr, html) if bare else None
            if text is not None:     # {{ _("...") }}: the output is the text itself
                out.append(jinja2.lexer.Token(tokens[i].lineno, "data", text))
                i += 6
                continue
            try:
                said = self._said(tokens, i, tr, html)
            except IndexError:     # a template cut short: the parser says what is wrong
                said = None
            if said is None:
                out.append(tokens[i])
                i += 1
            else:
                replaced, i = said
                out += replaced
        return out

    def _escaped(self, name: str | None) -> bool:
        autoescape = self.environment.autoescape
        return bool(autoescape(name) if callable(autoescape) else autoescape)

    @staticmethod
    def _bare(tokens: list[jinja2.lexer.Token], i: int, tr: Translator,
              html: bool) -> str | None:
        """The text a ``{{ _("...") }}`` at ``i`` puts out, as template data (None if
        ``i`` starts no such output): what its output would be, made at compile time
        (markup in HTML: nothing to escape; text cleaned as finalize cleans it), with no
        finalize, escape or output a render."""
        if not (i + 5 < len(tokens) and tokens[i].type == "variable_begin"
                and tokens[i + 1].type == "name" and tokens[i + 1].value == "_"
                and tokens[i + 2].type == "lparen" and tokens[i + 3].type == "string"
                and tokens[i + 4].type == "rparen"
                and tokens[i + 5].type == "variable_end"):
            return None
        try:
            text = tr.gettext(tokens[i + 3].value) % {}   # newstyle: "%%" is "%"
        except (TypeError, ValueError, KeyError):
            return None
        return text if html else shown(text)

    @staticmethod
    def _said(tokens: list[jinja2.lexer.Token], i: int, tr: Translator,
              html: bool) -> tuple[list[jinja2.lexer.Token], int] | None:
        """The tokens of a constant for the ``_("...", ...)`` at ``i`` and the index
        after it; None if ``i`` starts no such call (anything else is left alone)."""
        Token = jinja2.lexer.Token
        if not (tokens[i].type == "name" and tokens[i].value == "_" and i + 2 < len(tokens)
                and tokens[i + 1].type == "lparen" and tokens[i + 2].type == "string"):
            return None
        line = tokens[i].lineno
        text = tr.gettext(tokens[i + 2].value)
        j = i + 3
        values: list[tuple[str, list[jinja2.lexer.Token]]] = []
        while tokens[j].type == "comma":
            if not (tokens[j + 1].type == "name" and tokens[j + 2].type == "assign"):
                return None
            name, j = tokens[j + 1].value, j + 3
            start, depth = j, 0
            while depth or tokens[j].type not in ("comma", "rparen"):
                if tokens[j].type in ("lparen", "lbracket", "lbrace"):
                    depth += 1
                elif tokens[j].type in ("rparen", "rbracket", "rbrace"):
                    depth -= 1
                elif tokens[j].type in ("eof", "variable_end", "block_end"):
                    return None
                j += 1
            values.append((name, tokens[start:j]))
        if tokens[j].type != "rparen":
            return None
        if not values:
            try:
                text = text % {}     # newstyle gettext's rule: "%%" is "%"
            except (TypeError, ValueError, KeyError):
                return None
        said = [Token(line, "lparen", "("), Token(line, "string", text)]
        if values:
            said += [Token(line, "mod", "%"), Token(line, "lbrace", "{")]
            for name, expr in values:
                said += [Token(line, "string", name), Token(line, "colon", ":"),
                         Token(line, "lparen", "("), *expr, Token(line, "rparen", ")"),
                         Token(line, "pipe", "|"),
                         Token(line, "name", "said_escaped" if html else "said"),
                         Token(line, "comma", ",")]
            said.append(Token(line, "rbrace", "}"))
        said.append(Token(line, "rparen", ")"))
        if html:
            said += [Token(line, "pipe", "|"), Token(line, "name", "safe")]
        return said, j + 1

