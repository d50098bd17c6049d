"""The prefix-cache check's table (issue 60, 1), for report.md and report.html alike: per cell, how many greedy
answers changed between a cold and a warm cache, beside the reference's own count, the log-probabilities' largest
move, and whether the cell is flagged (compare.py). Plain text cells; the registry (measures/reports.py) escapes
and lays them out. Reads records only."""

from __future__ import annotations

from evalharness.measures.prefix_cache.spec import KEY, PrefixCacheChange, PrefixCacheRecord
from evalharness.measures.specs import read
from evalharness.records.run import RunResult

HEADER = ["cell", "answers changed by the cache", "largest log-probability move (nats, median over prompts)",
          "verdict"]


def tables(run: RunResult) -> list[dict] | None:
    """The one table ({note, header, rows}; rows' first column a cell id), or None when the check did not run."""
    reference = run.cells.get(run.reference) if run.reference else None
    own = read(reference.measures, KEY, PrefixCacheRecord) if reference is not None else None
    if own is None:
        return None
    rows = [[run.reference, _count(own), _gap(own), "" if own.unavailable is None else f"not measured: "
             f"{own.unavailable}"]]
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        record = read(cell.measures, KEY, PrefixCacheRecord) if cell is not None and cid != run.reference else None
        if record is None:
            continue
        change = read(cell.drift.measures if cell.drift else None, KEY, PrefixCacheChange)
        rows.append([cid, _count(record), _gap(record), _verdict(record, change)])
    note = (f"The same {len(own.answers)} greedy prompts, in groups sharing a prefix of {own.prefix_words} words, each "
            f"answered with the engine's prefix cache emptied ({own.flush}) and again with its prefix cached by a "
            f"sibling prompt, {own.max_tokens} tokens, one request at a time; an answer that differs by a character "
            "changed. The reference's own count is the floor: a cell is flagged when its share is credibly above it "
            "(paired by prompt, alpha of the gate, and at least 2 points more). The log-probability move is shown, "
            "not judged.")
    return [{"note": note, "header": HEADER, "rows": rows}]


def _count(record: PrefixCacheRecord) -> str:
    return "" if record.unavailable else f"{record.differing()}/{len(record.answered())}"


def _gap(record: PrefixCacheRecord) -> str:
    gaps = sorted(a.logprob_gap for a in record.answered() if a.logprob_gap is not None)
    return f"{gaps[len(gaps) // 2]:.2g}" if gaps else ""


def _verdict(record: PrefixCacheRecord, change: PrefixCacheChange | None) -> str:
    if record.unavailable:
        return f"not measured: {record.unavailable}"
    if change is None:
        return "not compared"
    return f"{'flagged' if change.flagged else 'not flagged'} (p {change.p_value:.2g})"
