"""The saved record of a run (results.json): the run, its metadata and one record per cell; versioned pydantic types.

Every renderer (report.md, CSV, plots) reads this record, so an old run can be re-rendered without re-running it.
Field names are the schema: old runs must still load.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from evalharness.records.decision import Decision
from evalharness.records.drift import CellDrift, TaskNoise, lift_moved_measures
from evalharness.records.measures import (CrashReason, LogWarning, ProbeSummary, RequestTally,
                                          ScenarioResult, TaskScore)

SCHEMA_VERSION = 1
Status = Literal["ok", "crashed", "garbage", "timeout", "error"]


# the launch flags whose product is the GPUs one server uses (vLLM's long and short names, SGLang's)
PARALLEL_FLAGS = (
    ("--tensor-parallel-size", "-tp", "--tp-size", "--tp"),
    ("--pipeline-parallel-size", "-pp", "--pp-size", "--pp"),
    ("--data-parallel-size", "-dp", "--dp-size", "--dp"),
)


def parallel_gpus(args: dict[str, Any]) -> int:
    """GPUs a server launched with these args uses: tensor x pipeline x data parallel sizes (1 where absent)."""
    total = 1
    for names in PARALLEL_FLAGS:
        for name in names:
            value = args.get(name)
            if value not in (None, False, True):
                try:
                    total *= max(int(value), 1)
                except (TypeError, ValueError):
                    pass
                break
    return total


class TeardownRecord(BaseModel):
    """How a server was torn down (serving/server.py fills it; the runner adds GPU memory)."""

    seconds: float
    sigterm_to: str = "group"  # "group" or "launcher" (the engine's teardown style, serving/engines)
    signals: list[str] = []  # in order: SIGTERM (to sigterm_to), SIGKILL (to the group, after the grace period)
    launcher_exited_s: float | None = None  # seconds from SIGTERM until the launcher exited (None: killed)
    killed_stragglers: list[int] = []
    leftover: list[int] = []
    gpu_memory_before_mib: list[int] | None = None  # per GPU, before launch (None without nvidia-smi)
    gpu_memory_after_mib: list[int] | None = None  # per GPU, after teardown and the wait for release
    gpu_release_wait_s: float | None = None  # how long teardown waited for GPU memory to come back


class CellResult(BaseModel):
    """Everything one cell produced. `phase` is where it stopped ('done' when it went through every phase)."""

    id: str
    axes: dict[str, str]
    settings_hash: str
    engine: str | None = Field(None, description="the engine that served the cell (None in runs before the engine "
                               "was an axis: the run's meta.engine)")
    args: dict[str, Any]
    env: dict[str, str]
    argv: list[str]
    status: Status
    phase: str
    reason: str | None = None
    crash: CrashReason | None = None
    warnings: list[LogWarning] = []
    startup_s: float | None = None
    port_relaunches: list[str] = Field(default_factory=list, description="launches lost because another process "
                                       "took the cell's port during startup, each relaunched on a new port")
    resolved: dict[str, Any] = {}
    server: dict[str, Any] = Field(default_factory=dict, description="what the engine says about itself once ready: "
                                   "memory_gb, token_capacity, max_running_requests, startup_s, versions")
    probes: ProbeSummary | None = None
    quality: list[TaskScore] = []
    throughput: list[ScenarioResult] = []
    measures: dict[str, dict[str, Any]] = Field(default_factory=dict, description="each measure's record by its key "
                                                "(evalharness/measures/specs.py reads one back as its model)")
    _lift = model_validator(mode="before")(lift_moved_measures)  # a run saved before its measures moved
    requests: dict[str, RequestTally] = Field(default_factory=dict, description="per phase: requests, failures "
                                              "after retries, retries, error kinds (throughput: per scenario)")
    drift: CellDrift | None = Field(None, description="against the run's reference cell; recomputed by `report`")
    screened: str | None = Field(None, description="why the cell ran only the first look of quality: not faster "
                                 "than the reference beyond the noise (analysis/sequential.py)")
    log: str | None = Field(None, description="the server log, relative to the run folder")
    teardown: TeardownRecord | None = None
    node: dict[str, Any] | None = Field(None, description="the machine that ran the cell when it is not the run's own "
                                        "(meta.machine): a Ray node, with its node id, host, CPU and GPU models")
    phase_seconds: dict[str, float] = Field(default_factory=dict, description="wall time per phase in the order "
                                            "they ran (startup, resolve, probes, distribution, quality:<task>, "
                                            "throughput:<scenario>, teardown); empty in runs before it was recorded")
    started_at: str
    finished_at: str
    duration_s: float

    def engine_version(self, engine: str) -> str | None:
        """The version the engine reported: its resolved settings' `version` (vLLM), else its own entry in the
        server's versions (SGLang 0.5.23's /server_info version is a measured fact, records it there). `engine` is
        the run's; the cell's own, where recorded, wins."""
        version = self.resolved.get("version") or (self.server.get("versions") or {}).get(self.engine or engine)
        return str(version) if version else None


class ClaimRecord(BaseModel):
    """One confirmed task's "not worse" as a try's data decided it (analysis/confirm.py TaskClaim)."""

    task: str
    drop: float | None = None  # reference minus finalist; positive is worse (None: not compared)
    upper: float | None = None  # its one-sided upper bound at the try's level
    margin: float
    not_worse: bool
    equivalent: bool = False
    documents: int = 0
    text: str = ""


class TryVerdict(BaseModel):
    """A try's decision from its launches alone, recomputed with the drift (analysis/confirmation.py)."""

    confirmed: bool
    speed: str  # the speed rule's words over launches ('1.23x [95%: 1.10–1.38] faster (2 launches against 2, ...)')
    ratio: float | None = None
    low: float | None = None
    high: float | None = None
    faster: bool = False
    launches: tuple[int, int] = (0, 0)  # (finalist, reference) launches with a figure
    launch_sd: float | None = None  # launch-to-launch SD beyond the repeats, on the log scale
    tasks: list[ClaimRecord] = []
    why_not: str = ""
    unit: str = "output tok/s"  # what the speed is read in (goodput tok/s under the report's SLO)
    figures: dict[str, list[float]] = {}  # launch id -> its repeats the verdict kept, in `unit`


class ConfirmTry(BaseModel):
    """One try of the second stage (issue 61): its finalist, its level and its launches' ids (records/confirm.py)."""

    finalist: str  # the exploration cell confirmed in this try
    level: float  # the one-sided level of its tests: alpha / tries
    scenario: str | None = None  # the operating point's step its speed is read at (exploration's reference's)
    reference_launches: list[str] = []  # launch ids of the reference's relaunches in this try
    finalist_launches: list[str] = []  # and of the finalist's (they run interleaved: reference, finalist, ...)
    verdict: TryVerdict | None = None  # once its launches finished


class ConfirmationRecord(BaseModel):
    """The second stage: what exploration handed on, each try, every finished launch."""

    explored: dict[str, float] = Field(default_factory=dict, description="each candidate's exploration speed-up at "
                                       "the operating point (point estimate), by cell")
    ruled_out: dict[str, str] = Field(default_factory=dict, description="why exploration ruled a cell out")
    order: list[str] = Field(default_factory=list, description="the finalists in the order they are tried")
    tries: list[ConfirmTry] = []
    launches: dict[str, CellResult] = Field(default_factory=dict, description="every finished confirmation launch")
    complete: bool = False


class NoEffect(BaseModel):
    """Two cells one axis apart with the same resolved settings and the same probe answers (analysis/noeffect.py)."""

    axis: str
    values: list[str]
    cells: list[str]
    probes: int  # probe answers compared, all identical


class RunMeta(BaseModel):
    harness_version: str
    engine: str = Field(description="the engine of the run; where cells ran on several, their names joined with ' + ' "
                        "in the order of the cells (each cell records its own)")
    engine_version: str | None = None
    lm_eval_version: str | None = None
    git_revision: str | None = None
    machine: dict[str, Any] = {}
    matrix_name: str
    matrix_path: str
    matrix: dict[str, Any] = Field(default_factory=dict, description="the validated matrix, secrets masked")
    started_at: str
    command: list[str] = []
    cluster: dict[str, Any] | None = Field(None, description="a Ray run: address, Ray version, what a cell asked for")


class RunResult(BaseModel):
    schema_version: Literal[1] = SCHEMA_VERSION
    meta: RunMeta
    reference: str
    cell_order: list[str]
    cells: dict[str, CellResult] = {}
    complete: bool = False
    interrupted: bool = False
    notes: list[str] = []
    no_effect: list[NoEffect] = []  # recomputed with the drift (`report` refreshes it)
    noise: list[TaskNoise] = []  # the reference's A/A per task, from its repeats (recomputed with the drift)
    measures: dict[str, dict[str, Any]] = Field(default_factory=dict, description="each measure's comparison of the "
                                                "run's cells as one family, by its key (batching: quality among "
                                                "concurrent requests against alone); recomputed with the drift")
    confirmation: ConfirmationRecord | None = None  # the second stage, where the matrix has one (records/confirm.py)
    decision: Decision | None = None  # what the run ships and why (analysis/decision.py, recomputed with the drift)

    def engine_version(self) -> str | None:
        """The engine's version for the run: as recorded when the first cell finished ok, else as any ok cell reported
        it (runs recorded before SGLang's version moved to the server facts)."""
        if self.meta.engine_version:
            return self.meta.engine_version
        return next((v for c in self.cells.values() if c.status == "ok" and (v := c.engine_version(self.meta.engine))),
                    None)

    def cell_engine(self, cell_id: str) -> str:
        """The engine that served one cell: its own record, else the run's (runs before the engine was an axis)."""
        cell = self.cells.get(cell_id)
        return (cell.engine if cell is not None and cell.engine else None) or self.meta.engine

    def engines(self) -> dict[str, str | None]:
        """Engine -> the version its first ok cell reported, for every engine that served a finished cell, the
        reference's first (one entry in a run on one engine)."""
        order = sorted(self.cells, key=lambda cid: cid != self.reference)
        out: dict[str, str | None] = {}
        for cid in order:
            cell = self.cells[cid]
            engine = self.cell_engine(cid)
            if out.get(engine) is None:
                out[engine] = cell.engine_version(engine) if cell.status == "ok" else None
        return out

    def engine_line(self) -> str:
        """'vllm 0.32.0', or 'vllm 0.32.0 (the reference's) and sglang 0.5.23' where cells ran on several (plain text;
        the renderers escape it)."""
        engines = self.engines()
        if len(engines) <= 1:
            return f"{self.meta.engine} {self.engine_version() or '(version unknown)'}"
        named = [f"{engine} {version or '(version unknown)'}" for engine, version in engines.items()]
        return f"{named[0]} (the reference's) and {', '.join(named[1:])}"

    def pending(self) -> list[str]:
        return [cid for cid in self.cell_order if cid not in self.cells]

    def status_summary(self) -> str:
        """'2 crashed, 3 ok': finished cells counted by status, statuses in alphabetical order ('' when none)."""
        counts: dict[str, int] = {}
        for cell in self.cells.values():
            counts[cell.status] = counts.get(cell.status, 0) + 1
        return ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
