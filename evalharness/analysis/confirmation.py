"""The two-stage decision read from a run's records (issue 61): what exploration handed to confirmation
(`explored_candidates`, `operating_step`), and each try's verdict from its launches alone (`confirmation_try`), by
the rules of analysis/confirm.py, kept on the record as the drift is (`refresh_confirmation`). Reads records
(RunResult and the cells' sample files); imports analysis and records only.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from evalharness.analysis.confirm import (
    Confirmation, Explored, TaskClaim, confirm_tasks, kept_launch, not_worse, speed_over_launches)
from evalharness.analysis.equivalence import margin_for
from evalharness.analysis.evidence import evidence_of
from evalharness.analysis.goodput import targets_of
from evalharness.analysis.operating import figure_of
from evalharness.analysis.pairing import Headline, UnpairableMetric, merged_sides, side_scores
from evalharness.analysis.pareto import pareto, vs_reference
from evalharness.records.drift import TaskDrift
from evalharness.records.run import CellResult, ClaimRecord, RunResult, TryVerdict


def explored_candidates(run: RunResult) -> list[Explored]:
    """Every cell but the reference as exploration left it: its speed-up at the operating point (the Pareto walk's
    figure over the reference's) and why it is ruled out, if it is (not served, garbage, worse on a task, screened
    as not faster, slower by the speed rule, no figure at the operating point)."""
    chart = pareto(run)
    reference = chart.throughput.get(run.reference)
    points = {p.cell: p for p in chart.points}
    out = []
    for cid, cell in run.cells.items():
        if cid == run.reference:
            continue
        point = points.get(cid)
        ratio = point.throughput / reference if point and reference and point.throughput else math.nan
        out.append(Explored(cid, ratio, _ruled_out(run, cell, point is not None and point.at is not None)))
    return out


def _ruled_out(run: RunResult, cell: CellResult, has_figure: bool) -> str:
    if cell.status != "ok":
        return f"{cell.status}: {cell.reason or ''}".rstrip(": ")
    if cell.drift is not None and cell.drift.outcome == "worse":
        worse = [t.task for t in cell.drift.tasks if t.outcome == "worse"]
        return f"worse on {', '.join(worse) or 'a task'}"
    if cell.screened:
        return f"screened: {cell.screened}"
    if not has_figure:
        return "no figure at the operating point"
    verdict = vs_reference(run, cell.id)
    if verdict is not None and verdict.outcome == "slower":
        return f"slower ({verdict.text()})"
    return ""


def operating_step(run: RunResult) -> str | None:
    """The scenario or sweep step the reference is read at: where confirmation measures speed."""
    return next((p.at for p in pareto(run).points if p.cell == run.reference), None)


def confirmation_try(run: RunResult, run_dir: Path, attempt: int) -> Confirmation | None:
    """Try `attempt` (1-based) as its launches measured it (None: no such try recorded)."""
    record = run.confirmation
    if record is None or not 1 <= attempt <= len(record.tries):
        return None
    this = record.tries[attempt - 1]
    refs = [record.launches[i] for i in this.reference_launches if i in record.launches]
    finals = [record.launches[i] for i in this.finalist_launches if i in record.launches]
    matrix = run.meta.matrix
    targets = targets_of(matrix)
    finalist_rates = _launch_rates(finals, this.scenario, targets)
    reference_rates = _launch_rates(refs, this.scenario, targets)
    speed = speed_over_launches(list(finalist_rates.values()), list(reference_rates.values()), level=this.level)
    tasks = confirm_tasks(matrix)
    claims = [_claim(task, refs, finals, run_dir, margin_for(task, matrix.get("gate")), this.level) for task in tasks]
    figures = {lid: tuple(rates) for lid, rates in {**reference_rates, **finalist_rates}.items()}
    return Confirmation(cell=this.finalist, speed=speed, tasks=tuple(claims), level=this.level,
                        answers_expected=bool(tasks), figures=figures,
                        unit="goodput tok/s" if targets else "output tok/s")


def _launch_rates(launches: list[CellResult], scenario: str | None, targets) -> dict[str, list[float]]:
    """Each served launch's kept repeats at the operating point, by launch id, in the unit exploration read
    (goodput under an SLO)."""
    out = {}
    for launch in launches:
        found = next((s for s in launch.throughput if s.name == scenario), None) if launch.status == "ok" else None
        if found is None or found.output_tok_s <= 0:
            continue
        side = figure_of(found, targets).side
        kept = kept_launch(side.rates, side.reasons())
        if kept:
            out[launch.id] = kept
    return out


def _claim(task: str, refs: list[CellResult], finals: list[CellResult], run_dir: Path, margin: float,
           level: float) -> TaskClaim:
    ref_scores = [s for launch in refs for s in launch.quality if s.task == task and s.samples and not s.error]
    fin_scores = [s for launch in finals for s in launch.quality if s.task == task and s.samples and not s.error]
    missing = TaskClaim(task=task, drop=math.nan, upper=math.nan, margin=margin, level=level, not_worse=False,
                        equivalent=False)
    if not ref_scores or not fin_scores:
        side = "the reference's" if not ref_scores else "the finalist's"
        return replace(missing, note=f"{side} launches answered none of it")
    headline = Headline.of(ref_scores[0])
    try:
        reference = merged_sides([side_scores(run_dir, s, headline) for s in ref_scores])
        finalist = merged_sides([side_scores(run_dir, s, headline) for s in fin_scores])
    except UnpairableMetric as exc:
        return replace(missing, note=str(exc))
    _, evidence = evidence_of(TaskDrift(task=task, metric=ref_scores[0].metric), reference, finalist,
                              ref_scores[0].higher_is_better is not False)
    if evidence is None:
        return replace(missing, note="no document could be paired")
    return not_worse(task, evidence, margin, level)


def _number(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)


def verdict_record(decision: Confirmation) -> TryVerdict:
    """A try's decision as results.json keeps it."""
    speed = decision.speed
    return TryVerdict(
        confirmed=decision.confirmed, speed=speed.text(), ratio=_number(speed.verdict.ratio),
        low=_number(speed.verdict.low), high=_number(speed.verdict.high), faster=speed.verdict.faster,
        launches=speed.verdict.kept, launch_sd=speed.launch_sd, why_not=decision.why_not(), unit=decision.unit,
        figures={lid: [round(r, 3) for r in rates] for lid, rates in decision.figures.items()},
        tasks=[ClaimRecord(task=t.task, drop=_number(t.drop), upper=_number(t.upper), margin=t.margin,
                           not_worse=t.not_worse, equivalent=t.equivalent, documents=t.documents, text=t.text())
               for t in decision.tasks])


def refresh_confirmation(run: RunResult, run_dir: Path) -> None:
    """Every try whose launches all finished gets its decision (again: `report` re-reads the samples)."""
    record = run.confirmation
    if record is None:
        return
    for attempt, this in enumerate(record.tries, 1):
        if all(i in record.launches for i in this.reference_launches + this.finalist_launches):
            decision = confirmation_try(run, run_dir, attempt)
            this.verdict = verdict_record(decision) if decision is not None else None
