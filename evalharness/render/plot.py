"""The run's charts (matplotlib, no display needed), from results.json: pareto.png (throughput against drift, the
front joined by a line), curves.png (each cell's load sweep: output tok/s per GPU against tok/s per user) and
compare.png (two runs' Pareto points)."""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.goodput import slo_words
from evalharness.analysis.operating import CurvePoint
from evalharness.analysis.pareto import chosen_point, curves, pareto
from evalharness.records.run import RunResult
from evalharness.render.names import short_names
from evalharness.render.throughput import kept_range


def write_plot(run: RunResult, path: Path) -> bool:
    """A scatter of throughput against drift, the front joined by a line; False when there is nothing to draw."""
    chart = pareto(run)
    points, measure = chart.points, chart.measure
    if not points:
        return False
    import matplotlib

    matplotlib.use("Agg")  # no display on CI machines
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    front = sorted((p for p in points if p.on_front), key=lambda p: p.throughput)
    others = [p for p in points if not p.on_front]
    # the pooled accuracy drop's 90% interval as a vertical bar, where the cell has one
    for p in points:
        d = run.cells[p.cell].drift
        if measure == "accuracy" and d is not None and d.ci_low is not None and d.ci_high is not None:
            ax.plot([p.throughput, p.throughput], [-d.ci_high, -d.ci_low], color="#bbbbbb", linewidth=3, zorder=1)
        low_high = kept_range(p.side())  # the kept repeats' range of tok/s as a horizontal bar (none set aside)
        if low_high is not None:
            ax.plot(list(low_high), [p.drift, p.drift], color="#bbbbbb", linewidth=3, zorder=1)
    ax.scatter([p.throughput for p in others], [p.drift for p in others], color="#999999", label="dominated")
    ax.scatter([p.throughput for p in front], [p.drift for p in front], color="#d62728", label="Pareto front", zorder=3)
    ax.plot([p.throughput for p in front], [p.drift for p in front], color="#d62728", linewidth=1)
    names = short_names(run)  # the names report.md uses (its key table maps them to ids)
    for rank, p in enumerate(sorted(points, key=lambda p: p.throughput)):
        label = names.get(p.cell, p.cell)
        label += " (reference)" if p.cell == run.reference and label != "reference" else ""
        # cells of similar speed and drift would print their labels over each other: stagger them
        ax.annotate(label, (p.throughput, p.drift), textcoords="offset points", xytext=(5, 5 + 11 * (rank % 3)),
                    fontsize=7)
    ax.set_xlabel(_wrapped(chart.axis + " (bars: the kept repeats' lowest..highest)"))
    ax.set_ylabel("accuracy drop vs reference (bars: 90% interval)" if measure == "accuracy" else
                  "mean KL divergence vs reference")
    return _finish(fig, ax, f"{run.meta.matrix_name}: throughput against drift (lower right is better)", path)


def write_compare_plot(base: RunResult, head: RunResult, path: Path) -> bool:
    """Both runs' Pareto points on one chart (base hollow, head filled), an arrow from each cell's base point to its
    head point; False when neither run has a point to draw."""
    before = {p.cell: p for p in pareto(base).points}
    chart = pareto(head)
    after = {p.cell: p for p in chart.points}
    if not before and not after:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    ax.scatter([p.throughput for p in before.values()], [p.drift for p in before.values()], facecolors="none",
               edgecolors="#777777", label="base")
    ax.scatter([p.throughput for p in after.values()], [p.drift for p in after.values()], color="#1f77b4",
               label="head", zorder=3)
    for cid, p in after.items():
        if cid in before:
            b = before[cid]
            ax.annotate("", xy=(p.throughput, p.drift), xytext=(b.throughput, b.drift),
                        arrowprops={"arrowstyle": "->", "color": "#d62728", "linewidth": 1})
        ax.annotate(cid, (p.throughput, p.drift), textcoords="offset points", xytext=(5, 5), fontsize=7)
    for cid in (c for c in before if c not in after):
        ax.annotate(f"{cid} (base only)", (before[cid].throughput, before[cid].drift), textcoords="offset points",
                    xytext=(5, -10), fontsize=7, color="#777777")
    ax.set_xlabel(_wrapped(chart.axis))
    ax.set_ylabel("accuracy drop vs the run's reference" if chart.measure == "accuracy"
                  else "mean KL divergence vs the run's reference")
    return _finish(fig, ax, f"{head.meta.matrix_name}: base -> head (lower right is better)", path)


CURVE_X_LABEL = "interactivity: tok/s per user (the median request's decode rate)"
CURVE_Y_LABEL = "output tok/s per GPU"
_LABEL_AT = [(6, -12), (6, 6), (-6, 6), (-6, -12)]  # offsets (points) of a step's load label, by cell
_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"]


def load_label(p: CurvePoint) -> str:
    """A sweep step's load: 'c=8' or '2/s'."""
    return f"c={p.concurrency}" if p.concurrency else f"{p.request_rate:g}/s"


def write_curves_plot(run: RunResult, path: Path) -> bool:
    """Each ok cell's load sweep as a line of output tok/s per GPU against tok/s per user, the 90% interval at each
    step as a vertical bar, each step labelled by its load, the reference thick and black, steps that missed the SLO
    hollow; False when no cell has a sweep to draw."""
    drawn = [(c, [p for p in c.points if p.per_user is not None]) for c in curves(run)]
    drawn = [(c, points) for c, points in drawn if points]
    if not drawn:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    others = iter(_COLOURS * (1 + len(drawn) // len(_COLOURS)))
    slo = False
    names = short_names(run)
    for rank, (curve, points) in enumerate(drawn):
        colour = "#000000" if curve.reference else next(others)
        xs, ys = [p.per_user for p in points], [p.tok_s_per_gpu for p in points]
        label = names.get(curve.cell, curve.cell)
        label += (" (reference)" if curve.reference and label != "reference" else "") + \
            (f", {curve.gpus} GPUs" if curve.gpus > 1 else "")
        ax.plot(xs, ys, color=colour, linewidth=2.6 if curve.reference else 1.4, zorder=3 if curve.reference else 2,
                label=label)
        for p in points:
            if p.low is not None and p.high is not None:
                ax.plot([p.per_user, p.per_user], [p.low, p.high], color=colour, alpha=0.45, linewidth=3, zorder=1)
            missed = p.goodput_per_gpu is not None and p.meets is False
            slo = slo or p.goodput_per_gpu is not None
            ax.scatter([p.per_user], [p.tok_s_per_gpu], s=42 if curve.reference else 30, zorder=4, linewidths=1.5,
                       facecolors="white" if missed else colour, edgecolors=colour)
            # two cells' steps at similar figures would print their loads over each other: each cell its own corner
            ax.annotate(load_label(p), (p.per_user, p.tok_s_per_gpu), textcoords="offset points",
                        xytext=_LABEL_AT[rank % len(_LABEL_AT)], fontsize=7, color=colour,
                        ha="left" if _LABEL_AT[rank % len(_LABEL_AT)][0] > 0 else "right")
    if slo:  # a legend entry for the hollow markers
        ax.scatter([], [], facecolors="white", edgecolors="#555555", linewidths=1.5,
                   label=f"hollow: missed the SLO ({slo_words(chosen_point(run).targets)})")
    ax.margins(x=0.12, y=0.12)  # room for the load labels; then both axes from zero
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(CURVE_X_LABEL)
    ax.set_ylabel(CURVE_Y_LABEL + " (bars: 90% interval)")
    point = pareto(run).point_words
    title = f"{run.meta.matrix_name}: throughput per GPU against interactivity (upper right is better)"
    return _save(fig, ax, title + (f"\n{_wrapped('operating point: ' + point, 100)}" if point else ""), path)


def _finish(fig, ax, title: str, path: Path) -> bool:
    """What every drift chart ends with: the zero-drift line and room for the labels, then `_save`."""
    ax.axhline(0, color="#cccccc", linewidth=0.8)
    ax.margins(x=0.25, y=0.15)  # room for the labels
    return _save(fig, ax, title, path)


def _save(fig, ax, title: str, path: Path) -> bool:
    """What every chart ends with: title, legend, the file written."""
    ax.set_title(title, fontsize=10)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return True


def _wrapped(words: str, width: int = 90) -> str:
    """An axis label that fits under the chart (an SLO's words are long)."""
    import textwrap

    return "\n".join(textwrap.wrap(words, width))
