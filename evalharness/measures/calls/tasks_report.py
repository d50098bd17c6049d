"""The report's "Calls and structured output" section (the task-kind part of the report role, measures/reports.py
`task_sections` and `task_pages`): per cell and calls task, the valid-call or
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


def _verdict(change: SecondaryChange | None) -> str:
    """A share where higher is worse (invalid answers, refusals) against the reference's."""
    if change is None:
        return "not compared"
    if not change.changed:
        return (f"no credible change (p {change.p_adjusted:.2g})" if change.p_adjusted is not None
                else "no credible change")
    worse = (change.cell or 0) > (change.reference or 0)
    return f"{'worse' if worse else 'better'} (p {change.p_adjusted:.2g})"


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
        parts.append(f"{way} {tally['valid']}/{tally['cases']} valid, {tally['correct']} correct{refused}")
    return "; ".join(parts)


HEADER = ["cell", "valid", "correct", "refused", "valid vs reference", "correct vs reference", "refusals vs reference",
          "by way of asking"]
NOTE = ("Tool calls through the tools API and JSON through `response_format`, each case scored against its schema "
        "(measures/calls/score.py): valid is a call that names an offered tool with arguments that validate (or no "
        "call where none is due), or content that is JSON valid against the schema; correct is the expected call with "
        "the expected arguments, or the expected value. Requests the engine refused (HTTP 4xx) are counted apart and "
        "scored 0. Verdicts: correct by the task's margin (as in Drift); the invalid and refused shares paired per "
        "case against the reference's (Benjamini-Hochberg over the cell's figures, material at 2 points).")


def calls_tables(run: RunResult) -> list[dict]:
    """Per calls task: {task, kind, valid_word, rows}, each row the HEADER's columns as plain text, the first the cell's
    id (the run's reference is run.reference; untrusted where it quotes a task's or cell's name: escaped by whoever
    renders it)."""
    tables = []
    for task in _tasks(run):
        rows, kind = [], None
        for cid in run.cell_order:
            cell = run.cells.get(cid)
            score = next((t for t in cell.quality if t.task == task), None) if cell else None
            if score is None or score.calls is None:
                continue
            kind = kind or score.calls.kind
            calls, is_reference = score.calls, cid == run.reference
            drift = None if is_reference else cell.drift
            task_drift = next((t for t in drift.tasks if t.task == task), None) if drift else None
            changes = {c.field: c for c in (drift.calls if drift else []) if c.task == task}
            rows.append([cid, _share(calls.valid, calls.cases),
                         "–" if score.value is None else f"{score.value:.3f}", str(calls.refused),
                         "" if is_reference else _verdict(changes.get("invalid_share")),
                         "" if is_reference else ((task_drift.outcome or task_drift.reason or "")
                                                  if task_drift else "not compared"),
                         "" if is_reference else _verdict(changes.get("refused_share")), _by_way(score)])
        tables.append({"task": task, "kind": kind, "valid_word": VALID_WORD.get(kind or "", "valid"), "rows": rows})
    return tables


def _bold_worse(text: str) -> str:
    return f"**{md_text(text)}**" if text.startswith("worse") else md_text(text)


def calls_section(run: RunResult) -> list[str]:
    tables = calls_tables(run)
    if not tables:
        return []
    out = ["## Calls and structured output", "", md_text(NOTE), ""]
    for table in tables:
        rows = [[f"`{row[0]}`" + (" (reference)" if row[0] == run.reference else ""), md_text(row[1]), md_text(row[2]),
                 md_text(row[3]), _bold_worse(row[4]), md_text(row[5]),
                 _bold_worse(row[6]), md_text(row[7])] for row in table["rows"]]
        out += [f"### {md_text(table['task'])} ({table['valid_word']})", "",
                markdown_table([table["valid_word"] if h == "valid" else h for h in HEADER], rows), ""]
    return out


PAGE_KEY = "calls"  # report.html's data key, read by html_page.js `callsSection`


def page(run: RunResult) -> dict:
    """report.html's data of the section: the header, the note and each task's table."""
    return {"header": HEADER, "note": NOTE, "tables": calls_tables(run)}


section = calls_section  # report.md's lines
