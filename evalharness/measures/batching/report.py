"""Batch dependence's tables (issue 39), for report.md and report.html alike: per cell, how many greedy answers
changed between alone and inside a full batch, beside the reference's own count, and whether the cell is flagged
(compare.py); then each cell's quality among its concurrent requests against the same documents answered one at a
time (compare.py `compare_run`, kept in RunResult.measures). Plain text cells; the registry (measures/reports.py)
escapes and lays them out. Reads records only."""

from __future__ import annotations

from evalharness.measures.batching.spec import KEY, BatchChange, BatchDependence, LoadDrifts
from evalharness.measures.specs import read
from evalharness.records.run import RunResult
from evalharness.render.drift import interval_text

CHANGED_HEADER = ["cell", "answers changed by batching", "first difference (chars, mean)", "verdict"]


def tables(run: RunResult) -> list[dict] | None:
    """Both tables ({note, header, rows}; rows' first column a cell id), the second only where tasks were answered
    alone; None when the phase did not run."""
    reference = run.cells.get(run.reference) if run.reference else None
    own = read(reference.measures, KEY, BatchDependence) if reference is not None else None
    if own is None:
        return None
    rows = [[run.reference, f"{own.differing()}/{len(own.answered())}", "", ""]]
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        record = read(cell.measures, KEY, BatchDependence) if cell is not None and cid != run.reference else None
        if record is None:
            continue
        change = read(cell.drift.measures if cell.drift else None, KEY, BatchChange)
        verdict = ("not compared" if change is None else
                   (f"flagged (p {change.p_value:.2g})" if change.flagged else
                    f"not flagged (p {change.p_value:.2g})" if change.p_value is not None else "not flagged"))
        first = ("" if change is None or change.mean_first_difference is None
                 else f"{change.mean_first_difference:.0f}")
        rows.append([cid, f"{record.differing()}/{len(record.answered())}", first, verdict])
    changed = {"note": f"The same {len(own.answers)} greedy prompts answered alone (one request at a time) and again "
                       f"among {own.concurrency} requests in flight, {own.max_tokens} tokens each; an answer that "
                       "differs by a character changed. Few engines are batch-invariant, so the reference's own count "
                       "is the floor: a cell is flagged when its share is credibly above it (paired by prompt, alpha "
                       "of the gate, and at least 2 points more).",
               "header": CHANGED_HEADER, "rows": rows}
    load = _load_table(run)
    return [changed] if load is None else [changed, load]


def _load_table(run: RunResult) -> dict | None:
    across = read(run.measures, KEY, LoadDrifts)
    if across is None or not across.load_drift:
        return None
    concurrency = across.load_drift[0].concurrency or "?"
    rows = []
    for entry in across.load_drift:
        d = entry.drift
        flips = f"{d.right_to_wrong}/{d.wrong_to_right}" if d.method == "score" else ""
        rows.append([entry.cell, d.task, str(d.paired), flips, _num(d.reference), _num(d.cell),
                     interval_text(d.delta, d.ci_low, d.ci_high, d.confidence) if d.delta is not None else "",
                     d.outcome or d.reason or "not compared"])
    return {"note": "Quality among concurrent requests against the same documents answered one request at a time: each "
                    f"cell's own answers at concurrency {concurrency} (the quality phase's) paired per document with "
                    "its answers alone, by the drift's test against the task's margin, Holm over these comparisons. "
                    "Worse means accuracy lost to batching itself, which a comparison with a reference served the same "
                    "way cannot see.",
            "header": ["cell", "task", "paired", "flips (right→wrong / wrong→right)", "alone",
                       f"at concurrency {concurrency}", "Δ [interval, confidence]", "verdict"], "rows": rows}


def _num(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"
