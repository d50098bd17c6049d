"""The quality tasks of a run in the report: each task's headline (metric and filter, from its own config), its score
per cell, a group's subtasks, and how the answers were generated: the share cut off by the token limit and the mean
reasoning length, beside the reference's. Pure: records in, Markdown lines out."""

from __future__ import annotations

from evalharness.analysis.pairing import split_metric
from evalharness.records.measures import GenerationStats, TaskScore
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.1%}"


def _mean(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def _versus(cell: float | None, ref: float | None) -> str:
    """'x1.9' against the reference where both are known and the reference is not zero."""
    return f" (x{cell / ref:.2f})" if cell is not None and ref else ""


def _headline(score: TaskScore) -> str:
    if not score.metric:
        return ""
    metric, filt = split_metric(score.metric)
    return f"{md_text(metric)} / {md_text(filt)}"


def _count(stats: GenerationStats, count: int, ref: GenerationStats | None, ref_count: int | None, what: str) -> str:
    text = f"{count}/{stats.requests} {what}"
    if ref is not None and ref_count is not None:
        text += f" (reference {ref_count}/{ref.requests})"
    return text


def _endings(stats: GenerationStats | None, ref: GenerationStats | None) -> str:
    """How the answers ended besides the budget: empty ones, ones a stop string ended (inside the reasoning when
    the engine got the stop strings), and requests that failed and were sent again."""
    if stats is None:
        return ""
    ref = ref if ref is not None and ref.requests else None
    parts = []
    if stats.requests:
        parts.append(_count(stats, stats.empty, ref, ref.empty if ref else None, "empty"))
        if stats.empty_with_reasoning or (ref and ref.empty_with_reasoning):
            parts.append(_count(stats, stats.empty_with_reasoning, ref,
                                ref.empty_with_reasoning if ref else None, "empty behind reasoning"))
        if stats.stop_string or (ref and ref.stop_string):
            parts.append(_count(stats, stats.stop_string, ref, ref.stop_string if ref else None,
                                "stopped by a stop string"))
    if stats.retried_requests:
        parts.append(f"{stats.retried_requests} requests retried ({stats.failed_attempts} failed attempts)")
    return "; ".join(parts)


def _documents(score: TaskScore) -> str:
    if score.n is None:
        return ""
    if score.subset is not None:
        kind = "first documents" if score.subset.seed is None else f"random subset, seed {score.subset.seed}"
        if score.subset.skipped:
            kind += f", past the {score.subset.skipped} exploration answered"
        share = f", screened: {score.subset.fraction:.0%} of them" if score.subset.fraction else ""
        return f"{score.n} of {score.subset.of} ({kind}{share})"
    return str(score.n)


def _looping(stats: GenerationStats, ref: GenerationStats | None) -> str:
    """How many of the cut answers were cut while looping (the rest while still reasoning), and loops that ended."""
    if not stats.looping and not (ref and ref.looping):
        return ""
    words = f"; {stats.truncated_looping} while looping, {stats.truncated - stats.truncated_looping} still reasoning"
    if stats.looping > stats.truncated_looping:
        words += f"; {stats.looping - stats.truncated_looping} more end in a loop"
    return words + (f" (reference: {ref.truncated_looping} while looping)" if ref else "")


def _generation(stats: GenerationStats | None, ref: GenerationStats | None) -> list[str]:
    if stats is None or not stats.requests:
        return ["", "", "", _endings(stats, ref)]
    ref = ref if ref is not None and ref.requests else None
    return [
        f"{_share(stats.truncated_share)} ({stats.truncated}/{stats.requests})"
        + _versus(stats.truncated_share, ref.truncated_share if ref else None) + _looping(stats, ref),
        _mean(stats.mean_completion_tokens) + _versus(stats.mean_completion_tokens,
                                                      ref.mean_completion_tokens if ref else None),
        (_mean(stats.mean_reasoning_chars) + _versus(stats.mean_reasoning_chars,
                                                     ref.mean_reasoning_chars if ref else None)
         if stats.with_reasoning else "none"),
        _endings(stats, ref),
    ]


def quality_section(run: RunResult) -> list[str]:
    reference = run.cells.get(run.reference)
    ref_tasks = {t.task: t for t in reference.quality} if reference else {}
    rows = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        for score in cell.quality if cell else []:
            ref = ref_tasks.get(score.task)
            value = "failed" if score.error or score.value is None else f"{score.value:.3f}"
            rows.append([f"`{cid}`", md_text(score.task), _headline(score), value, _documents(score),
                         str(len(score.subtasks)) if score.subtasks else "",
                         *_generation(score.generation, ref.generation if ref and cid != run.reference else None),
                         f"{score.seconds:.0f}"])
    if not rows:
        return []
    return ["## Quality tasks", "",
            "Headline: the metric and filter the task's own lm-eval config puts first; drift, flips, the gate and "
            "baselines pair per document on it (a group pools its subtasks as lm-eval aggregates them; per subtask "
            "in `cells/<id>/quality/<task>/summary.json`). Cut off: answers that hit the token limit (finish_reason "
            "length), per request, and of them those cut while looping (the chain ends in a unit repeated back to "
            "back) or still reasoning; tokens: completion tokens, reasoning included; reasoning: mean characters of "
            "reasoning_content, kept per sample in samples.jsonl and never scored; ended: empty answers (scored "
            "wrong whatever the reasoning said), answers a stop string the engine matched ended (with `stop_strings: "
            "engine` it matches inside the reasoning), requests that failed and were sent again (a request is timed "
            "by its stream's silence, not by its length). (xN): against the reference. A random subset is the same "
            "documents in every cell (`quality.subset_seed`).", "",
            markdown_table(["cell", "task", "headline metric / filter", "score", "documents", "subtasks", "cut off",
                            "mean tokens", "mean reasoning chars", "ended", "seconds"], rows), "",
            *ending_lines(run), *length_lines(run)]


ENDING_WORDS = {"truncated_share": "cut off by the token limit", "looping_share": "ending inside a loop",
                "empty_with_reasoning_share": "empty behind reasoning"}


def ending_lines(run: RunResult) -> list[str]:
    """How the answers ended against the reference's, each its own paired outcome (analysis/secondary.py's rule:
    changed when credible after Benjamini-Hochberg over the task's figures AND at least 2 points): the changed ones
    by name, a sentence where none changed."""
    checks = [(cid, c) for cid in run.cell_order if (cell := run.cells.get(cid)) is not None and cell.drift
              for c in cell.drift.endings]
    if not checks:
        return []
    changed = [(cid, c) for cid, c in checks if c.changed]
    head = ("How answers ended, against the reference (paired per document: cut off by the token limit, ending "
            "inside a loop, empty behind reasoning; changed when credible after Benjamini-Hochberg and at least 2 "
            "points):")
    if not changed:
        return [head + f" no cell changed in any of {len(checks)} comparisons.", ""]
    rows = [[f"`{cid}`", md_text(c.task), ENDING_WORDS.get(c.field, c.field),
             _share(c.reference), _share(c.cell), f"{c.p_adjusted:.2g}" if c.p_adjusted is not None else ""]
            for cid, c in changed]
    return [head, "", markdown_table(["cell", "task", "answers", "reference", "cell", "BH-adjusted p"], rows), ""]


def length_lines(run: RunResult) -> list[str]:
    """The output-length check (analysis/outputlength.py, issue 60, 3): every cell and task or scenario not shown
    within the tolerance, with its ratio and interval; a sentence where all are within it."""
    checks = [(cid, x) for cid in run.cell_order if (cell := run.cells.get(cid)) is not None and cell.drift
              for x in cell.drift.lengths]
    if not checks:
        return []
    tolerance = checks[0][1].tolerance
    off = [(cid, x) for cid, x in checks if x.outside]
    unsettled = sum(1 for _, x in checks if x.outcome == "undecided")
    head = (f"Output length (a cell that stops early looks faster): each cell's output tokens per answer against "
            f"the reference's, paired by document with a 90% interval (a throughput scenario: its requests' mean as "
            f"counted, a point); credibly shorter or longer by more than {tolerance:.0%} is named. "
            + (f"{unsettled} of the {len(checks)} comparisons are too few or too varied documents to tell. "
               if unsettled else ""))
    if not off:
        return [head + "No cell's answers are credibly shorter or longer than that.", ""]
    rows = [[f"`{cid}`", md_text(x.task), f"{x.cell:.1f}" if x.cell is not None else "",
             f"{x.reference:.1f}" if x.reference is not None else "",
             f"{x.ratio:.2f}x" + (f" [{x.confidence:.0%}: {x.low:.2f}–{x.high:.2f}]" if x.low is not None else ""),
             f"**{x.outcome}**"] for cid, x in off]
    return [head.rstrip(), "",
            markdown_table(["cell", "task or scenario", "tokens per answer", "reference's", "ratio", "length"],
                           rows), ""]
