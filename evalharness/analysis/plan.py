"""What a matrix's accuracy verdicts cost before it runs: per task, the repeats each cell and the shared reference
need for the margin (analysis/sizing.py: a true drop of twice the margin called worse with 80% power, Holm over
every cell x task), the reasoning chains, generated tokens and hours that makes, what the matrix as written will
certify, and what margin a budget reaches; beside it, the throughput phase's requests and time (plan_throughput.py).
Pure: a matrix (as the dict results.json keeps) and optionally a previous run's record and folder in, a Plan out;
render/plan.py writes it as text. A matrix with a `confirm` section is a two-stage run: plan_stages.py prices both
stages in box-hours from the same rows (`Plan.stages`), and that price is the one a budget is checked against.

Where its figures come from, each stated on the plan: the documents, accuracy, within-document variance (from which
the consistency of a document's answers), tokens per answer (the median of the recorded answers' lengths, else
the recorded mean) and throughput of a previous run's reference (`--from`), else stated figures (`--answer-tokens`,
`--documents`, `--startup-min`, `--tok-s`) or defaults (accuracy 0.8, consistency 0.5: the sm120 review's GPQA
figures; the task's token budget as an upper bound on an answer, said to be one; no throughput: no hours). A
group's documents are quality.limit per subtask times its subtasks (`groups`, from plan_groups.py).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from pydantic import BaseModel

from evalharness.analysis.equivalence import DEFAULT_ALPHA, margin_for
from evalharness.analysis.pairing import side_scores
from evalharness.analysis.plan_stages import Figure, StagesPlan, price_stages
from evalharness.analysis.plan_throughput import ThroughputPlan, price_throughput, time_at_quality_rate
from evalharness.analysis.sizing import certified_margin, repeats_for_task
from evalharness.analysis.stats import paired_evidence
from evalharness.matrix.base import LENGTH_TASK_PREFIX
from evalharness.records.run import RunResult

DEFAULT_ACCURACY = 0.8
DEFAULT_CONSISTENCY = 0.5
POWER = 0.8


class TaskPlan(BaseModel):
    task: str
    margin: float
    documents: int | None = None
    accuracy: float
    consistency: float
    source: str  # where documents, accuracy and consistency came from
    deterministic: bool = False  # the reference's repeats agreed on every document: repeats add nothing
    cell_repeats: int | None = None  # needed for the margin (None: no number of repeats reaches it)
    reference_repeats: int | None = None
    chains: int | None = None  # answers the needed design generates, every cell and the reference
    tokens_per_answer: float | None = None
    tokens_per_answer_is_bound: bool = False  # the task's token budget, not a length
    tokens_source: str = ""  # measured (median or mean), stated, or the budget bound
    hours: float | None = None
    configured: tuple[int, int] = (1, 1)  # the matrix's own (cell, reference) repeats
    configured_margin: float | None = None  # what the matrix as written certifies in the same sense
    budget_margin: float | None = None  # the smallest margin the budget's share for this task reaches
    statement: str = ""


class Plan(BaseModel):
    matrix_name: str
    cells: int  # cells compared with the reference
    tasks: list[TaskPlan] = []
    tok_s: float | None = None
    tok_s_source: str | None = None
    budget_hours: float | None = None
    hours: float | None = None  # the needed design, all tasks
    configured_hours: float | None = None
    throughput: ThroughputPlan | None = None  # the throughput phase's price (plan_throughput.py); None: no section
    stages: StagesPlan | None = None  # the two-stage price (plan_stages.py); None: no enabled confirm section
    notes: list[str] = []

    def over_budget(self) -> bool | None:
        """True when the needed design does not fit the budget; None when that cannot be told (no budget, or hours
        unknown: documents, tokens or throughput not known before a run)."""
        known = sum(t.hours for t in self.tasks if t.hours is not None)
        if self.budget_hours is None:
            return None
        if self.stages is not None:  # a two-stage run: the box-hours of both stages
            return None if self.stages.hours is None else self.stages.hours > self.budget_hours
        if known > self.budget_hours:
            return True  # the tasks whose hours are known already exceed it
        return None if self.hours is None else False


def _settings(quality: Mapping[str, Any], task: str) -> dict[str, Any]:
    own = (quality.get("task_settings") or {}).get(task) or {}
    return {**quality, **{k: v for k, v in own.items() if v is not None}}


def _configured(quality: Mapping[str, Any], task: str) -> tuple[int, int]:
    own = _settings(quality, task)
    cell = int(own.get("repeats") or quality.get("repeats") or 1)
    return cell, int(own.get("reference_repeats") or quality.get("reference_repeats") or cell)


def _measured(run: RunResult, run_dir: Path, task: str) -> dict[str, Any] | None:
    """Documents, accuracy, consistency and tokens per answer of a task in a previous run's reference."""
    reference = run.cells.get(run.reference)
    score = next((t for t in (reference.quality if reference else []) if t.task == task and t.samples), None)
    if score is None:
        return None
    side = side_scores(run_dir, score)
    values = list(side.means.values())
    if not values:
        return None
    accuracy = sum(values) / len(values)
    # a loglikelihood task generates nothing: no generation statistics, no tokens to pay for
    tokens = score.generation.mean_completion_tokens if score.generation else 0.0
    lengths = _lengths(run_dir, score)
    out: dict[str, Any] = {"documents": len(values), "accuracy": accuracy, "tokens": tokens,
                           "tokens_source": "measured: the recorded mean completion tokens (no answer's own length "
                           "recorded)" if score.generation else "measured: no generation (loglikelihood)"}
    if lengths:
        out["tokens"] = float(np.median(lengths))
        out["tokens_source"] = f"measured: the median of {len(lengths)} answers' completion tokens"
    if side.repeats >= 2:
        keys = [k for k in side.means if all(k in r for r in side.per_repeat)]
        per_doc = [[r[k] for r in side.per_repeat] for k in keys]
        within = float(np.var(np.array(per_doc), axis=1, ddof=1).mean())
        total = accuracy * (1 - accuracy)
        out["consistency"] = 1.0 if total <= 0 else min(1.0, max(0.0, 1 - within / total))
        out["deterministic"] = within == 0
        out["source"] = f"measured: the reference of {run_dir} ({side.repeats} repeats)"
    else:
        out["source"] = f"measured: the reference of {run_dir} (one repeat: consistency {DEFAULT_CONSISTENCY} assumed)"
    return out


def _lengths(run_dir: Path, score: Any) -> list[int]:
    """Every recorded answer's completion tokens (one per document and repeat: a document's filters share it)."""
    from evalharness.records.cellfiles import load_samples

    out = []
    for _, samples, error in score.all_repeats():
        if not samples or error or not (run_dir / samples).exists():
            continue
        seen = {}
        for row in load_samples(run_dir / samples):
            key = (row.get("task"), row.get("doc_id"), row.get("doc_hash"))
            if isinstance(row.get("completion_tokens"), int) and key not in seen:
                seen[key] = row["completion_tokens"]
        out += list(seen.values())
    return out


def _startup(matrix: Mapping[str, Any], previous: tuple[RunResult, Path] | None, minutes: float | None) -> Figure:
    """A launch's startup: stated, else the median of a previous run's recorded launches, else the bound
    timeouts.startup_s (the matrix's limit, not a measurement)."""
    if minutes is not None:
        return Figure(value=minutes * 60, source=f"stated: {minutes:g} min (--startup-min)")
    recorded = [c.startup_s for c in previous[0].cells.values() if c.startup_s] if previous else []
    if recorded:
        return Figure(value=float(np.median(recorded)), source=f"measured: the median of {len(recorded)} launches' "
                      f"startup_s in {previous[1]}")  # type: ignore[index]
    bound = float((matrix.get("timeouts") or {}).get("startup_s") or 900.0)
    return Figure(value=bound, bound=True, source=f"at most timeouts.startup_s ({bound / 60:g} min: the matrix's "
                  "limit, not a measurement; give --startup-min or --from)")


def _throughput(run: RunResult, concurrency: int) -> tuple[float, str] | None:
    """The reference's output tok/s in the scenario whose concurrency is nearest the quality phase's."""
    reference = run.cells.get(run.reference)
    scenarios = [s for s in (reference.throughput if reference else []) if s.concurrency]
    if not scenarios:
        return None
    best = min(scenarios, key=lambda s: abs(math.log(s.concurrency / concurrency)))
    return best.output_tok_s, f"the reference's scenario {best.name} (concurrency {best.concurrency}) of the run"


def _deterministic_margin(documents: int, alpha: float) -> float:
    """What a deterministic engine's documents certify with no flip: the score test's interval half-width."""
    low, high = paired_evidence([1.0] * documents, [1.0] * documents).interval(1 - 2 * alpha)
    return high


def make_plan(matrix: Mapping[str, Any], *, previous: tuple[RunResult, Path] | None = None,
              tok_s: float | None = None, budget_hours: float | None = None, cells: int | None = None,
              documents: Mapping[str, int] | None = None, accuracy: Mapping[str, float] | None = None,
              consistency: float | None = None, answer_tokens: Mapping[str, float] | None = None,
              groups: Mapping[str, tuple[int, str]] | None = None, startup_min: float | None = None,
              greedy: Mapping[str, str] | None = None) -> Plan:
    """`documents`, `accuracy`, `answer_tokens` (per task) and `consistency` override what a previous run measured
    or the defaults; `groups` ({task: (subtasks, where declared)}) sizes a group whose quality.limit is per subtask;
    `startup_min` states a launch's startup; `greedy` ({task: why}, plan_groups.greedy_tasks): tasks whose answers
    repeat, consistency 1 where nothing measured or gave one."""
    quality = matrix.get("quality") or {}
    gate = matrix.get("gate") or {}
    alpha = float(gate.get("alpha") or DEFAULT_ALPHA)
    tasks = list(quality.get("tasks") or [])
    plan = Plan(matrix_name=str(matrix.get("name")), cells=max(1, (cells or 2) - 1),
                budget_hours=budget_hours if budget_hours is not None else quality.get("budget_hours"))
    if previous is not None and tok_s is None:
        measured = _throughput(previous[0], int(quality.get("concurrency") or 1))
        if measured:
            tok_s, plan.tok_s_source = measured
    elif tok_s is not None:
        plan.tok_s_source = "given (--tok-s)"
    plan.tok_s = tok_s
    length = matrix.get("length") or {}
    for task in tasks:
        own = _settings(quality, task)
        if length.get("enabled") and task.startswith(LENGTH_TASK_PREFIX):  # a bucket's task: its size is the matrix's
            own = {**own, "limit": length.get("documents"), "max_gen_toks": length.get("max_gen_toks")}
        found = (_measured(*previous, task) if previous is not None else None) or {}
        given = {k: v for k, v in (("documents", (documents or {}).get(task)), ("accuracy", (accuracy or {}).get(task)),
                                   ("consistency", consistency)) if v is not None}
        group = (groups or {}).get(task)
        if group and own.get("limit") and "documents" not in given:
            own = {**own, "limit": own["limit"] * group[0]}
        why_greedy = (greedy or {}).get(task) if "consistency" not in given and "consistency" not in found else None
        source = found.get("source") or (f"stated defaults: accuracy {DEFAULT_ACCURACY}" + (
            f"; consistency 1: {why_greedy}" if why_greedy else f", consistency {DEFAULT_CONSISTENCY}") + (
            "; documents: length.documents (the hours count answer tokens, not the bucket's prompt)"
            if task.startswith(LENGTH_TASK_PREFIX) and length.get("enabled") else
            f"; documents: quality.limit {own['limit'] // group[0]} per subtask x {group[0]} subtasks (lm-eval's "
            f"{group[1]})" if group and own.get("limit") else
            "; documents: quality.limit (per subtask for a group: give --documents)" if own.get("limit") else ""))
        if given:
            source += "; given: " + ", ".join(f"{k} {v}" for k, v in given.items())
        if why_greedy and found.get("source"):
            source = source.replace(f"one repeat: consistency {DEFAULT_CONSISTENCY} assumed", "one repeat") + (
                f"; consistency 1: {why_greedy}")
        if why_greedy:
            # the default 0.5 would price a sampled task: a greedy one's answers repeat (the demo's reference, two
            # launches of every document: within-document variance 0.0000 on all four tasks)
            given["consistency"] = 1.0
        row = TaskPlan(task=task, margin=margin_for(task, gate), configured=_configured(quality, task),
                       documents=given.get("documents") or found.get("documents") or own.get("limit"),
                       accuracy=given.get("accuracy", found.get("accuracy", DEFAULT_ACCURACY)),
                       consistency=given.get("consistency", found.get("consistency", DEFAULT_CONSISTENCY)),
                       deterministic=found.get("deterministic", False) and "consistency" not in given,
                       source=source)
        tokens = (answer_tokens or {}).get(task, found.get("tokens"))
        row.tokens_per_answer = tokens if tokens is not None else own.get("max_gen_toks")
        row.tokens_per_answer_is_bound = tokens is None and row.tokens_per_answer is not None
        row.tokens_source = ("stated (--answer-tokens)" if task in (answer_tokens or {}) else
                             found.get("tokens_source", "measured") if tokens is not None else
                             "max_gen_toks: the budget bound, not a length (give --answer-tokens or --from)"
                             if row.tokens_per_answer is not None else "unknown (give --answer-tokens or --from)")
        plan.tasks.append(row)
        _size(row, plan, alpha, len(tasks))
    known = [t.hours for t in plan.tasks]
    plan.hours = sum(known) if known and all(h is not None for h in known) else None  # type: ignore[arg-type]
    configured = [_hours(t, plan, *t.configured) for t in plan.tasks]
    plan.configured_hours = sum(configured) if configured and all(h is not None for h in configured) else None
    if plan.budget_hours is not None and plan.hours:
        for row in plan.tasks:
            share = plan.budget_hours * (row.hours or 0) / plan.hours
            row.budget_margin = _margin_within(row, plan, alpha, len(tasks), share)
    plan.throughput = price_throughput(matrix, plan.cells, *((previous[0], str(previous[1])) if previous else ()))
    if plan.throughput is not None and tok_s and plan.throughput.all_max.minutes is None:
        plan.throughput = time_at_quality_rate(plan.throughput, tok_s, int(quality.get("concurrency") or 1))
    if (matrix.get("confirm") or {}).get("enabled", False):
        tokens = {t.task: Figure(value=t.tokens_per_answer, bound=t.tokens_per_answer_is_bound,
                                 source=t.tokens_source) for t in plan.tasks}
        plan.stages = price_stages(matrix, plan.tasks, cells=plan.cells, tok_s=plan.tok_s,
                                   startup=_startup(matrix, previous, startup_min), throughput=plan.throughput,
                                   tokens=tokens, budget_hours=plan.budget_hours)
    return plan


def _hours(row: TaskPlan, plan: Plan, cell_repeats: int | None, reference_repeats: int | None) -> float | None:
    if not row.documents or cell_repeats is None or reference_repeats is None or row.tokens_per_answer is None \
            or not plan.tok_s:
        return None
    chains = row.documents * (plan.cells * cell_repeats + reference_repeats)
    return chains * row.tokens_per_answer / plan.tok_s / 3600


def _size(row: TaskPlan, plan: Plan, alpha: float, tasks: int) -> None:
    if not row.documents:
        row.statement = "documents unknown: give a previous run (--from) or quality.limit"
        return
    if row.deterministic or row.consistency >= 1.0:
        row.cell_repeats, row.reference_repeats = 1, 1
        row.configured_margin = _deterministic_margin(row.documents, alpha)
        reached = row.configured_margin < row.margin
        row.statement = (f"deterministic (the reference's repeats agreed on every document): repeats add nothing; "
                         f"{row.documents} documents with no flip certify ±{row.configured_margin:.3f}"
                         + ("" if reached else f", not ±{row.margin}: only more documents reach it"))
    else:
        needed = repeats_for_task(row.accuracy, row.consistency, row.documents, row.margin, alpha=alpha,
                                  power=POWER, cells=plan.cells, tasks=tasks)
        if needed is None:
            row.statement = (f"±{row.margin} is out of reach at {row.documents} documents: the drop's own spread "
                             "between documents exceeds it whatever the repeats; only more documents reach it")
        else:
            row.cell_repeats, row.reference_repeats = needed
        rc, rr = row.configured
        # the same sizing as the needed repeats (the variance under the drop, t quantiles): the margin at which the
        # configured design has the stated power
        row.configured_margin = certified_margin(row.accuracy, row.consistency, row.documents, rc, rr, alpha=alpha,
                                                 power=POWER, cells=plan.cells, tasks=tasks)
    if row.cell_repeats is not None:
        row.chains = row.documents * (plan.cells * row.cell_repeats + (row.reference_repeats or 0))
    row.hours = _hours(row, plan, row.cell_repeats, row.reference_repeats)


def _margin_within(row: TaskPlan, plan: Plan, alpha: float, tasks: int, hours: float) -> float | None:
    """The smallest margin (on a 0.005 grid up to 0.5) whose needed design fits in `hours` for this task."""
    if row.deterministic or not row.documents:
        return row.configured_margin
    for step in range(1, 101):
        margin = step * 0.005
        needed = repeats_for_task(row.accuracy, row.consistency, row.documents, margin, alpha=alpha, power=POWER,
                                  cells=plan.cells, tasks=tasks)
        spent = _hours(row, plan, *needed) if needed else None
        if spent is not None and spent <= hours:
            return margin
    return None
