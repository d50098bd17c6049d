"""The calls-modes table (issue 60, 2), for report.md and report.html alike: per cell and calls task, the valid
answers in each mode (one at a time and under load, streamed and not) and which pairs of modes fall (compare.py).
Plain text cells; the registry (measures/reports.py) escapes and lays them out. Reads records only."""

from __future__ import annotations

from evalharness.measures.calls.spec import KEY, MODES, CallsModesChange, CallsModesRecord
from evalharness.measures.specs import read
from evalharness.records.run import RunResult

LABELS = {"alone": "one at a time", "streamed": "streamed", "load": "under load",
          "load_streamed": "under load, streamed"}


def tables(run: RunResult) -> list[dict] | None:
    """The one table ({note, header, rows}; rows' first column a cell id), or None when the check did not run."""
    rows, concurrency = [], None
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        record = read(cell.measures, KEY, CallsModesRecord) if cell is not None else None
        if record is None:
            continue
        if record.unavailable:
            rows.append([cid, "", *([""] * len(MODES)), f"not measured: {record.unavailable}"])
            continue
        concurrency = record.concurrency
        change = read(cell.drift.measures if cell.drift else None, KEY, CallsModesChange)
        for task in record.tasks:
            rows.append([cid, task.task, *(f"{task.valid(m)}/{task.answered(m)}" for m in MODES),
                         _verdict(cid == run.reference, task.task, change)])
    if not rows:
        return None
    note = (f"Each calls task's cases answered four ways: one request at a time and {concurrency or '?'} at once, "
            "each not streamed and streamed (the stream put together as a client would). A mode is paired per case "
            "against the mode it differs from by one thing (streamed against not; under load against one at a "
            "time) and flagged when its share of valid answers is credibly lower (alpha of the gate, and at least "
            "2 points): the cell is its own floor.")
    return [{"note": note, "header": ["cell", "task", *(f"valid, {LABELS[m]}" for m in MODES), "verdict"],
             "rows": rows}]


def _verdict(is_reference: bool, task: str, change: CallsModesChange | None) -> str:
    if change is None:
        return "" if is_reference else "not compared"
    fallen = [c for c in change.changes if c.task == task and c.flagged]
    if not fallen:
        return "not flagged"
    return "flagged: " + "; ".join(f"{LABELS[c.mode]} {c.mode_valid:.0%} against {LABELS[c.base]} {c.base_valid:.0%}"
                                   for c in fallen)
