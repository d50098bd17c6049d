"""The report's Pareto section (issue 58, 4): the decision's table, four columns (the cell, its figure, the speed
verdict, the accuracy verdict), then the figures behind the verdicts (the front among them) in a table of their own,
and the cells not on the chart. Pure: reads the decision record (analysis/decision.py); decides nothing.
"""

from __future__ import annotations

from evalharness.analysis.speed import FLOOR
from evalharness.records.run import RunResult
from evalharness.render.drift import interval_text, verdict_text
from evalharness.render.load import figure_text
from evalharness.render.markdown import markdown_table, md_text
from evalharness.render.nodes import mixed_caveat, other_kind
from evalharness.render.numerics import kl_text
from evalharness.render.verdict import chart_of, length_note, speed_of


def vs_reference_text(run: RunResult, cid: str) -> str:
    """'1.00x' for the reference; the speed rule's words for a cell at the operating point ('1.48x [90%: 1.31–1.67]
    faster', analysis/speed.py); '' where either side lacks it."""
    if cid == run.reference:
        return "1.00x"
    verdict = speed_of(run, cid)
    return "" if verdict is None else verdict.text


def pareto_section(run: RunResult) -> list[str]:
    """The decision's table (at most seven columns: the cell, the front, its figure, the speed verdict, the accuracy
    verdict; issue 58, 4), then the figures behind the verdicts in a table of their own."""
    chart = chart_of(run)
    measure = chart.measure
    by_cell = {p.cell: p for p in chart.points}
    ref_tp = chart.throughput.get(run.reference)
    rows, detail = [], []
    for cid, tp in chart.throughput.items():
        point = by_cell.get(cid)
        d = run.cells[cid].drift
        dist_text, same_text = "", ""
        if cid == run.reference:
            verdict, acc, p_text, flips, agree = "reference", "", "", "", ""
        elif d is None:
            verdict, acc, p_text, flips, agree = "not measured", "", "", "", ""
        else:
            verdict = verdict_text(d.outcome, d.worst_drop_upper)
            acc = interval_text(d.accuracy_delta, d.ci_low, d.ci_high) or "no paired samples"
            p_text = "" if d.p_value is None else f"{d.p_value:.3g}"
            flips = f"{d.right_to_wrong} / {d.wrong_to_right}"
            agree = f"{d.agreement.identical}/{d.agreement.total}" if d.agreement else ""
            numerics = d.numerics()
            if numerics is not None:
                dist_text = kl_text(numerics.forward) if numerics.forward else \
                    "unavailable: " + md_text(numerics.reason or "", 60)
                same_text = kl_text(numerics.reverse)
        rows.append([
            f"`{cid}`",
            "" if tp is None else _figure_mean(run, cid),
            "" if tp is None or ref_tp is None else vs_reference_text(run, cid)
            + (" (other machine)" if other_kind(run, cid) else "")
            + (f"; {note}" if (note := length_note(run, cid)) else ""),
            verdict,
        ])
        detail.append([f"`{cid}`", "**yes**" if point and point.on_front else ("no" if point else ""),
                       "" if tp is None else figure_text(run, cid), acc, p_text, flips, agree, dist_text, same_text,
                       ", ".join(f"`{c}`" for c in point.dominated_by) if point else ""])
    if not rows:
        return []
    unit = chart.axis.split(" ", 2)[0] + " tok/s" if "goodput" in chart.axis else "output tok/s"
    out = ["## Pareto: throughput against drift", "",
           f"Throughput: {md_text(chart.axis)}{_noise_note(chart)}; drift: "
           f"{'the accuracy verdict' if measure == 'accuracy' else 'mean KL divergence'} against the reference. "
           "The verdict is per task against its margin (Drift per task), the cell's the worst of its tasks': "
           "**equivalent** cells are tied with the reference on accuracy, **inconclusive** ones rank below them and "
           "**worse** ones below that, so noise never makes a cell dominate; `drop ≤ x` is the largest one-sided 95% "
           "upper bound of a task's drop.", "",
           markdown_table(["cell", f"{md_text(unit)} ↑", "vs reference ↑", "accuracy verdict"], rows), "",
           "The figures behind them: whether the cell is on the Pareto front (no cell both faster by the speed rule "
           "and no worse by the verdicts); the kept repeats' range of the figure; pooled Δ, the mean of the "
           "tasks' Δ (tasks "
           "weighted equally), cell minus reference, with a 90% interval, and its two-sided p; flips, right→wrong / "
           "wrong→right over tasks with single 0/1 samples; the probes answered identically; KL per token in nats "
           "with a 90% interval, each direction on the sampling side's own tokens (Numerics, below); the cells that "
           "dominate it.", "",
           markdown_table(["cell", "on front", f"{md_text(unit)} (kept repeats)", "pooled Δ [90%]", "p", "flips",
                           "probes identical", "KL(ref‖cell) [90%]", "KL(cell‖ref) [90%]", "dominated by"], detail), ""]
    if mixed_caveat(run):
        out[2:2] = [mixed_caveat(run), ""]
    failed = [run.cells[c] for c in run.cell_order if c in run.cells and run.cells[c].status != "ok"]
    if failed:
        out += ["Not on the chart:", ""]
        out += [f"- `{c.id}`: **{c.status}** at {md_text(c.phase)}: {md_text(c.reason or '', 300)}" for c in failed]
        out.append("")
    return out


def _figure_mean(run: RunResult, cid: str) -> str:
    """The figure alone (the kept repeats' mean), with the step it was read at where cells read their own."""
    text = figure_text(run, cid)
    head, _, rest = text.partition(" (")
    step = rest.rsplit(") at ", 1)[-1] if ") at " in rest else ""
    return head + (f" at {step}" if step else "") + (" (**misses the SLO**)" if "misses the SLO" in text else "")


def _noise_note(chart) -> str:
    """How the throughput figure was obtained, and the speed rule that 'vs reference' and the front use."""
    repeats = {len(p.rates) for p in chart.points}
    rule = (f"'vs reference' is the speed rule's verdict (the ratio of geometric means, and in brackets its "
            f"interval from both sides' repeats with its level beside the ends: each end a one-sided bound at the "
            f"alpha the cell's last look spent, so 90% for a fixed number of repeats and wider at an early look of "
            f"adaptive ones, 5% over all the looks; **faster** when the lower bound is above "
            f"{1 + FLOOR:.2f}, **slower** when the upper bound is below {1 / (1 + FLOOR):.2f}, **equal** within both, "
            f"else **undecided**; the {FLOOR:.0%} floor because cells run minutes apart and runs drift more than "
            "repeats spread; disturbed repeats are set aside, Throughput below names them), and the front uses the "
            "same rule between cells")
    if repeats - {0, 1}:
        return (" (the mean of the repeats the speed rule kept, their lowest..highest beside it and how many it set "
                f"aside; {rule})")
    return (" (measured once: no noise bar, so no cell is called faster or slower; set `repeats:` on the scenario, "
            f"e.g. {{min: 2, max: 6}}, to measure until decided; {rule})")
