"""Where a run's time went (pure): per cell, wall time by phase, the share spent outside the engine's own work, and an
estimate of the whole matrix's wall time once its reference cell has run.

The engine's own work is the time it spends answering measuring requests: probes, distribution, quality (each
task's time includes starting lm-eval's process, a few seconds, so the share outside is, if anything, understated)
and throughput. Outside it: startup (launch to ready), resolve, teardown, and whatever no phase clock covered.
"""

from __future__ import annotations

from evalharness.records.run import CellResult, RunResult

ENGINE_WORK = ("probes", "distribution", "quality", "throughput")
GROUPS = ("startup", "resolve", "probes", "distribution", "quality", "throughput", "teardown")


def group_of(phase: str) -> str:
    """'quality:eh_capitals' -> 'quality'; 'throughput:single' -> 'throughput'."""
    return phase.split(":", 1)[0]


def grouped(cell: CellResult) -> dict[str, float]:
    """Seconds per kind of phase, plus 'other': the cell's wall time that no phase clock covered (before the launch,
    after teardown; the harness's work inside a phase counts in it); empty for cells recorded before phases were
    timed."""
    if not cell.phase_seconds:
        return {}
    out: dict[str, float] = {}
    for phase, seconds in cell.phase_seconds.items():
        out[group_of(phase)] = out.get(group_of(phase), 0.0) + seconds
    out["other"] = max(0.0, cell.duration_s - sum(out.values()))
    return out


def outside_share(cell: CellResult) -> float | None:
    """The share of the cell's wall time spent outside the engine's own work (None: not timed)."""
    groups = grouped(cell)
    if not groups or cell.duration_s <= 0:
        return None
    engine = sum(v for k, v in groups.items() if k in ENGINE_WORK)
    return max(0.0, 1.0 - engine / cell.duration_s)


def estimate_total_s(run: RunResult) -> float | None:
    """The whole matrix's wall time: the finished cells' own times, plus the reference's time for each cell still to
    run (an upper estimate: crashed and garbage cells stop early; cells that are slower than the reference, such as
    bf16 without native support, take longer). None until the reference has run."""
    reference = run.cells.get(run.reference)
    if reference is None:
        return None
    pending = sum(1 for cid in run.cell_order if cid not in run.cells)
    return sum(c.duration_s for c in run.cells.values()) + pending * reference.duration_s


def estimate_line(run: RunResult) -> str | None:
    """For the progress display after each cell: time so far and the estimate of the whole matrix."""
    total = estimate_total_s(run)
    if total is None:
        return None
    spent = sum(c.duration_s for c in run.cells.values())
    pending = sum(1 for cid in run.cell_order if cid not in run.cells)
    basis = (f"{pending} pending cells at the reference's {run.cells[run.reference].duration_s:.0f} s each"
             if pending else "all cells done")
    return (f"time so far {spent / 60:.1f} min over {len(run.cells)}/{len(run.cell_order)} cells; whole matrix about "
            f"{total / 60:.0f} min ({basis})")
