"""The report's "By length" section (issue 39): per cell and length bucket, the long-context task's accuracy beside
the reference's with the drift's paired verdict, and single-stream speed over the same documents (time to first
token, decode speed, the speed rule's verdict, a speculative cell's acceptance); where a cell's equivalence holds,
and where speculation stops paying. Pure; reads records through analysis/length.py.
"""

from __future__ import annotations

from evalharness.analysis.length import BucketFigures, bucket_figures, buckets_of, envelope_text
from evalharness.records.decision import SpeedWords
from evalharness.records.run import RunResult
from evalharness.render.drift import interval_text
from evalharness.render.markdown import markdown_table, md_text
from evalharness.render.numerics import kl_plain

HEADER = ["cell", "bucket (prompt tokens)", "accuracy", "Δ [interval, confidence]", "verdict",
          "KL(ref‖cell) [90%]", "KL(cell‖ref) [90%]", "TTFT p50", "decode tok/s p50", "tok/s vs reference",
          "spec acceptance"]


def _num(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def _speeds(run: RunResult, cid: str) -> dict[str, SpeedWords]:
    """The cell's decided single-stream verdicts per bucket (analysis/decision.py)."""
    return run.decision.buckets.get(cid, {}) if run.decision is not None else {}


def _figures(run: RunResult, cid: str) -> list[tuple[BucketFigures, SpeedWords | None]]:
    speeds = _speeds(run, cid)
    return [(f, speeds.get(str(f.bucket))) for f in bucket_figures(run, cid, verdicts=False)]


def _row(cid: str, f: BucketFigures, speed: SpeedWords | None) -> list[str]:
    """One bucket of one cell as plain text (the first column the cell's id)."""
    d = f.drift
    tokens = f"{f.bucket:,}" + (f" ({f.prompt_tokens:,.0f})" if f.prompt_tokens is not None else "")
    accuracy = "" if f.accuracy is None else f"{f.accuracy:.3f}" + (f" of {f.documents}" if f.documents else "")
    return [cid, tokens, accuracy,
            "" if d is None or d.delta is None else interval_text(d.delta, d.ci_low, d.ci_high, d.confidence),
            "" if d is None else (d.outcome or d.reason or "not compared"),
            "" if f.numerics is None else kl_plain(f.numerics.forward),
            "" if f.numerics is None else kl_plain(f.numerics.reverse),
            "" if f.ttft_s is None else f"{f.ttft_s * 1000:,.0f} ms", _num(f.decode_tok_s, ".1f"),
            "" if speed is None else speed.text, _num(f.acceptance, ".2f")]


def stops_paying(figures: list[tuple[BucketFigures, SpeedWords | None]]) -> str | None:
    """For a speculative cell: the buckets up to which it is faster than the reference, and what the speed rule says
    at the first where it is not shown faster ('faster up to 256 prompt tokens; at 1,920 0.97x [...] equal'); None
    for a cell without acceptance figures."""
    if not any(f.acceptance is not None for f, _ in figures):
        return None
    compared = [(f, s) for f, s in figures if s is not None]
    first_not = next(((f, s) for f, s in compared if s.outcome != "faster"), None)
    if first_not is None:
        return "faster than the reference in every bucket" if compared else None
    faster = [f for f, _ in compared if f.bucket < first_not[0].bucket]
    said = f"at {first_not[0].bucket:,} prompt tokens {first_not[1].text}"
    return f"faster up to {faster[-1].bucket:,} prompt tokens; {said}" if faster else f"not shown faster: {said}"


def length_table(run: RunResult) -> dict | None:
    """The section as plain text, for report.md and report.html alike: {note, header, rows, holds} (rows: the
    HEADER's columns, the first a cell id; holds: per cell where its verdicts hold). None without buckets."""
    if not buckets_of(run) or run.reference not in run.cells:
        return None
    quality = run.meta.matrix.get("quality") or {}
    length = run.meta.matrix.get("length") or {}
    note = (f"Each bucket is a long-context task, eh_long_<tokens>: {length.get('documents', '?')} seeded documents of "
            "about that many prompt tokens (the count the engine gave in parentheses), each hiding three four-digit "
            "codes in plain narrative and asking for one of them, placed at a stated depth; scored by exact match and "
            "paired per document against the reference by the drift's test (Holm over the run, the gate's margin). "
            "KL: the numerics check's per-token divergence, both directions, on the bucket's first "
            f"{length.get('numerics', '?')} documents (whole, not cut to the check's own context limit). "
            "Speed: the same documents one at a time (time to first token and decode speed at the median; tok/s "
            "against the reference's by the speed rule).")
    rows = [_row(cid, f, speed) for cid in [run.reference, *(c for c in run.cell_order if c != run.reference)]
            for f, speed in _figures(run, cid)
            if f.accuracy is not None or f.ttft_s is not None]  # a cell that never reached the buckets: no row
    concurrency = quality.get("concurrency")
    holds = []
    for cid in run.cell_order:
        if cid == run.reference or cid not in run.cells:
            continue
        said = [p for p in (envelope_text(run, cid, concurrency), stops_paying(_figures(run, cid))) if p]
        if said:
            holds.append([cid, "; ".join(said)])
    return {"note": note, "header": HEADER, "rows": rows, "holds": holds,
            "holds_note": f"Where each cell's verdicts hold (the tasks answered at concurrency {concurrency or '?'}; "
                          "speculation: where it stops paying):"}


def length_section(run: RunResult) -> list[str]:
    table = length_table(run)
    if table is None:
        return []
    rows = [[f"`{md_text(row[0])}`" + (" (reference)" if row[0] == run.reference else ""),
             *(md_text(c) for c in row[1:])] for row in table["rows"]]
    out = ["## By length", "", table["note"], "", markdown_table(table["header"], rows), ""]
    if table["holds"]:
        out += [table["holds_note"], "",
                *(f"- `{md_text(cid)}`: {md_text(said, 400)}." for cid, said in table["holds"]), ""]
    return out
