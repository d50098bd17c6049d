"""Every rendering of a saved run, written together: report.md, summary.md, results.csv and pareto.png (the summary
also appended to $GITHUB_STEP_SUMMARY). The runner and `evalharness report` call this; nothing else writes them."""

from __future__ import annotations

import os
from pathlib import Path

from evalharness.records.io import atomic_write_text
from evalharness.records.run import RunResult
from evalharness.render.exports import write_csv
from evalharness.render.plot import write_plot
from evalharness.render.report import render_markdown, summary_markdown


def render_all(run: RunResult, out_dir: Path) -> None:
    """report.md, summary.md, results.csv and pareto.png from the saved run; the summary also goes to
    $GITHUB_STEP_SUMMARY when it is set (appended, as GitHub expects)."""
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "report.md", render_markdown(run))
    summary = summary_markdown(run)
    atomic_write_text(out_dir / "summary.md", summary)
    write_csv(run, out_dir / "results.csv")
    if run.complete or run.interrupted:
        write_plot(run, out_dir / "pareto.png")
        step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if step_summary:
            with open(step_summary, "a", encoding="utf-8") as handle:
                handle.write(summary + "\n")
