"""Where a run's time went (pure): per cell, wall time by phase, the share spent outside the engine's own work, and an
estimate of the whole matrix's wall time once its reference cell has run.

The engine's own work is the time it spends answering measuring requests: probes, each measure's phase
(evalharness/measures/: the numerics check, batch dependence, the prefix cache, calls under load), quality (each
task's time includes starting lm-eval's process, a few seconds, so the share outside is, if anything, understated)
and throughput. Outside it: startup (launch to ready), resolve, teardown, and whatever no phase clock covered.
"""

from __future__ import annotations

from evalharness.measures.catalog import MEASURES
from evalharness.measures.specs import SPECS
from evalharness.records.run import CellResult, RunResult

ENGINE_WORK = ("probes", *MEASURES, "quality", "throughput")
GROUPS = ("startup", "resolve", "probes", *MEASURES, "quality", "throughput", "teardown")
# a measure on unless a matrix turns it off (the numerics check) keeps its column in every run, timed or not
ON_BY_DEFAULT = frozenset(spec.key for spec in SPECS if spec.section().enabled)


def shown_groups(run: RunResult) -> tuple[str, ...]:
    """GROUPS less the measures no cell of the run timed (a measure's column only where it ran; the numerics
    check's, on by default, always)."""
    timed = {group_of(phase) for cell in run.cells.values() for phase in (cell.phase_seconds or {})}
    return tuple(g for g in GROUPS if g not in MEASURES or g in ON_BY_DEFAULT or g in timed)


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


def per_pending_cell_s(run: RunResult) -> tuple[float, str] | None:
    """What a cell still to run is expected to take, and on what basis: the median wall time of the finished cells
    other than the reference that ran to the end (their own phases: the reference also measures what only it
    measures, and a crashed or garbage cell stops early), else the reference's. None until the reference has run."""
    reference = run.cells.get(run.reference)
    if reference is None:
        return None
    own = sorted(c.duration_s for cid, c in run.cells.items() if cid != run.reference and c.status == "ok")
    if not own:
        return reference.duration_s, f"the reference's {reference.duration_s:.0f} s"
    middle = len(own) // 2
    median = own[middle] if len(own) % 2 else (own[middle - 1] + own[middle]) / 2
    return median, f"{median:.0f} s each, the median of {len(own)} finished cell{'s' if len(own) != 1 else ''}"


def remaining_s(run: RunResult) -> float | None:
    """Seconds the cells still to run are expected to take (per_pending_cell_s each); None until the reference ran."""
    per_cell = per_pending_cell_s(run)
    if per_cell is None:
        return None
    return sum(1 for cid in run.cell_order if cid not in run.cells) * per_cell[0]


def estimate_total_s(run: RunResult) -> float | None:
    """The whole matrix's wall time: the finished cells' own times plus `remaining_s`. None until the reference
    has run."""
    left = remaining_s(run)
    return None if left is None else sum(c.duration_s for c in run.cells.values()) + left


def estimate_line(run: RunResult) -> str | None:
    """For the progress display after each cell: time so far, what is left and on what basis, the whole run."""
    left, per_cell = remaining_s(run), per_pending_cell_s(run)
    if left is None or per_cell is None:
        return None
    spent = sum(c.duration_s for c in run.cells.values())
    pending = sum(1 for cid in run.cell_order if cid not in run.cells)
    ahead = (f"about {left / 60:.0f} min left for {pending} cell{'s' if pending != 1 else ''} ({per_cell[1]})"
             if pending else "all cells done")
    line = (f"{len(run.cells)}/{len(run.cell_order)} cells in {spent / 60:.1f} min; {ahead}; whole matrix about "
            f"{(spent + left) / 60:.0f} min")
    confirm = (run.meta.matrix or {}).get("confirm") or {}
    if confirm.get("enabled", True) and confirm and run.confirmation is None:
        # a launch measures only the operating point and the confirmed tasks: not a cell's time, so not estimated
        line += f"; then confirmation: {2 * int(confirm.get('launches', 3))} launches a try, not in the estimate"
    return line
