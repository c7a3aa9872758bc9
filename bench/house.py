"""The shape of the house in figures: what a newcomer meets when reading pbem.

    python3 bench/house.py [--repo DIR]

Prints, from the source alone (nothing is run): the modules of the package and
the longest ones, `Any` in pbem/kinds/, the exception classes and whether they
share one root, functions over 50 lines, places outside pbem/kinds/ that compare
a game kind's name, imports of pbem.rules from pbem/web/ and pbem/services/,
the hidden mechanisms (library classes subclassed to change what they do,
library modules or classes patched, state found by ``isinstance``,
``session.info``, import-time event listeners; beside them, listed but not
counted, the listeners a function sets up on the engine or session it makes, the
documented extension points subclassed and the overrides kept on purpose with
their reason), and the README's length. A refactor is measured by running it before and after.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import re
from pathlib import Path

LONG_FUNCTION = 50
KIND_NAMES = ("postal", "classic", "cup")


def modules(repo: Path) -> list[Path]:
    return sorted(p for p in (repo / "pbem").rglob("*.py") if "_templates" not in p.parts)


def module_name(repo: Path, path: Path) -> str:
    parts = list(path.relative_to(repo).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def exception_classes(trees: dict[str, ast.Module]) -> dict[str, list[str]]:
    """class name -> its base names, for every class that is (transitively) an exception."""
    bases: dict[str, list[str]] = {}
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases[node.name] = [ast.unparse(b).rpartition(".")[2] for b in node.bases]

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        if name in seen:
            return False
        if name.endswith(("Error", "Exception", "Exit")) and name not in bases:
            return True   # a builtin or library exception
        return any(is_exception(b, seen | {name}) for b in bases.get(name, []))

    return {name: b for name, b in bases.items() if is_exception(name)}


def roots(classes: dict[str, list[str]]) -> set[str]:
    """The exception classes none of whose bases is one of ours."""
    return {name for name, b in classes.items() if not any(x in classes for x in b)}


def long_functions(trees: dict[str, ast.Module]) -> list[tuple[int, str]]:
    found = []
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONG_FUNCTION:
                    found.append((length, f"{module}.{node.name}"))
    return sorted(found, reverse=True)


def kind_name_branches(repo: Path, paths: list[Path]) -> list[str]:
    names = "|".join(KIND_NAMES)
    pattern = re.compile(r"kind\w*\s*(==|!=|in)\s*[(\[]?\s*[\"'](" + names + r")[\"']")
    hits = []
    for path in paths:
        if (repo / "pbem" / "kinds") in path.parents:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if pattern.search(line):
                hits.append(f"{path.relative_to(repo)}:{number}")
    return hits


def rules_imports(trees: dict[str, ast.Module], packages: tuple[str, ...]) -> list[str]:
    hits = []
    for module, tree in trees.items():
        if not module.startswith(packages):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pbem.rules"):
                hits.append(f"{module} <- {node.module}")
            elif isinstance(node, ast.Import):
                hits += [f"{module} <- {a.name}" for a in node.names
                         if a.name.startswith("pbem.rules")]
    return hits


# --- hidden mechanisms -----------------------------------------------------------------------
#
# What runs without a reader of the calling code seeing it: a library class subclassed to
# change what it does, a library's module or class patched, state found by asking an
# object's type (isinstance) instead of being passed, session.info, and event listeners.
# Each is found in the source (ast) and listed with its place.

# Subclassing these is what their libraries document as the way to extend them: a
# loader, an extension, a log filter (the methods named are the ones to override).
EXTENSION_POINTS: dict[str, frozenset[str]] = {
    "jinja2.BaseLoader": frozenset({"get_source", "list_templates", "load"}),
    "jinja2.loaders.BaseLoader": frozenset({"get_source", "list_templates", "load"}),
    "jinja2.ext.Extension": frozenset({"filter_stream", "parse", "preprocess"}),
    "logging.Filter": frozenset({"filter"}),
    "logging.Handler": frozenset({"emit"}),
    # Starlette: "subclass JSONResponse and override render" (custom JSON serialization)
    "starlette.responses.JSONResponse": frozenset({"render"}),
    # aiosmtpd: a Controller subclass overrides factory() to serve its own SMTP class
    "aiosmtpd.controller.Controller": frozenset({"factory"}),
    # logging: "subclass Formatter and override format" (the Formatter class's docs)
    "logging.Formatter": frozenset({"format", "formatTime", "formatException",
                                    "formatStack"}),
    # aiosmtpd's smtp.rst, "Subclassing": an SMTP subclass adds or changes commands as
    # smtp_<COMMAND> coroutines (a name ending in "*" is a prefix)
    "aiosmtpd.smtp.SMTP": frozenset({"smtp_*"}),
    # SQLAlchemy: a Session subclass serves as sessionmaker(class_=...); one that redefines
    # none of its methods only carries more (its behaviour changed by listeners is listed)
    "sqlmodel.Session": frozenset(),
    "sqlalchemy.orm.Session": frozenset(),
}
# Overrides kept on purpose, each with the reason no public way exists (class -> the
# methods it may redefine, why). Listed, not counted; any other method it redefines is.
KEPT_OVERRIDES: dict[str, tuple[frozenset[str], str]] = {
    "pbem.mail.arrival_auth._Spf": (frozenset({"dns"}), (
        "pyspf has no resolver parameter: query.dns is its one look-up, else the module "
        "global DNSLookup")),
    "pbem.mail.smtpguard.GuardedSMTP": (
        frozenset({"connection_made", "connection_lost", "eof_received"}), (
            "asyncio.Protocol callbacks (aiosmtpd documents SMTP as a StreamReaderProtocol); "
            "aiosmtpd has no hook at connect or close for the connection cap")),
}
# the library classes whose subclass changes how rows, templates or connections behave
# inside the library (the review named these); any other subclass of a library class
# that overrides one of its methods is counted too
WATCHED = ("sqlite3.Connection", "sqlite3.Cursor", "jinja2.Environment", "jinja2.Template",
           "jinja2.runtime.Context", "sqlmodel.Session", "sqlalchemy.orm.Session")
# bases that are not a library's behaviour: typing and data shapes, exceptions
NEUTRAL_ROOTS = ("typing", "abc", "enum", "dataclasses", "collections", "builtins",
                 "sqlmodel.SQLModel", "pydantic", "typing_extensions")


def imported(tree: ast.Module) -> dict[str, str]:
    """Local name -> the dotted name it was imported as (every import of the module)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[(a.asname or a.name).split(".")[0]] = (a.name if a.asname
                                                             else a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def dotted(node: ast.expr, names: dict[str, str]) -> str | None:
    """``jinja2.runtime.Context`` (or a name imported as it) -> its dotted import name."""
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = dotted(node.value, names)
        return f"{base}.{node.attr}" if base else None
    return None


def library(name: str | None) -> bool:
    return bool(name) and not str(name).startswith("pbem") and \
        not str(name).startswith(NEUTRAL_ROOTS) and not str(name).endswith(
            ("Error", "Exception", "Warning", "Exit"))


def library_attributes(name: str) -> set[str] | None:
    """The attributes of the library class ``name`` (imported to see them); None if it
    cannot be imported here."""
    module, _, attr = name.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError):
        return None
    return set(dir(obj)) if isinstance(obj, type) else None


def allowed_by(names: frozenset[str], method: str) -> bool:
    return any(method == n or (n.endswith("*") and method.startswith(n[:-1])) for n in names)


def library_subclasses(trees: dict[str, ast.Module], paths: dict[str, Path]
                       ) -> tuple[list[str], list[str], list[str], set[str]]:
    """(overrides, extension points, overrides kept with their reason, names of our classes
    that override a library class).

    An override: a class of ours whose base is a library class and which redefines one
    of that class's methods or class attributes (or has a WATCHED base at all)."""
    overrides, extensions, kept, classes = [], [], [], set()
    for module, tree in trees.items():
        names = imported(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            for base in node.bases:
                name = dotted(base, names)
                if not library(name):
                    continue
                assert name is not None
                own = {n.name for n in node.body
                       if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
                own |= {t.id for n in node.body if isinstance(n, ast.Assign)
                        for t in n.targets if isinstance(t, ast.Name)}
                theirs = library_attributes(name) or set()
                redefined = sorted(a for a in own & theirs if a != "__init__")
                where = f"{paths[module]}:{node.lineno}: class {node.name}({name})"
                documented = EXTENSION_POINTS.get(name, frozenset())
                extending = [m for m in redefined if allowed_by(documented, m)]
                own_way = [m for m in redefined if m not in extending]
                keep, why = KEPT_OVERRIDES.get(f"{module}.{node.name}", (frozenset(), ""))
                if name in EXTENSION_POINTS and not own_way:
                    extensions.append(f"{where} ({', '.join(redefined) or 'nothing'}; "
                                      "the library's documented way to extend it)")
                elif own_way and all(allowed_by(keep, m) for m in own_way):
                    kept.append(f"{where} redefines {', '.join(own_way)}: {why}"
                                + (f" (and extends {', '.join(extending)})" if extending
                                   else ""))
                elif redefined or name.startswith(WATCHED) or name in WATCHED:
                    overrides.append(f"{where} redefines {', '.join(redefined) or '-'}")
                    classes.add(node.name)
    return overrides, extensions, kept, classes


def patches(trees: dict[str, ast.Module], paths: dict[str, Path]) -> list[str]:
    """Assignments into a library's module or class, or into a function's __globals__
    (monkeypatching): ``Template.from_code = ...``, ``f.__globals__["escape"] = ...``,
    ``setattr(jinja2, ...)``."""
    hits = []
    for module, tree in trees.items():
        names = imported(tree)
        for node in ast.walk(tree):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                  and node.func.id == "setattr" and node.args):
                targets = [ast.Attribute(value=node.args[0], attr="?")]
            for target in targets:
                text = ast.unparse(target) if not isinstance(node, ast.Call) else \
                    ast.unparse(node)
                into_globals = "__globals__" in text or ".__dict__[" in text
                lib = isinstance(target, ast.Attribute) and library(dotted(target.value, names))
                if into_globals or lib:
                    hits.append(f"{paths[module]}:{node.lineno}: {text[:70]}")
    return hits


def discovery(trees: dict[str, ast.Module], paths: dict[str, Path],
              classes: set[str]) -> list[str]:
    """``isinstance(x, C)`` where C is one of our subclasses of a library class (pbem.store.work's
    Work of a Session): state found by asking what an object is, not passed to who needs
    it."""
    hits = []
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "isinstance" and len(node.args) == 2):
                kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) \
                    else [node.args[1]]
                if any(isinstance(k, ast.Name | ast.Attribute)
                       and ast.unparse(k).rpartition(".")[2] in classes for k in kinds):
                    hits.append(f"{paths[module]}:{node.lineno}: {ast.unparse(node)[:70]}")
    return hits


def listeners(trees: dict[str, ast.Module], paths: dict[str, Path]
              ) -> tuple[list[str], list[str]]:
    """(import-time, per-call) event listeners: ``event.listen`` calls and
    ``@event.listens_for`` decorators; import-time ones run at import (outside any
    function: process-wide hooks), the others each time their function runs (on each
    engine that make_engine builds, say)."""
    at_import: list[str] = []
    per_call: list[str] = []

    def is_listen(call: ast.expr) -> bool:
        return isinstance(call, ast.Call) and ast.unparse(call.func).endswith(
            ("event.listen", "event.listens_for", "listens_for"))

    def found(module: str, node: ast.expr, inside: str | None, text: str) -> None:
        where = f"{paths[module]}:{node.lineno}: {text[:60]}"
        if inside:
            per_call.append(f"{where} in {inside}()")
        else:
            at_import.append(where)

    def visit(module: str, nodes: list[ast.stmt], inside: str | None) -> None:
        """``inside``: the function the statements run in (None: at import)."""
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                for deco in node.decorator_list:
                    if is_listen(deco):     # a decorator runs where its def does
                        found(module, deco, inside, "@" + ast.unparse(deco))
                # a function's body runs when it is called; a class body where it stands
                visit(module, node.body,
                      inside if isinstance(node, ast.ClassDef) else node.name)
                continue
            for call in ast.walk(node):
                if is_listen(call):
                    found(module, call, inside, ast.unparse(call))

    for module, tree in trees.items():
        visit(module, tree.body, None)
    return at_import, per_call


def session_info(trees: dict[str, ast.Module], paths: dict[str, Path]) -> list[str]:
    """Code that reads or writes ``session.info`` (a docstring that names it is not)."""
    hits = []
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr == "info"
                    and isinstance(node.value, ast.Name) and node.value.id == "session"):
                hits.append(f"{paths[module]}:{node.lineno}: session.info")
    return hits


def print_list(title: str, hits: list[str], note: str = "") -> None:
    print(f"  {title:<38}{len(hits)}{note}")
    for hit in hits:
        print(f"      {hit}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    repo = parser.parse_args().repo.resolve()
    paths = modules(repo)
    trees = {module_name(repo, p): ast.parse(p.read_text()) for p in paths}
    sizes = sorted(((len(p.read_text().splitlines()), str(p.relative_to(repo))) for p in paths),
                   reverse=True)
    kinds_any = sum(len(re.findall(r"\bAny\b", p.read_text()))
                    for p in paths if (repo / "pbem" / "kinds") in p.parents)
    classes = exception_classes(trees)
    longs = long_functions(trees)
    branches = kind_name_branches(repo, paths)
    web_rules = rules_imports(trees, ("pbem.web", "pbem.services"))
    where = {module_name(repo, p): p.relative_to(repo) for p in paths}
    overrides, extensions, kept, ours = library_subclasses(trees, where)
    patched = patches(trees, where)
    found_by_type = discovery(trees, where, ours)
    info = session_info(trees, where)
    at_import, per_call = listeners(trees, where)
    hidden = overrides + patched + found_by_type + info + at_import
    readme = repo / "README.md"

    print(f"modules in pbem/:                       {len(paths)}")
    print(f"modules over 400 lines:                 {sum(1 for n, _ in sizes if n > 400)}"
          f"  ({', '.join(f'{p} {n}' for n, p in sizes if n > 400)})")
    print(f"Any in pbem/kinds/:                     {kinds_any}")
    print(f"exception classes:                      {len(classes)}, roots: "
          f"{len(roots(classes))} ({', '.join(sorted(roots(classes)))})")
    print(f"functions over {LONG_FUNCTION} lines:                {len(longs)}"
          + (f"  ({', '.join(f'{n} {name}' for n, name in longs)})" if longs else ""))
    print(f"kind-name branches outside kinds/:      {len(branches)}"
          + (f"  ({', '.join(branches)})" if branches else ""))
    print(f"pbem.rules imports in web/, services/:  {len(web_rules)}")
    print(f"hidden mechanisms:                      {len(hidden)}")
    print_list("library classes overridden:", overrides)
    print_list("library modules or classes patched:", patched)
    print_list("state found by isinstance:", found_by_type)
    print_list("session.info:", info)
    print_list("import-time event listeners:", at_import)
    print("  not hidden, listed:")
    print_list("event listeners set up per call:", per_call,
               "  (each where its function sets it up, on the engine or session it makes)")
    print_list("subclassed extension points:", extensions)
    print_list("overrides kept, with their reason:", kept)
    if readme.exists():
        print(f"README lines:                           {len(readme.read_text().splitlines())}")


if __name__ == "__main__":
    main()
