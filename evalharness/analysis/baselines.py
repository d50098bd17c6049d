"""`baseline save`: a run's cells as a baseline (records/baseline.py) for the gate, and a baseline refreshed with a
later run's repeats (`--merge`). Reads records and pairs documents as the gate does (analysis/pairing.py, speed.py);
imports nothing from the gate, which imports it."""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.pairing import UnpairableMetric, pairable_aggregation, side_scores
from evalharness.analysis.speed import kept_rates, side_of
from evalharness.records.baseline import Baseline, BaselineCell, BaselineError, BaselineTask, Thresholds
from evalharness.records.provenance import now_iso
from evalharness.records.run import RunResult


class GateError(BaselineError):
    """Bad input for the gate or for `baseline save` (exit 2), like a baseline that cannot be read."""


def measured_on(run: RunResult, cells: list[str]) -> dict:
    """The machine that measured these cells: the Ray node of the first that records one, else the run's machine."""
    for cid in cells:
        if cid in run.cells and run.cells[cid].node:
            return run.cells[cid].node
    return run.meta.machine


def make_baseline(run: RunResult, run_dir: Path, cells: list[str] | None, thresholds: Thresholds) -> Baseline:
    chosen = cells or [c for c in run.cell_order if c in run.cells and run.cells[c].status == "ok"]
    out: dict[str, BaselineCell] = {}
    for cid in chosen:
        if cid not in run.cells:
            raise GateError(f"cell {cid!r} is not in the run (finished cells: {', '.join(run.cells)})")
        cell = run.cells[cid]
        tasks = {}
        for score in cell.quality:
            if score.error or not score.samples:
                continue
            try:
                pairable_aggregation(score.task, score.metric, score.aggregation)
                side = side_scores(run_dir, score)
            except UnpairableMetric as exc:
                raise GateError(f"cell {cid}: {exc}") from None
            noise = [n for n in run.noise if n.task == score.task] if cid == run.reference else []
            tasks[score.task] = BaselineTask(
                version=score.version, metric=score.metric, value=score.value,
                subtask_versions={k: s.version for k, s in score.subtasks.items()}, correct=side.means,
                repeats=side.repeats, seeds=[s for s in side.seeds if s is not None],
                weights=side.weights if side.pooled else {}, aggregation=score.aggregation, prompts=side.prompts,
                higher_is_better=score.higher_is_better,
                within_doc_variance=noise[0].within_doc_variance if noise else None)
        out[cid] = BaselineCell(status=cell.status, tasks=tasks,
                                throughput={s.name: s.output_tok_s for s in cell.throughput},
                                throughput_repeats={s.name: kept_rates(side_of(s)) for s in cell.throughput
                                                    if len(s.repeat_tok_s) > 1},
                                engine_version=cell.engine_version(run.meta.engine))
    return Baseline(created=now_iso(), matrix_name=run.meta.matrix_name, harness_version=run.meta.harness_version,
                    engine=run.meta.engine, engine_version=run.engine_version(),
                    lm_eval_version=run.meta.lm_eval_version, git_revision=run.meta.git_revision,
                    machine=measured_on(run, list(out)), thresholds=thresholds, cells=out)


def merge_baselines(old: Baseline, new: Baseline) -> Baseline:
    """A baseline refreshed with a new run's repeats (`baseline save --merge`): per cell and task, the same documents'
    per-document means pooled over both (weighted by their repeats), the repeats and seeds added, each scenario's
    throughput repeats appended (a second launch: the between-run spread the gate's speed rule then sees). A baseline
    is one draw: an unchanged configuration passes a gate against a lucky or unlucky one more or less often than
    the gate's alpha promises on average; more repeats behind it narrow that. Refused (GateError) where the two
    cannot be pooled: another task version, metric or set of documents, or seeds already in the baseline (the same
    seeds can repeat the same answers on an engine that honours them: they are not new draws). Cells only one side
    has are kept as they are. The thresholds are the new run's; the within-document variance is the repeats-weighted
    mean of the two (an approximation: the per-repeat scores are not kept)."""
    cells = dict(old.cells)
    for cid, cell in new.cells.items():
        if cid not in old.cells:
            cells[cid] = cell
            continue
        before = old.cells[cid]
        tasks = dict(before.tasks)
        for name, task in cell.tasks.items():
            was = before.tasks.get(name)
            if was is None:
                tasks[name] = task
                continue
            where = f"cell {cid}, task {name}"
            if (was.version, was.metric, was.subtask_versions) != (task.version, task.metric, task.subtask_versions):
                raise GateError(f"{where}: version or metric differ from the baseline's: save a new baseline instead")
            if set(was.correct) != set(task.correct):
                raise GateError(f"{where}: the run scored other documents than the baseline ({len(task.correct)} "
                                f"against {len(was.correct)}): run the same quality.limit and subset")
            shared = sorted(set(was.seeds) & set(task.seeds))
            if shared:
                raise GateError(f"{where}: seeds {shared} are already in the baseline: run the refresh with another "
                                "quality.seed (e.g. the baseline's last seed + 1) so its repeats are new draws")
            total = was.repeats + task.repeats
            pooled = {k: (was.correct[k] * was.repeats + task.correct[k] * task.repeats) / total for k in was.correct}
            variance = None if was.within_doc_variance is None or task.within_doc_variance is None else \
                (was.within_doc_variance * was.repeats + task.within_doc_variance * task.repeats) / total
            tasks[name] = was.model_copy(update=dict(correct=pooled, repeats=total, seeds=was.seeds + task.seeds,
                                                     value=None if was.value is None or task.value is None
                                                     else (was.value * was.repeats + task.value * task.repeats) / total,
                                                     within_doc_variance=variance))
        repeats = {s: [*before.throughput_repeats.get(s, [before.throughput[s]] if s in before.throughput else []),
                       *cell.throughput_repeats.get(s, [cell.throughput[s]] if s in cell.throughput else [])]
                   for s in {*before.throughput, *cell.throughput}}
        cells[cid] = cell.model_copy(update=dict(
            tasks=tasks, throughput_repeats=repeats,
            throughput={s: sum(v) / len(v) for s, v in repeats.items() if v}))
    return new.model_copy(update=dict(cells=cells, merged=[*old.merged, old.created]))
