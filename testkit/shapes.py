"""Does a JSON value have the shape its type names? The kinds and the web pages name what
they write with TypedDicts (pbem.kinds.views, pbem.kinds.tables, pbem.web.page_data);
mypy checks the code against them, these checks the data itself: every required key, no
key the type does not name, each value of its type, all the way down."""

from __future__ import annotations

import types
from collections.abc import Mapping, Sequence
from typing import (
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)


def shape_problems(value: object, hint: Any, where: str = "$") -> list[str]:
    """What in ``value`` does not fit ``hint`` ([] when it fits), each with its path."""
    if hint is object or hint is Any:
        return []
    if hint is None or hint is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    origin, args = get_origin(hint), get_args(hint)
    if is_typeddict(hint):
        return _typed_dict_problems(value, hint, where)
    if origin in (Union, types.UnionType):
        fits = [shape_problems(value, arm, where) for arm in args]
        return [] if any(not p for p in fits) else [f"{where}: {value!r} fits none of {hint}"]
    if origin is Literal:
        return [] if value in args else [f"{where}: {value!r} is none of {args}"]
    if origin in (list, Sequence):
        if not isinstance(value, list | tuple):
            return [f"{where}: {value!r} is not a list"]
        return [p for i, item in enumerate(value) for p in shape_problems(item, args[0],
                                                                          f"{where}[{i}]")]
    if origin in (dict, Mapping):
        if not isinstance(value, Mapping):
            return [f"{where}: {value!r} is not an object"]
        return [p for k, v in value.items()
                for p in shape_problems(k, args[0], f"{where} key") +
                shape_problems(v, args[1], f"{where}.{k}")]
    if hint is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif hint is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, origin or hint)
    return [] if ok else [f"{where}: {value!r} is not {hint}"]


def _typed_dict_problems(value: object, hint: Any, where: str) -> list[str]:
    if not isinstance(value, Mapping):
        return [f"{where}: {value!r} is not an object ({hint.__name__})"]
    # NotRequired read from the hints: under ``from __future__ import annotations`` the
    # annotations are strings, and Python 3.11's __required_keys__ counts every key
    hints = get_type_hints(hint, include_extras=True)
    optional = set(hint.__optional_keys__) | {k for k, h in hints.items()
                                              if get_origin(h) is NotRequired}
    required = hints.keys() - optional
    problems = [f"{where}: {hint.__name__} has no {key!r}"
                for key in sorted(required - value.keys())]
    problems += [f"{where}: {key!r} is not a key of {hint.__name__}"
                 for key in sorted(value.keys() - hints.keys())]
    return problems + [p for key in value.keys() & hints.keys()
                       for p in shape_problems(value[key], _bare(hints[key]), f"{where}.{key}")]


def _bare(hint: Any) -> Any:
    """A key's type without its NotRequired[...] or Required[...]."""
    return get_args(hint)[0] if get_origin(hint) in (NotRequired, Required) else hint
