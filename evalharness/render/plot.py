"""The run's charts (matplotlib, no display needed), from results.json: pareto.png (throughput against drift, the
front joined by a line), curves.png (each cell's load sweep: output tok/s per GPU against tok/s per user) and
compare.png (two runs' Pareto points)."""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.goodput import slo_words
from evalharness.analysis.operating import CurvePoint
from evalharness.analysis.pareto import cell_figure, chosen_point, curves
from evalharness.records.run import RunResult
from evalharness.render.names import short_names
from evalharness.render.verdict import chart_of


VERDICT_COLOURS = {"reference": "#000000", "equivalent": "#2ca02c", "inconclusive": "#ff7f0e", "worse": "#d62728"}


def _margin(run: RunResult) -> float | None:
    """The gate's margin where every task shares one (the band drawn), else None."""
    margin = (run.meta.matrix.get("gate") or {}).get("margin")
    if isinstance(margin, dict):
        values = {v for k, v in margin.items() if not k.startswith("eh_long_")}
        return values.pop() if len(values) == 1 else None
    return float(margin) if margin is not None else 0.05


def write_plot(run: RunResult, path: Path, pick: str | None = None) -> bool:
    """Throughput against the accuracy evidence (issue 58, 5): each cell at its figure (x, from zero; the kept
    repeats' range as a bar) and its drop's largest one-sided 95% upper bound (y: what the verdict compares with the
    margin, drawn as a band), coloured by its accuracy verdict, the reference and `pick` marked; under the kld
    measure, its mean KL. False when there is nothing to draw."""
    chart = chart_of(run)
    points, measure = chart.points, chart.measure
    if not points:
        return False
    import matplotlib

    matplotlib.use("Agg")  # no display on CI machines
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    accuracy = measure == "accuracy"

    def height(p) -> float:
        return (p.drop_upper if p.drop_upper is not None else 0.0) if accuracy else p.drift

    margin = _margin(run) if accuracy else None
    if margin is not None:
        ax.axhspan(0, margin, color="#2ca02c", alpha=0.08, zorder=0)
        ax.axhline(margin, color="#2ca02c", linewidth=1, linestyle="--", label=f"margin {margin:g}")
    for p in points:
        if p.kept_low is not None:  # the kept repeats' range of tok/s as a horizontal bar (none set aside)
            ax.plot([p.kept_low, p.kept_high], [height(p)] * 2, color="#bbbbbb", linewidth=3, zorder=1)
    verdicts = {}
    for p in points:
        verdicts.setdefault(p.verdict or "kl", []).append(p)
    for verdict, group in verdicts.items():
        ax.scatter([p.throughput for p in group], [height(p) for p in group], zorder=3,
                   color=VERDICT_COLOURS.get(verdict, "#1f77b4"), label=verdict)
    front = sorted((p for p in points if p.on_front), key=lambda p: p.throughput)
    ax.plot([p.throughput for p in front], [height(p) for p in front], color="#555555", linewidth=0.8,
            label="Pareto front", zorder=2)
    chosen = next((p for p in points if p.cell == pick), None)
    if chosen is not None:
        ax.scatter([chosen.throughput], [height(chosen)], marker="*", s=260, facecolors="none",
                   edgecolors="#000000", linewidths=1.2, zorder=4, label="the pick")
    names = short_names(run)  # the names report.md uses (its key table maps them to ids)
    for rank, p in enumerate(sorted(points, key=lambda p: (p.throughput, height(p)))):
        label = names.get(p.cell, p.cell)
        label += " (reference)" if p.cell == run.reference and label != "reference" else ""
        # neighbours would print their labels over each other: stagger them above, a leader line to each
        ax.annotate(label, (p.throughput, height(p)), textcoords="offset points", xytext=(6, 8 + 12 * (rank % 3)),
                    fontsize=7,
                    arrowprops={"arrowstyle": "-", "color": "#999999", "linewidth": 0.5})
    ax.set_xlabel(_wrapped(chart.axis + " (bars: the kept repeats' lowest..highest)"))
    ax.set_ylabel("accuracy drop: largest 95% upper bound" if accuracy else "mean KL divergence vs reference")
    ax.margins(x=0.2, y=0.25)
    ax.set_xlim(left=0)
    top = max([height(p) for p in points] + [margin or 0.0])
    ax.set_ylim(bottom=min(0.0, *(height(p) for p in points)) - 0.04 * max(top, 1e-9))
    return _save(fig, ax, f"{run.meta.matrix_name}: throughput against the accuracy evidence (lower right is better)",
                 path)


def write_compare_plot(base: RunResult, head: RunResult, path: Path) -> bool:
    """Both runs' Pareto points on one chart (base hollow, head filled), an arrow from each cell's base point to its
    head point; False when neither run has a point to draw."""
    before = {p.cell: p for p in chart_of(base).points}
    chart = chart_of(head)
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


def write_curves_plot(run: RunResult, path: Path, pick: str | None = None) -> bool:
    """Each ok cell's load sweep as a line of output tok/s per GPU against tok/s per user, the 90% interval at each
    step as a vertical bar, each step labelled by its load, the reference thick and black, steps that missed the SLO
    hollow, the operating point's step of the reference and of `pick` ringed; False when no cell has a sweep to
    draw."""
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
        figure = cell_figure(run, curve.cell) if curve.cell in (pick, run.reference) else None
        step = next((p for p in points if figure is not None and p.step == figure.scenario), None)
        if step is not None:  # where the decision reads this cell
            ax.scatter([step.per_user], [step.tok_s_per_gpu], s=260, facecolors="none", edgecolors=colour,
                       linewidths=1.4, zorder=5, label=f"operating point of {label}")
    if slo:  # a legend entry for the hollow markers
        ax.scatter([], [], facecolors="white", edgecolors="#555555", linewidths=1.5,
                   label=f"hollow: missed the SLO ({slo_words(chosen_point(run).targets)})")
    ax.margins(x=0.12, y=0.12)  # room for the load labels; then both axes from zero
    ax.set_xlim(left=0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(CURVE_X_LABEL)
    on_gpus = bool(run.meta.machine.get("gpus")) or any((c.node or {}).get("gpus") for c in run.cells.values())
    # "per GPU" only where the run saw GPUs: on a CPU server the figure is the server's (issue 58, 5)
    ax.set_ylabel((CURVE_Y_LABEL if on_gpus else "output tok/s per server") + " (bars: 90% interval)")
    point = chart_of(run).point_words
    title = (f"{run.meta.matrix_name}: throughput {'per GPU' if on_gpus else 'per server'} against interactivity "
             "(upper right is better)")
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
