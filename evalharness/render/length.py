"""The report's "By length" section (issue 39): per cell and length bucket, the long-context task's accuracy beside
the reference's with the drift's paired verdict, and single-stream speed over the same documents (time to first
token, decode speed, the speed rule's verdict, a speculative cell's acceptance); where a cell's equivalence holds,
and where speculation stops paying. Pure; reads records through analysis/length.py.
"""

from __future__ import annotations

from evalharness.analysis.length import BucketFigures, bucket_figures, buckets_of, envelope_text
from evalharness.records.run import RunResult
from evalharness.render.drift import interval_text
from evalharness.render.markdown import markdown_table, md_text

HEADER = ["cell", "bucket (prompt tokens)", "accuracy", "Δ [interval, confidence]", "verdict", "TTFT p50",
          "decode tok/s p50", "tok/s vs reference", "spec acceptance"]


def _num(value: float | None, spec: str) -> str:
    return "" if value is None else format(value, spec)


def _row(cid: str, label: str, f: BucketFigures) -> list[str]:
    d = f.drift
    tokens = f"{f.bucket:,}" + (f" ({f.prompt_tokens:,.0f})" if f.prompt_tokens is not None else "")
    accuracy = "" if f.accuracy is None else f"{f.accuracy:.3f}" + (f" of {f.documents}" if f.documents else "")
    verdict = "" if d is None else (d.outcome or (d.reason or "not compared"))
    return [f"`{md_text(cid)}`{label}", tokens, accuracy,
            "" if d is None or d.delta is None else interval_text(d.delta, d.ci_low, d.ci_high, d.confidence),
            md_text(verdict), "" if f.ttft_s is None else f"{f.ttft_s * 1000:,.0f} ms", _num(f.decode_tok_s, ".1f"),
            "" if f.speed is None else md_text(f.speed.text()), _num(f.acceptance, ".2f")]


def stops_paying(figures: list[BucketFigures]) -> str | None:
    """For a speculative cell: the buckets where it is faster than the reference and the first where it is not
    ('faster up to 256 prompt tokens, not at 1,024 (0.97x ...)'); None for a cell without acceptance figures."""
    if not any(f.acceptance is not None for f in figures):
        return None
    faster = [f for f in figures if f.speed is not None and f.speed.faster]
    first_not = next((f for f in figures if f.speed is not None and not f.speed.faster), None)
    if first_not is None:
        return "faster than the reference in every bucket" if faster else None
    if not faster or faster[0].bucket > first_not.bucket:
        return f"not faster than the reference from the shortest bucket on ({first_not.speed.text()})"
    return (f"faster up to {faster[-1].bucket:,} prompt tokens, not at {first_not.bucket:,} "
            f"({first_not.speed.text()})")


def length_section(run: RunResult) -> list[str]:
    buckets = buckets_of(run)
    if not buckets or run.reference not in run.cells:
        return []
    quality = run.meta.matrix.get("quality") or {}
    length = run.meta.matrix.get("length") or {}
    out = ["## By length", "",
           f"Each bucket is a long-context task, eh_long_<tokens>: {length.get('documents', '?')} seeded documents of "
           "about that many prompt tokens (the count the engine gave in parentheses), each hiding three four-digit "
           "codes in plain narrative and asking for one of them, placed at a stated depth; scored by exact match and "
           "paired per document against the reference by the drift's test (Holm over the run, the gate's margin). "
           "Speed: the same documents one at a time (time to first token and decode speed at the median; tok/s "
           "against the reference's by the speed rule, docs/speed.md).", ""]
    rows = []
    for cid in [run.reference, *(c for c in run.cell_order if c != run.reference)]:
        figures = bucket_figures(run, cid)
        label = " (reference)" if cid == run.reference else ""
        rows += [_row(cid, label, f) for f in figures]
    out += [markdown_table(HEADER, rows), ""]
    concurrency = quality.get("concurrency")
    notes = []
    for cid in run.cell_order:
        if cid == run.reference or cid not in run.cells:
            continue
        figures = bucket_figures(run, cid)
        envelope = envelope_text(run, cid, concurrency)
        paying = stops_paying(figures)
        if envelope or paying:
            notes.append(f"- `{md_text(cid)}`: " + "; ".join(md_text(p, 400) for p in (envelope, paying) if p) + ".")
    if notes:
        out += ["Where each cell's verdicts hold (the tasks answered at concurrency "
                f"{concurrency or '?'}; speculation: where it stops paying):", "", *notes, ""]
    return out
