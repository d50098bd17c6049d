"""Which quality tasks are calls tasks, and what the quality phase and `validate` need to run and check them (the
task-kind role, measures/tasks.py): a task named by a data file <include_path>/<task>.jsonl or the shipped
tasks/calls/data/<task>.jsonl is answered by worker.py instead of lm-eval's. Imports its folder only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalharness.measures.calls.cases import CallsDataError, calls_task_path, load_cases

WORKER = "evalharness.measures.calls.worker"


def claim(task: str, include_path: str | None) -> Path | None:
    """The task's data file when it is a calls task, else None (an lm-eval task)."""
    return calls_task_path(task, include_path)


def worker_spec(path: Path) -> dict[str, Any]:
    """What the quality phase adds to a claimed task's worker spec: the worker module and its cases' file."""
    return {"worker": WORKER, "calls_data": str(path)}


def data_problem(path: Path) -> str | None:
    """Why the task's data would not run (a file that is not cases), or None."""
    try:
        load_cases(path)
    except CallsDataError as exc:
        return str(exc)
    return None


def flag_notes(paths: list[Path], engine: Any, args: dict[str, Any]) -> list[str]:
    """What a cell's flags mean for these tasks: its engine's own reading (`calls_flag_notes`: tool parser, grammar
    backend) for the kinds of case asked (tools, json); their data checked before (`data_problem`)."""
    kinds: set[str] = set()
    for path in paths:
        kinds |= {case.kind for case in load_cases(path)}
    return list(engine.calls_flag_notes(args, kinds))
