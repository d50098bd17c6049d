"""Expansion of a matrix into cells: the cartesian product of the axes minus the exclusions, stable cell ids, merged
launch settings with a settings hash, and the reference cell (pure)."""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

import evalharness
from evalharness.matrix.errors import SpecError
from evalharness.matrix.schema import Cell, Matrix, Settings, unknown_name


def cell_id(axes: dict[str, str]) -> str:
    """Stable id from the axis values, in axis order: 'dtype-float32.spec-off'. 'base' when there are no axes."""
    return ".".join(f"{axis}-{value}" for axis, value in axes.items()) or "base"


# Matrix keys that do not change what a cell measures: a change to them keeps finished cells on `run --resume`.
# Everything else is in the hash (a new key is measured until it is listed here): the launch (engine, model, served
# name, command or base_url, the cell's merged args and env), the probes, the distribution prompts, the quality tasks
# with their limit and options, the throughput scenarios, and SCORING_VERSION. The output folder is not in the matrix.
NOT_MEASURED = {
    "name", "description",      # labels
    "axes", "exclude", "args", "env",  # the cell's own merged args and env stand for them
    "reference",                # drift is recomputed from the saved files against whichever cell is the reference
    "host", "port",             # where a server listens
    "timeouts", "requests",     # how long to wait and how many failed requests a phase tolerates
    "gate", "report",           # how results are judged and drawn afterwards
}
# reruns of a failed task, and how long one may take
NOT_MEASURED_IN = {"quality": {"retries", "task_timeout_s", "budget_hours"}}


def measured_settings(matrix: Matrix, args: dict[str, Any], env: dict[str, str],
                      launch: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything that decides what one cell measures (pure): what its settings hash covers. `launch` is the cell's
    own engine and command where an axis value sets them (absent otherwise, so that a matrix with one engine keeps
    the hashes of its finished cells)."""
    data = matrix.model_dump(mode="json", exclude=NOT_MEASURED)
    for section, keys in NOT_MEASURED_IN.items():
        if data.get(section):
            data[section] = {k: v for k, v in data[section].items() if k not in keys}
    if matrix.report.operating_point is not None:  # a sweep never stops below the operating load: it decides steps
        data["operating_point"] = matrix.report.operating_point.model_dump(mode="json")
    return {**data, "args": args, "env": env, **({"launch": launch} if launch else {}),
            "scoring_version": evalharness.SCORING_VERSION}


def settings_hash(matrix: Matrix, args: dict[str, Any], env: dict[str, str],
                  launch: dict[str, Any] | None = None) -> str:
    """A short hash of everything that decides what a cell measures, so a resumed run never reuses a stale result."""
    payload = json.dumps(measured_settings(matrix, args, env, launch), sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()[:12]


def _launcher(matrix: Matrix, settings: list[tuple[str, Settings]], where: str) -> tuple[str, list[str] | None]:
    """The engine and own command of one cell: the matrix's, or the one axis value that names another. Two axis values
    that name different engines (or commands) for one cell is a matrix mistake, as for arguments."""
    engine = _merge("engine", {"engine": matrix.engine}, [(a, {"engine": s.engine}) for a, s in settings if s.engine],
                    where)["engine"]
    command = _merge("command", {"command": None}, [(a, {"command": s.command}) for a, s in settings if s.command],
                     where)["command"]
    if engine is None:
        raise SpecError(f"{where}: no engine: set `engine` at the top of the matrix or in one of its axis values")
    return engine, command


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
        engine, command = _launcher(matrix, settings, f"cell {cid}")
        launch = {"engine": engine, "command": command} if engine != matrix.engine or command else {}
        cells.append(Cell(id=cid, axes=axes, args=args, env=env, engine=engine, command=command,
                          settings_hash=settings_hash(matrix, args, env, launch)))
    if not cells:
        raise SpecError("the matrix has no cells: every combination of the axes is excluded")
    return cells


def cell_engines(cells: list[Cell], reference: Cell) -> list[str]:
    """The engines that serve a matrix's cells, each once, the reference's first."""
    return list(dict.fromkeys([reference.engine, *(c.engine for c in cells)]))


RELAUNCH_SUFFIX = ".relaunch"


def relaunch_of(reference: Cell) -> Cell:
    """The between-launch A/A (`report.relaunch_reference`): a cell with the reference's own axes and settings, served
    by a launch of its own, so its drift and speed against the reference are what relaunching an unchanged
    configuration produces."""
    return reference.model_copy(update={"id": reference.id + RELAUNCH_SUFFIX})


def reference_cell(matrix: Matrix, cells: list[Cell]) -> Cell:
    """The cell every other is compared with: `reference` as a cell id or as axis values; the first cell if unset."""
    if matrix.reference is None:
        return cells[0]
    if isinstance(matrix.reference, str):
        for cell in cells:
            if cell.id == matrix.reference:
                return cell
        raise SpecError(f"reference: {unknown_name('cell id', matrix.reference, [c.id for c in cells])}")
    wanted = matrix.reference
    for axis, value in wanted.items():
        if axis not in matrix.axes:
            raise SpecError(f"reference.{axis}: {unknown_name('axis', axis, matrix.axes)}")
        if value not in matrix.axes[axis]:
            raise SpecError(f"reference.{axis}: {unknown_name('value', value, matrix.axes[axis])}")
    matching = [c for c in cells if all(c.axes[a] == v for a, v in wanted.items())]
    if not matching:
        raise SpecError(f"reference: {wanted} names a combination that is excluded, so it is not a cell")
    if len(matching) > 1:
        raise SpecError(
            f"reference: {wanted} matches {len(matching)} cells ({', '.join(c.id for c in matching[:4])}...); "
            "name a value for every axis"
        )
    return matching[0]
