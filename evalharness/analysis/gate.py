"""Baselines and the CI gate: a saved run against a committed baseline, with three outcomes per task and cell.

A baseline (records/baseline.py) records, per cell, each task's version and per-document scores (its headline
records keyed by subtask, document, filter and metric: analysis/pairing.py), the mean over the reference's repeats
and how many there were, the throughput per scenario, and the versions. `gate` pairs a run's cells with it:

- accuracy, per task, against the task's margin m (`margin`, else `max_accuracy_drop`): the paired drop's test and
  interval (analysis/stats.py; both sides' sampling noise counted: the baseline is a draw too) decide **pass** (the
  drop's one-sided 95% upper bound below m: non-inferior), **fail** (its one-sided 95% lower bound above m: worse,
  Holm-adjusted over every task of every gated cell, so that a run in which nothing changed fails at most `alpha` of
  the time whatever the number of cells) or **inconclusive** (with how many times the samples would settle it);
  a point drop beyond `hard_accuracy_drop` fails whatever the interval; more right->wrong than `max_flips` fails;
- KLD: the run's own per-token KL divergence against its reference cell, each direction's unbiased figure with its
  bootstrap interval (analysis/numerics.py), fails above `max_kld` (its lower bound above), inconclusive across it;
- throughput: the speed rule (analysis/speed.py), the run's repeats against the baseline's, fails when the ratio's
  one-sided upper bound is below `min_throughput_ratio`, and never within the rule's floor of 1 (runs drift more
  than repeats spread); with neither side repeated no noise is known and nothing fails on it;
- coverage: the run must cover what the baseline covers: every task, every document of each task (a run that scored
  3 of the baseline's 200 documents says nothing about the other 197), and, when throughput is gated, every scenario;
- a task whose version changed is refused rather than compared; a gated cell that crashed or served garbage fails.

A cell fails with any violation, passes when every task passes and nothing else failed, and is otherwise
inconclusive; the run likewise (exit 1, 0 and 3 in the command).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from evalharness.analysis.baselines import GateError, make_baseline, measured_on  # noqa: F401  (the gate's callers)
from evalharness.analysis.equivalence import decide_family, margin_for
from evalharness.analysis.pairing import (Headline, UnpairableMetric, canonical_scores, check_prompts,
                                          pairable_aggregation, pair, side_of_values, side_scores)
from evalharness.analysis.speed import FLOOR, Side, side_of, speedup
from evalharness.analysis.stats import PairedEvidence, paired_evidence
from evalharness.records.drift import DistributionDrift
from evalharness.records.baseline import Baseline, BaselineCell, BaselineTask, Thresholds
from evalharness.records.decision import GateRecord
from evalharness.records.measures import TaskScore
from evalharness.records.provenance import machine_kind
from evalharness.records.run import RunResult

GateOutcome = Literal["pass", "fail", "inconclusive"]
TaskOutcome = Literal["pass", "fail", "inconclusive", "screened"]


def machine_warning(run: RunResult, baseline: Baseline) -> str | None:
    """A warning (not a violation) when the baseline was measured on another kind of machine, or on one not recorded:
    throughput and even drift differ by processor and GPU (bf16 without native support is another computation)."""
    here, there = machine_kind(measured_on(run, run.cell_order)), machine_kind(baseline.machine)
    if here == there and here != "unknown":
        return None
    return (f"the baseline was measured on "
            f"{'an unrecorded machine' if there == 'unknown' else 'another kind of machine'}"
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


class GateTask(BaseModel):
    task: str
    outcome: TaskOutcome  # screened: a cell that answered a share of the documents on purpose (never a pass)
    paired: int = 0
    total: int = 0  # the baseline's documents
    repeats: tuple[int, int] = (1, 1)  # (baseline, run)
    margin: float | None = None
    drop: float | None = None  # baseline minus run, in the metric's better direction
    drop_low: float | None = None  # its two-sided 90% interval (the one-sided 95% bounds)
    drop_high: float | None = None
    p_worse_adjusted: float | None = None
    settle_factor: float | None = None
    reasons: list[str] = []


class GateCell(BaseModel):
    cell: str
    baseline_cell: str
    outcome: GateOutcome
    tasks: list[GateTask] = []
    violations: list[str] = []
    inconclusive: list[str] = []


class GateResult(BaseModel):
    outcome: GateOutcome
    family_size: int  # task comparisons the worse-test was adjusted over
    thresholds: dict = {}
    cells: list[GateCell] = []

    @property
    def violations(self) -> list[str]:
        return [v for c in self.cells for v in c.violations]

    @property
    def inconclusive(self) -> list[str]:
        return [v for c in self.cells for v in c.inconclusive]


def check(run: RunResult, run_dir: Path, baseline: Baseline, mapping: dict[str, str] | None = None) -> list[str]:
    """The violations, one readable line each (empty: nothing failed; `evaluate` also says what is inconclusive)."""
    return evaluate(run, run_dir, baseline, mapping).violations


def evaluate(run: RunResult, run_dir: Path, baseline: Baseline, mapping: dict[str, str] | None = None) -> GateResult:
    """Every gated cell's outcome, its tasks' outcomes and bounds, and the violation and inconclusive lines."""
    limits = thresholds_for(run, baseline)
    gate = limits.model_dump()
    cells: list[GateCell] = []
    family: dict[tuple[str, str], tuple[PairedEvidence, float]] = {}
    pending: dict[tuple[str, str], GateTask] = {}
    for run_id, base_id in gated_cells(run, baseline, mapping or {}):
        if base_id not in baseline.cells:
            raise GateError(f"baseline has no cell {base_id!r} (it has {', '.join(baseline.cells)})")
        out = GateCell(cell=run_id, baseline_cell=base_id, outcome="pass")
        cells.append(out)
        cell = run.cells.get(run_id)
        if cell is None:
            out.violations.append(f"{run_id}: did not run")
            continue
        if cell.status != "ok":
            out.violations.append(f"{run_id}: {cell.status} at {cell.phase}: {cell.reason}")
            continue
        base = baseline.cells[base_id]
        scores = {t.task: t for t in cell.quality}
        for task, expected in base.tasks.items():
            found = _task_evidence(run_id, task, expected, scores.get(task), run_dir, limits)
            out.violations += found[0]
            if found[1] is not None:
                task_out, evidence = found[1]
                out.tasks.append(task_out)
                family[(run_id, task)] = (evidence, margin_for(task, gate))
                pending[(run_id, task)] = task_out
        if limits.max_kld is not None:
            _judge_kld(out, run_id, cell.drift.numerics() if cell.drift else None, limits.max_kld)
        if limits.min_throughput_ratio is not None:
            failed, unsure = _throughput_violations(run_id, cell.throughput, base, limits)
            out.violations += failed
            out.inconclusive += unsure
    decisions = decide_family(family, limits.alpha)
    by_cell = {c.cell: c for c in cells}
    for key, decision in decisions.items():
        task_out, evidence = pending[key], family[key][0]
        _judge_task(by_cell[key[0]], task_out, evidence, decision, limits, len(family))
    for out in cells:
        out.outcome = "fail" if out.violations else "inconclusive" if out.inconclusive else "pass"
    outcome: GateOutcome = ("fail" if any(c.outcome == "fail" for c in cells) else
                            "inconclusive" if any(c.outcome == "inconclusive" for c in cells) else "pass")
    return GateResult(outcome=outcome, family_size=len(family), thresholds=limits.model_dump(exclude_none=True),
                      cells=cells)


def _judge_kld(out: GateCell, run_id: str, dist: DistributionDrift | None, max_kld: float) -> None:
    """`max_kld` against each direction's unbiased per-token KL (analysis/numerics.py): fail when the interval's
    lower bound is above it (credibly above), inconclusive when only its upper bound is, or when the cell has no
    unbiased figure (a record from before issue 26, or an engine that gives no log-probabilities). The coarse top-k
    figure is a lower bound and never gates."""
    found = dist.unbiased() if dist is not None else []
    if not found:
        reason = (dist.forward.reason if dist is not None and dist.forward is not None else None) or \
            (dist.reason if dist is not None else None) or "the numerics check did not run"
        out.inconclusive.append(f"{run_id}: max_kld {max_kld} not checked: no unbiased KL figure ({reason})")
        return
    for name, est in found:
        low = est.ci_low if est.ci_low is not None else est.estimate
        high = est.ci_high if est.ci_high is not None else est.estimate
        text = (f"{name} {est.estimate:.4f} nats/token [{est.confidence:.0%}: {low:.4f}, {high:.4f}] over "
                f"{est.contexts} contexts")
        if low is not None and low > max_kld:
            out.violations.append(f"{run_id}: {text} against the run's reference is above max_kld {max_kld}")
        elif high is not None and high > max_kld:
            out.inconclusive.append(f"{run_id}: {text}: its interval holds max_kld {max_kld}")


def _judge_task(out: GateCell, task: GateTask, evidence: PairedEvidence, decision, limits: Thresholds,
                family_size: int = 1) -> None:
    margin = margin_for(task.task, limits.model_dump())
    task.margin, task.drop = margin, evidence.estimate
    task.drop_low, task.drop_high = decision.drop_low, decision.drop_high
    task.p_worse_adjusted, task.settle_factor = decision.p_worse_adjusted, decision.settle_factor
    where = (f"{out.cell}: task {task.task}: drop {evidence.estimate:+.3f} [{1 - 2 * limits.alpha:.0%}: "
             f"{decision.drop_low:+.3f}, "
             f"{decision.drop_high:+.3f}] on {task.paired} documents x ({task.repeats[0]} baseline, "
             f"{task.repeats[1]} run) repeats, margin {margin}")
    failed = []
    if decision.outcome == "worse":
        failed.append(f"{where}: worse: the drop's lower bound is above the margin (Holm-adjusted p="
                      f"{decision.p_worse_adjusted:.3g} < {limits.alpha} over the gate's comparisons)")
    elif limits.hard_accuracy_drop is not None and evidence.estimate > limits.hard_accuracy_drop:
        failed.append(f"{where}: the drop exceeds the hard limit {limits.hard_accuracy_drop} whatever the interval")
    if limits.max_flips is not None and evidence.method == "score" and evidence.lost > limits.max_flips:
        failed.append(f"{out.cell}: task {task.task}: {evidence.lost} answers went right->wrong (maximum "
                      f"{limits.max_flips})")
    task.reasons = failed
    if failed:
        task.outcome = "fail"
        out.violations += failed
    elif task.outcome == "screened":
        # the share it answered cannot vouch for the documents it did not: screened, never a pass
        task.reasons = [f"{where}: screened: the cell answered {task.paired} of the baseline's {task.total} "
                        "documents on purpose (not faster than its reference); not shown worse on them, and the "
                        "gate cannot vouch for the rest"]
        out.inconclusive += task.reasons
    elif decision.noninferior:
        task.outcome = "pass"
    else:
        task.outcome = "inconclusive"
        task.reasons = [f"{where}: inconclusive: {inconclusive_words(decision, margin, limits.alpha, family_size)}; "
                        f"{settle_words(decision.settle_factor)}"]
        out.inconclusive += task.reasons


def gate_record(result: GateResult, baseline: str, warning: str | None, at: str) -> GateRecord:
    """The gate's outcome as the decision record keeps it (records/decision.py GateRecord): counts, the margin and
    alpha it used, the first line that failed it or left it open."""
    counts = {o: sum(c.outcome == o for c in result.cells) for o in ("pass", "fail", "inconclusive")}
    margin = result.thresholds.get("margin", result.thresholds.get("max_accuracy_drop"))
    first = (result.violations or [None])[0] if result.outcome == "fail" else \
        (result.inconclusive or [None])[0] if result.outcome == "inconclusive" else None
    return GateRecord(baseline=baseline, outcome=result.outcome, cells=len(result.cells), passed=counts["pass"],
                      failed=counts["fail"], inconclusive=counts["inconclusive"], margin=margin,
                      alpha=result.thresholds.get("alpha", 0.05), first=first, warning=warning, at=at)


def inconclusive_words(decision, margin: float, alpha: float, family_size: int) -> str:
    """Why a task that neither passed nor failed did neither, in words true of the interval printed beside them: the
    interval straddles the margin, or it lies above the margin but the worse-test did not survive Holm's adjustment
    over the gate's comparisons (the 90% interval is not adjusted; the decision is)."""
    if decision.drop_low > margin:
        return (f"the drop's lower bound {decision.drop_low:+.3f} is above the margin before adjustment, but not "
                f"after Holm over the gate's {family_size} comparisons (adjusted p={decision.p_worse_adjusted:.3g}, "
                f"not below {alpha})")
    return (f"the interval holds the margin {margin} (its upper bound {decision.drop_high:+.3f} is not below it, its "
            f"lower bound {decision.drop_low:+.3f} not above it)")


def settle_words(factor: float | None) -> str:
    """analysis/equivalence.py `samples_to_settle` in words: both sides' samples, 80% probability."""
    if factor is None:
        return "at this estimate no sample size settles it"
    return (f"about {factor:.1f}x the samples would settle it with 80% probability if the estimate held (both "
            "sides' samples: the baseline's and the run's)")


def _throughput_violations(run_id: str, scenarios: list, base: BaselineCell,
                           limits: Thresholds) -> tuple[list[str], list[str]]:
    """A scenario fails when the speed rule (analysis/speed.py: the run's repeats against the baseline's, disturbed
    ones set aside) puts the ratio's upper bound below min_throughput_ratio, and never within the floor of 1. Where
    neither side repeated there is no noise known and nothing can fail on it: a point below the floor is an
    inconclusive line. Returns (violations, inconclusive lines)."""
    measured = {s.name: s for s in scenarios}
    missing = [name for name in base.throughput if name not in measured]
    out: list[str] = []
    unsure: list[str] = []
    if missing:
        out.append(f"{run_id}: throughput scenario(s) {', '.join(missing)} of the baseline not in this run "
                   f"({len(base.throughput) - len(missing)} of the baseline's {len(base.throughput)} scenarios "
                   "measured)")
    floor = min(limits.min_throughput_ratio, 1 / (1 + FLOOR))  # type: ignore[type-var]
    for name, before in base.throughput.items():
        if name not in measured or before <= 0 or measured[name].output_tok_s <= 0:
            continue
        verdict = speedup(side_of(measured[name]), Side(tuple(base.throughput_repeats.get(name) or [before])))
        if verdict.high is None:
            if verdict.ratio < floor:
                unsure.append(f"{run_id}: throughput {name} is {verdict.ratio:.2f}x the baseline's, below "
                              f"{floor:.2f}x, but neither side repeated the scenario: no noise known, nothing "
                              "decided (set repeats: on it)")
            continue
        if verdict.high >= floor:
            continue
        kept = verdict.kept
        out.append(f"{run_id}: throughput {name} {measured[name].output_tok_s:.1f} tok/s is {verdict.ratio:.2f}x the "
                   f"baseline's {before:.1f}; the ratio's one-sided {1 - verdict.level:.0%} upper bound "
                   f"{verdict.high:.2f} (repeats kept: run {kept[0]}, baseline {kept[1]}) lies below {floor:.2f}x "
                   f"(min_throughput_ratio {limits.min_throughput_ratio}, never within {FLOOR:.0%} of 1)")
    return out, unsure


def _task_evidence(run_id: str, task: str, expected: BaselineTask, score: TaskScore | None, run_dir: Path,
                   limits: Thresholds) -> tuple[list[str], tuple[GateTask, PairedEvidence] | None]:
    """(violations, the task's evidence against the baseline) for one task of one gated cell."""
    total = len(expected.correct)
    if score is None or score.error or not score.samples:
        return [f"{run_id}: task {task} has no result in this run (the baseline scored {total} documents)"], None
    if score.version != expected.version:
        return [f"{run_id}: task {task} is version {score.version}, the baseline's is {expected.version}: "
                "refusing to compare; save a new baseline"], None
    if expected.subtask_versions and {k: s.version for k, s in score.subtasks.items()} != expected.subtask_versions:
        return [f"{run_id}: task {task}: its subtasks or their versions differ from the baseline's: refusing to "
                "compare; save a new baseline"], None
    try:
        pairable_aggregation(task, expected.metric, expected.aggregation)
        mine = side_scores(run_dir, score, Headline.of(score))
    except UnpairableMetric as exc:
        raise GateError(f"{run_id}: {exc}") from None
    # the baseline's keys decide what is compared: its headline records, matched among the run's records
    before = side_of_values(canonical_scores(expected.correct, task, expected.metric),
                            canonical_scores(expected.weights, task, expected.metric), expected.repeats,
                            expected.prompts)
    try:
        check_prompts(task, before.prompts, mine.prompts)
    except UnpairableMetric as exc:
        raise GateError(f"{run_id}: {exc}") from None
    paired = pair(before.means, mine.means, before.weights)
    n = len(paired.keys)
    # a screened cell (not faster than its reference) answered a share of the documents on purpose: what it did
    # not answer is not vouched for, so it is "screened" (inconclusive) unless that share already shows it worse
    screened = score.subset is not None and score.subset.fraction is not None
    out = [coverage_violation(run_id, task, n, total)] if n < total and not screened else []
    if not n:
        return out, None
    higher = expected.higher_is_better is not False
    evidence = paired_evidence(paired.before, paired.after, weights=paired.weights, higher_is_better=higher)
    return out, (GateTask(task=task, outcome="screened" if screened else "inconclusive", paired=n, total=total,
                          repeats=(expected.repeats, mine.repeats)), evidence)


def coverage_violation(run_id: str, task: str, paired: int, total: int) -> str:
    """A task that covers fewer of the baseline's documents than the baseline did: what is missing was not checked."""
    return (f"{run_id}: task {task}: scored {paired} of the baseline's {total} documents ({total - paired} missing: "
            "not scored in this run, or their text changed); the gate cannot vouch for what it did not see: run "
            "the same documents (the same quality.limit) or save a new baseline")
