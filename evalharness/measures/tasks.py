"""Every task kind (issue 59): quality tasks that a measure's folder answers with a worker of its own instead of
lm-eval's (catalog.py TASK_KINDS, each folder's task.py). The runner asks here for a task's worker spec and for the
data problems of the tasks claimed, `validate` for what a cell's flags mean for them; phases/quality.py runs whichever
worker a task's spec names and never names a kind."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from evalharness.measures.catalog import TASK_KINDS, role_module

KINDS: tuple[ModuleType, ...] = tuple(import_module(role_module(key, "task")) for key in TASK_KINDS)


def claimed(task: str, include_path: str | None) -> tuple[ModuleType, Path] | None:
    """The kind that answers `task` and the task's data file, or None (an lm-eval task)."""
    for kind in KINDS:
        path = kind.claim(task, include_path)
        if path is not None:
            return kind, path
    return None


def worker_spec(task: str, include_path: str | None) -> dict[str, Any]:
    """What a claimed task adds to its worker spec (the worker module, its data); {} for an lm-eval task."""
    found = claimed(task, include_path)
    return found[0].worker_spec(found[1]) if found else {}


def data_problems(tasks: list[str], include_path: str | None) -> dict[str, str | None]:
    """Each claimed task's data problem (None: its data runs); the tasks not in it are lm-eval's."""
    return {task: found[0].data_problem(found[1]) for task in tasks if (found := claimed(task, include_path))}


def flag_notes(tasks: list[str], include_path: str | None, engine: Any, args: dict[str, Any]) -> list[str]:
    """What a cell's flags (`args`, read by its `engine`'s module) mean for the claimed tasks, each kind saying its
    own; their data checked before (`data_problems`)."""
    found = [claimed(task, include_path) for task in tasks]
    notes: list[str] = []
    for kind in KINDS:
        paths = [f[1] for f in found if f and f[0] is kind]
        notes += kind.flag_notes(paths, engine, args) if paths else []
    return notes
