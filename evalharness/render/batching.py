"""The report's "Batch dependence" section (issue 39): per cell, how many greedy answers changed between alone and
inside a full batch, beside the reference's own count, and whether the cell is flagged (analysis/batching.py). Pure;
reads records only."""

from __future__ import annotations

from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text


def batching_section(run: RunResult) -> list[str]:
    reference = run.cells.get(run.reference) if run.reference else None
    if reference is None or reference.batching is None:
        return []
    own = reference.batching
    out = ["## Batch dependence", "",
           f"The same {len(own.answers)} greedy prompts answered alone (one request at a time) and again among "
           f"{own.concurrency} requests in flight, {own.max_tokens} tokens each; an answer that differs by a character "
           "changed. Few engines are batch-invariant, so the reference's own count is the floor: a cell is flagged "
           "when its share is credibly above it (paired by prompt, alpha of the gate, and at least 2 points more).",
           ""]
    rows = [[f"`{run.reference}` (reference)", f"{own.differing()}/{len(own.answered())}", "", ""]]
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or cid == run.reference or cell.batching is None:
            continue
        change = cell.drift.batching if cell.drift else None
        verdict = ("not compared" if change is None else
                   (f"**flagged** (p {change.p_value:.2g})" if change.flagged else
                    f"not flagged (p {change.p_value:.2g})" if change.p_value is not None else "not flagged"))
        first = ("" if change is None or change.mean_first_difference is None
                 else f"{change.mean_first_difference:.0f}")
        rows.append([f"`{md_text(cid)}`", f"{cell.batching.differing()}/{len(cell.batching.answered())}", first,
                     verdict])
    out += [markdown_table(["cell", "answers changed by batching", "first difference (chars, mean)", "verdict"],
                           rows), ""]
    return out
