"""The report's drift section: per cell and task the paired Δ with its interval, margin, verdict and test, the
reference's A/A rows (its noise floor), and what the engine does with per-request seeds. Pure; reads records."""

from __future__ import annotations

import math
from collections.abc import Mapping

from evalharness.analysis.stats import confidence_text
from evalharness.records.engine_profile import EngineProfile, profile_of
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text


def interval_text(delta: float | None, low: float | None, high: float | None,
                  confidence: float | None = None) -> str:
    """'+0.010 [-0.020, +0.030]'; with `confidence`, its level after it ('... 91.1%'), as the decision used it."""
    if delta is None:
        return ""
    level = "" if confidence is None else f" {confidence_text(confidence)}"
    return f"{delta:+.3f} [{low:+.3f}, {high:+.3f}]{level}"


def verdict_text(outcome: str | None, drop_upper: float | None, bold: bool = True) -> str:
    """'**worse**', 'equivalent (drop ≤ 0.012)', 'inconclusive (drop ≤ 0.081)'; without `bold`, plain text."""
    if outcome is None:
        return "no paired samples"
    name = f"**{outcome}**" if outcome == "worse" and bold else outcome
    return name + (f" (drop ≤ {drop_upper:.3f})" if drop_upper is not None else "")


def _settle(t) -> str:
    if t.outcome != "inconclusive":
        return ""
    if t.settle_factor is None:
        return "no sample size settles it at this estimate"
    return (f"≈{t.settle_factor:.1f}× the samples on both sides (e.g. {math.ceil(t.repeats[0] * t.settle_factor)} "
            f"reference and {math.ceil(t.repeats[1] * t.settle_factor)} cell repeats) would settle it with 80% "
            "probability if the estimate held")


def _method(t) -> str:
    test = "paired score test" if t.method == "score" else "t over documents"
    pooled = ", instructions pooled" if t.pooled_instructions else ""
    lower = ", lower is better" if not t.higher_is_better else ""
    return f"{test}{pooled}{lower}; repeats {t.repeats[0]} / {t.repeats[1]}"


def _drift_row(label: str, t) -> list[str]:
    if not t.comparable:
        return [label, md_text(t.task), "", "", "", "", "", "", "", "", md_text(t.reason or "", 300)]
    flips = f"{t.right_to_wrong} / {t.wrong_to_right}" if t.method == "score" else ""
    p = f"{t.p_value:.3g}" + (f" (exact McNemar {t.exact_mcnemar_p:.3g})" if t.exact_mcnemar_p is not None else "")
    return [label, md_text(t.task), str(t.paired), f"{t.reference:.3f}", f"{t.cell:.3f}",
            interval_text(t.delta, t.ci_low, t.ci_high, t.confidence), "" if t.margin is None else f"±{t.margin:g}",
            verdict_text(t.outcome, t.drop_upper), p, flips,
            md_text("; ".join(x for x in (_method(t), _settle(t)) if x))]


def drift_section(run: RunResult, engines: Mapping[str, EngineProfile] | None = None) -> list[str]:
    rows = []
    for noise in run.noise:
        if noise.aa is not None:
            seeds = (f"A/A within one launch: seeds {','.join(map(str, noise.seeds_a)) or '?'} vs "
                     f"{','.join(map(str, noise.seeds_b)) or '?'}")
            rows.append(_drift_row(f"`{run.reference}` ({seeds})", noise.aa))
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or cell.drift is None:
            continue
        stopped = {t.task: t.stopped for t in cell.quality if t.stopped}
        for t in cell.drift.tasks:
            row = _drift_row(f"`{cid}`", t)
            if t.task in stopped:
                row[-1] += "; " + md_text(stopped[t.task], 200)
            rows.append(row)
    if not rows:
        return []
    family = sum(1 for c in run.cells.values() if c.drift for t in c.drift.tasks if t.outcome is not None)
    out = ["## Drift per task", "",
           "Δ is cell minus reference in the metric's better direction, over the documents both scored, each side's "
           "per-document mean over its repeats, with the two-sided interval its verdict was decided on, labelled with "
           "its confidence: 1 − 2α at the α the task was tested at (90% at α 0.05 for a fixed design; a task that "
           "looked sequentially is tested at what its last look spent, so its interval is wider: 91.9% at the last "
           "of the default looks of 8 repeats, 96.9% at the equivalence test's own look at 6, 98.1% at 4, 99.5% at "
           "2). Against the task's margin m "
           "(`gate.margin`, else `gate.max_accuracy_drop`): **equivalent** when the interval lies inside ±m; "
           "**worse** when the drop's lower bound lies above m, the test Holm-adjusted "
           f"over the run's {family} task comparisons so that an unchanged matrix calls a cell worse at most alpha of "
           "the time; otherwise **inconclusive**, with the samples, both sides counted, that would settle it with "
           "80% probability if the estimate held. "
           "Single 0/1 samples are tested with the paired score test (continuity-corrected, never a zero-width "
           "interval), per-document means with a t-test over documents, whose interval ends, and the tests that let a "
           "cell through (its upper end below m, its lower end above -m), are calibrated by a bootstrap of t under "
           "the null at each margin (the plain t lets a cell at the margin through more often than alpha at high "
           "accuracy). The p-value, of no difference, is the plain test's (the score test's or the t's)."]
    if run.noise:
        out += ["", "The rows marked A/A (within one launch) compare the reference with itself: its repeats split into "
                    "two disjoint halves of seeds, each half R/2 repeats, so the row is the answers' own noise within "
                    "one launch at half the reference's repeats: noisier than a cell's comparison (1.15-1.41x at "
                    "these designs), and without what relaunching an unchanged configuration adds (a cell with the "
                    "reference's own settings measures that: `report.relaunch_reference: true` adds one, "
                    f"`{run.reference}.relaunch`). Within-document variance across the reference's "
                    "repeats: " + ", ".join(
                        f"{md_text(n.task)} {n.within_doc_variance:.4f} ({n.repeats} repeats, {n.documents} documents)"
                        for n in run.noise if n.within_doc_variance is not None) + "."]
    out += ["", markdown_table(["cell", "task", "paired", "reference", "cell", "Δ [interval, confidence]", "margin",
                                "verdict", "p",
                                "flips r→w / w→r", "test; note"], rows), ""]
    return out + _screened_note(run) + _seed_note(run, engines)


def _screened_note(run: RunResult) -> list[str]:
    """Which cells ran only the first look of quality, and why (screening: analysis/sequential.py)."""
    screened = [(cid, run.cells[cid].screened) for cid in run.cell_order
                if cid in run.cells and run.cells[cid].screened]
    if not screened:
        return []
    return ["Screened (throughput first, then quality): " + "; ".join(
        f"`{cid}` {md_text(why or '', 300)}" for cid, why in screened) + ".", ""]


def _seed_note(run: RunResult, engines: Mapping[str, EngineProfile] | None) -> list[str]:
    """Whether repeats rest on the engine honouring per-request seeds: say so rather than assume reproducibility (what
    each engine does with a seed is its own module's `seeds`, handed in)."""
    seeded = [t for c in run.cells.values() for t in c.quality if t.repeats]
    if not seeded:
        return []
    return [f"Quality repeats send their own seed with every request (repeat k: seed {seeded[0].seed or 1234}+k, the "
            "same seeds in every cell). Each repeat is analysed as an independent draw whatever the engine does with "
            "the seed; whether the engine reproduces a seed's answers is not assumed "
            f"({'; '.join(md_text(profile_of(engines, engine).seeds, 400) for engine in run.engines())}).", ""]

