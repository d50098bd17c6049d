"""The plan of a matrix's accuracy verdicts as text, for `evalharness plan` and the start of `run` (pure)."""

from __future__ import annotations

from evalharness.analysis.plan import Plan
from evalharness.analysis.plan_throughput import ThroughputPlan, Totals
from evalharness.render.markdown import markdown_table


def _n(value: float | int | None, form: str = "{:,.0f}") -> str:
    return "?" if value is None else form.format(value)


def plan_table(plan: Plan) -> str:
    rows = []
    for t in plan.tasks:
        needed = ("?" if not t.documents else "out of reach" if t.cell_repeats is None else
                  f"{t.cell_repeats} / {t.reference_repeats}")
        tokens = _n(t.tokens_per_answer) + (" (at most)" if t.tokens_per_answer_is_bound else "")
        rows.append([t.task, f"±{t.margin:g}", _n(t.documents), f"{t.accuracy:.2f}", f"{t.consistency:.2f}", needed,
                     _n(t.chains), tokens, _n(t.hours, "{:,.1f}"),
                     f"{t.configured[0]} / {t.configured[1]}: ±{_n(t.configured_margin, '{:.3f}')}",
                     "" if plan.budget_hours is None else f"±{_n(t.budget_margin, '{:.3f}')}"])
    header = ["task", "margin", "documents", "accuracy", "consistency", "repeats needed (cell / reference)",
              "chains", "tokens per answer", "hours", "as configured: certifies", "budget reaches"]
    return markdown_table(header, rows)


def throughput_table(tp: ThroughputPlan) -> str:
    """Steps x repeats x requests: one row per scenario and sweep step."""
    rows = []
    for s in tp.steps:
        low, high = s.repeats
        most = " (at most)" if s.requests_at_most else ""
        cell = (_n(None) if s.requests is None else f"{s.requests * low:,}" if low == high else
                f"{s.requests * low:,}–{s.requests * high:,}")
        rows.append([s.name + (" (sweep)" if s.sweep_step else ""), s.load(), _n(s.requests) + most,
                     _n(s.output_tokens) + (" (at most)" if s.tokens_at_most else ""),
                     f"{high} / " + (f"{low}" if low == high else f"{low}–{high}"),
                     _n(None if s.requests is None else s.requests * high), cell,
                     _n(s.seconds, "{:,.1f} s"), s.seconds_source or "unknown"])
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


def plan_text(plan: Plan) -> str:
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
        verdict = ("cannot be checked: the hours are unknown (give --from RUN or --tok-s, and documents)" if over is None
                   else "within it" if not over else
                   "the margins are out of reach within it (each task's 'budget reaches' column says what it buys)")
        lines.append(f"- budget: {plan.budget_hours:,.1f} hours: {verdict}")
    lines += [f"- {note}" for note in plan.notes]
    lines += ["", *throughput_lines(plan.throughput)]
    return "\n".join(lines) + "\n"
