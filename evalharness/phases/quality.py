"""The quality phase: lm-eval tasks through the cell's endpoint, one task per subprocess, per-sample records kept.
A repeat that finished before an interruption is not run again on resume (its folder's finished.json, same worker
settings): a resumed cell goes on from its last finished repeat, hence from its last complete look.

lm-eval aborts a whole evaluation when one request keeps failing after its retries. So each task runs in its own
process (phases/_lmeval_worker.py, run as a module) with a per-cell, per-task request journal (requests.jsonl,
phases/_lmeval_requests.py: every answer kept as it completes, sampled ones too): when a task fails and the server
is still alive, it is run again with backoff and sends only the requests not yet answered; a resumed run does the
same within an unfinished repeat; when the
server has died, the phase stops and the runner records the cell as crashed at phase quality. Finished tasks are
never lost: each writes its summary and samples before the next starts.
"""

from __future__ import annotations

import glob
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from evalharness.phases.retries import ServerDied
from evalharness.records.measures import CallsSummary, GenerationStats, RepeatScore, SubtaskScore, TaskScore

SHIPPED_TASKS = Path(__file__).resolve().parents[2] / "tasks" / "lm_eval"


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except FileNotFoundError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


FINISHED = "finished.json"
CONFIG_ERROR = 3  # the worker's exit for a matrix setting the task cannot meet (_lmeval_worker.py)
# differ between a run and its resume without changing what is measured: a new port; the module that answers a task of
# a measure's own kind (a run started before the calls worker moved into measures/calls/ named none)
VOLATILE = ("base_url", "worker")
LMEVAL_WORKER = "evalharness.phases._lmeval_worker"


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return {k: v for k, v in a.items() if k not in VOLATILE} == {k: v for k, v in b.items() if k not in VOLATILE}


def _mark_finished(task_dir: Path, spec: dict[str, Any], score: TaskScore) -> TaskScore:
    (task_dir / FINISHED).write_text(json.dumps({"spec": spec, "score": score.model_dump(mode="json")}))
    return score


def _finished(task_dir: Path, spec: dict[str, Any]) -> TaskScore | None:
    """A repeat this folder already finished with the same worker settings (a resumed cell: its folder is kept only
    when its settings hash is unchanged, runner/cellfolders.py), or None."""
    try:
        saved = json.loads((task_dir / FINISHED).read_text())
        if _same(saved["spec"], spec) and (task_dir / "samples.jsonl").exists():
            return TaskScore.model_validate(saved["score"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return None


def run_task(task: str, spec: dict[str, Any], task_dir: Path, run_dir: Path, server_alive: Callable[[], bool],
             retries: int, timeout_s: float) -> TaskScore:
    """One task with retries; raises ServerDied when the server is gone. A task of a measure's own kind (tool calls,
    JSON output: measures/tasks.py) names its worker in `spec["worker"]`, which writes the same files as lm-eval's."""
    task_dir.mkdir(parents=True, exist_ok=True)
    task_dir = task_dir.absolute()  # the worker changes into the tasks folder: relative paths would land there
    spec = {**spec, "task": task, "out_dir": str(task_dir)}
    worker = spec.get("worker") or LMEVAL_WORKER
    finished = _finished(task_dir, spec)
    if finished is not None:
        return finished  # this repeat finished before the run was interrupted: resuming goes on after it
    spec_path = task_dir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=2))
    begin = time.monotonic()
    error = ""
    for attempt in range(1, retries + 2):
        log_path = task_dir / f"lm_eval.attempt{attempt}.log"
        with open(log_path, "wb") as log:
            try:
                proc = subprocess.run([sys.executable, "-m", worker, str(spec_path)],
                                      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      timeout=timeout_s, check=False)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                code = None
        summary_path = task_dir / "summary.json"
        if code == 0 and summary_path.exists():
            summary = json.loads(summary_path.read_text())
            generation = summary.get("generation")
            return _mark_finished(task_dir, spec, TaskScore(task=task, version=summary.get("version"),
                             metric=summary.get("headline"),
                             value=summary.get("value"), stderr=summary.get("stderr"), n=summary.get("n"),
                             attempts=attempt, seconds=round(time.monotonic() - begin, 2),
                             samples=str((task_dir / "samples.jsonl").relative_to(run_dir.absolute())),
                             subtasks={k: SubtaskScore(**v) for k, v in (summary.get("subtasks") or {}).items()},
                             generation=GenerationStats(**generation) if generation else None,
                             aggregation=summary.get("aggregation"), higher_is_better=summary.get("higher_is_better"),
                             seed=spec.get("seed"), subset=summary.get("subset"),
                             calls=CallsSummary(**summary["calls"]) if summary.get("calls") else None))
        if code == CONFIG_ERROR:  # the matrix asks what the task cannot give (a headline it lacks): no retry helps
            return TaskScore(task=task, attempts=attempt, seconds=round(time.monotonic() - begin, 2),
                             error=_tail(log_path, 1)[-1000:])
        if code is None:
            error = f"timed out after {timeout_s:.0f}s"
        elif code == 0:
            error = f"lm-eval exited 0 but wrote no summary.json (see {log_path.name})"
        else:
            error = f"exit {code}: {_tail(log_path)}"
        if not server_alive():
            raise ServerDied(f"the server exited during task {task} ({error[:300]})")
        if attempt <= retries:
            time.sleep(min(30.0, 2.0 * 2 ** (attempt - 1)))
    return TaskScore(task=task, attempts=retries + 1, seconds=round(time.monotonic() - begin, 2), error=error[-1000:])


def repeat_dir(cell_dir: Path, task: str, repeat: int) -> Path:
    """Repeat 0 of a task in quality/<task>/ (where runs before repeats kept it), repeat k in
    quality/<task>/repeat-k/."""
    base = cell_dir / "quality" / task
    return base if repeat == 0 else base / f"repeat-{repeat}"


@dataclass(frozen=True)
class TaskSetup:
    """Where and how one cell's lm-eval tasks are asked: what every task and repeat of a run_quality call shares (the
    quality section's settings, runner/cellphases.py quality_settings)."""

    base_url: str  # the cell's OpenAI-compatible root
    model: str  # its served name
    include_path: str | None  # the task files (None: lm-eval's own, with include_defaults)
    include_defaults: bool
    api: str  # "completions" or "chat"
    tokenizer: str  # "remote", "local" or "none" (phases/_lmeval_models.py)
    request_timeout_s: float
    task_timeout_s: float  # one task's subprocess, all its requests
    retries: int  # a failed task run again, sending only the requests not yet answered
    seed: int = 1234  # repeat k sends seed + k
    extra_include_paths: tuple[str, ...] = ()  # the run's own task folders (the length buckets')


def run_quality(tasks: list[str], setup: TaskSetup, cell_dir: Path, run_dir: Path, server_alive: Callable[[], bool],
                *, concurrency: int, limit: int | None, done: list[TaskScore],
                per_task: Callable[[str], dict[str, Any]] = lambda task: {},
                repeats: Callable[[str], int] = lambda task: 1,
                at_look: Callable[[int, dict[str, TaskScore]], set[str]] | None = None) -> None:
    """Every task in order, repeat by repeat (all tasks' repeat 0 first, so a cell stopped early has every task
    once); repeat k sends seed `setup.seed`+k with every request and keeps its own request journal, so no repeat is
    answered from another's. Each task is appended to `done` when its repeat 0 finishes and its later repeats to it,
    so a crash keeps what was finished. `per_task(task)`: the task's own worker settings (generation, local data).
    `at_look(repeats_done, running)`: after each repeat, the tasks that are settled and run no more repeats."""
    seed = setup.seed
    spec = {"include_path": setup.include_path, "include_defaults": setup.include_defaults, "base_url": setup.base_url,
            **({"extra_include_paths": list(setup.extra_include_paths)} if setup.extra_include_paths else {}),
            "model": setup.model, "api": setup.api, "tokenizer": setup.tokenizer, "concurrency": concurrency,
            "limit": limit, "timeout_s": setup.request_timeout_s, "max_retries": 5}
    scores: dict[str, TaskScore] = {}
    stopped: set[str] = set()
    for repeat in range(max((repeats(task) for task in tasks), default=1)):
        for task in tasks:
            if repeat >= repeats(task) or task in stopped or (repeat and scores[task].error):
                continue
            task_spec = {**spec, **per_task(task), "seed": seed + repeat}
            score = run_task(task, task_spec, repeat_dir(cell_dir, task, repeat), run_dir, server_alive,
                             setup.retries, setup.task_timeout_s)
            if repeat == 0:
                scores[task] = score
                done.append(score)
                continue
            first = scores[task]
            first.repeats.append(RepeatScore(repeat=repeat, seed=seed + repeat, value=score.value,
                                             attempts=score.attempts, seconds=score.seconds, error=score.error,
                                             samples=score.samples, generation=score.generation))
            first.seconds = round(first.seconds + score.seconds, 2)
        if at_look is not None:
            stopped |= at_look(repeat + 1, {t: s for t, s in scores.items() if t not in stopped and not s.error})


class DataMissing(Exception):
    """A task's data is not on this machine (exit 2, before any server is launched)."""


def _data_file_problems(task: str, data: dict[str, Any]) -> list[str]:
    problems = []
    for split, paths in data["data_files"].items():
        for path in paths if isinstance(paths, list) else [paths]:
            if "{" in path:  # a per-subtask template: at least one file must match it
                pattern = path.replace("{task}", "*").replace("{dataset_name}", "*")
                if not glob.glob(pattern):
                    problems.append(f"task {task}: no data file matches {path} (split {split})")
            elif not Path(path).is_file():
                problems.append(f"task {task}: data file {path} (split {split}) does not exist")
    return problems


def check_task_data(tasks: list[str], data: dict[str, dict[str, Any]], include_path: str | None,
                    include_defaults: bool, timeout_s: float = 600.0) -> None:
    """Every lm-eval task's data, before any launch (a task of a measure's own kind is checked by its kind,
    measures/tasks.py): local data files must exist; a task taken from lm-eval's own tasks
    without local files must load offline from the Hugging Face cache (checked by loading it in a worker, which also
    finds what a task needs besides its data, such as ifeval's nltk files). Raises DataMissing naming each task."""
    problems = [p for task in tasks if task in data for p in _data_file_problems(task, data[task])]
    if problems:
        raise DataMissing("; ".join(problems))
    hub = [task for task in tasks if task not in data]
    if not include_defaults or not hub:
        return  # the shipped and include_path tasks carry their data with them
    with tempfile.TemporaryDirectory(prefix="evalharness-check-") as folder:
        spec_path = Path(folder) / "check.json"
        spec_path.write_text(json.dumps({"tasks": {task: None for task in hub}, "include_path": include_path,
                                         "include_defaults": include_defaults}))
        try:
            proc = subprocess.run([sys.executable, "-m", LMEVAL_WORKER, "--check",
                                   str(spec_path)], capture_output=True, text=True, timeout=timeout_s,
                                  stdin=subprocess.DEVNULL, check=False)
        except subprocess.TimeoutExpired:
            raise DataMissing(f"checking the data of {', '.join(hub)} took over {timeout_s:.0f}s") from None
    if proc.returncode != 0:
        named = [line for line in proc.stderr.splitlines() if line.startswith("task ")]
        raise DataMissing("; ".join(named)
                          or f"checking the data of {', '.join(hub)} failed: {_tail_text(proc.stderr)}")


def _tail_text(text: str, lines: int = 6) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])
