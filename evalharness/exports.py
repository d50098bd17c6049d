"""Machine-readable and visual renderings of a saved run: results.csv (pandas) and pareto.png (matplotlib).

Like report.md, both are rebuilt from results.json alone, so `evalharness report DIR` re-renders an old run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalharness.report import pareto_points
from evalharness.results import RunResult


def rows(run: RunResult) -> list[dict[str, Any]]:
    """One row per cell and throughput scenario (one row for a cell without scenarios)."""
    out = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        if cell is None:
            out.append({"cell": cid, "status": "not run"})
            continue
        base: dict[str, Any] = {"cell": cid, "reference": cid == run.reference, **{f"axis.{k}": v for k, v in cell.axes.items()},
                                "status": cell.status, "phase": cell.phase, "reason": cell.reason,
                                "startup_s": cell.startup_s}
        for task in cell.quality:
            base[f"score.{task.task}"] = task.value
            base[f"stderr.{task.task}"] = task.stderr
        if cell.drift is not None:
            base.update({"accuracy_delta": cell.drift.accuracy_delta, "accuracy_ci_low": cell.drift.ci_low,
                         "accuracy_ci_high": cell.drift.ci_high, "mcnemar_p": cell.drift.p_value,
                         "right_to_wrong": cell.drift.right_to_wrong, "wrong_to_right": cell.drift.wrong_to_right})
            if cell.drift.distribution and cell.drift.distribution.available:
                base.update({"kld_mean": cell.drift.distribution.mean_kld, "kld_p99": cell.drift.distribution.p99_kld,
                             "same_top_token": cell.drift.distribution.same_top_token})
        if not cell.throughput:
            out.append(base)
        for sc in cell.throughput:
            out.append({**base, "scenario": sc.name, "concurrency": sc.concurrency, "request_rate": sc.request_rate,
                        "output_tok_s": sc.output_tok_s, "decode_tok_s_p50": sc.request_decode_tok_s.p50,
                        "ttft_p50_s": sc.ttft_s.p50, "tpot_p50_s": sc.tpot_s.p50, "itl_p50_s": sc.itl_s.p50,
                        "itl_p99_s": sc.itl_s.p99, "e2e_p50_s": sc.e2e_s.p50, "errors": sum(sc.errors.values()),
                        **{f"engine.{k}": v for k, v in sc.engine.items()}})
    return out


def write_csv(run: RunResult, path: Path) -> None:
    import pandas as pd

    pd.DataFrame(rows(run)).to_csv(path, index=False)


def write_plot(run: RunResult, path: Path) -> bool:
    """A scatter of throughput against drift, the front joined by a line; False when there is nothing to draw."""
    points, scenario, measure = pareto_points(run)
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
    ax.scatter([p.throughput for p in others], [p.drift for p in others], color="#999999", label="dominated")
    ax.scatter([p.throughput for p in front], [p.drift for p in front], color="#d62728", label="Pareto front", zorder=3)
    ax.plot([p.throughput for p in front], [p.drift for p in front], color="#d62728", linewidth=1)
    for p in points:
        label = p.cell + (" (reference)" if p.cell == run.reference else "")
        ax.annotate(label, (p.throughput, p.drift), textcoords="offset points", xytext=(5, 5), fontsize=7)
    ax.set_xlabel(f"output tokens/s ({scenario})")
    ax.set_ylabel("accuracy drop vs reference" if measure == "accuracy" else "mean KL divergence vs reference")
    ax.axhline(0, color="#cccccc", linewidth=0.8)
    ax.margins(x=0.25, y=0.15)  # room for the labels
    ax.set_title(f"{run.meta.matrix_name}: throughput against drift (lower right is better)")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True
