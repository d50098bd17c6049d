"""The quality phase: lm-eval tasks through the cell's endpoint, one task per subprocess, per-sample records kept.

lm-eval aborts a whole evaluation when one request keeps failing after its retries. So each task runs in its own
process (phases/_lmeval_worker.py, run as a module) with a per-cell, per-task SQLite request cache: when a task fails and the
server is still alive, it is run again with backoff and the cache makes the rerun resume where it stopped; when the
server has died, the phase stops and the runner records the cell as crashed at phase quality. Finished tasks are
never lost: each writes its summary and samples before the next starts.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from evalharness.phases.retries import ServerDied
from evalharness.records.measures import TaskScore

SHIPPED_TASKS = Path(__file__).resolve().parents[2] / "tasks" / "lm_eval"


def primary_metric(metrics: dict[str, Any]) -> tuple[str | None, float | None, float | None]:
    """The headline metric of an lm-eval task result: exact_match first, then acc, then the first other number;
    with its standard error when lm-eval computed one (keys look like 'exact_match,strict' and
    'exact_match_stderr,strict')."""
    keys = [k for k in metrics if "_stderr" not in k and isinstance(metrics[k], (int, float))]
    for prefix in ("exact_match", "acc,", "acc_norm", ""):
        chosen = next((k for k in keys if k.startswith(prefix)), None)
        if chosen:
            name, _, filt = chosen.partition(",")
            stderr = metrics.get(f"{name}_stderr,{filt}" if filt else f"{name}_stderr")
            return chosen, float(metrics[chosen]), float(stderr) if isinstance(stderr, (int, float)) else None
    return None, None, None


def _tail(path: Path, lines: int = 6) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except FileNotFoundError:
        return ""
    return " | ".join(line.strip() for line in text[-lines:])


def run_task(task: str, spec: dict[str, Any], task_dir: Path, run_dir: Path, server_alive: Callable[[], bool],
             retries: int, timeout_s: float) -> TaskScore:
    """One task with retries; raises ServerDied when the server is gone."""
    task_dir.mkdir(parents=True, exist_ok=True)
    task_dir = task_dir.absolute()  # the worker changes into the tasks folder: relative paths would land there
    spec = {**spec, "task": task, "out_dir": str(task_dir), "cache": str(task_dir / "cache")}
    spec_path = task_dir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=2))
    begin = time.monotonic()
    error = ""
    for attempt in range(1, retries + 2):
        log_path = task_dir / f"lm_eval.attempt{attempt}.log"
        with open(log_path, "wb") as log:
            try:
                proc = subprocess.run([sys.executable, "-m", "evalharness.phases._lmeval_worker", str(spec_path)],
                                      stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                      timeout=timeout_s, check=False)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                code = None
        summary_path = task_dir / "summary.json"
        if code == 0 and summary_path.exists():
            summary = json.loads(summary_path.read_text())
            metric, value, stderr = primary_metric(summary.get("metrics", {}))
            return TaskScore(task=task, version=summary.get("version"), metric=metric, value=value, stderr=stderr,
                             n=(summary.get("n_samples") or {}).get("effective"), attempts=attempt,
                             seconds=round(time.monotonic() - begin, 2),
                             samples=str((task_dir / "samples.jsonl").relative_to(run_dir.absolute())))
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


def run_quality(tasks: list[str], base_url: str, model: str, cell_dir: Path, run_dir: Path,
                server_alive: Callable[[], bool], *, include_path: str | None, include_defaults: bool, api: str,
                tokenizer: str,
                concurrency: int, limit: int | None, request_timeout_s: float, task_timeout_s: float,
                retries: int, done: list[TaskScore]) -> None:
    """Every task in order; each finished task is appended to `done` at once, so a crash keeps what was finished."""
    spec = {"include_path": include_path, "include_defaults": include_defaults, "base_url": base_url,
            "model": model, "api": api, "tokenizer": tokenizer, "concurrency": concurrency, "limit": limit, "timeout_s": request_timeout_s,
            "max_retries": 5}
    for task in tasks:
        done.append(run_task(task, spec, cell_dir / "quality" / task, run_dir, server_alive, retries, task_timeout_s))
