"""The report's "Calls and structured output" section: per cell and calls task (phases/calls/), the valid-call or
valid-JSON rate and the correct rate beside the reference's, refusals counted apart, each with its verdict: the
correct rate is the task's headline, decided like every task (the drift's margin rule); the invalid and refused
shares are secondary figures, changed only when their paired test says so after Benjamini-Hochberg and the change is
material (analysis/secondary.py, the rule `compare` uses). Pure; reads records only.
"""

from __future__ import annotations

from evalharness.records.drift import SecondaryChange
from evalharness.records.measures import TaskScore
from evalharness.records.run import RunResult
from evalharness.render.markdown import markdown_table, md_text

VALID_WORD = {"tools": "valid calls", "json": "valid JSON"}


def _share(count: int, total: int) -> str:
    return f"{count}/{total} ({count / total:.0%})" if total else "–"


def _verdict(change: SecondaryChange | None, worse_when_higher: bool = True) -> str:
    if change is None:
        return "not compared"
    if not change.changed:
        return f"no credible change (p {change.p_adjusted:.2g})" if change.p_adjusted is not None else "no credible change"
    worse = (change.cell or 0) > (change.reference or 0) if worse_when_higher else (change.cell or 0) < (change.reference or 0)
    return f"**{'worse' if worse else 'better'}** (p {change.p_adjusted:.2g})"


def _tasks(run: RunResult) -> list[str]:
    names: list[str] = []
    for cid in run.cell_order:
        for score in (run.cells[cid].quality if cid in run.cells else []):
            if score.calls is not None and score.task not in names:
                names.append(score.task)
    return names


def _by_way(score: TaskScore) -> str:
    parts = []
    for way, tally in sorted((score.calls.by_way if score.calls else {}).items()):
        refused = f", {tally['refused']} refused" if tally.get("refused") else ""
        parts.append(f"{md_text(way)} {tally['valid']}/{tally['cases']} valid, {tally['correct']} correct{refused}")
    return "; ".join(parts)


def calls_section(run: RunResult) -> list[str]:
    tasks = _tasks(run)
    if not tasks:
        return []
    out = ["## Calls and structured output", "",
           "Tool calls through the tools API and JSON through `response_format`, each case scored against its schema "
           "(phases/calls/score.py): **valid** is a call that names an offered tool with arguments that validate (or "
           "no call where none is due), or content that is JSON valid against the schema; **correct** is the expected "
           "call with the expected arguments, or the expected value. Requests the engine refused (HTTP 4xx) are "
           "counted apart and scored 0. Verdicts: correct by the task's margin (as in Drift); the invalid and refused "
           "shares paired per case against the reference's (Benjamini-Hochberg over the cell's figures, material at "
           "2 points).", ""]
    reference = run.cells.get(run.reference) if run.reference else None
    ref_scores = {t.task: t for t in reference.quality} if reference else {}
    for task in tasks:
        rows = []
        for cid in run.cell_order:
            cell = run.cells.get(cid)
            score = next((t for t in cell.quality if t.task == task), None) if cell else None
            if score is None or score.calls is None:
                continue
            calls = score.calls
            drift = cell.drift if cid != run.reference else None
            task_drift = next((t for t in drift.tasks if t.task == task), None) if drift else None
            changes = {c.field: c for c in (drift.calls if drift else []) if c.task == task}
            correct = "–" if score.value is None else f"{score.value:.3f}"
            rows.append([f"`{cid}`" + (" (reference)" if cid == run.reference else ""),
                         _share(calls.valid, calls.cases), correct,
                         str(calls.refused) if calls.refused else "0",
                         "" if cid == run.reference else _verdict(changes.get("invalid_share")),
                         "" if cid == run.reference else (md_text(task_drift.outcome or task_drift.reason or "")
                                                          if task_drift else "not compared"),
                         "" if cid == run.reference else _verdict(changes.get("refused_share")),
                         _by_way(score)])
        kind = next((ref_scores[task].calls.kind for _ in [0] if task in ref_scores and ref_scores[task].calls), None)
        out += [f"### {md_text(task)}" + (f" ({VALID_WORD.get(kind, kind)})" if kind else ""), "",
                markdown_table(["cell", VALID_WORD.get(kind or "", "valid"), "correct", "refused",
                                "valid vs reference", "correct vs reference", "refusals vs reference", "by way of asking"],
                               rows), ""]
    return out
