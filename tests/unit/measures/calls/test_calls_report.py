"""The calls tasks in drift and the report (issue 40), from recorded sample files: the valid and refused shares are
paired per case against the reference's by the secondary rule, and the "Calls and structured output" section says
which cell breaks calls; a cell that answers like the reference is not called worse."""

from __future__ import annotations

import json
from pathlib import Path

from evalharness.analysis.drift import refresh_drift
from evalharness.measures.calls.cases import SHIPPED, load_cases
from evalharness.measures.calls.worker import row_of, summarize
from evalharness.records.measures import CallsSummary, TaskScore
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.measures.calls.tasks_report import calls_section
from evalharness.render.report import render_markdown
from tests.headless import browser  # noqa: F401  (a fixture)

CASES = load_cases(SHIPPED / "eh_tools.jsonl")[:40]


def _answer(case, broken: str | None) -> dict:
    """A recorded answer: the expected call (or prose where none is due), or the broken cell's answer."""
    if broken == "refused":
        return {"id": case.id, "refused": "http_400: Invalid grammar specification: 'triggers'"}
    if case.expected is None:
        return {"id": case.id, "content": "Hello!", "tool_calls": [], "finish_reason": "stop"}
    if broken == "text":  # a parser that does not read the template's format: the call stays in the text
        return {"id": case.id, "content": "<tool_call>\n" + json.dumps(case.expected) + "\n</tool_call>",
                "tool_calls": [], "finish_reason": "stop"}
    return {"id": case.id, "content": None, "finish_reason": "tool_calls",
            "tool_calls": [{"function": {"name": case.expected["name"],
                                         "arguments": json.dumps(case.expected["arguments"])}}]}


def _cell(run_dir: Path, cid: str, broken: str | None, wrong_every: int = 4) -> CellResult:
    rows = []
    for i, case in enumerate(CASES):
        # every fourth case answered wrongly on every side (a small model's own mistakes, the same in every cell)
        mode = broken if broken else ("text" if i % wrong_every == 0 and case.expected else None)
        rows.append(row_of("eh_tools", i, case, _answer(case, mode), 1234))
    folder = run_dir / "cells" / cid / "quality" / "eh_tools"
    folder.mkdir(parents=True)
    (folder / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = summarize("eh_tools", "tools", 1, rows, len(CASES), None)
    score = TaskScore(task="eh_tools", version=1, metric="correct,none", value=summary["value"], n=len(rows),
                      samples=str((folder / "samples.jsonl").relative_to(run_dir)), aggregation="mean",
                      higher_is_better=True, calls=CallsSummary(**summary["calls"]))
    return CellResult(id=cid, axes={}, settings_hash="h", engine="vllm", args={}, env={}, argv=[], status="ok",
                      phase="done", quality=[score], started_at="t", finished_at="t", duration_s=1.0)


def _run(run_dir: Path) -> RunResult:
    cells = [_cell(run_dir, "ref", None), _cell(run_dir, "same", None), _cell(run_dir, "refusing", "refused"),
             _cell(run_dir, "parser", "text")]
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m", started_at="t",
                   matrix={"gate": {"margin": 0.1, "alpha": 0.05}})
    run = RunResult(meta=meta, reference="ref", cell_order=[c.id for c in cells], cells={c.id: c for c in cells})
    refresh_drift(run, run_dir)
    return run


def test_a_cell_that_breaks_calls_is_worse_on_valid_calls_and_one_that_answers_alike_is_not(tmp_path):
    run = _run(tmp_path)
    changes = {cid: {c.field: c for c in run.cells[cid].drift.calls} for cid in ("same", "refusing", "parser")}
    assert not changes["same"]["invalid_share"].changed and not changes["same"]["refused_share"].changed
    assert changes["refusing"]["invalid_share"].changed and changes["refusing"]["refused_share"].changed
    assert changes["refusing"]["refused_share"].cell == 1.0
    # calls left in the text: invalid (no call), not refused
    assert changes["parser"]["invalid_share"].changed and not changes["parser"]["refused_share"].changed
    assert changes["parser"]["invalid_share"].cell > changes["parser"]["invalid_share"].reference
    section = "\n".join(calls_section(run))
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in section.splitlines() if line.startswith("| `")}
    # valid calls, correct, refused, valid vs reference, correct vs reference, refusals vs reference, by way
    # 40 identical cases certify no margin of 0.1 after Holm over three cells: not worse is what is claimed
    assert rows["`same`"][3].startswith("no credible change") and rows["`same`"][4] in ("equivalent", "inconclusive")
    assert rows["`refusing`"][2] == "40" and rows["`refusing`"][3].startswith("**worse")
    assert rows["`refusing`"][5].startswith("**worse") and rows["`refusing`"][4] == "worse"
    assert rows["`parser`"][3].startswith("**worse") and rows["`parser`"][5].startswith("no credible change")
    assert "## Calls and structured output" in render_markdown(run)


def test_runs_without_calls_tasks_have_no_section(tmp_path):
    run = _run(tmp_path)
    for cell in run.cells.values():
        for score in cell.quality:
            score.calls = None
    assert calls_section(run) == []


def test_the_viewer_shows_each_call_beside_the_references_with_its_errors_marked(browser, tmp_path):
    """In headless chromium: the invalid filter keeps the documents either side got wrong, each card shows both
    answers and the cell's schema errors as marked text (a hostile tool name stays text)."""
    from evalharness.render.html import render_html
    from tests.headless import open_page, screenshot

    run = _run(tmp_path)
    # the broken-parser cell's first answer names a hostile tool: its error quotes it
    rows_path = tmp_path / run.cells["parser"].quality[0].samples
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    hostile = "<img src=x onerror=\"window.__pwned=1\">"
    first_invalid = next(r for r in rows if not r["valid"])
    first_invalid["errors"] = [*first_invalid["errors"], f"call 1 ({hostile}): no tool of that name was offered"]
    rows_path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    page = tmp_path / "report.html"
    page.write_text(render_html(run, tmp_path), encoding="utf-8")
    open_page(browser, page)
    # the section's table: every cell, the reference first; the broken cells' verdicts marked worse
    table_rows = browser.find_elements("css selector", "#calls table.calls-table tbody tr")
    assert [r.find_elements("css selector", "td")[0].text for r in table_rows] == [
        "ref (reference)", "same", "refusing", "parser"]
    assert "worse" in table_rows[2].find_elements("css selector", "td.worse")[0].text
    assert not table_rows[1].find_elements("css selector", "td.worse")
    browser.execute_script("const c=document.getElementById('doc-cell'); c.value='parser';"
                           "c.dispatchEvent(new Event('change'));"
                           "const f=document.getElementById('doc-filter'); f.value='invalid';"
                           "f.dispatchEvent(new Event('change'));")
    cards = browser.find_elements("css selector", "#documents-list article.doc")
    invalid = sum(1 for r in rows if not r["valid"])
    assert len(cards) == invalid and invalid > 0
    for card in cards:
        assert len(card.find_elements("css selector", "pre.answer")) == 2  # the reference's answer and the cell's
        assert card.find_elements("css selector", ".side.cell mark.schema-error")
    shown = browser.execute_script("return document.getElementById('documents-list').textContent")
    assert hostile in shown and browser.execute_script("return window.__pwned") is None
    assert "did not read as one" in shown
    screenshot(browser, "calls-invalid.png")
