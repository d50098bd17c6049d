"""Drift of each cell from the run's reference cell, from the saved files: accuracy per task (paired per document over
each side's repeats, the test and interval of analysis/stats.py, a verdict against the task's margin from
analysis/equivalence.py, Holm-adjusted over every comparison of the run) and pooled (tasks weighted equally), flips,
probe agreement, each measure's change (measures/comparisons.py: the numerics check's KL divergence among them),
and the reference's own noise floor (its repeats split into two halves of its seeds: the A/A row).

Reads records only; `refresh_drift` is what `run`, `report` and `gate` call after loading or finishing cells.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from scipy.stats import norm

from evalharness.analysis.equivalence import DEFAULT_ALPHA, cell_outcome, decide, decide_family, judged, margin_for
from evalharness.analysis.evidence import (  # noqa: F401  (task_evidence re-exported)
    CONFIDENCE, apply_decision, evidence_of, task_evidence)
from evalharness.analysis.noeffect import no_effect_pairs
from evalharness.analysis.sequential import Levels, final_levels
from evalharness.analysis.confirmation import refresh_confirmation
from evalharness.analysis.decision import decide as decide_shipping
from evalharness.analysis.pairing import SideScores, UnpairableMetric, pairable_aggregation, side_scores
from evalharness.measures.comparisons import changes as measure_changes, folder_changes, run_changes
from evalharness.analysis.outputlength import DOCUMENT_FIELDS, length_ratio, scenario_lengths, tolerance_of
from evalharness.analysis.secondary import CALLS_FIELDS, ENDING_FIELDS, per_document, secondary_changes
from evalharness.analysis.stats import PairedEvidence
from evalharness.records.cellfiles import load_probe_outputs
from evalharness.records.drift import Agreement, CellDrift, TaskDrift, TaskNoise
from evalharness.records.io import ResultsError
from evalharness.records.measures import ProbeOutput
from evalharness.records.run import CellResult, RunResult

def pooled(drift: CellDrift, evidence: Mapping[str, PairedEvidence], weights: Mapping[str, float] | None) -> None:
    """The pooled delta: the tasks' deltas weighted equally (or by `weights`), never by document count; a normal
    90% interval with the tasks independent (different documents)."""
    tasks = [t for t in drift.tasks if t.task in evidence]
    if not tasks:
        return
    w = np.array([float((weights or {}).get(t.task, 1.0)) for t in tasks])
    w = w / w.sum()
    deltas = np.array([-evidence[t.task].estimate for t in tasks])
    se = float(math.sqrt(np.sum((w * np.array([evidence[t.task].standard_error() for t in tasks])) ** 2)))
    drift.accuracy_delta = float(np.sum(w * deltas))
    z = float(norm.ppf((1 + CONFIDENCE) / 2))
    drift.ci_low, drift.ci_high = drift.accuracy_delta - z * se, drift.accuracy_delta + z * se
    drift.p_value = float(2 * norm.sf(abs(drift.accuracy_delta) / se)) if se > 0 else 1.0
    drift.paired = sum(t.paired for t in tasks)


def finish_cell(drift: CellDrift, evidence: Mapping[str, PairedEvidence], weights: Mapping[str, float] | None) -> None:
    """Pooled figure, flips, the cell's outcome and its worst upper bound, once its tasks are decided."""
    pooled(drift, evidence, weights)
    decided = judged(drift.tasks)
    drift.right_to_wrong = sum(t.right_to_wrong for t in drift.tasks)
    drift.wrong_to_right = sum(t.wrong_to_right for t in drift.tasks)
    drift.outcome = cell_outcome(t.outcome for t in decided)  # type: ignore[misc]
    uppers = [t.drop_upper for t in decided if t.drop_upper is not None]
    drift.worst_drop_upper = max(uppers) if uppers else None


def _first_difference(a: str, b: str) -> int:
    wa, wb = a.split(), b.split()
    for i, (x, y) in enumerate(zip(wa, wb)):
        if x != y:
            return i
    return min(len(wa), len(wb))


def probe_agreement(reference: list[ProbeOutput], cell: list[ProbeOutput]) -> Agreement | None:
    """Share of greedy probe answers identical to the reference's, and where the others first differ (in words)."""
    ref = {o.id: o.output for o in reference if o.error is None}
    pairs = [(ref[o.id], o.output) for o in cell if o.error is None and o.id in ref]
    if not pairs:
        return None
    differing = [_first_difference(r, c) for r, c in pairs if r != c]
    return Agreement(identical=len(pairs) - len(differing), total=len(pairs),
                     mean_first_difference=sum(differing) / len(differing) if differing else None)


def _per_document(run_dir: Path, score: Any, read: dict | None) -> dict[str, dict[str, float]]:
    """analysis/secondary.py per_document with the output tokens, the reference's read once a refresh (`read`)."""
    key = ("per_document", str(run_dir), score.task, tuple(s for _, s, _ in score.all_repeats()))
    if read is not None and key in read:
        return read[key]
    documents = per_document(run_dir, score, DOCUMENT_FIELDS)
    if read is not None:
        read[key] = documents
    return documents


def drift_between(reference: CellResult, ref_dir: Path, cell: CellResult, cell_dir: Path,
                  gate: Mapping[str, Any] | None = None,
                  read: dict[tuple, SideScores] | None = None) -> tuple[CellDrift, dict[str, PairedEvidence]]:
    """How far `cell` (of the run in `cell_dir`) drifted from `reference` (of the run in `ref_dir`): the same run's
    reference cell for drift, or the same cell in the base run for `compare`. Paired per document, never by means.
    Each task is decided within this cell's own tasks (Holm over them); `decide_run` re-decides a whole run's family.
    Returns the drift and each comparable task's evidence."""
    drift = CellDrift(cell=cell.id)
    ref_tasks = {t.task: t for t in reference.quality}
    evidence: dict[str, PairedEvidence] = {}
    tolerance = tolerance_of(gate)
    for score in cell.quality:
        if score.task not in ref_tasks:
            continue
        task, found = task_evidence(score.task, ref_tasks[score.task], score, ref_dir, cell_dir, read)
        drift.tasks.append(task)
        if not task.comparable:
            continue
        docs = (_per_document(ref_dir, ref_tasks[score.task], read), _per_document(cell_dir, score, None))
        # output tokens per answer against the reference's (a cell that stops early)
        length = length_ratio(score.task, docs[0]["completion_tokens"], docs[1]["completion_tokens"], tolerance,
                              _alpha(gate))
        if length is not None:
            drift.lengths.append(length)
        if found is None:
            continue
        evidence[score.task] = found
        changes = secondary_changes(ref_tasks[score.task], ref_dir, score, cell_dir, _alpha(gate), docs)
        if score.calls is not None and ref_tasks[score.task].calls is not None:
            # valid calls / valid JSON and refusals, by the rule every secondary figure is judged by
            drift.calls += [change for change in changes if change.field in CALLS_FIELDS]
        # how the answers ended (cut off, looping, empty behind reasoning): each paired against the reference's
        drift.endings += [change for change in changes if change.field in ENDING_FIELDS and
                          (change.reference or change.cell)]
    decide_run({cell.id: (drift, evidence)}, gate)
    drift.lengths += scenario_lengths(reference.throughput, cell.throughput, tolerance)
    drift.measures = measure_changes(reference.measures, cell.measures, _alpha(gate))
    ref_probes = load_probe_outputs(ref_dir / "cells" / reference.id / "probes.jsonl")
    cell_probes = load_probe_outputs(cell_dir / "cells" / cell.id / "probes.jsonl")
    if ref_probes and cell_probes:
        drift.agreement = probe_agreement(list(ref_probes.values()), list(cell_probes.values()))
    drift.measures.update(folder_changes(ref_dir / "cells" / reference.id, cell_dir / "cells" / cell.id,
                                         same_run=Path(ref_dir).resolve() == Path(cell_dir).resolve()))
    return drift, evidence


def _alpha(gate: Mapping[str, Any] | None) -> float:
    return float((gate or {}).get("alpha") or DEFAULT_ALPHA)


def decide_run(cells: Mapping[str, tuple[CellDrift, Mapping[str, PairedEvidence]]], gate: Mapping[str, Any] | None,
               weights: Mapping[str, float] | None = None,
               alphas: Mapping[tuple[str, str], Levels] | None = None) -> None:
    """Decide every task of every cell as one family: the worse-tests Holm-adjusted over all of them, so that a run
    in which nothing changed calls some cell worse at most alpha of the time, however many cells it has. `alphas`:
    the levels of a task that looked sequentially (those of the look it stopped at, analysis/sequential.py)."""
    family = {(cid, task): (ev, margin_for(task, gate)) for cid, (_, evs) in cells.items() for task, ev in evs.items()}
    decisions = decide_family(family, _alpha(gate), alphas)
    for cid, (drift, evs) in cells.items():
        for task in drift.tasks:
            if (cid, task.task) in decisions:
                apply_decision(task, decisions[(cid, task.task)], margin_for(task.task, gate))
        finish_cell(drift, evs, weights)


def reference_noise(reference: CellResult, run_dir: Path, gate: Mapping[str, Any] | None) -> list[TaskNoise]:
    """The reference's noise floor per task with two or more repeats: the within-document variance across its
    repeats, and its repeats split into two disjoint halves of seeds (even and odd repeats) compared like a cell."""
    out = []
    for score in reference.quality:
        if score.finished_repeats() < 2:
            continue
        try:
            pairable_aggregation(score.task, score.metric, score.aggregation)
            side = side_scores(run_dir, score)
        except (UnpairableMetric, OSError, ValueError, ResultsError):
            continue
        keys = [k for k in side.means if all(k in r for r in side.per_repeat)]
        if not keys:
            continue
        values = np.array([[r[k] for r in side.per_repeat] for k in keys])
        halves = [values[:, 0::2], values[:, 1::2]]
        seeds = [side.seeds[0::2], side.seeds[1::2]]
        a = SideScores(means=dict(zip(keys, halves[0].mean(axis=1))), weights={k: side.weights[k] for k in keys},
                       per_repeat=[{}] * halves[0].shape[1], seeds=seeds[0])
        b = SideScores(means=dict(zip(keys, halves[1].mean(axis=1))), weights=a.weights,
                       per_repeat=[{}] * halves[1].shape[1], seeds=seeds[1])
        aa, evidence = evidence_of(TaskDrift(task=score.task, metric=score.metric, confidence=CONFIDENCE), a, b,
                                   score.higher_is_better is not False)
        if evidence is not None:
            margin = margin_for(score.task, gate)
            apply_decision(aa, decide(evidence, margin, _alpha(gate), evidence.p_above(margin)), margin)
        out.append(TaskNoise(task=score.task, repeats=side.repeats, documents=len(keys),
                             within_doc_variance=float(values.var(axis=1, ddof=1).mean()),
                             seeds_a=[s for s in seeds[0] if s is not None],
                             seeds_b=[s for s in seeds[1] if s is not None], aa=aa))
    return out


def refresh_drift(run: RunResult, out_dir: Path, only: str | None = None) -> None:
    """Drift against the reference, from the saved per-sample files, of every finished cell, decided as one family
    (a cell finishing changes the family's adjustment, so `only`, the cell just finished, is not read alone), and the
    reference's noise floor."""
    del only  # kept for the callers' sake: the whole family is decided again
    try:
        run.no_effect = no_effect_pairs(run, out_dir)
    except (OSError, ValueError) as exc:  # a damaged probe file must not stop the run
        run.notes.append(f"axes without effect could not be compared: {exc}")
    if run.reference not in run.cells:
        return
    gate = run.meta.matrix.get("gate") or {}
    weights = (run.meta.matrix.get("report") or {}).get("task_weights")
    reference = run.cells[run.reference]
    family: dict[str, tuple[CellDrift, dict[str, PairedEvidence]]] = {}
    read: dict[tuple, SideScores] = {}  # the reference's files, read once for every cell
    for cid, cell in run.cells.items():
        if cell.status in ("ok", "garbage") and cid != run.reference:
            try:
                family[cid] = drift_between(reference, out_dir, cell, out_dir, gate, read)
            except (OSError, ValueError, ResultsError) as exc:  # a damaged sample file must not stop the run
                run.notes.append(f"drift of {cid} could not be computed: {exc}")
    comparisons = sum(len(evs) for _, evs in family.values())  # the Holm family the worse test's level is for
    alphas = {(cid, t.task): final_levels(_alpha(gate), t.looks, t.finished_repeats(), comparisons,
                                               t.equivalence_only)
              for cid in family for t in run.cells[cid].quality if len(t.looks) > 1}
    decide_run(family, gate, weights, alphas)
    for cid, (drift, _) in family.items():
        run.cells[cid].drift = drift
    run.measures, notes = run_changes(run, out_dir, gate)  # the measures that compare the run's cells as one family
    run.notes += notes
    try:
        run.noise = reference_noise(reference, out_dir, gate)
    except (OSError, ValueError, ResultsError) as exc:
        run.notes.append(f"the reference's noise floor could not be computed: {exc}")
    try:
        refresh_confirmation(run, out_dir)  # the second stage's tries, from their own launches
    except (OSError, ValueError, ResultsError) as exc:
        run.notes.append(f"the confirmation could not be decided: {exc}")
    run.decision = decide_shipping(run)  # last: it reads every verdict above
