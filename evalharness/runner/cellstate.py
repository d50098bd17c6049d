"""The state of one cell while it runs (CellRun) and the CellResult it freezes into; the exception a phase raises
when it has judged the cell. Shared by cell.py (the lifecycle) and cellphases.py (the measuring phases)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


from evalharness.matrix.schema import Cell
from evalharness.records.masking import mask_args, mask_argv, mask_env
from evalharness.records.measures import ProbeSummary, RequestTally, ScenarioResult, TaskScore
from evalharness.records.provenance import now_iso
from evalharness.records.run import CellResult, TeardownRecord
from evalharness.runner.phaseclock import PhaseClock
from evalharness.runner.progress import Progress
from evalharness.serving.engines import Engine, LaunchPlan
from evalharness.serving.logscan import extract_warnings
from evalharness.serving.server import ServerProcess


class CellStopped(Exception):
    """A phase judged the cell (status and reason already set): its remaining phases would measure nothing."""


def read_log(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return ""


class CellRun:
    """The mutable state of one cell while it runs; `result()` freezes it into a CellResult."""

    def __init__(self, cell: Cell, plan: LaunchPlan, run_dir: Path):
        self.cell = cell
        self.plan = plan
        self.run_dir = run_dir
        self.cell_dir = run_dir / "cells" / cell.id
        self.log_path = self.cell_dir / "server.log"
        self.status = "error"
        self.phase = "launch"
        self.reason: str | None = None
        self.crash = None
        self.startup_s: float | None = None
        self.port_relaunches: list[str] = []
        self.resolved: dict = {}
        self.server_facts: dict = {}
        self.teardown: TeardownRecord | None = None
        self.server: ServerProcess | None = None
        self.probes: ProbeSummary | None = None
        self.quality: list[TaskScore] = []
        self.screened: str | None = None
        self.throughput: list[ScenarioResult] = []
        self.measures: dict[str, dict[str, Any]] = {}  # each measure's record by its key (evalharness/measures/)
        self.requests: dict[str, RequestTally] = {}
        self.started_at = now_iso()
        self.begin = time.monotonic()
        self.clock = PhaseClock()  # wall time per phase (runner/phaseclock.py)

    def enter(self, name: str | None, progress: Progress | None = None) -> None:
        """Stop the running phase's clock and start `name`'s (None: stop only); tell the progress line."""
        self.clock.enter(name)
        if name and progress is not None:
            progress.phase(name)

    def result(self, engine: Engine) -> CellResult:
        log_text = read_log(self.log_path)
        return CellResult(
            id=self.cell.id,
            axes=self.cell.axes,
            settings_hash=self.cell.settings_hash,
            engine=engine.name,
            args=mask_args(self.cell.args),
            env=mask_env(self.cell.env),
            argv=mask_argv(self.plan.argv),
            status=self.status,
            phase=self.phase,
            reason=self.reason,
            crash=self.crash,
            warnings=extract_warnings(log_text, engine.log_rules),
            startup_s=self.startup_s,
            port_relaunches=self.port_relaunches,
            resolved=self.resolved,
            server=self.server_facts,
            probes=self.probes,
            quality=self.quality,
            screened=self.screened,
            throughput=self.throughput,
            measures=self.measures,
            requests=self.requests,
            log=str(self.log_path.relative_to(self.run_dir)) if self.log_path.exists() else None,
            teardown=self.teardown,
            phase_seconds=self.clock.times(self.quality),
            started_at=self.started_at,
            finished_at=now_iso(),
            duration_s=round(time.monotonic() - self.begin, 3),
        )
