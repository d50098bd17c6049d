"""Errors that point at the matrix file: SpecError, and pydantic's validation errors rewritten as 'FILE:LINE: key.path:
what was expected', with the keys a section accepts and a "did you mean" for a misspelt one."""

from __future__ import annotations

import difflib
import json
import re
import types
import typing
from pathlib import Path
from typing import Any, Union

from pydantic import BaseModel, ValidationError
from ruamel.yaml.comments import CommentedMap, CommentedSeq

from evalharness.matrix.schema import Matrix


class SpecError(Exception):
    """Bad matrix input: the message names the file, the line and key path, and what was expected."""


def line_of(tree: Any, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest key along `loc` that exists in the parsed YAML."""
    line = None
    node = tree
    for key in loc:
        if isinstance(node, CommentedMap) and key in node:
            line = node.lc.key(key)[0] + 1
            node = node[key]
        elif isinstance(node, CommentedSeq) and isinstance(key, int) and 0 <= key < len(node):
            line = node.lc.item(key)[0] + 1
            node = node[key]
        else:
            break
    return line


def _concrete(annotation: Any) -> list[Any]:
    """Look through Optional, Union and Annotated to the types an annotation can hold."""
    origin = typing.get_origin(annotation)
    if origin in (Union, typing.Annotated, types.UnionType):
        args = typing.get_args(annotation)
        return [c for a in (args[:1] if origin is typing.Annotated else args) for c in _concrete(a)]
    return [annotation]


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """The keys accepted by the model found at `loc` in the schema (through model fields, dict values, list items)."""
    current: list[Any] = [Matrix]
    for key in loc:
        following: list[Any] = []
        for annotation in (c for a in current for c in _concrete(a)):
            origin = typing.get_origin(annotation)
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                if key in annotation.model_fields:
                    following.append(annotation.model_fields[key].annotation)
            elif origin is dict:
                following.append(typing.get_args(annotation)[1])
            elif origin is list and isinstance(key, int):
                following.append(typing.get_args(annotation)[0])
        current = following
    models = [c for a in current for c in _concrete(a) if isinstance(c, type) and issubclass(c, BaseModel)]
    return sorted({name for model in models for name in model.model_fields})


def _describe(error: dict[str, Any]) -> str:
    kind = error["type"]
    loc = error["loc"]
    if kind == "extra_forbidden":
        *parent, key = loc
        allowed = _allowed_keys(tuple(parent))
        message = f"unknown key {key!r}"
        close = difflib.get_close_matches(str(key), allowed, n=1)
        if close:
            message += f" (did you mean {close[0]!r}?)"
        if allowed:
            message += f"; expected one of: {', '.join(allowed)}"
        return message
    if kind == "missing":
        return "required key is missing"
    got = error.get("input")
    shown = json.dumps(got, default=str) if not isinstance(got, (dict, list)) else type(got).__name__
    return f"{error['msg']} (got {shown})"


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    # pydantic adds union-branch names ("str", "dict[str,str]", "function-after[...]") to locations; drop them
    return tuple(k for k in loc
                 if isinstance(k, int) or not re.search(r"[\[\]]|^(str|int|float|bool|list|dict|none)$", k))


def format_validation_error(path: Path, tree: Any, error: ValidationError) -> str:
    """One line per problem: 'FILE:LINE: key.path: what was expected'."""
    lines = []
    seen = set()
    for item in error.errors():
        loc = _clean_loc(tuple(item["loc"]))
        key_path = ".".join(f"[{k}]" if isinstance(k, int) else str(k) for k in loc).replace(".[", "[") or "(top level)"
        item = {**item, "loc": loc}
        if item["type"] == "value_error":
            text = str(item["msg"]).removeprefix("Value error, ")
        else:
            text = _describe(item)
        if (key_path, text) in seen:
            continue
        seen.add((key_path, text))
        line = line_of(tree, loc)
        where = f"{path}:{line}" if line else str(path)
        lines.append(f"{where}: {key_path}: {text}")
    return "\n".join(lines[:12])
