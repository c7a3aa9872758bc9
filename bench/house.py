"""The shape of the house in figures: what a newcomer meets when reading pbem.

    python3 bench/house.py [--repo DIR]

Prints, from the source alone (nothing is run): the modules of the package and
the longest ones, `Any` in pbem/kinds/, the exception classes and whether they
share one root, functions over 50 lines, places outside pbem/kinds/ that compare
a game kind's name, imports of pbem.rules from pbem/web/ and pbem/services/,
uses of ``session.info`` and import-time ``event.listen`` calls, and the
README's length. A refactor is measured by running it before and after.
"""

from __future__ import annotations

import argparse
import ast
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


def import_time_listeners(trees: dict[str, ast.Module]) -> list[str]:
    """``event.listen`` calls run at import (outside any function): process-wide hooks."""
    hits = []

    def visit(module: str, nodes: list[ast.stmt]) -> None:
        for node in nodes:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                continue
            for call in ast.walk(node):
                if isinstance(call, ast.Call) and ast.unparse(call.func).endswith("event.listen"):
                    hits.append(f"{module}:{call.lineno}: {ast.unparse(call)[:70]}")

    for module, tree in trees.items():
        visit(module, tree.body)
    return hits


def session_info(trees: dict[str, ast.Module]) -> list[str]:
    """Code that reads or writes ``session.info`` (a docstring that names it is not)."""
    hits = []
    for module, tree in trees.items():
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and node.attr == "info"
                    and isinstance(node.value, ast.Name) and node.value.id == "session"):
                hits.append(f"{module}:{node.lineno}: session.info")
    return hits


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
    hidden = import_time_listeners(trees) + session_info(trees)
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
    print(f"session.info / import-time listeners:   {len(hidden)}")
    for hit in hidden:
        print(f"    {hit}")
    if readme.exists():
        print(f"README lines:                           {len(readme.read_text().splitlines())}")


if __name__ == "__main__":
    main()
