"""How generic the game kinds are, in figures (issue 44, items 3 and 4).

    python3 bench/kinds_generic.py [--repo DIR] [--list]

Prints, from the source alone (nothing is run):

- ``Any`` and ``JSON`` as names in the code (not in comments or strings), inside
  pbem/kinds/ and outside it;
- ``dict[str, Any]`` and ``Mapping[str, Any]`` (JSON by another name), the same way,
  together and apart, with ``JSONMap``; and the TypedDicts (JSON by its shape);
- ``state: Any`` outside pbem/kinds/ (a kind's state erased on its way out of the table);
- the files outside pbem/kinds/, pbem/rules/ (the kinds' own rules) and templates/
  that name a kind: a string literal that is exactly 'postal', 'classic' or 'cup', an
  import of POSTAL/CLASSIC/CUP, a JSON schema listing them, or a web template
  comparing with them;
- rewraps: an ``except`` whose body raises a ``Refusal`` made anew (not the caught one).

A refactor is measured by running it before and after (``--repo`` the other checkout).
"""

from __future__ import annotations

import argparse
import ast
import io
import re
import tokenize
from pathlib import Path

KIND_NAMES = ("postal", "classic", "cup")
KIND_OBJECTS = ("POSTAL", "CLASSIC", "CUP")


def names_in(path: Path, wanted: str) -> int:
    """How often ``wanted`` is a name token of the file (comments and strings not)."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return sum(1 for t in tokens if t.type == tokenize.NAME and t.string == wanted)


def names_a_kind(path: Path) -> bool:
    text = path.read_text()
    if path.suffix == ".py":
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.Constant) and node.value in KIND_NAMES:
                return True
            if isinstance(node, ast.ImportFrom) and any(a.name in KIND_OBJECTS
                                                        for a in node.names):
                return True
        return False
    quoted = "|".join(KIND_NAMES)
    return re.search(rf"[\"']({quoted})[\"']", text) is not None


def typed_dicts(paths: list[Path]) -> dict[Path, int]:
    """The TypedDicts each file defines: class TypedDict, a class on another TypedDict of
    pbem (ClassicRules on RulesJSON), and the functional form."""
    trees = {p: ast.parse(p.read_text()) for p in paths}
    named: set[str] = {"TypedDict"}
    classes = [(p, node) for p, tree in trees.items() for node in ast.walk(tree)
               if isinstance(node, ast.ClassDef)]
    grown = True
    while grown:   # a TypedDict's subclass is one too, wherever it is defined
        before = len(named)
        named |= {node.name for _p, node in classes
                  if any(ast.unparse(b).rpartition(".")[2] in named for b in node.bases)}
        grown = len(named) > before
    counts = dict.fromkeys(paths, 0)
    for p, node in classes:
        counts[p] += node.name in named
    for p, tree in trees.items():
        counts[p] += sum(1 for node in ast.walk(tree) if isinstance(node, ast.Call)
                         and isinstance(node.func, ast.Name) and node.func.id == "TypedDict")
    return counts


def rewraps(path: Path) -> list[str]:
    """``except X: ... raise Refusal(...)``: the caught error said again as a refusal."""
    hits = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.ExceptHandler):
            continue
        for inner in ast.walk(ast.Module(body=node.body, type_ignores=[])):
            if (isinstance(inner, ast.Raise) and isinstance(inner.exc, ast.Call)
                    and ast.unparse(inner.exc.func).endswith("Refusal")):
                caught = ast.unparse(node.type) if node.type is not None else "everything"
                hits.append(f"{path}:{inner.lineno} ({caught})")
    return hits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--list", action="store_true", help="name the files and places")
    args = parser.parse_args()
    repo = args.repo.resolve()
    code = sorted(p for p in (repo / "pbem").rglob("*.py") if "_templates" not in p.parts)
    kinds = repo / "pbem" / "kinds"
    inside = [p for p in code if kinds in p.parents]
    outside = [p for p in code if kinds not in p.parents]
    own = (kinds, repo / "pbem" / "rules", repo / "templates")
    others = [p for p in [*outside, *sorted((repo / "schema").glob("*.json")),
                          *sorted((repo / "templates").rglob("*.j2"))]
              if not any(d in p.parents for d in own)]
    # the web templates compare with a kind's name too: count those outside the kinds' own
    web = [p for p in sorted((repo / "templates" / "web").glob("*.j2"))
           if re.search(r"(==|in)\s*\(?\s*[\"'](postal|classic|cup)[\"']|\{\s*\"postal\":",
                        p.read_text())]
    naming = [p for p in others if names_a_kind(p)] + web
    every = [hit for p in code for hit in rewraps(p)]
    # a number or a date the standard library cannot read is said as a refusal: no rewrap
    # of an error of pbem's own
    parsing = re.compile(r"\((\(?(ValueError|ZoneInfoNotFoundError)(, )?)+\)?\)$")
    wraps = [hit for hit in every if not parsing.search(hit)]
    untyped = re.compile(r"\b(dict|Mapping)\[str, Any\]")
    loose_in = sum(len(untyped.findall(p.read_text())) for p in inside)
    loose_out = sum(len(untyped.findall(p.read_text())) for p in outside)
    erased = sum(len(re.findall(r"state: Any\b", p.read_text())) for p in outside)

    print(f"Any   inside kinds/: {sum(names_in(p, 'Any') for p in inside):4d}   "
          f"outside: {sum(names_in(p, 'Any') for p in outside):4d}")
    print(f"JSON  inside kinds/: {sum(names_in(p, 'JSON') for p in inside):4d}   "
          f"outside: {sum(names_in(p, 'JSON') for p in outside):4d}")
    print(f"dict/Mapping[str, Any] inside: {loose_in:4d}   outside: {loose_out:4d}")
    # the same apart, and what names a shape instead (issue 44 item 3: JSON by its shape)
    print(f"  JSONMap       inside kinds/: {sum(names_in(p, 'JSONMap') for p in inside):4d}   "
          f"outside: {sum(names_in(p, 'JSONMap') for p in outside):4d}")
    for loose in ("dict[str, Any]", "Mapping[str, Any]"):
        print(f"  {loose:<17} inside: {sum(p.read_text().count(loose) for p in inside):4d}   "
              f"outside: {sum(p.read_text().count(loose) for p in outside):4d}")
    shapes = typed_dicts(code)
    print(f"TypedDicts inside kinds/: {sum(shapes[p] for p in inside):4d}   "
          f"outside: {sum(shapes[p] for p in outside):4d}")
    print(f"state: Any outside kinds/:                       {erased}")
    print(f"files naming a kind outside kinds/, rules/, the kinds' templates: {len(naming)}")
    if args.list:
        for p in naming:
            print(f"    {p.relative_to(repo)}")
    print(f"rewraps (except ...: raise Refusal(...)):        {len(wraps)}"
          f"  (and {len(every) - len(wraps)} of a standard library's ValueError)")
    if args.list:
        for hit in wraps:
            print(f"    {Path(hit).relative_to(repo) if hit.startswith('/') else hit}")


if __name__ == "__main__":
    main()
