"""The matrix file: its schema, loading with errors that point at the file, line and key path, and expansion into cells.

A matrix names an engine, a model, base launch arguments and environment, and axes; each axis has named values that
add arguments and/or environment variables. The cartesian product of the axes, minus the exclusions, is the list of
cells. Everything here is pure except `load_matrix`, which reads one file.
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import json
import os
import re
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator, model_validator
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import YAMLError

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_+-]*$"
# task names become folder names under the run: no separators, so none can leave the run folder
TASK_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$"
"""Axis and value names become parts of cell ids and folder names: no dots, slashes or spaces."""

ArgScalar = Union[bool, int, float, str, None]
ArgValue = Union[ArgScalar, list[Union[int, float, str]], dict[str, Any]]
"""A launch argument's value: true is a bare flag, false or null omits it, a mapping is passed as JSON, a list as
several values after the flag."""


class SpecError(Exception):
    """Bad matrix input: the message names the file, the line and key path, and what was expected."""


def _env_value(value: Any) -> Any:
    # YAML turns `SGLANG_ENABLE_JIT_DEEPGEMM: 0` into an int; the environment only holds strings. A bare true/false is
    # refused rather than guessed ("1"? "true"? "True"?): engines disagree on what they accept.
    if isinstance(value, bool):
        raise ValueError("environment values must be strings or numbers; quote true/false as the engine expects them")
    if isinstance(value, (int, float)):
        return str(value)
    return value


EnvValue = Annotated[str, BeforeValidator(_env_value)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _check_flags(args: dict[str, Any]) -> dict[str, Any]:
    for flag in args:
        if not flag.startswith("-"):
            raise ValueError(f"argument {flag!r} must be written as a flag, e.g. '--{flag}'")
    return args


class Settings(_Strict):
    """What one axis value adds to the base launch."""

    description: str | None = None
    args: dict[str, ArgValue] = Field(default_factory=dict)
    env: dict[str, EnvValue] = Field(default_factory=dict)

    _flags = field_validator("args")(classmethod(lambda cls, v: _check_flags(v)))


class Timeouts(_Strict):
    startup_s: float = Field(900.0, gt=0, description="launch to ready; a 397B model takes minutes")
    teardown_grace_s: float = Field(30.0, gt=0, description="SIGTERM to SIGKILL")
    request_s: float = Field(300.0, gt=0, description="one request, answer read in full")


class ProbesSection(_Strict):
    """Garbage probes: run first in every cell (on by default), greedy, through the chat endpoint."""

    enabled: bool = True
    prompts: str | None = Field(None, description="JSONL of probes; default tasks/probes/default.jsonl")
    max_tokens: int = Field(64, gt=0)
    concurrency: int = Field(4, gt=0)
    garbage_min_share: float = Field(0.5, gt=0, le=1, description="share of marked probe outputs that makes garbage")
    garbage_min_excess: float = Field(0.3, ge=0, le=1, description="...and by how much it must exceed the reference's")
    run_costly_phases_on_garbage: bool = False


class DistributionSection(_Strict):
    """Distribution drift: the reference's greedy continuations scored in every cell with top-k log-probabilities."""

    enabled: bool = True
    prompts: str | None = Field(None, description="JSONL of {id, prompt}; default tasks/probes/distribution.jsonl")
    max_tokens: int = Field(32, gt=0, description="length of the reference's continuations")


class QualitySection(_Strict):
    """Quality tasks (lm-eval) through the endpoint, one task at a time, per-sample records kept."""

    tasks: list[Annotated[str, Field(pattern=TASK_PATTERN)]] = Field(min_length=1)
    include_path: str | None = Field(None, description="folder of task YAMLs; default the shipped tasks/lm_eval")
    include_defaults: bool = Field(False, description="also index lm-eval's built-in tasks (gsm8k, ...; slower)")
    api: Literal["completions", "chat"] = "completions"
    tokenizer: Literal["remote", "none"] = Field(
        "remote", description="remote: the engine's /tokenize and /tokenizer_info (loglikelihood tasks need it; vLLM "
        "needs --enable-tokenizer-info-endpoint); none: generation tasks only")
    limit: int | None = Field(None, gt=0)
    concurrency: int = Field(4, gt=0)
    retries: int = Field(2, ge=0, description="reruns of a failed task (its request cache resumes it)")
    task_timeout_s: float = Field(3600.0, gt=0)


class RequestsSection(_Strict):
    """How measuring requests are retried, and how many may fail before the cell is marked error (retries.py)."""

    retries: int = Field(2, ge=0, description="per probe or distribution request, on resets, 5xx and 429; never "
                         "throughput requests (lm-eval retries its own)")
    max_error_rate: float = Field(0.05, ge=0, le=1, description="share of a phase's requests that may fail after "
                                  "retries; the cell keeps its results but is marked error above it")
    hung_after: int = Field(3, gt=0, description="timeouts in a row that mean the engine stopped answering")


class Scenario(_Strict):
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    concurrency: int | None = Field(None, gt=0)
    request_rate: float | None = Field(None, gt=0)
    input_len: int = Field(128, gt=0)
    output_len: int = Field(128, gt=0)
    requests: int | None = Field(None, gt=0)
    duration_s: float | None = Field(None, gt=0)
    warmup_requests: int = Field(1, ge=0)
    ignore_eos: bool = True
    api: Literal["completions", "chat"] = "completions"

    @model_validator(mode="after")
    def _one_mode(self) -> "Scenario":
        if (self.concurrency is None) == (self.request_rate is None):
            raise ValueError(f"scenario {self.name!r}: give exactly one of concurrency or request_rate")
        return self


class ThroughputSection(_Strict):
    """Throughput scenarios, measured the same way in every ready cell (see evalharness/load.py)."""

    scenarios: list[Scenario] = Field(min_length=1)


class ReportSection(_Strict):
    """How the Pareto front is drawn: which throughput scenario, which drift measure."""

    throughput_scenario: str | None = Field(None, description="default: the first single-stream scenario")
    drift_measure: Literal["accuracy", "kld"] = "accuracy"


class GateSection(_Strict):
    """Thresholds for `evalharness gate`; they override the baseline's."""

    max_accuracy_drop: float | None = Field(None, ge=0, description="fails when exceeded and credible (McNemar)")
    hard_accuracy_drop: float | None = Field(None, ge=0, description="fails when exceeded, whatever the sample size")
    alpha: float | None = Field(None, gt=0, lt=1)
    max_flips: int | None = Field(None, ge=0)
    max_kld: float | None = Field(None, ge=0)
    min_throughput_ratio: float | None = Field(None, gt=0)


AxisName = Annotated[str, Field(pattern=NAME_PATTERN)]
ValueName = Annotated[str, Field(pattern=NAME_PATTERN)]


class Matrix(_Strict):
    """A matrix file, validated. Relative paths in `model` and `command[0]` are resolved by `load_matrix`."""

    name: str = Field(min_length=1)
    description: str | None = None
    engine: Literal["sglang", "vllm", "external"]
    model: str = Field(min_length=1)
    served_model_name: str | None = None
    command: list[str] | None = Field(
        None, min_length=1, description="launcher argv before the engine's flags; each engine has a default"
    )
    base_url: str | None = Field(None, description="engine 'external' only: the endpoint that is already up")
    host: str = "127.0.0.1"
    port: int | None = Field(None, ge=1, le=65535, description="serve every cell on this port; default: a free one "
                             "per cell")
    args: dict[str, ArgValue] = Field(default_factory=dict)
    env: dict[str, EnvValue] = Field(default_factory=dict)
    axes: dict[AxisName, dict[ValueName, Settings | None]] = Field(default_factory=dict)
    exclude: list[dict[str, Union[str, list[str]]]] = Field(default_factory=list)
    reference: Union[str, dict[str, str], None] = None
    timeouts: Timeouts = Field(default_factory=Timeouts)
    requests: RequestsSection = Field(default_factory=RequestsSection)
    probes: ProbesSection = Field(default_factory=ProbesSection)
    distribution: DistributionSection = Field(default_factory=DistributionSection)
    quality: QualitySection | None = None
    throughput: ThroughputSection | None = None
    gate: GateSection | None = None
    report: ReportSection = Field(default_factory=ReportSection)

    _flags = field_validator("args")(classmethod(lambda cls, v: _check_flags(v)))

    @model_validator(mode="after")
    def _consistent(self) -> "Matrix":
        for axis, values in self.axes.items():
            if not values:
                raise ValueError(f"axes.{axis}: an axis needs at least one value")
        if self.engine == "external":
            if not self.base_url:
                raise ValueError("base_url: engine 'external' needs the base_url of the running endpoint")
            if self.command or self.args or any(v and (v.args or v.env) for vs in self.axes.values() for v in vs.values()):
                raise ValueError("engine 'external' launches nothing: command, args and axis args/env do not apply")
        elif self.base_url:
            raise ValueError(f"base_url: only engine 'external' takes a base_url; engine {self.engine!r} is launched")
        for i, rule in enumerate(self.exclude):
            for axis, names in rule.items():
                if axis not in self.axes:
                    raise ValueError(f"exclude[{i}]: {_unknown('axis', axis, self.axes)}")
                for name in [names] if isinstance(names, str) else names:
                    if name not in self.axes[axis]:
                        raise ValueError(f"exclude[{i}].{axis}: {_unknown('value', name, self.axes[axis])}")
        return self


class Cell(BaseModel):
    """One configuration to serve: the axis values that make it, and the merged launch settings."""

    model_config = ConfigDict(frozen=True)

    id: str
    axes: dict[str, str]
    args: dict[str, ArgValue]
    env: dict[str, str]
    settings_hash: str


def _unknown(kind: str, name: str, known: typing.Iterable[str]) -> str:
    known = list(known)
    message = f"unknown {kind} {name!r}; expected one of {known}"
    close = difflib.get_close_matches(name, known, n=1)
    return message + (f" (did you mean {close[0]!r}?)" if close else "")


def cell_id(axes: dict[str, str]) -> str:
    """Stable id from the axis values, in axis order: 'dtype-float32.spec-off'. 'base' when there are no axes."""
    return ".".join(f"{axis}-{value}" for axis, value in axes.items()) or "base"


def settings_hash(matrix: Matrix, args: dict[str, Any], env: dict[str, str]) -> str:
    """A short hash of everything that decides what a cell serves, so a resumed run never reuses a stale result."""
    payload = json.dumps(
        {"engine": matrix.engine, "model": matrix.model, "command": matrix.command, "args": args, "env": env},
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _excluded(axes: dict[str, str], rules: list[dict[str, str | list[str]]]) -> bool:
    def matches(rule: dict[str, str | list[str]]) -> bool:
        return all(axes[a] in ([v] if isinstance(v, str) else v) for a, v in rule.items())

    return any(matches(rule) for rule in rules)


def _merge(kind: str, base: dict[str, Any], layers: list[tuple[str, dict[str, Any]]], where: str) -> dict[str, Any]:
    """Base settings overridden by axis values; two axes that set the same key differently is a matrix mistake."""
    merged = dict(base)
    set_by: dict[str, str] = {}
    for axis, layer in layers:
        for key, value in layer.items():
            if key in set_by and merged[key] != value:
                raise SpecError(
                    f"{where}: axes {set_by[key]!r} and {axis!r} both set {kind} {key!r} "
                    f"({merged[key]!r} vs {value!r}); exclude this combination or move the setting"
                )
            merged[key] = value
            set_by[key] = axis
    return merged


def expand(matrix: Matrix) -> list[Cell]:
    """The cells of a matrix, in axis order, without the excluded ones. Raises SpecError if none is left."""
    names = list(matrix.axes)
    cells = []
    for combo in itertools.product(*(list(matrix.axes[a].items()) for a in names)):
        axes = {axis: value_name for axis, (value_name, _) in zip(names, combo)}
        if _excluded(axes, matrix.exclude):
            continue
        settings = [(axis, value or Settings()) for axis, (_, value) in zip(names, combo)]
        cid = cell_id(axes)
        args = _merge("argument", matrix.args, [(a, s.args) for a, s in settings], f"cell {cid}")
        env = _merge("environment variable", matrix.env, [(a, s.env) for a, s in settings], f"cell {cid}")
        cells.append(Cell(id=cid, axes=axes, args=args, env=env, settings_hash=settings_hash(matrix, args, env)))
    if not cells:
        raise SpecError("the matrix has no cells: every combination of the axes is excluded")
    return cells


def reference_cell(matrix: Matrix, cells: list[Cell]) -> Cell:
    """The cell every other is compared with: `reference` as a cell id or as axis values; the first cell if unset."""
    if matrix.reference is None:
        return cells[0]
    if isinstance(matrix.reference, str):
        for cell in cells:
            if cell.id == matrix.reference:
                return cell
        raise SpecError(f"reference: {_unknown('cell id', matrix.reference, [c.id for c in cells])}")
    wanted = matrix.reference
    for axis, value in wanted.items():
        if axis not in matrix.axes:
            raise SpecError(f"reference.{axis}: {_unknown('axis', axis, matrix.axes)}")
        if value not in matrix.axes[axis]:
            raise SpecError(f"reference.{axis}: {_unknown('value', value, matrix.axes[axis])}")
    matching = [c for c in cells if all(c.axes[a] == v for a, v in wanted.items())]
    if not matching:
        raise SpecError(f"reference: {wanted} names a combination that is excluded, so it is not a cell")
    if len(matching) > 1:
        raise SpecError(
            f"reference: {wanted} matches {len(matching)} cells ({', '.join(c.id for c in matching[:4])}...); "
            "name a value for every axis"
        )
    return matching[0]


# ---- loading -----------------------------------------------------------------------------------------------------


def _line_of(tree: Any, loc: tuple[Any, ...]) -> int | None:
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
    return tuple(k for k in loc if isinstance(k, int) or not re.search(r"[\[\]]|^(str|int|float|bool|list|dict|none)$", k))


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
        line = _line_of(tree, loc)
        where = f"{path}:{line}" if line else str(path)
        lines.append(f"{where}: {key_path}: {text}")
    return "\n".join(lines[:12])


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


def load_matrix(path: str | Path) -> tuple[Matrix, list[Cell], Cell]:
    """Read, validate and expand a matrix file. Raises SpecError with a message fit for the command line."""
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
        matrix = Matrix.model_validate(_plain(tree))
    except ValidationError as exc:
        raise SpecError(format_validation_error(path, tree, exc)) from None
    updates: dict[str, Any] = {"model": _resolve_relative(matrix.model, path.parent)}
    if matrix.probes.prompts:
        updates["probes"] = matrix.probes.model_copy(
            update={"prompts": _resolve_relative(matrix.probes.prompts, path.parent)})
    if matrix.distribution.prompts:
        updates["distribution"] = matrix.distribution.model_copy(
            update={"prompts": _resolve_relative(matrix.distribution.prompts, path.parent)})
    if matrix.quality and matrix.quality.include_path:
        updates["quality"] = matrix.quality.model_copy(
            update={"include_path": _resolve_relative(matrix.quality.include_path, path.parent)})
    if matrix.command:
        updates["command"] = [_resolve_relative(matrix.command[0], path.parent), *matrix.command[1:]]
    matrix = matrix.model_copy(update=updates)
    try:
        cells = expand(matrix)
        reference = reference_cell(matrix, cells)
    except SpecError as exc:
        key = str(exc).split(":", 1)[0].split(".")[0]
        line = _line_of(tree, (key,)) if key in tree else None
        raise SpecError(f"{path}:{line}: {exc}" if line else f"{path}: {exc}") from None
    return matrix, cells, reference
