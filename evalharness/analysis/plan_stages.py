"""The price of a two-stage run in box-hours (issue 61, 4), for a matrix with a `confirm` section: exploration (every
cell launched once: its startup, the quality section's sample at its repeats, the throughput phase as
plan_throughput.py prices it) and confirmation (tries x 2 x launches launches, each a startup and the operating
point's scenario `speed_repeats` times, and the finalist's and the reference's answers spread over them), what each
stage decides per task, and what a budget buys. Pure: the matrix as results.json keeps it, the quality plan's rows
(analysis/plan.py `TaskPlan`: documents, accuracy, consistency, answer lengths), the throughput price and the stated
or measured figures in, a StagesPlan out; render/plan.py writes it.

The statistics (analysis/sizing.py): exploration only rules cells out, the drift "worse" verdict at each task's
margin, Holm over cells x tasks (`detectable_drop`: the smallest true drop it catches with 80% power); confirmation
certifies "not worse" per task at alpha / tries (analysis/passpower.py `pass_margin`: the margin a truly unchanged
finalist passes with the task's share of ACCURACY_POWER, the claim's 80% less the speed half's share, by simulating
the calibrated test that decides it, which the t formula over-states; each task at that full level, the tasks an
intersection-union test). Every figure says where it came from; one that is missing is named, never guessed.
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from pydantic import BaseModel

from evalharness.analysis.confirm import confirm_tasks
from evalharness.analysis.plan_throughput import ThroughputPlan, step_seconds
from evalharness.analysis.passpower import pass_margin, pass_repeats
from evalharness.analysis.sizing import detectable_drop
from evalharness.analysis.stats import paired_evidence
from evalharness.matrix.confirm import ConfirmSection
from evalharness.measures.catalog import PriceInputs
from evalharness.measures.prices import price_measures

POWER = 0.8  # exploration's "rules out" column, and the whole claim: a 1.3x unchanged finalist ships this often
# The claim ships only if the speed half says "faster" too: its share, measured (benchmarks/two_stage.py): with
# three launches a side and 4 repeats each, a 1.3x finalist is called faster in 96.9-100% of runs over launch SD 0-3%
# and repeat CV 0.5-8% (95.8% with 2 launches at SD 2%, CV 1.5%); sized at POWER alone, the answers passed an
# unchanged finalist 81.5% of the time and the whole decision shipped the 1.3x 78.7-80.0% (sm120, 600 runs a line)
SPEED_SHARE = 0.97
SPEED_LAUNCHES, SPEED_REPEATS = 3, 4  # where SPEED_SHARE was measured: confirm's defaults
ACCURACY_POWER = POWER / SPEED_SHARE  # 0.825: what the answers must pass with, every task together


def task_power(tasks: int) -> float:
    """Each confirmed task's power, so that a truly unchanged finalist passes all of them (the intersection-union
    test needs every task) with ACCURACY_POWER: 0.825 over 4 independent tasks is 0.953 each (at 0.8 each, all
    four pass 41%)."""
    return ACCURACY_POWER ** (1 / max(1, tasks))


class Figure(BaseModel):
    """A figure the price rests on: its value (None: not known), where it came from, and whether it is only a bound."""

    value: float | None = None
    source: str
    bound: bool = False  # an upper bound (a token budget, a timeout), not an estimate


class StageTask(BaseModel):
    task: str
    margin: float
    documents: int | None = None
    tokens: Figure  # per answer
    explore_repeats: tuple[int, int]  # (a cell, the reference)
    explore_hours: float | None = None  # every launch's answers to this task
    rules_out: float | None = None  # the smallest true drop exploration's "worse" verdict catches with 80% power
    deterministic: bool = False  # the reference's repeats agreed on every document: any flip shows
    confirmed: bool = True  # the confirmation's claim covers it
    confirm_documents: int | None = None  # confirmation's own (past exploration's)
    confirm_repeats: tuple[int, int] = (1, 1)  # (the finalist, the reference) per document, over a try's launches
    confirm_hours: float | None = None  # one try's answers to this task
    certifies: float | None = None  # the margin one try certifies "not worse" at alpha / tries, task_power()
    needed: tuple[int, int] | None = None  # the confirmation repeats for the task's own margin
    budget_certifies: float | None = None


class Stage(BaseModel):
    launches: int
    startup_h: float | None = None
    answers_h: float | None = None
    speed_h: float | None = None
    measures_h: float | None = 0.0  # the enabled measures' phases (exploration only: a confirming launch runs none)
    bound: bool = False  # some part is an upper bound (max_gen_toks, timeouts.startup_s, at-most repeats)
    lacks: list[str] = []  # the figures without which its hours are unknown

    @property
    def hours(self) -> float | None:
        parts = (self.startup_h, self.answers_h, self.speed_h, self.measures_h)
        return None if any(p is None for p in parts) else sum(parts)  # type: ignore[arg-type]


class BudgetFit(BaseModel):
    hours: float
    cells: int | None = None  # cells explored (of the matrix's) within it
    repeats: tuple[int, int] | None = None  # confirmation's (finalist, reference) repeats within it
    spent: float | None = None
    statement: str = ""


class StagesPlan(BaseModel):
    cells: int  # compared with the reference
    tries: int
    launches: int  # of the finalist in one try (as many of the reference)
    speed_repeats: int
    alpha: float
    tok_s: float | None = None
    startup: Figure
    point: Figure  # seconds of one repeat of the operating point's scenario
    measures: dict[str, Figure] = {}  # each enabled measure's seconds a launch, by its title (measures/prices.py)
    tasks: list[StageTask] = []
    exploration: Stage
    confirmation: Stage  # all tries, at most
    budget: BudgetFit | None = None
    notes: list[str] = []
    confirmed_tasks: int = 1  # the tasks the claim covers: each task's power is task_power(confirmed_tasks)

    @property
    def hours(self) -> float | None:
        e, c = self.exploration.hours, self.confirmation.hours
        return None if e is None or c is None else e + c


def _deterministic_margin(documents: int, alpha: float) -> float:
    """A deterministic engine's documents with no flip: the score test's upper bound (as plan.py's)."""
    return paired_evidence([1.0] * documents, [1.0] * documents).interval(1 - 2 * alpha)[1]


def _answers_h(docs: int | None, answers: int, tokens: Figure, tok_s: float | None) -> float | None:
    if not docs or tokens.value is None or not tok_s:
        return None
    return docs * answers * tokens.value / tok_s / 3600


def _certifies(row: Any, repeats: tuple[int, int], alpha: float, tries: int, tasks: int) -> float | None:
    if not row.documents:
        return None
    if row.deterministic or row.consistency >= 1.0:
        return _deterministic_margin(row.documents, alpha / tries)
    return pass_margin(row.accuracy, row.consistency, row.documents, *repeats, alpha=alpha, tries=tries,
                       power=task_power(tasks))


def _rules_out(row: Any, repeats: tuple[int, int], alpha: float, cells: int, tasks: int) -> float | None:
    if not row.documents or row.deterministic or row.consistency >= 1.0:
        return None
    return detectable_drop(row.accuracy, row.consistency, row.documents, *repeats, row.margin, alpha=alpha,
                           power=POWER, cells=cells, tasks=tasks)


def _confirm_documents(matrix: Mapping[str, Any], confirm: ConfirmSection, task: str,
                       explored: int | None) -> int | None:
    """The documents confirmation answers on `task` (a group's over its subtasks, as `explored` counts them):
    exploration's, or confirm.documents scaled by the subtasks exploration's count holds."""
    wanted = confirm.documents_for(task)
    if wanted is None or explored is None:
        return explored
    quality = matrix.get("quality") or {}
    limit = ((quality.get("task_settings") or {}).get(task) or {}).get("limit") or quality.get("limit")
    return explored * wanted // limit if limit else wanted


def price_stages(matrix: Mapping[str, Any], rows: Sequence[Any], *, cells: int, tok_s: float | None,
                 startup: Figure, throughput: ThroughputPlan | None, tokens: Mapping[str, Figure],
                 budget_hours: float | None = None) -> StagesPlan:
    """`rows`: the quality plan's TaskPlan rows; `tokens`: each task's answer length; `throughput`: the throughput
    phase's price with its times (None: the matrix measures no speed)."""
    confirm = ConfirmSection.model_validate(matrix.get("confirm") or {})  # the schema's defaults where unset
    alpha = float((matrix.get("gate") or {}).get("alpha") or 0.05)
    tries, launches = confirm.tries, confirm.launches
    repeats = confirm.repeats
    reference_repeats = confirm.reference_repeats or repeats
    speed_repeats = confirm.speed_repeats
    own = confirm.task_repeats  # a task's own repeats, both sides
    report = matrix.get("report") or {}
    point_s, point_source = (step_seconds(throughput, report.get("operating_point"), report.get("throughput_scenario"))
                             if throughput is not None else (0.0, "no throughput section: nothing measured"))
    plan = StagesPlan(cells=cells, tries=tries, launches=launches, speed_repeats=speed_repeats, alpha=alpha,
                      tok_s=tok_s, startup=startup, point=Figure(value=point_s, source=point_source,
                                                                    bound=point_source.startswith("at most")),
                      exploration=Stage(launches=cells + 1), confirmation=Stage(launches=tries * 2 * launches))
    covered = confirm_tasks(matrix)
    plan.confirmed_tasks = sum(1 for row in rows if row.task in covered)
    for row in rows:
        figure = tokens[row.task]
        rc, rr = row.configured
        task = StageTask(task=row.task, margin=row.margin, documents=row.documents, tokens=figure,
                         explore_repeats=(rc, rr), confirmed=row.task in covered,
                         deterministic=row.deterministic or row.consistency >= 1.0,
                         confirm_repeats=(own.get(row.task, repeats), own.get(row.task, reference_repeats)))
        task.explore_hours = _answers_h(row.documents, cells * rc + rr, figure, tok_s)
        task.rules_out = _rules_out(row, (rc, rr), alpha, cells, len(rows))
        if task.confirmed:
            task.confirm_documents = _confirm_documents(matrix, confirm, row.task, row.documents)
            held = row.model_copy(update={"documents": task.confirm_documents})
            task.confirm_hours = _answers_h(held.documents, sum(task.confirm_repeats), figure, tok_s)
            task.certifies = _certifies(held, task.confirm_repeats, alpha, tries, plan.confirmed_tasks)
            if held.documents and not row.deterministic and row.consistency < 1.0:
                task.needed = pass_repeats(row.accuracy, row.consistency, held.documents, row.margin, alpha=alpha,
                                           tries=tries, power=task_power(plan.confirmed_tasks),
                                           reference_share=task.confirm_repeats[1] / task.confirm_repeats[0])
        plan.tasks.append(task)
    given = PriceInputs(tok_s=tok_s, concurrency=int((matrix.get("quality") or {}).get("concurrency") or 1),
                        documents={r.task: r.documents for r in rows}, tokens={k: f.value for k, f in tokens.items()})
    plan.measures = {title: Figure(value=price.seconds, source=price.source, bound=price.bound)
                     for title, price in price_measures(matrix, given).items()}
    _stage_hours(plan, throughput)
    if budget_hours is not None:
        plan.budget = fit_budget(plan, rows, throughput, budget_hours)
    if launches < SPEED_LAUNCHES or speed_repeats < SPEED_REPEATS:
        plan.notes.append(f"the speed half's {SPEED_SHARE:.0%} share of the power was measured at {SPEED_LAUNCHES} "
                          f"launches a side of {SPEED_REPEATS} repeats; at {launches} of {speed_repeats} it is less "
                          "(benchmarks/two_stage.py: 2 launches of 3 found a 1.3x finalist 58-76% of runs where "
                          "repeats spread 8%), so the claim's power is under 80%")
    length = matrix.get("length") or {}
    if length.get("enabled"):
        prompts = int(length.get("documents") or 0) * sum(length.get("buckets") or [])
        plan.notes.append(f"not priced: the length buckets' prompts, {prompts:,} prompt tokens a launch of "
                          "exploration (their prefill; no prefill rate is stated or measured)")
    return plan


def _lacks(plan: StagesPlan, tasks: list[StageTask]) -> list[str]:
    lacks = []
    if not plan.tok_s:
        lacks.append("the quality phase's tok/s (--tok-s or --from)")
    if plan.startup.value is None:
        lacks.append("a startup time (--startup-min or --from)")
    lacks += [f"{t.task}'s documents (--documents)" for t in tasks if not t.documents]
    lacks += [f"{t.task}'s answer length (--answer-tokens or --from)" for t in tasks if t.tokens.value is None]
    return lacks


def _stage_hours(plan: StagesPlan, throughput: ThroughputPlan | None) -> None:
    start = plan.startup.value
    explore, confirm = plan.exploration, plan.confirmation
    for stage in (explore, confirm):
        stage.startup_h = None if start is None else stage.launches * start / 3600
        stage.bound = plan.startup.bound or any(t.tokens.bound for t in plan.tasks)
    explore.lacks = _lacks(plan, plan.tasks)
    confirm.lacks = _lacks(plan, [t for t in plan.tasks if t.confirmed])
    explore.bound = explore.bound or any(figure.bound for figure in plan.measures.values())
    each = _measures_seconds(plan)
    explore.measures_h = None if each is None else explore.launches * each / 3600
    explore.lacks += [f"the {title} check's time ({figure.source})" for title, figure in plan.measures.items()
                      if figure.value is None]
    known = [t.explore_hours for t in plan.tasks]
    explore.answers_h = None if any(h is None for h in known) else sum(known)  # type: ignore[arg-type]
    known = [t.confirm_hours for t in plan.tasks if t.confirmed]
    confirm.answers_h = None if any(h is None for h in known) else plan.tries * sum(known)  # type: ignore[arg-type]
    if throughput is None:
        explore.speed_h = confirm.speed_h = 0.0
        return
    minutes = throughput.all_max.minutes
    explore.speed_h = None if minutes is None else minutes / 60
    explore.bound = True  # a cell measures from repeats.min to repeats.max: priced at max
    if minutes is None:
        explore.lacks.append("the throughput steps' times (--from, or --tok-s to time them at the quality rate)")
    confirm.speed_h = None if plan.point.value is None else \
        confirm.launches * plan.speed_repeats * plan.point.value / 3600
    if plan.point.value is None:
        confirm.lacks.append(f"the operating point's time ({plan.point.source})")


def _explore_cost(plan: StagesPlan, rows: Sequence[Any], throughput: ThroughputPlan | None, cells: int) -> float:
    """Exploration's hours with `cells` of the matrix's cells (figures known)."""
    answers = sum(_answers_h(r.documents, cells * r.configured[0] + r.configured[1], t.tokens, plan.tok_s) or 0.0
                  for r, t in zip(rows, plan.tasks))
    speed = 0.0 if throughput is None else \
        ((throughput.reference.minutes or 0.0) + cells * (throughput.cell_max.minutes or 0.0)) / 60
    return (cells + 1) * ((plan.startup.value or 0.0) + (_measures_seconds(plan) or 0.0)) / 3600 + answers + speed


def _measures_seconds(plan: StagesPlan) -> float | None:
    """The enabled measures' seconds a launch, together (None: one of them is not known)."""
    known = [figure.value for figure in plan.measures.values()]
    return None if any(v is None for v in known) else sum(known)  # type: ignore[arg-type]


def _confirm_cost(plan: StagesPlan, repeats: tuple[int, int] | None) -> float:
    """Box-hours of every try, at `repeats` on every task (None: each task's configured repeats)."""
    fixed = plan.confirmation.launches * ((plan.startup.value or 0.0) + plan.speed_repeats * (plan.point.value or 0.0))
    answers = sum(_answers_h(t.confirm_documents, sum(repeats or t.confirm_repeats), t.tokens, plan.tok_s) or 0.0
                  for t in plan.tasks if t.confirmed)
    return fixed / 3600 + plan.tries * answers


def fit_budget(plan: StagesPlan, rows: Sequence[Any], throughput: ThroughputPlan | None,
               hours: float) -> BudgetFit:
    """What `hours` buy: every cell explored as configured and the most confirmation repeats that fit (the reference's
    at the configured share); where exploration alone does not fit, the most cells that leave room for one repeat
    each side. The margins each confirmed task certifies there go to `StageTask.budget_certifies`."""
    fit = BudgetFit(hours=hours)
    lacks = sorted(set(plan.exploration.lacks + plan.confirmation.lacks))
    if lacks:
        fit.statement = "cannot be told: the plan lacks " + "; ".join(lacks)
        return fit
    share = plan.tasks[0].confirm_repeats[1] / plan.tasks[0].confirm_repeats[0] if plan.tasks else 1.0
    for cells in range(plan.cells, 0, -1):
        left = hours - _explore_cost(plan, rows, throughput, cells)
        best = None
        for r in range(1, 2001):
            pair = (r, max(1, math.ceil(share * r - 1e-9)))
            if _confirm_cost(plan, pair) > left:
                break
            best = pair
        if best is not None:
            fit.cells, fit.repeats = cells, best
            fit.spent = hours - left + _confirm_cost(plan, best)
            break
    if fit.repeats is None:
        fit.statement = (f"nothing: one cell explored and one confirmation repeat each side take "
                         f"{_explore_cost(plan, rows, throughput, 1) + _confirm_cost(plan, (1, 1)):,.1f} h")
        return fit
    for row, task in zip(rows, plan.tasks):
        if task.confirmed:
            task.budget_certifies = _certifies(row.model_copy(update={"documents": task.confirm_documents}),
                                               fit.repeats, plan.alpha, plan.tries, plan.confirmed_tasks)
    certified = [f"{t.task} ±{t.budget_certifies:.3f}" for t in plan.tasks if t.budget_certifies is not None]
    explored = "every cell" if fit.cells == plan.cells else f"the reference and {fit.cells} of {plan.cells} cells"
    fit.statement = (f"explores {explored}, confirms at {fit.repeats[0]} / {fit.repeats[1]} repeats "
                     f"({fit.spent:,.1f} h): certifies {', '.join(certified) or 'no task'}")
    configured = sorted({t.confirm_repeats for t in plan.tasks if t.confirmed})
    if configured and [fit.repeats] != configured:
        most = next((n for n in range(plan.cells, 0, -1)
                     if _explore_cost(plan, rows, throughput, n) + _confirm_cost(plan, None) <= hours), None)
        said = f"{configured[0][0]} / {configured[0][1]}" if len(configured) == 1 else "each task's own repeats"
        fit.statement += (f"; or the configured confirmation ({said}: " + ", ".join(
            f"{t.task} ±{t.certifies:.3f}" for t in plan.tasks if t.certifies is not None) + ") after exploring " + (
            f"the reference and {most} of {plan.cells} cells" if most else "no cell: it does not fit") + ")")
    return fit
