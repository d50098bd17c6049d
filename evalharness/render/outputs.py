"""Every rendering of a saved run, written together: report.md, summary.md, results.csv, pareto.png, curves.png (only
when a cell has a load sweep; a stale one is removed) and report.html (the summary also appended to
$GITHUB_STEP_SUMMARY). The runner and `evalharness report` call this; nothing else writes them.
And the renderings of a comparison of two runs (`evalharness compare`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from evalharness.analysis.compare import RunComparison
from evalharness.records.engine_profile import EngineProfile
from evalharness.records.io import atomic_write_text
from evalharness.records.run import RunResult
from evalharness.render.compare import compare_markdown
from evalharness.render.compare import summary_markdown as compare_summary
from evalharness.render.exports import write_csv
from evalharness.render.html import write_html
from evalharness.render.plot import write_compare_plot, write_curves_plot, write_plot
from evalharness.render.report import render_markdown, summary_markdown
from evalharness.render.verdict import pick_of


def render_all(run: RunResult, out_dir: Path, step_summary: bool = True,
               engines: Mapping[str, EngineProfile] | None = None) -> None:
    """report.md, summary.md, results.csv, report.html, pareto.png and curves.png from the saved run; the summary also
    goes to $GITHUB_STEP_SUMMARY when it is set (appended, as GitHub expects) unless `step_summary` is False (a
    second rendering of one run, which appends only what it adds). `engines`: as render_markdown's."""
    out_dir = Path(out_dir)
    atomic_write_text(out_dir / "report.md", render_markdown(run, engines))
    write_html(run, out_dir)
    summary = summary_markdown(run)
    atomic_write_text(out_dir / "summary.md", summary)
    write_csv(run, out_dir / "results.csv")
    if run.complete or run.interrupted:
        pick = pick_of(run)
        write_plot(run, out_dir / "pareto.png", pick)
        # no sweep now: a curves.png left from before would lie
        if not write_curves_plot(run, out_dir / "curves.png", pick):
            (out_dir / "curves.png").unlink(missing_ok=True)
        if step_summary:
            append_step_summary(summary)


def append_step_summary(text: str) -> None:
    """Append to $GITHUB_STEP_SUMMARY where it is set (GitHub Actions' job summary)."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(text + "\n")


def render_comparison(cmp: RunComparison, base: RunResult, head: RunResult, out_dir: Path | None,
                      markdown: Path | None) -> str:
    """`compare`'s outputs: in `out_dir` compare.md, summary.md (the short form), compare.json and compare.png; the
    short form also to `markdown` (the pull-request comment) and appended to $GITHUB_STEP_SUMMARY when it is set."""
    summary = compare_summary(cmp)
    if out_dir is not None:
        atomic_write_text(out_dir / "compare.md", compare_markdown(cmp))
        atomic_write_text(out_dir / "summary.md", summary)
        atomic_write_text(out_dir / "compare.json", cmp.model_dump_json(indent=1) + "\n")
        write_compare_plot(base, head, out_dir / "compare.png")
    if markdown is not None:
        atomic_write_text(markdown, summary)
    append_step_summary(summary)
    return summary
