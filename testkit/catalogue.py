"""The gettext catalogues: extract every message of the code and templates (Babel), and
keep the German and Czech catalogues in step with them.

    python -m testkit.catalogue update    # pbem/locale/pbem.pot, and new msgids into
                                          # every language's pbem.po (untranslated)
    python -m testkit.catalogue update --into web templates/web pbem/web
                                          # the new msgids of those paths into web.po
    python -m testkit.catalogue check     # what is missing, fuzzy or stale; exit 1 if any
    python -m testkit.catalogue fill de words.json
                                          # translations {msgid: text or [forms]} into
                                          # whichever catalogue of the language has them
    python -m testkit.catalogue todo de   # the untranslated msgids, as such a JSON
    python -m testkit.catalogue dedupe    # a message in two catalogues kept in the first

A language's messages may be in several .po files (pbem.text.i18n reads them all); a
message no code says any more is dropped from each.

Messages are marked in Python with ``_("...")`` / ``_n("...", "...", n)``
(pbem.text.wording) and in templates with ``_("...")``, ``{% trans %}``, ``ngettext`` and
``plural("{n} die", "{n} dice", n)``.
"""

from __future__ import annotations

import functools
import json
import re
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from babel.messages.catalog import Catalog, Message
from babel.messages.extract import DEFAULT_KEYWORDS, extract_from_dir
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
LOCALE = ROOT / "pbem" / "locale"
TEMPLATE = LOCALE / "pbem.pot"
TRANSLATED = ("de", "cs")

PYTHON_KEYWORDS = {"_": None, "_n": (1, 2)}
TEMPLATE_KEYWORDS = {**DEFAULT_KEYWORDS, "plural": (1, 2)}
JINJA_OPTIONS = {"extensions": "jinja2.ext.i18n,jinja2.ext.do", "trimmed": "false",
                 "silent": "false"}


def _extracted(folder: Path, method: str, pattern: str, keywords: dict,
               options: dict[str, str] | None = None) -> Iterator[tuple]:
    yield from extract_from_dir(str(folder), method_map=[(pattern, method)],
                                options_map={pattern: options or {}}, keywords=keywords,
                                comment_tags=("Translators:",), strip_comment_tags=True)


def extract() -> Catalog:
    """Every message of pbem/ (Python) and templates/ (Jinja2), as a catalogue template."""
    catalogue = Catalog(project="pbem", charset="utf-8", fuzzy=False)
    sources: Iterable[tuple[Path, str, str, dict, dict[str, str] | None]] = (
        (ROOT / "pbem", "python", "**.py", PYTHON_KEYWORDS, None),
        (ROOT / "templates", "jinja2", "**.j2", TEMPLATE_KEYWORDS, JINJA_OPTIONS),
    )
    for folder, method, pattern, keywords, options in sources:
        for filename, lineno, message, comments, context in _extracted(
                folder, method, pattern, keywords, options):
            where = (f"{folder.relative_to(ROOT)}/{filename}", lineno)
            catalogue.add(message, None, [where], auto_comments=comments, context=context,
                          flags=_flags(message))
    return catalogue


def _flags(message: str | tuple[str, ...]) -> tuple[str, ...]:
    text = message if isinstance(message, str) else message[0]
    if re.search(r"%\(\w+\)s", text):
        return ("python-format",)
    if re.search(r"\{\w*\}", text):
        return ("python-brace-format",)
    return ()


def po_path(language: str) -> Path:
    return LOCALE / language / "LC_MESSAGES" / "pbem.po"


def read(path: Path, language: str | None = None) -> Catalog:
    with path.open("rb") as fp:
        return read_po(fp, locale=language)


def write(path: Path, catalogue: Catalog) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fp:
        write_po(fp, catalogue, width=88, sort_output=False, include_previous=False,
                 omit_header=False)


def _key(message: Message) -> str:
    return message.id if isinstance(message.id, str) else message.id[0]


def update(into: str = "pbem", paths: tuple[str, ...] = ()) -> None:
    """Write the template; add its new messages (those said in ``paths``, if given) to
    each language's catalogue ``into``.po, and drop from every catalogue of the language
    the messages no code says any more."""
    template = extract()
    write(TEMPLATE, template)
    wanted = {_key(m) for m in template if m.id}
    for language in TRANSLATED:
        folder = LOCALE / language / "LC_MESSAGES"
        files = sorted(folder.glob("*.po")) if folder.exists() else []
        known: set[str] = set()
        for path in files:
            catalogue = read(path, language)
            for message in list(catalogue):
                if message.id and _key(message) not in wanted:
                    catalogue.delete(message.id, message.context)
            catalogue.obsolete.clear()
            write(path, catalogue)
            known |= {_key(m) for m in catalogue if m.id}
        target = folder / f"{into}.po"
        catalogue = read(target, language) if target.exists() else Catalog(
            locale=language, project="pbem", fuzzy=False)
        added = 0
        for message in template:
            if not message.id or _key(message) in known:
                continue
            if paths and not any(where.startswith(paths) for where, _line in
                                 message.locations):
                continue
            catalogue[message.id] = Message(message.id, "" if isinstance(message.id, str)
                                            else ("",) * catalogue.num_plurals,
                                            locations=message.locations,
                                            flags=message.flags,
                                            auto_comments=message.auto_comments)
            added += 1
        if added or target.exists():
            write(target, catalogue)


def _placeholders(text: str) -> set[str]:
    return set(re.findall(r"\{(\w*)\}", text)) | set(re.findall(r"%\((\w+)\)s", text))


def translations(language: str) -> dict[str, Message]:
    """Every message of a language's catalogues (the first file that has one wins)."""
    found: dict[str, Message] = {}
    for path in sorted((LOCALE / language / "LC_MESSAGES").glob("*.po")):
        for message in read(path, language):
            if message.id:
                found.setdefault(_key(message), message)
    return found


def problems(language: str, template: Catalog | None = None) -> list[str]:
    """What is wrong with a language's catalogues: a message of the code they lack or have
    not translated, a fuzzy one, a translation whose fields differ from its source's."""
    template = template or extract()
    catalogue = translations(language)
    said: list[str] = []
    seen: dict[str, str] = {}
    for path in sorted((LOCALE / language / "LC_MESSAGES").glob("*.po")):
        for message in read(path, language):
            if message.id and _key(message) in seen:
                said.append(f"{language}: {_key(message)!r} in {seen[_key(message)]} and "
                            f"{path.name} (keep one)")
            elif message.id:
                seen[_key(message)] = path.name
    for message in template:
        if not message.id:
            continue
        key = _key(message)
        found: Message | None = catalogue.get(key)
        if found is None:
            said.append(f"{language}: missing {key!r}")
            continue
        if found.fuzzy:
            said.append(f"{language}: fuzzy {key!r}")
        strings = found.string if isinstance(found.string, (tuple, list)) else (found.string,)
        if not all(strings):
            said.append(f"{language}: untranslated {key!r}")
            continue
        sources = message.id if isinstance(message.id, (tuple, list)) else (message.id,)
        wanted = set().union(*(_placeholders(s) for s in sources))
        for text in strings:
            fields = _placeholders(text)
            # a plural form may leave out the count ("one" is a word in Czech too)
            if not fields <= wanted or not (wanted - {"n"}) <= fields:
                said.append(f"{language}: fields {sorted(fields)} in the translation of "
                            f"{key!r}, {sorted(wanted)} in its source")
    return said


def fill(language: str, found: dict[str, str | list[str]]) -> list[str]:
    """Put translations into the language's catalogues; the msgids none of them has."""
    left = dict(found)
    for path in sorted((LOCALE / language / "LC_MESSAGES").glob("*.po")):
        catalogue = read(path, language)
        changed = False
        for message in catalogue:
            if message.id and _key(message) in left:
                text = left.pop(_key(message))
                if isinstance(message.id, str):
                    message.string = text if isinstance(text, str) else text[0]
                else:
                    forms = [text] if isinstance(text, str) else list(text)
                    forms += [forms[-1]] * (catalogue.num_plurals - len(forms))
                    message.string = tuple(forms[:catalogue.num_plurals])
                message.flags.discard("fuzzy")
                changed = True
        if changed:
            write(path, catalogue)
    return sorted(left)


def dedupe(language: str) -> list[str]:
    """Keep each message in the first catalogue of the language that has it (a message two
    parts both said lands in both when they were translated apart); what was dropped."""
    seen: dict[str, tuple[str, object]] = {}
    dropped: list[str] = []
    for path in sorted((LOCALE / language / "LC_MESSAGES").glob("*.po")):
        catalogue = read(path, language)
        for message in list(catalogue):
            if not message.id:
                continue
            key = _key(message)
            if key in seen:
                if seen[key][1] != message.string:
                    dropped.append(f"{language}: {key!r}: kept {seen[key][1]!r} of "
                                   f"{seen[key][0]}, dropped {message.string!r} of {path.name}")
                catalogue.delete(message.id, message.context)
            else:
                seen[key] = (path.name, message.string)
        write(path, catalogue)
    return dropped


def todo(language: str) -> dict[str, str | list[str]]:
    """The messages of the language not translated yet, with their English source."""
    out: dict[str, str | list[str]] = {}
    for key, message in translations(language).items():
        strings = message.string if isinstance(message.string, (tuple, list)) else (
            message.string,)
        if not all(strings):
            out[key] = key if isinstance(message.id, str) else list(message.id)
    return out


_FIELD = re.compile(r"\{\w*\}|%\(\w+\)s|%s|%d")


@functools.lru_cache(maxsize=8)
def english_phrases(language: str) -> list[str]:
    """The English phrases a mail in ``language`` must not show: each literal run of two
    words or more of a message's source that its translation does not also hold (an
    order word, a command's usage or a name may stay as it is)."""
    phrases: set[str] = set()
    for message in translations(language).values():
        sources = message.id if isinstance(message.id, (tuple, list)) else (message.id,)
        strings = message.string if isinstance(message.string, (tuple, list)) else (
            message.string,)
        said = " ".join(str(t) for t in strings if t)
        for source in sources:
            for run in _FIELD.split(source):
                run = " ".join(run.split()).strip(" .,:;()!?-")
                if len(run.split()) >= 2 and len(run) >= 8 and run not in said \
                        and not _order_like(run):
                    phrases.add(run)
    return sorted(phrases, key=len, reverse=True)


def _order_like(run: str) -> bool:
    """An order as a player writes it ("EXPOSE 3 3", "GAME <game>"): order words, numbers
    and placeholders, the same in every language's mail."""
    return all(re.fullmatch(r"[A-Z]+|[0-9*]+|<[^>]*>|[|/]", word) for word in run.split())


def english_left(text: str, language: str) -> list[str]:
    """The English phrases (english_phrases) found in ``text`` as whole words, white space
    folded."""
    folded = " ".join(text.split())
    return [p for p in english_phrases(language) if p in folded
            and re.search(rf"(?<!\w){re.escape(p)}(?!\w)", folded)]


def main(argv: list[str]) -> int:
    if argv[:1] == ["fill"] and len(argv) == 3:
        unknown = fill(argv[1], json.loads(Path(argv[2]).read_text("utf-8")))
        print("not in any catalogue:", *unknown, sep="\n  " if unknown else " ")
        return 1 if unknown else 0
    if argv[:1] == ["dedupe"]:
        print("\n".join(d for language in TRANSLATED for d in dedupe(language)))
        return 0
    if argv[:1] == ["todo"] and len(argv) == 2:
        print(json.dumps(todo(argv[1]), ensure_ascii=False, indent=1))
        return 0
    if argv[:1] == ["update"]:
        if argv[1:2] == ["--into"] and len(argv) > 2:
            update(argv[2], tuple(argv[3:]))
        else:
            update()
        return 0
    if argv[:1] == ["check"]:
        template = extract()
        found = [p for language in TRANSLATED for p in problems(language, template)]
        print("\n".join(found) or "every message is translated")
        return 1 if found else 0
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
