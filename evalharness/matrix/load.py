"""Loading a matrix file: YAML 1.2 read with line numbers kept, validated, relative paths resolved against the file's
folder, and expanded; every failure is one SpecError fit for the command line (the only module here that reads a file).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from ruamel.yaml import YAML
from ruamel.yaml.error import YAMLError

from evalharness.matrix.engines import EngineTraits
from evalharness.matrix.errors import SpecError, line_of, format_validation_error
from evalharness.matrix.expand import relaunch_of, expand, reference_cell
from evalharness.matrix.schema import Cell, Matrix


def _plain(node: Any) -> Any:
    if isinstance(node, dict):
        return {str(k) if not isinstance(k, (str, int, float)) else k: _plain(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v) for v in node]
    return node


def _resolve_relative(value: str, base: Path) -> str:
    # Only explicit relative paths are resolved against the matrix file: a bare name may be a hub id or a PATH entry.
    # normpath, not resolve(): a venv's bin/python is a symlink whose target is the bare interpreter.
    if value.startswith(("./", "../")):
        return os.path.normpath(base.absolute() / value)
    return value


def _resolve_args(args: dict[str, Any], base: Path) -> dict[str, Any]:
    return {flag: _resolve_relative(value, base) if isinstance(value, str) else value for flag, value in args.items()}


def _tokenizer_problem(matrix: Matrix) -> str | None:
    """Why `tokenizer: local` cannot read the served model's tokenizer.json, where that can be known before launch:
    a model folder without it. A hub id is found in the cache at run time (the engine may download it first), and a
    tokenizer named in the flags (--tokenizer-path, --tokenizer) is read where the engine reports it."""
    quality = matrix.quality
    if quality is None or not quality.uses_api("completions") or quality.tokenizer != "local" \
            or matrix.base_url:  # an endpoint that is already up (only it takes one): its model folder is not here
        return None
    flags = [matrix.args, *(value.args for values in matrix.axes.values() for value in values.values() if value)]
    if any(name in args for args in flags for name in ("--tokenizer-path", "--tokenizer")):
        return None
    model = Path(matrix.model)
    if not (model.is_absolute() or model.is_dir()):
        return None  # a hub id
    if not model.is_dir():
        return (f"quality.tokenizer: local reads the served model's tokenizer.json, but the model folder {model} "
                "does not exist")
    if not (model / "tokenizer.json").is_file():
        return (f"quality.tokenizer: local reads the served model's tokenizer.json (the Hugging Face fast "
                f"tokenizer's file), and {model} has none; a model with only a sentencepiece tokenizer.model needs "
                "it converted; else set `tokenizer: remote` (vLLM) or `none` (generation tasks only)")
    return None


def load_matrix(path: str | Path, engines: Mapping[str, EngineTraits]) -> tuple[Matrix, list[Cell], Cell]:
    """Read, validate and expand a matrix file against the `engines` it may name (serving/engines' `load_matrix` hands
    them in). Raises SpecError with a message fit for the command line."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such matrix file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{path}: cannot read the matrix file: {exc}") from None
    yaml = YAML(typ="rt")  # YAML 1.2: 'on'/'off' stay strings, duplicate keys are errors
    try:
        tree = yaml.load(text)
    except YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SpecError(f"{where}: malformed YAML: {problem}") from None
    if not isinstance(tree, dict):
        raise SpecError(f"{path}: expected a mapping of matrix keys (name, engine, model, axes, ...) at the top level")
    try:
        matrix = Matrix.model_validate(_plain(tree), context={"engines": engines})
    except ValidationError as exc:
        raise SpecError(format_validation_error(path, tree, exc)) from None
    updates: dict[str, Any] = {"model": _resolve_relative(matrix.model, path.parent)}
    if matrix.probes.prompts:
        updates["probes"] = matrix.probes.model_copy(
            update={"prompts": _resolve_relative(matrix.probes.prompts, path.parent)})
    if matrix.batching.prompts:
        updates["batching"] = matrix.batching.model_copy(
            update={"prompts": _resolve_relative(matrix.batching.prompts, path.parent)})
    if matrix.distribution.prompts:
        updates["distribution"] = matrix.distribution.model_copy(
            update={"prompts": _resolve_relative(matrix.distribution.prompts, path.parent)})
    if matrix.quality:
        quality = matrix.quality
        if quality.include_path:
            quality = quality.model_copy(update={"include_path": _resolve_relative(quality.include_path, path.parent)})
        if quality.data:
            quality = quality.model_copy(update={"data": {task: data.model_copy(update={"data_files": {
                split: [_resolve_relative(p, path.parent) for p in files] if isinstance(files, list)
                else _resolve_relative(files, path.parent) for split, files in data.data_files.items()}})
                for task, data in quality.data.items()}})
        updates["quality"] = quality
    if matrix.throughput:
        scenarios = [sc.model_copy(update={"prompts": _resolve_relative(sc.prompts, path.parent)})
                     if sc.prompts.endswith(".jsonl") else sc for sc in matrix.throughput.scenarios]
        sweep = matrix.throughput.sweep
        if sweep is not None and str(sweep.scenario.get("prompts", "")).endswith(".jsonl"):
            sweep = sweep.model_copy(update={"scenario": {**sweep.scenario, "prompts": _resolve_relative(
                sweep.scenario["prompts"], path.parent)}})
        updates["throughput"] = matrix.throughput.model_copy(update={"scenarios": scenarios, "sweep": sweep})
    if matrix.command:
        updates["command"] = [_resolve_relative(matrix.command[0], path.parent), *matrix.command[1:]]
    # a flag's value that is an explicit relative path (a chat template, a config file) is the matrix file's too
    updates["args"] = _resolve_args(matrix.args, path.parent)
    updates["axes"] = {axis: {name: value.model_copy(update={
        "args": _resolve_args(value.args, path.parent),
        **({"command": [_resolve_relative(value.command[0], path.parent), *value.command[1:]]}
           if value.command else {})})
        if value else value for name, value in values.items()} for axis, values in matrix.axes.items()}
    matrix = matrix.model_copy(update=updates)
    if matrix.batching.enabled and matrix.batching.prompts and not Path(matrix.batching.prompts).is_file():
        line = line_of(tree, ("batching", "prompts"))
        raise SpecError(f"{path}:{line}: batching.prompts: {matrix.batching.prompts} is not a file (expected a JSONL "
                        "of {id, prompt} or {id, messages})" if line else
                        f"{path}: batching.prompts: {matrix.batching.prompts} is not a file")
    problem = _tokenizer_problem(matrix)
    if problem:
        given = isinstance(tree.get("quality"), dict) and "tokenizer" in tree["quality"]
        line = line_of(tree, ("quality", "tokenizer") if given else ("model",))  # else the default on this model
        raise SpecError(f"{path}:{line}: {problem}" if line else f"{path}: {problem}")
    try:
        cells = expand(matrix)
        reference = reference_cell(matrix, cells)
        if matrix.report.relaunch_reference:
            cells.append(relaunch_of(reference))
    except SpecError as exc:
        key = str(exc).split(":", 1)[0].split(".")[0]
        line = line_of(tree, (key,)) if key in tree else None
        raise SpecError(f"{path}:{line}: {exc}" if line else f"{path}: {exc}") from None
    return matrix, cells, reference
