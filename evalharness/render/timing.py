"""The report's "Where the time went" section: wall time per cell by phase, the share outside the engine's own work,
and the estimate of the whole matrix against what it took."""

from __future__ import annotations

from evalharness.analysis.timing import estimate_total_s, grouped, outside_share, shown_groups
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text


def _cell_row(run: RunResult, cid: str, columns: tuple[str, ...]) -> list[str] | None:
    cell = run.cells.get(cid)
    if cell is None:
        return None
    groups = grouped(cell)
    share = outside_share(cell)
    cols = [f"{groups[g]:.0f}" if g in groups else "" for g in (*columns, "other")]
    return [f"`{cid}`", md_text(cell.status), f"{cell.duration_s:.0f}", *cols,
            "" if share is None else f"{share:.0%}"]


def timing_section(run: RunResult) -> list[str]:
    columns = shown_groups(run)
    rows = [row for row in (_cell_row(run, cid, columns) for cid in run.cell_order) if row]
    if not any(run.cells[cid].phase_seconds for cid in run.cells):
        return []
    done = [c for c in run.cells.values()]
    spent = sum(c.duration_s for c in done)
    timed = [c for c in done if c.phase_seconds]
    engine_share = None
    if timed:
        outside = sum((outside_share(c) or 0.0) * c.duration_s for c in timed)
        engine_share = outside / max(1e-9, sum(c.duration_s for c in timed))
    lines = ["## Where the time went", "",
             "Wall time per cell in seconds, by phase (quality and throughput summed over tasks and scenarios; a "
             "check's column where it ran; "
             "per task and per scenario in results.json, `phase_seconds`; the harness's own work "
             "between requests counts "
             "in the phase it serves, `other` is what no phase covered). Outside the engine's work: startup, resolve, "
             "teardown and `other`; each quality task's time includes starting lm-eval's process.", "",
             markdown_table(["cell", "status", "total s", *columns, "other", "outside engine work"], rows), ""]
    summary = f"Cells took {spent / 60:.1f} min in all"
    if engine_share is not None:
        summary += f", {engine_share:.0%} of it outside the engine's own work"
    estimate = estimate_total_s(run)
    reference = run.cells.get(run.reference)
    if estimate is not None and reference is not None:
        summary += (f". Estimate once the reference had run: {len(run.cell_order)} cells × its "
                    f"{reference.duration_s:.0f} s = {len(run.cell_order) * reference.duration_s / 60:.1f} min")
        if len(run.cells) < len(run.cell_order):
            summary += f"; with the cells done so far, about {estimate / 60:.0f} min for the whole matrix"
    lines += [summary + ".", ""]
    return lines
