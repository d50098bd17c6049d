"""The plan of a matrix's verdicts as text, for `evalharness plan` and the start of `run` (pure): the single-stage
accuracy table, or for a matrix with a `confirm` section the two stages' tables and box-hours; then the throughput
phase. A figure that is missing is named in its cell ("needs tok/s"), never a bare question mark."""

from __future__ import annotations

from evalharness.analysis.plan import Plan, TaskPlan
from evalharness.analysis.plan_stages import ACCURACY_POWER, SPEED_SHARE, Figure, Stage, StagesPlan, StageTask
from evalharness.analysis.plan_throughput import ThroughputPlan, Totals
from evalharness.render.markdown import markdown_table


def _n(value: float | int | None, form: str = "{:,.0f}", lacks: str = "unknown") -> str:
    """A figure, or what it lacks (a missing figure is named, never '?')."""
    return lacks if value is None else form.format(value)


def _hours_lack(documents: int | None, tokens: float | None, tok_s: float | None) -> str:
    return "needs documents" if not documents else "needs lengths" if tokens is None else \
        "needs tok/s" if not tok_s else "unknown"


def _margin(value: float | None, reason: str) -> str:
    return reason if value is None else f"±{value:.3f}"


def plan_table(plan: Plan) -> str:
    rows = []
    for t in plan.tasks:
        needed = ("needs documents" if not t.documents else "out of reach" if t.cell_repeats is None else
                  f"{t.cell_repeats} / {t.reference_repeats}")
        tokens = _n(t.tokens_per_answer, lacks="needs lengths") + (" (at most)" if t.tokens_per_answer_is_bound else "")
        unreached = "needs documents" if not t.documents else "out of reach"
        budget = ("" if plan.budget_hours is None else _margin(t.budget_margin, unreached if plan.hours else
                                                                  _hours_lack(t.documents, t.tokens_per_answer,
                                                                              plan.tok_s)))
        rows.append([t.task, f"±{t.margin:g}", _n(t.documents, lacks="needs documents"), f"{t.accuracy:.2f}",
                     f"{t.consistency:.2f}", needed, _n(t.chains, lacks=unreached),
                     tokens, _n(t.hours, "{:,.1f}", _hours_lack(t.documents, t.tokens_per_answer, plan.tok_s)),
                     f"{t.configured[0]} / {t.configured[1]}: {_margin(t.configured_margin, unreached)}", budget])
    header = ["task", "margin", "documents", "accuracy", "consistency", "repeats needed (cell / reference)",
              "chains", "tokens per answer", "hours", "as configured: certifies", "budget reaches"]
    return markdown_table(header, rows)


def throughput_table(tp: ThroughputPlan) -> str:
    """Steps x repeats x requests: one row per scenario and sweep step."""
    rows = []
    for s in tp.steps:
        low, high = s.repeats
        most = " (at most)" if s.requests_at_most else ""
        bound = "by duration_s"
        cell = (bound if s.requests is None else f"{s.requests * low:,}" if low == high else
                f"{s.requests * low:,}–{s.requests * high:,}")
        rows.append([s.name + (" (sweep)" if s.sweep_step else ""), s.load(), _n(s.requests, lacks=bound) + most,
                     _n(s.output_tokens, lacks=bound) + (" (at most)" if s.tokens_at_most else ""),
                     f"{high} / " + (f"{low}" if low == high else f"{low}–{high}"),
                     _n(None if s.requests is None else s.requests * high, lacks=bound), cell,
                     _n(s.seconds, "{:,.1f} s", "needs --from"), s.seconds_source or "no run, no tok/s"])
    header = ["scenario", "load", "requests per repeat", "output tokens per repeat", "repeats (reference / cell)",
              "reference: requests", "one cell: requests", "time per repeat", "time from"]
    return markdown_table(header, rows)


def _totals(t: Totals, at_most: bool = False) -> str:
    most = "at most " if at_most else ""
    return f"{most}{t.requests:,} requests" + ("" if t.minutes is None else f", {most}{t.minutes:,.1f} min")


def _span(low: Totals, high: Totals) -> str:
    """From `low` (every repeat at repeats.min) to at most `high` (repeats.max)."""
    if low == high:
        return _totals(high, True)
    minutes = "" if low.minutes is None or high.minutes is None else \
        f", {low.minutes:,.1f} to at most {high.minutes:,.1f} min"
    return f"{low.requests:,} to at most {high.requests:,} requests{minutes}"


def throughput_lines(tp: ThroughputPlan | None) -> list[str]:
    """The Throughput table and its totals line, as lines for the plan's text."""
    if tp is None:
        return ["Throughput: the matrix has no throughput section: nothing to price"]
    swept = any(s.sweep_step for s in tp.steps)
    lines = ["Throughput: the reference measures every scenario repeats.max times, a cell from repeats.min to "
             "repeats.max (stopping once the speed rule decides; docs/speed.md)", "", throughput_table(tp), ""]
    unknown = "" if tp.all_max.minutes is not None else \
        "; time unknown: give a previous run (--from RUN)" if tp.previous is None else \
        "; time unknown: some step's 'time from' is unknown"
    lines.append(f"- throughput totals: reference {_totals(tp.reference, swept)}; one cell "
                 f"{_span(tp.cell_min, tp.cell_max)}; the reference and its {tp.cells} cell(s) "
                 f"{_span(tp.all_min, tp.all_max)}{unknown}")
    if tp.previous:
        lines.append(f"- throughput times: from {tp.previous}; the engine's start and the pauses between repeats are "
                     "not counted")
    lines += [f"- {note}" for note in tp.notes]
    return lines


def _tokens(figure: Figure) -> str:
    if figure.value is None:
        return "needs lengths"
    kind = ("budget bound" if figure.bound else "median" if "median" in figure.source else
            "mean" if "mean" in figure.source else "stated" if figure.source.startswith("stated") else "measured")
    return f"{figure.value:,.0f} ({kind})"


def _stage_line(name: str, stage: Stage, parts: list[tuple[str, float | None]]) -> str:
    most = "at most " if stage.bound else ""
    if stage.hours is None:
        return f"- {name}: {stage.launches} launches; hours unknown: needs " + "; ".join(stage.lacks)
    return (f"- {name}: {stage.launches} launches, {most}{stage.hours:,.1f} box-hours = "
            + " + ".join(f"{label} {value:,.1f} h" for label, value in parts if value is not None))


def exploration_table(sp: StagesPlan) -> str:
    rows = []
    for t in sp.tasks:
        unreached = "needs documents" if not t.documents else "out of reach"
        rule = "any flip (deterministic)" if t.deterministic else _n(t.rules_out, "a drop of {:.3f}", unreached)
        rows.append([t.task, f"±{t.margin:g}", _n(t.documents, lacks="needs documents"), _tokens(t.tokens),
                     f"{t.explore_repeats[0]} / {t.explore_repeats[1]}",
                     _n(t.explore_hours, "{:,.1f}", _hours_lack(t.documents, t.tokens.value, sp.tok_s)), rule])
    return markdown_table(["task", "margin", "documents", "tokens/answer", "repeats cell / ref", "hours",
                           "rules out (80%)"], rows)


def _needed(t: StageTask) -> str:
    if not t.documents:
        return "needs documents"
    if t.deterministic:  # answers that repeat: only more documents narrow the claim
        within = t.certifies is not None and t.certifies <= t.margin
        return "repeats add nothing" + ("" if within else ": more documents")
    return "out of reach" if t.needed is None else f"{t.needed[0]} / {t.needed[1]}"


def confirmation_table(sp: StagesPlan) -> str:
    rows = []
    for t in sp.tasks:
        if not t.confirmed:
            rows.append([t.task, f"±{t.margin:g}", "-", "not confirmed", "0.0", "not in confirm.tasks", "not confirmed",
                         *([] if sp.budget is None else ["not confirmed"])])
            continue
        budget = "" if sp.budget is None else _margin(t.budget_certifies, "nothing fits" if sp.budget.repeats is None
                                                      and not sp.budget.statement.startswith("cannot") else
                                                      "lacks: see the budget line")
        certifies = _margin(t.certifies, "needs documents")
        if t.certifies is not None:
            certifies += " ✓" if t.certifies <= t.margin else ""
        rows.append([t.task, f"±{t.margin:g}", _n(t.confirm_documents, "{:,}", "needs documents"),
                     f"{t.confirm_repeats[0]} / {t.confirm_repeats[1]}",
                     _n(t.confirm_hours, "{:,.1f}", _hours_lack(t.confirm_documents, t.tokens.value, sp.tok_s)),
                     certifies,
                     _needed(t), *([] if sp.budget is None else [budget])])
    budget = [] if sp.budget is None else [f"budget {sp.budget.hours:g} h"]
    return markdown_table(["task", "margin", "documents", "repeats fin. / ref", "hours a try", "certifies",
                           "for the margin", *budget], rows)


def stages_lines(sp: StagesPlan) -> list[str]:
    """Both stages' tables, their box-hours and the decision they reach."""
    level = sp.alpha / sp.tries
    lines = [f"Exploration: the reference and {sp.cells} cell(s), each launched once; its quality sample rules a cell "
             "out (the drift \"worse\" verdict at the task's margin, Holm over cells x tasks) and ranks the rest", "",
             exploration_table(sp), "",
             f"Confirmation: {sp.tries} tr{'y' if sp.tries == 1 else 'ies'} x 2 x {sp.launches} launches (the "
             f"reference relaunched, then the finalist, interleaved); per task \"not worse\" at alpha / tries = "
             f"{level:g} on documents exploration did not answer: the margin a truly unchanged finalist passes with "
             f"{ACCURACY_POWER:.0%} power in all (each task's share; the claim's 80% less the speed half's "
             f"{SPEED_SHARE:.0%}; analysis/passpower.py simulates the calibrated test that decides it) (✓: within "
             "the task's margin)",
             "", confirmation_table(sp), ""]
    start = sp.startup
    lines.append(f"- a launch's startup: {start.value / 60:,.1f} min, {start.source}" if start.value is not None
                 else f"- a launch's startup: unknown ({start.source})")
    lines.append(f"- the operating point's scenario, a repeat: " + (
        f"{sp.point.value:,.1f} s ({sp.point.source}), {sp.speed_repeats} repeats a launch"
        if sp.point.value is not None else f"unknown ({sp.point.source})"))
    e, c = sp.exploration, sp.confirmation
    for title, figure in sp.measures.items():
        if figure.value is not None:
            lines.append(f"- the {title} check, a launch: {figure.value / 60:,.1f} min ({figure.source})")
    lines.append(_stage_line("exploration", e, [("startups", e.startup_h), ("answers", e.answers_h),
                                                ("throughput", e.speed_h), ("checks", e.measures_h or None)]))
    lines.append(_stage_line(f"confirmation (all {sp.tries} tr{'y' if sp.tries == 1 else 'ies'})", c,
                             [("startups", c.startup_h), ("speed", c.speed_h), ("answers", c.answers_h)]))
    if sp.hours is not None:
        most = "at most " if e.bound or c.bound else ""
        lines.append(f"- in all: {most}{sp.hours:,.1f} box-hours")
    confirmed = [t for t in sp.tasks if t.confirmed]
    if confirmed and all(t.certifies is not None for t in confirmed):
        worst = max(t.certifies for t in confirmed)  # type: ignore[type-var]
        within = [t.task for t in confirmed if t.certifies <= t.margin]  # type: ignore[operator]
        lines.append(f"- decision: every confirmed task at ±{worst:.3f} or better; within its own margin: "
                     + (", ".join(within) or "none"))
    if sp.budget is not None:
        lines.append(f"- budget {sp.budget.hours:g} h: {sp.budget.statement}")
    lines += [f"- {note}" for note in sp.notes]
    return lines


def _sources(plan: Plan) -> list[str]:
    return [f"- {t.task}: {t.source}; answer length: {t.tokens_source}" + (f"; {t.statement}" if t.statement and
                                                                          plan.stages is None else "")
            for t in plan.tasks]


def plan_text(plan: Plan) -> str:
    if plan.stages is not None:
        lines = [f"plan: {plan.matrix_name}: two stages: explore every cell, then confirm the finalist on fresh "
                 "launches against the reference launched again (analysis/plan_stages.py)", "",
                 *stages_lines(plan.stages), *_sources(plan)]
        throughput = (f"{plan.tok_s:,.1f} tok/s ({plan.tok_s_source})" if plan.tok_s else
                      "no throughput known (give --from RUN or --tok-s): no hours")
        lines.append(f"- the quality phase's throughput: {throughput}")
        lines += [f"- {note}" for note in plan.notes]
        lines += ["", *throughput_lines(plan.throughput)]
        return "\n".join(lines) + "\n"
    lines = [f"plan: {plan.matrix_name}: {plan.cells} cell(s) against one reference; repeats for a true drop of twice "
             "each task's margin to be called worse with 80% power, Holm over every cell x task "
             "(analysis/sizing.py)", "", plan_table(plan), ""]
    for t in plan.tasks:
        lines.append(f"- {t.task}: {t.source}" + (f"; {t.statement}" if t.statement else ""))
    throughput = (f"{plan.tok_s:,.1f} tok/s ({plan.tok_s_source})" if plan.tok_s else
                  "no throughput known (give --from RUN or --tok-s): no hours")
    lines.append(f"- the quality phase's throughput: {throughput}")
    if plan.hours is not None:
        lines.append(f"- the needed design: {plan.hours:,.1f} hours of generation in all; as configured: "
                     f"{_n(plan.configured_hours, '{:,.1f}')} hours")
    if plan.budget_hours is not None:
        over = plan.over_budget()
        verdict = ("cannot be checked: the hours are unknown (give --from RUN or --tok-s, and documents)"
                   if over is None else "within it" if not over else
                   "the margins are out of reach within it (each task's 'budget reaches' column says what it buys)")
        lines.append(f"- budget: {plan.budget_hours:,.1f} hours: {verdict}")
    lines += [f"- {note}" for note in plan.notes]
    lines += ["", *throughput_lines(plan.throughput)]
    return "\n".join(lines) + "\n"
