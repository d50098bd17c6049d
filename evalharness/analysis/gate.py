"""Baselines and the CI gate: a saved run against a committed baseline, with sample-size-aware thresholds.

A baseline (records/baseline.py) records, per cell, each task's version and per-sample correctness (its headline records keyed
by subtask, document, filter and metric: analysis/pairing.py), the throughput per scenario, and the versions. `gate` pairs a run's cells with it:

- accuracy: the drop (baseline minus run, over the paired samples) fails when it exceeds `max_accuracy_drop` AND the
  exact McNemar test says it is credible at the sample size (p < `alpha`); a drop beyond `hard_accuracy_drop` fails
  whatever the test says, so a large real drop on few samples never passes;
- flips: more right-to-wrong answers than `max_flips`;
- KLD: the run's own mean KL divergence against its reference cell above `max_kld`;
- throughput: run / baseline below `min_throughput_ratio` (compare on the same kind of machine); where the scenario
  was repeated (in the run, the baseline or both), the ratio must also be credible against the repeats' own noise
  (one-sided Welch t-test, p < `alpha`): a fixed tolerance alone fails on noise or passes real slow-downs, and
  `min_throughput_ratio: 1.0` with repeats gates on the noise alone;
- coverage: the run must cover what the baseline covers: every task, every document of each task (a run that scored
  3 of the baseline's 200 documents says nothing about the other 197), and, when throughput is gated, every scenario;
- a task whose version changed is refused rather than compared; a gated cell that crashed or served garbage fails.
"""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.pairing import Headline, canonical_scores, headline_scores, pair, sample_records
from evalharness.analysis.stats import mcnemar_exact, slower_p_value
from evalharness.records.baseline import Baseline, BaselineCell, BaselineError, BaselineTask, Thresholds
from evalharness.records.measures import TaskScore
from evalharness.records.provenance import machine_kind, now_iso
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
            tasks[score.task] = BaselineTask(version=score.version, metric=score.metric, value=score.value,
                                             subtask_versions={k: s.version for k, s in score.subtasks.items()},
                                             correct=headline_scores(run_dir / score.samples, score))
        out[cid] = BaselineCell(status=cell.status, tasks=tasks,
                                throughput={s.name: s.output_tok_s for s in cell.throughput},
                                throughput_repeats={s.name: s.repeat_tok_s for s in cell.throughput
                                                    if len(s.repeat_tok_s) > 1},
                                engine_version=str(cell.resolved.get("version")) if cell.resolved.get("version") else None)
    return Baseline(created=now_iso(), matrix_name=run.meta.matrix_name, harness_version=run.meta.harness_version,
                    engine=run.meta.engine, engine_version=run.meta.engine_version,
                    lm_eval_version=run.meta.lm_eval_version, git_revision=run.meta.git_revision,
                    machine=measured_on(run, list(out)), thresholds=thresholds, cells=out)


def machine_warning(run: RunResult, baseline: Baseline) -> str | None:
    """A warning (not a violation) when the baseline was measured on another kind of machine, or on one not recorded:
    throughput and even drift differ by processor and GPU (bf16 without native support is another computation)."""
    here, there = machine_kind(measured_on(run, run.cell_order)), machine_kind(baseline.machine)
    if here == there and here != "unknown":
        return None
    return (f"the baseline was measured on {'an unrecorded machine' if there == 'unknown' else 'another kind of machine'}"
            f": baseline on {there}, this run on {here}; throughput and drift may differ for that reason alone")


def thresholds_for(run: RunResult, baseline: Baseline) -> Thresholds:
    """The baseline's thresholds, overridden by the ones the run's matrix sets."""
    merged = baseline.thresholds.model_dump()
    gate = run.meta.matrix.get("gate") or {}
    merged.update({k: v for k, v in gate.items() if v is not None and k in merged})
    return Thresholds(**merged)


def gated_cells(run: RunResult, baseline: Baseline, mapping: dict[str, str]) -> list[tuple[str, str]]:
    """(run cell, baseline cell) pairs: explicit mappings; else the same ids; a one-cell baseline gates every cell."""
    if mapping:
        return list(mapping.items())
    same = [(c, c) for c in run.cell_order if c in baseline.cells]
    if same:
        return same
    if len(baseline.cells) == 1:
        only = next(iter(baseline.cells))
        return [(c, only) for c in run.cell_order if c in run.cells]
    raise GateError("no cell of the run matches a baseline cell; map them with --cell RUN_ID=BASELINE_ID")


def check(run: RunResult, run_dir: Path, baseline: Baseline, mapping: dict[str, str] | None = None) -> list[str]:
    """The violations, one readable line each (empty: the gate passes)."""
    limits = thresholds_for(run, baseline)
    violations: list[str] = []
    for run_id, base_id in gated_cells(run, baseline, mapping or {}):
        if base_id not in baseline.cells:
            raise GateError(f"baseline has no cell {base_id!r} (it has {', '.join(baseline.cells)})")
        cell = run.cells.get(run_id)
        if cell is None:
            violations.append(f"{run_id}: did not run")
            continue
        if cell.status != "ok":
            violations.append(f"{run_id}: {cell.status} at {cell.phase}: {cell.reason}")
            continue
        base = baseline.cells[base_id]
        scores = {t.task: t for t in cell.quality}
        for task, expected in base.tasks.items():
            violations += _task_violations(run_id, task, expected, scores.get(task), run_dir, limits)
        if limits.max_kld is not None and cell.drift and cell.drift.distribution and cell.drift.distribution.available:
            kld = cell.drift.distribution.mean_kld
            if kld is not None and kld > limits.max_kld:
                violations.append(f"{run_id}: mean KL divergence {kld:.4f} against the run's reference exceeds "
                                  f"{limits.max_kld}")
        if limits.min_throughput_ratio is not None:
            violations += _throughput_violations(run_id, cell.throughput, base, limits)
    return violations


def _throughput_violations(run_id: str, scenarios: list, base: BaselineCell, limits: Thresholds) -> list[str]:
    measured = {s.name: s for s in scenarios}
    missing = [name for name in base.throughput if name not in measured]
    out = []
    if missing:
        out.append(f"{run_id}: throughput scenario(s) {', '.join(missing)} of the baseline not in this run "
                   f"({len(base.throughput) - len(missing)} of the baseline's {len(base.throughput)} scenarios measured)")
    for name, before in base.throughput.items():
        if name not in measured or before <= 0:
            continue
        now = measured[name].output_tok_s
        ratio = now / before
        if ratio >= limits.min_throughput_ratio:  # type: ignore[operator]
            continue
        where = (f"{run_id}: throughput {name} {now:.1f} tok/s is {ratio:.2f}x the baseline's {before:.1f} "
                 f"(minimum {limits.min_throughput_ratio}x)")
        run_reps, base_reps = measured[name].repeat_tok_s, base.throughput_repeats.get(name, [])
        if len(run_reps) < 2 and len(base_reps) < 2:
            out.append(where)  # no repeats: the fixed tolerance is all there is
            continue
        p = slower_p_value(run_reps if len(run_reps) > 1 else [now], base_reps if len(base_reps) > 1 else [before])
        if p < limits.alpha:
            out.append(f"{where}, and slower beyond the repeats' noise (one-sided Welch p={p:.3g} < {limits.alpha}; "
                       f"run {len(run_reps) or 1} repeat(s), baseline {len(base_reps) or 1})")
    return out


def _task_violations(run_id: str, task: str, expected: BaselineTask, score: TaskScore | None, run_dir: Path, limits: Thresholds) -> list[str]:
    total = len(expected.correct)
    if score is None or score.error or not score.samples:
        return [f"{run_id}: task {task} has no result in this run (the baseline scored {total} documents)"]
    if score.version != expected.version:
        return [f"{run_id}: task {task} is version {score.version}, the baseline's is {expected.version}: "
                "refusing to compare; save a new baseline"]
    if expected.subtask_versions and {k: s.version for k, s in score.subtasks.items()} != expected.subtask_versions:
        return [f"{run_id}: task {task}: its subtasks or their versions differ from the baseline's: refusing to "
                "compare; save a new baseline"]
    # the baseline's keys decide what is compared: its headline records, matched among every record of the run
    paired = pair(canonical_scores(expected.correct, task, expected.metric),
                  sample_records(run_dir / score.samples, score.task, Headline.of(score)))
    n = len(paired.before)
    out = []
    if n < total:
        out.append(coverage_violation(run_id, task, n, total))
    if not n:
        return out
    before, after = sum(paired.before) / n, sum(paired.after) / n
    where = f"{run_id}: task {task}: {after:.3f} vs baseline {before:.3f} on {n} paired samples"
    out += [f"{where}: {reason}" for reason in accuracy_reasons(before, after, paired.right_to_wrong,
                                                                 paired.wrong_to_right, limits)]
    return out


def accuracy_reasons(before: float, after: float, lost: int, gained: int, limits: Thresholds) -> list[str]:
    """Why one task's paired accuracy fails the gate (empty: it passes); pure, so that
    benchmarks/gate_false_alarms.py measures exactly this rule. `lost`/`gained`: right->wrong / wrong->right."""
    p = mcnemar_exact(lost, gained)
    drop = before - after
    out = []
    if limits.hard_accuracy_drop is not None and drop > limits.hard_accuracy_drop:
        out.append(f"drop {drop:.3f} exceeds the hard limit {limits.hard_accuracy_drop} "
                   f"(McNemar p={p:.3g}, {lost} right->wrong, {gained} wrong->right)")
    elif limits.max_accuracy_drop is not None and drop > limits.max_accuracy_drop:
        if p < limits.alpha:
            out.append(f"drop {drop:.3f} exceeds {limits.max_accuracy_drop} and is credible at this sample "
                       f"size (McNemar p={p:.3g} < {limits.alpha}; {lost} right->wrong, {gained} wrong->right)")
    if limits.max_flips is not None and lost > limits.max_flips:
        out.append(f"{lost} answers went right->wrong (maximum {limits.max_flips})")
    return out


def coverage_violation(run_id: str, task: str, paired: int, total: int) -> str:
    """A task that covers fewer of the baseline's documents than the baseline did: what is missing was not checked."""
    return (f"{run_id}: task {task}: scored {paired} of the baseline's {total} documents ({total - paired} missing: "
            "not scored in this run, or their text changed); the gate cannot vouch for what it did not see: run "
            "the same documents (the same quality.limit) or save a new baseline")
