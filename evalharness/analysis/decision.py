"""The run's decision, computed once (issue 58, 1): after the drift and the confirmation are decided
(analysis/drift.py refresh_drift calls `decide` last), what the run ships and why, saved as records/decision.py's
Decision in results.json. A two-stage run ships only what its fresh launches confirmed (analysis/confirmation.py); a
one-stage run ships the recommendation (analysis/recommend.py); either way the fastest cells credibly faster than
the reference that were not shipped are kept with what held them back. With it, every verdict the reports show
(`verdicts`: the Pareto view, each cell's speed against the reference, the load steps', the length buckets') and
what qualifies the decision (`qualifiers`); the gate's outcome is the gate's (cli/verdicts.py) and carried over.
Renderers read the record and decide nothing.

Pure: reads a RunResult whose drift and confirmation are refreshed; imports analysis and records only.
"""

from __future__ import annotations

import math

from evalharness.analysis.equivalence import envelope_task
from evalharness.analysis.length import bucket_figures
from evalharness.analysis.operating import crossover, step_verdicts
from evalharness.analysis.pareto import chosen_point, pareto, vs_reference
from evalharness.analysis.recommend import recommend
from evalharness.analysis.speed import SpeedVerdict
from evalharness.measures.comparisons import flagged
from evalharness.records.decision import Decision, Held, Recommendation, SpeedWords
from evalharness.records.provenance import kinds
from evalharness.records.run import RunResult


def held(run: RunResult, cid: str, rec: Recommendation | None = None) -> Held:
    """Why a faster cell was not shipped: the task that held it (a matrix task before a length bucket; worse before
    inconclusive), the choice among candidates (equivalent by its own tests, not once Holm counts the choice), or a
    faster cell shipped instead."""
    verdict = vs_reference(run, cid)
    out = Held(cell=cid, ratio=verdict.ratio if verdict is not None else None)
    drift = run.cells[cid].drift
    if drift is None:
        return out
    tasks = [t for t in drift.tasks if t.outcome in ("worse", "inconclusive") and t.margin is not None]
    if tasks:
        worst = max(tasks, key=lambda t: (not envelope_task(t.task), t.outcome == "worse", -(t.ci_low or 0.0)))
        out.reason, out.task, out.margin = worst.outcome, worst.task, worst.margin  # type: ignore[assignment]
        out.bound = -worst.ci_low if worst.ci_low is not None else None
    elif rec is not None and rec.cell is None and rec.candidate == cid and rec.p_adjusted is not None:
        out.reason, out.p_adjusted, out.candidates = "choice", rec.p_adjusted, rec.candidates
    elif drift.outcome == "equivalent":
        out.reason = "slower"
    return out


def _faster(run: RunResult, skip: set[str | None]) -> list[tuple[float, str]]:
    out = []
    for cid in run.cell_order:
        if cid in skip or cid == run.reference or cid not in run.cells:
            continue
        verdict = vs_reference(run, cid)
        if verdict is not None and verdict.faster:
            out.append((verdict.ratio, cid))
    return sorted(out, reverse=True)


def speed_words(verdict: SpeedVerdict) -> SpeedWords:
    # NaN where a side has no positive rate: JSON writes it null, which a float field would refuse on load
    ratio = verdict.ratio if math.isfinite(verdict.ratio) else None
    return SpeedWords(ratio=ratio, outcome=verdict.outcome, low=verdict.low, high=verdict.high, level=verdict.level,
                      text=verdict.text(), interval=verdict.interval_text())


def verdicts(run: RunResult, decision: Decision) -> Decision:
    """Every ready cell's speed verdict against the reference and the Pareto front, into the decision: what the
    report's tables and charts show."""
    decision.pareto = pareto(run)
    decision.speed, decision.steps, decision.crossovers, decision.buckets = {}, {}, {}, {}
    reference = run.cells.get(run.reference)
    point = chosen_point(run)
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None or reference is None or cid == run.reference:
            continue
        verdict = vs_reference(run, cid)
        if verdict is not None:
            decision.speed[cid] = speed_words(verdict)
        if point.sweep:
            steps = step_verdicts(cell.throughput, reference.throughput, point)
            named = {step.name: step.verdict.text() for step in steps}
            if named:
                decision.steps[cid] = named
            turn = crossover(steps)
            if turn:
                decision.crossovers[cid] = turn
        speeds = {str(f.bucket): speed_words(f.speed) for f in bucket_figures(run, cid) if f.speed is not None}
        if speeds:
            decision.buckets[cid] = speeds
    return decision


def decide(run: RunResult) -> Decision:
    """The decision of a run whose drift (and confirmation) are refreshed."""
    decision = verdicts(run, _shipping(run))
    decision.gate = run.decision.gate if run.decision is not None else None  # the gate decided it, not this
    decision.warnings = qualifiers(run, decision)
    return decision


def qualifiers(run: RunResult, decision: Decision) -> list[str]:
    """What qualifies the decision, in plain words (records/decision.py `warnings`)."""
    out = []
    aside = sum(len(s.disturbed_repeats()) for c in run.cells.values() for s in c.throughput)
    if aside:
        out.append(f"{aside} throughput repeat{'s' if aside != 1 else ''} set aside: the host was busy with other "
                   "work during them")
    found = kinds(run)
    if len(found) > 1:
        out.append(f"cells ran on {len(found)} kinds of machine: their speeds compare machines as well as settings")
    failed = sum(t.failed for c in run.cells.values() for t in c.requests.values())
    if failed:
        out.append(f"{failed} request{'s' if failed != 1 else ''} failed")
    for cid in dict.fromkeys([decision.pick, decision.runner_up.cell if decision.runner_up else None]):
        cell = run.cells.get(cid) if cid else None
        for check in (cell.drift.lengths if cell is not None and cell.drift is not None else []):
            if check.outside:
                out.append(f"{cid}: output tokens per answer {check.ratio:.2f}x the reference's on {check.task}, "
                           f"outside ±{check.tolerance:.0%}")
        for spec, change in flagged(cell.drift.measures if cell is not None and cell.drift is not None else None):
            out.append(f"{cid}: {spec.title}: {change.summary()}")
    if decision.gate is not None and decision.gate.warning:
        out.append(f"gate: {decision.gate.warning}")
    return out


def _shipping(run: RunResult) -> Decision:
    if run.reference not in run.cells or len(run.cells) < 2:
        return Decision()
    rec = None
    if run.confirmation is not None:
        shipped = next((t.finalist for t in run.confirmation.tries if t.verdict and t.verdict.confirmed), None)
        decision = Decision(kind="confirmed" if shipped else "none" if run.confirmation.complete else "pending",
                            pick=shipped)
    else:
        rec = recommend(run)
        decision = Decision(kind="single" if rec.cell else "none", pick=rec.cell, recommendation=rec)
        if rec.cell is None and rec.candidate is not None:
            decision.candidate = held(run, rec.candidate, rec)
    others = _faster(run, {decision.pick, decision.candidate.cell if decision.candidate else None})
    if others:
        decision.runner_up = held(run, others[0][1], rec)
    return decision
