"""Drift of each cell from the run's reference cell, from the saved files: accuracy per task and pooled (paired per
sample, with a bootstrap interval, an exact McNemar p-value and flips), probe agreement, and distribution drift (KL
divergence and top-token agreement of the reference's continuations).

Reads records only; `refresh_drift` is what `run`, `report` and `gate` call after loading or finishing cells.
"""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.noeffect import no_effect_pairs
from evalharness.analysis.pairing import Headline, headline_scores, pair, sample_records
from evalharness.analysis.stats import mcnemar_exact, paired_bootstrap, topk_kl
from evalharness.records.cellfiles import load_probe_outputs, load_scored
from evalharness.records.drift import Agreement, CellDrift, DistributionDrift, TaskDrift
from evalharness.records.io import ResultsError
from evalharness.records.measures import ProbeOutput, Scored, TaskScore, percentiles
from evalharness.records.run import CellResult, RunResult


def task_drift(task: str, ref_score: TaskScore, cell_score: TaskScore, run_dir: Path,
               cell_dir: Path | None = None) -> tuple[TaskDrift, list[float], list[float]]:
    """Pair one task's headline records (per subtask and document); refuse across task versions. Returns the drift
    and the paired per-sample scores (reference, cell) for pooling. `cell_dir`: the cell's run folder when it is
    another run's (`compare`); by default both sides are in `run_dir`."""
    out = TaskDrift(task=task, metric=ref_score.metric)
    if ref_score.error or cell_score.error or not ref_score.samples or not cell_score.samples:
        out.comparable, out.reason = False, "a side has no samples (the task failed)"
        return out, [], []
    if ref_score.version != cell_score.version:
        out.comparable = False
        out.reason = f"task versions differ ({ref_score.version} vs {cell_score.version}): not paired"
        return out, [], []
    if ref_score.subtasks and ref_score.subtasks.keys() != cell_score.subtasks.keys():
        out.comparable = False
        out.reason = (f"the group's subtasks differ ({len(ref_score.subtasks)} in the reference, "
                      f"{len(cell_score.subtasks)} in the cell): not paired")
        return out, [], []
    if any(sub.version != cell_score.subtasks[name].version for name, sub in ref_score.subtasks.items()):
        out.comparable, out.reason = False, "subtask versions differ: not paired"
        return out, [], []
    # the reference's headline records, matched by key among every record of the cell (analysis/pairing.py)
    paired = pair(headline_scores(run_dir / ref_score.samples, ref_score),
                  sample_records((cell_dir or run_dir) / cell_score.samples, cell_score.task, Headline.of(ref_score)))
    refs, cells = paired.before, paired.after
    if not refs:
        out.comparable, out.reason = False, "no samples could be paired by subtask, document, filter and metric"
        return out, [], []
    out.paired = len(refs)
    out.subtasks_paired = paired.per_subtask() if ref_score.subtasks else {}
    out.reference, out.cell = sum(refs) / len(refs), sum(cells) / len(cells)
    out.delta, out.ci_low, out.ci_high = paired_bootstrap(refs, cells)
    out.right_to_wrong, out.wrong_to_right = paired.right_to_wrong, paired.wrong_to_right
    out.p_value = mcnemar_exact(out.right_to_wrong, out.wrong_to_right)
    return out, refs, cells


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


def compare_cells(reference: list[Scored], cell: list[Scored]) -> DistributionDrift:
    """Per-position KL and top-token agreement over the continuations both cells scored the same way (pure)."""
    by_id = {s.id: s for s in cell}
    errors = [s.error for s in [*reference, *cell] if s.error]
    klds: list[float] = []
    same = 0
    for ref in reference:
        other = by_id.get(ref.id)
        if ref.error or other is None or other.error or other.tokens != ref.tokens:
            continue  # the same text must tokenize the same way on both sides to pair positions
        for p, q in zip(ref.top, other.top):
            klds.append(topk_kl(p, q))
            same += max(p, key=p.get) == max(q, key=q.get)
    if not klds:
        return DistributionDrift(available=False, reason=errors[0] if errors else "no positions could be paired")
    return DistributionDrift(available=True, positions=len(klds), mean_kld=sum(klds) / len(klds),
                             p99_kld=percentiles(klds).p99, max_kld=max(klds), same_top_token=same / len(klds))


def cell_drift(run: RunResult, cell_id: str, run_dir: Path) -> CellDrift:
    """Everything that says how far one cell drifted from the run's reference cell."""
    return drift_between(run.cells[run.reference], run_dir, run.cells[cell_id], run_dir)


def drift_between(reference: CellResult, ref_dir: Path, cell: CellResult, cell_dir: Path) -> CellDrift:
    """How far `cell` (of the run in `cell_dir`) drifted from `reference` (of the run in `ref_dir`): the same run's
    reference cell for drift, or the same cell in the base run for `compare`. Paired per sample, never by means."""
    drift = CellDrift(cell=cell.id)
    ref_tasks = {t.task: t for t in reference.quality}
    pooled_ref: list[float] = []
    pooled_cell: list[float] = []
    for score in cell.quality:
        if score.task not in ref_tasks:
            continue
        task, refs, cells = task_drift(score.task, ref_tasks[score.task], score, ref_dir, cell_dir)
        drift.tasks.append(task)
        pooled_ref += refs
        pooled_cell += cells
        drift.right_to_wrong += task.right_to_wrong
        drift.wrong_to_right += task.wrong_to_right
    if pooled_ref:
        drift.paired = len(pooled_ref)
        drift.accuracy_delta, drift.ci_low, drift.ci_high = paired_bootstrap(pooled_ref, pooled_cell)
        drift.p_value = mcnemar_exact(drift.right_to_wrong, drift.wrong_to_right)
    ref_probes = load_probe_outputs(ref_dir / "cells" / reference.id / "probes.jsonl")
    cell_probes = load_probe_outputs(cell_dir / "cells" / cell.id / "probes.jsonl")
    if ref_probes and cell_probes:
        drift.agreement = probe_agreement(list(ref_probes.values()), list(cell_probes.values()))
    ref_dist = load_scored(ref_dir / "cells" / reference.id / "distribution.jsonl")
    cell_dist = load_scored(cell_dir / "cells" / cell.id / "distribution.jsonl")
    if ref_dist or cell_dist:
        drift.distribution = compare_cells(ref_dist, cell_dist)
    return drift


def refresh_drift(run: RunResult, out_dir: Path, only: str | None = None) -> None:
    """Drift against the reference, from the saved per-sample files: of `only` (the cell just finished; the run loop
    runs the reference first) or of every finished cell (`report`, `gate`)."""
    try:
        run.no_effect = no_effect_pairs(run, out_dir)
    except (OSError, ValueError) as exc:  # a damaged probe file must not stop the run
        run.notes.append(f"axes without effect could not be compared: {exc}")
    if run.reference not in run.cells:
        return
    for cid, cell in run.cells.items():
        if only is not None and cid != only:
            continue
        if cell.status in ("ok", "garbage") and cid != run.reference:
            try:
                cell.drift = cell_drift(run, cid, out_dir)
            except (OSError, ValueError, ResultsError) as exc:  # a damaged sample file must not stop the run
                run.notes.append(f"drift of {cid} could not be computed: {exc}")
