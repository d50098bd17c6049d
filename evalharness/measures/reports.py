"""Every measure's part of the report (issue 59): its tables as plain text, laid out here for report.md (escaped,
a flagged verdict in bold) and handed to report.html as they are (render/html_data.py `measures`); or, for a
measure whose report.py gives `section`, report.md's lines as it lays them out."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from evalharness.measures.catalog import MEASURES, TASK_KINDS, role_module
from evalharness.measures.specs import BY_KEY, MeasureSpec
from evalharness.records.run import RunResult
from evalharness.render.markdown import bold_verdict, markdown_table, md_text

Tables = Callable[[RunResult], "list[dict] | None"]
REPORTS: tuple[tuple[MeasureSpec, Tables], ...] = tuple(
    (BY_KEY[key], import_module(role_module(key, "report")).tables) for key in MEASURES)
# measures whose report.py lays out its own section (`section`: report.md's lines) instead of tables
OWN_SECTIONS = tuple(found for key in MEASURES
                     if (found := getattr(import_module(role_module(key, "report")), "section", None)) is not None)
# a task kind's own section (its tasks' figures beside their scores), from its folder's tasks_report.py
TASK_REPORTS = tuple(import_module(role_module(key, "tasks_report")) for key in TASK_KINDS)


def own_sections(run: RunResult) -> list[str]:
    """report.md's sections of the measures that lay out their own (none recorded: no lines)."""
    return [line for section in OWN_SECTIONS for line in section(run)]


def task_sections(run: RunResult) -> list[str]:
    """report.md's section of every task kind the run's tasks are of (none: no lines)."""
    return [line for module in TASK_REPORTS for line in module.section(run)]


def task_pages(run: RunResult) -> dict[str, dict]:
    """report.html's data of every task kind's section, by its page key."""
    return {module.PAGE_KEY: module.page(run) for module in TASK_REPORTS}


def measure_data(run: RunResult) -> list[dict]:
    """[{key, title, tables}] of every measure the run recorded, for report.html."""
    out = []
    for spec, tables in REPORTS:
        found = tables(run)
        if found:
            out.append({"key": spec.key, "title": spec.title[:1].upper() + spec.title[1:], "tables": found})
    return out


def measure_sections(run: RunResult) -> list[str]:
    """report.md's section of every measure the run recorded."""
    out: list[str] = []
    for entry in measure_data(run):
        out += [f"## {entry['title']}", ""]
        for table in entry["tables"]:
            rows = [[f"`{md_text(row[0])}`" + (" (reference)" if row[0] == run.reference else ""),
                     *(md_text(c) for c in row[1:-1]), bold_verdict(row[-1])] for row in table["rows"]]
            out += [table["note"], "", markdown_table(table["header"], rows), ""]
    return out
