"""The saved record of a run: versioned pydantic types, atomic writes, loading old runs, and masking of secrets.

results.json is rewritten after every cell through a temporary file, fsync and rename, so a kill at any moment leaves
either the previous complete file or the new complete file, never a truncated one. Every renderer (report.md, CSV,
plots) reads this record, so an old run can be re-rendered without re-running it.
"""

from __future__ import annotations

import json
import os
import platform
import re
import socket
import subprocess
import tempfile
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from evalharness.compare import CellDrift
from evalharness.load import ScenarioResult
from evalharness.logscan import CrashReason, LogWarning
from evalharness.probes import ProbeSummary
from evalharness.quality import TaskScore
from evalharness.retries import RequestTally

SCHEMA_VERSION = 1
Status = Literal["ok", "crashed", "garbage", "timeout", "error"]
# whole words of a flag or variable name: HF_TOKEN, --api-key, DB_PASSWORD; not --speculative-num-draft-tokens
SECRET_NAME = re.compile(r"(^|[-_])(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)($|[-_=])", re.IGNORECASE)
MASK = "***"


class TeardownRecord(BaseModel):
    seconds: float
    signals: list[str] = []
    killed_stragglers: list[int] = []
    leftover: list[int] = []
    gpu_memory_before_mib: list[int] | None = None  # per GPU, before launch (None without nvidia-smi)
    gpu_memory_after_mib: list[int] | None = None  # per GPU, after teardown


class CellResult(BaseModel):
    """Everything one cell produced. `phase` is where it stopped ('done' when it went through every phase)."""

    id: str
    axes: dict[str, str]
    settings_hash: str
    args: dict[str, Any]
    env: dict[str, str]
    argv: list[str]
    status: Status
    phase: str
    reason: str | None = None
    crash: CrashReason | None = None
    warnings: list[LogWarning] = []
    startup_s: float | None = None
    resolved: dict[str, Any] = {}
    probes: ProbeSummary | None = None
    quality: list[TaskScore] = []
    throughput: list[ScenarioResult] = []
    distribution: dict[str, Any] | None = Field(None, description="scored continuations (cells/<id>/distribution.jsonl)")
    requests: dict[str, RequestTally] = Field(default_factory=dict, description="per phase: requests, failures "
                                              "after retries, retries, error kinds (throughput: per scenario)")
    drift: CellDrift | None = Field(None, description="against the run's reference cell; recomputed by `report`")
    log: str | None = Field(None, description="the server log, relative to the run folder")
    teardown: TeardownRecord | None = None
    started_at: str
    finished_at: str
    duration_s: float


class RunMeta(BaseModel):
    harness_version: str
    engine: str
    engine_version: str | None = None
    lm_eval_version: str | None = None
    git_revision: str | None = None
    machine: dict[str, Any] = {}
    matrix_name: str
    matrix_path: str
    matrix: dict[str, Any] = Field(default_factory=dict, description="the validated matrix, secrets masked")
    started_at: str
    command: list[str] = []


class RunResult(BaseModel):
    schema_version: Literal[1] = SCHEMA_VERSION
    meta: RunMeta
    reference: str
    cell_order: list[str]
    cells: dict[str, CellResult] = {}
    complete: bool = False
    interrupted: bool = False
    notes: list[str] = []

    def pending(self) -> list[str]:
        return [cid for cid in self.cell_order if cid not in self.cells]


class ResultsError(Exception):
    """A results file that is missing, unreadable or not a run of this schema."""


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def mask_env(env: dict[str, str]) -> dict[str, str]:
    return {k: (MASK if SECRET_NAME.search(k) else v) for k, v in env.items()}


def mask_args(args: dict[str, Any]) -> dict[str, Any]:
    return {k: (MASK if SECRET_NAME.search(k) and v not in (True, False, None) else v) for k, v in args.items()}


def mask_argv(argv: list[str]) -> list[str]:
    """`--api-key X` and `--hf-token=X` become `--api-key ***`: secrets never reach a results file or a report."""
    out: list[str] = []
    hide_next = False
    for item in argv:
        if hide_next and not item.startswith("--"):
            out.append(MASK)
            hide_next = False
            continue
        hide_next = False
        flag, eq, _ = item.partition("=")
        if flag.startswith("-") and SECRET_NAME.search(flag):
            if eq:
                out.append(f"{flag}={MASK}")
            else:
                out.append(item)
                hide_next = True
        else:
            out.append(item)
    return out


def atomic_write_text(path: Path, text: str) -> None:
    """Write through a temporary file in the same folder, fsync, then rename over the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; results are ordinary files
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def save_run(run: RunResult, out_dir: Path) -> Path:
    path = out_dir / "results.json"
    atomic_write_text(path, run.model_dump_json(indent=2) + "\n")
    return path


def load_run(out_dir: Path) -> RunResult:
    path = out_dir / "results.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ResultsError(f"{path}: no results here (is {out_dir} a run folder?)") from None
    except (OSError, ValueError) as exc:
        raise ResultsError(f"{path}: not readable JSON: {exc}") from None
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ResultsError(f"{path}: schema_version {data.get('schema_version')!r}; this harness reads {SCHEMA_VERSION}")
    try:
        return RunResult.model_validate(data)
    except ValidationError as exc:
        raise ResultsError(f"{path}: not a valid run record: {exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}") from None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_revision(start: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=start, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=start, capture_output=True,
                           text=True, timeout=5, check=False).stdout.strip()
    return out.stdout.strip() + ("+dirty" if dirty else "")


def machine_info() -> dict[str, Any]:
    import psutil

    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
    }


def harness_versions() -> dict[str, str | None]:
    return {"harness": _version("evalharness"), "lm_eval": _version("lm-eval") or _version("lm_eval")}
