"""The report's "Speed by load" section (issue 38): the operating point and SLO every speed decision read, each
cell's load sweep step by step (output tok/s with its interval, tok/s per user, latency percentiles with their
intervals over the repeats, goodput, the speed rule against the reference at the same step), the crossovers, why each
sweep stopped, and the concurrency each phase ran at. Every bracket is an interval with its level in its column's
header or beside its ends. Pure: a RunResult in, Markdown lines out; reads records and analysis only.
"""

from __future__ import annotations

import math

from evalharness.analysis.goodput import Target, repeat_percentile, step_slo
from evalharness.analysis.operating import figure_of, mean_interval, reach, steps_of
from evalharness.analysis.pareto import cell_figure, chosen_point, curves
from evalharness.analysis.speed import kept_indices, side_of
from evalharness.records.measures import ScenarioResult
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text
from evalharness.render.throughput import tok_s_text

# latency columns where the matrix has no SLO: the percentiles users quote, with their intervals
PLAIN_TARGETS = (Target("ttft", 90, math.inf), Target("tpot", 90, math.inf))


def _load(sc: ScenarioResult) -> str:
    return f"c={sc.concurrency}" if sc.concurrency else f"{sc.request_rate:g}/s"


def _latency_text(sc: ScenarioResult, kept: list[int], targets: tuple[Target, ...]) -> list[str]:
    if not any(sc.repeat_figures[i].per_request for i in kept if i < len(sc.repeat_figures)):
        return [""] * len(targets)
    return [repeat_percentile(sc, kept, t).text() for t in targets]


def _step_row(run: RunResult, cid: str, sc: ScenarioResult, reference: dict[str, ScenarioResult],
              targets: tuple[Target, ...], verdicts: dict[str, str]) -> list[str]:
    side = side_of(sc)
    kept, rates = kept_indices(side), side.rates
    low, high = mean_interval([rates[i] for i in kept])
    tok = f"{sc.output_tok_s:.1f}" + (f" [{low:.1f}–{high:.1f}]" if low is not None and high is not None else "")
    per_user = "" if sc.request_decode_tok_s.p50 is None else f"{sc.request_decode_tok_s.p50:.1f}"
    cells = [f"`{cid}`" + (" (reference)" if cid == run.reference else ""), _load(sc), f"{len(kept)}/{len(rates)}",
             tok, per_user, *_latency_text(sc, kept, targets or PLAIN_TARGETS)]
    if targets:
        slo = step_slo(sc, targets, kept)
        cells += ["", "", "", ""] if slo is None else [
            slo.short_words(), f"{slo.good}/{slo.total}", f"{slo.goodput_rps:.2f}",
            f"{figure_of(sc, targets).value:.1f}"]
    if cid == run.reference:
        cells.append("1.00x")
    else:
        cells.append(verdicts.get(sc.name, "" if sc.name in reference else "the reference did not reach this load"))
    return cells


def figure_text(run: RunResult, cid: str) -> str:
    """A cell's figure at the operating point (the kept repeats' mean) with their range (min..max), the step it was
    read at where cells read their own (the most goodput under the SLO), and whether it meets the SLO there."""
    figure = cell_figure(run, cid)
    if figure is None:
        return ""
    text = tok_s_text(figure.value, figure.side)
    point = chosen_point(run)
    if point.kind == "max_goodput":
        text += f" at {md_text(figure.scenario)}" if figure.scenario else " (meets the SLO at no load measured)"
    elif figure.meets is False:
        text += " (**misses the SLO**)"
    return text


def phases_line(run: RunResult) -> str:
    """At which concurrency each phase sent its requests (the accuracy side and the speed side at the same load,
    or not, said plainly)."""
    matrix = run.meta.matrix
    probes = (matrix.get("probes") or {}).get("concurrency") if (matrix.get("probes") or {}).get("enabled", True) \
        else None
    quality = (matrix.get("quality") or {}).get("concurrency")
    loads = sorted({s.concurrency for c in run.cells.values() for s in c.throughput if s.concurrency})
    rates = sorted({s.request_rate for c in run.cells.values() for s in c.throughput if s.request_rate})
    point = chosen_point(run)
    parts = []
    if probes:
        parts.append(f"garbage probes {probes} at a time")
    if quality:
        same = point.concurrency == quality
        parts.append(f"quality tasks {quality} concurrent requests"
                     + (" (the operating point's load)" if same else
                        f" (not the operating point's {point.concurrency}: quality.concurrency sets it)"
                        if point.concurrency else ""))
    if loads or rates:
        parts.append("throughput at " + ", ".join([f"c={c}" for c in loads] + [f"{r:g}/s" for r in rates]))
    return ("Phases ran at: " + "; ".join(parts) + ".") if parts else ""


def load_section(run: RunResult) -> list[str]:
    point = chosen_point(run)
    lines = curves(run)
    reference = run.cells.get(run.reference)
    phases = phases_line(run)
    if not lines or reference is None:
        return ["## Speed by load", "", phases, ""] if phases and point.kind != "scenario" else []
    targets = point.targets
    out = ["## Speed by load", "",
           f"Operating point: {md_text(point.words())}: the front, 'vs reference', screening and the "
           f"recommendation read each cell's {md_text(point.unit)} there (the speed rule: faster, in How to read this "
           "report)."]
    if targets:
        out += ["", "A request is good when it meets every target of the SLO; goodput counts good requests (and "
                "their output tokens) per second of the repeat. A step meets the SLO when each target's percentile "
                "over its requests is within it, judged at the estimate (where the interval reaches past the target "
                "the SLO column says so). A percentile is a run's: each repeat's own, their mean with a 90% t "
                "interval over the repeats; where repeats hold too few requests for a percentile of their own, the "
                "repeats' requests pooled, with a 90% bootstrap interval over whole repeats (requests of one repeat "
                "share its batches, so they are not independent draws). With few requests a high percentile is the "
                "slowest request, and its interval is open above."]
    out += ["", "![throughput per GPU against tokens/s per user, one curve per cell](curves.png)", ""]
    header = ["cell", "load", "repeats kept", "output tok/s [90% interval]", "tok/s per user (median)",
              *(f"{t.words()}" if math.isfinite(t.max_s) else f"p{t.percentile:g} {t.metric.upper()}"
                for t in (targets or PLAIN_TARGETS))]
    if targets:
        header += ["SLO", "good requests", "goodput req/s", "goodput tok/s"]
    header.append("output tok/s vs reference at this load")
    rows, notes = [], []
    ref_steps = {s.name: s for s in steps_of(reference.throughput, point)}
    ref_reach = reach(reference.throughput, point)
    for curve in lines:
        cell = run.cells[curve.cell]
        steps = steps_of(cell.throughput, point)
        decided = run.decision  # the speed rule's words at each step, as decided (analysis/decision.py)
        by_step = decided.steps.get(curve.cell, {}) if decided is not None else {}
        # every cell of these rows is the harness's own text (numbers, the rule's words, names of NAME_PATTERN)
        rows += [_step_row(run, curve.cell, sc, ref_steps, targets, by_step) for sc in steps]
        reached = reach(cell.throughput, point)
        if reached and curve.cell != run.reference:
            notes.append(f"- `{md_text(curve.cell)}` meets the SLO up to {reached} of the loads measured (the "
                         f"reference up to {ref_reach}): how far its capacity reaches, beside the decision.")
        turn = decided.crossovers.get(curve.cell) if decided is not None else None
        if turn:
            notes.append(f"- `{md_text(curve.cell)}` wins at one load and loses at another: {md_text(turn)}.")
        if curve.stopped and "saturated" in curve.stopped:
            notes.append(f"- `{md_text(curve.cell)}`'s sweep stopped at {_load(steps[-1])}: "
                         f"{md_text(curve.stopped[curve.stopped.index('saturated'):])}.")
    out += [markdown_table(header, rows), ""]
    if notes:
        out += notes + [""]
    if phases:
        out += [phases, ""]
    return out
