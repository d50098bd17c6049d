"""pareto.png: throughput against drift, the front joined by a line (matplotlib, no display needed), from results.json."""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.pareto import pareto
from evalharness.records.run import RunResult


def write_plot(run: RunResult, path: Path) -> bool:
    """A scatter of throughput against drift, the front joined by a line; False when there is nothing to draw."""
    chart = pareto(run)
    points, scenario, measure = chart.points, chart.scenario, chart.measure
    if not points:
        return False
    import matplotlib

    matplotlib.use("Agg")  # no display on CI machines
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    front = sorted((p for p in points if p.on_front), key=lambda p: p.throughput)
    others = [p for p in points if not p.on_front]
    # the accuracy drop's 95% interval as a vertical bar, where the cell has one
    for p in points:
        d = run.cells[p.cell].drift
        if measure == "accuracy" and d is not None and d.ci_low is not None and d.ci_high is not None:
            ax.plot([p.throughput, p.throughput], [-d.ci_high, -d.ci_low], color="#bbbbbb", linewidth=3, zorder=1)
        if p.low is not None and p.high is not None:  # the repeats' range of tok/s as a horizontal bar
            ax.plot([p.low, p.high], [p.drift, p.drift], color="#bbbbbb", linewidth=3, zorder=1)
    ax.scatter([p.throughput for p in others], [p.drift for p in others], color="#999999", label="dominated")
    ax.scatter([p.throughput for p in front], [p.drift for p in front], color="#d62728", label="Pareto front", zorder=3)
    ax.plot([p.throughput for p in front], [p.drift for p in front], color="#d62728", linewidth=1)
    for rank, p in enumerate(sorted(points, key=lambda p: p.throughput)):
        label = p.cell + (" (reference)" if p.cell == run.reference else "")
        # cells of similar speed and drift would print their labels over each other: stagger them
        ax.annotate(label, (p.throughput, p.drift), textcoords="offset points", xytext=(5, 5 + 11 * (rank % 3)),
                    fontsize=7)
    ax.set_xlabel(f"output tokens/s ({scenario})")
    ax.set_ylabel("accuracy drop vs reference" if measure == "accuracy" else "mean KL divergence vs reference")
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
    ax.set_xlabel(f"output tokens/s ({chart.scenario})")
    ax.set_ylabel("accuracy drop vs the run's reference" if chart.measure == "accuracy"
                  else "mean KL divergence vs the run's reference")
    return _finish(fig, ax, f"{head.meta.matrix_name}: base -> head (lower right is better)", path)


def _finish(fig, ax, title: str, path: Path) -> bool:
    """What every chart ends with: the zero-drift line, room for the labels, title, legend, the file written."""
    ax.axhline(0, color="#cccccc", linewidth=0.8)
    ax.margins(x=0.25, y=0.15)  # room for the labels
    ax.set_title(title)
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    import matplotlib.pyplot as plt

    plt.close(fig)
    return True
