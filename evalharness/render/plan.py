"""The plan of a matrix's accuracy verdicts as text, for `evalharness plan` and the start of `run` (pure)."""

from __future__ import annotations

from evalharness.analysis.plan import Plan
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


def plan_text(plan: Plan) -> str:
    lines = [f"plan: {plan.matrix_name}: {plan.cells} cell(s) against one reference; repeats for a true drop of twice "
             "each task's margin to be called worse with 80% power, Holm over every cell x task "
             "(analysis/sizing.py)", "", plan_table(plan), ""]
    for t in plan.tasks:
        lines.append(f"- {t.task}: {t.source}" + (f"; {t.statement}" if t.statement else ""))
    throughput = (f"{plan.tok_s:,.1f} tok/s ({plan.tok_s_source})" if plan.tok_s else
                  "no throughput known (give --from RUN or --tok-s): no hours")
    lines.append(f"- throughput: {throughput}")
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
    return "\n".join(lines) + "\n"
