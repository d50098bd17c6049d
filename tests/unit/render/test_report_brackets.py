"""Issue 57.5: one bracket, one meaning. Every `[a–b]` in report.md, summary.md and report.html is an interval whose
level is printed in its column's header or beside its ends ('[90%: a–b]', '[99.1%: a–b]'); a range of repeats is
written min..max; no table shows a disturbed repeat as a cell's figure (the demo's summary read "133.6 [0.0–134.6]",
the 0.0 a disturbed repeat the verdict had set aside, and "1.17x [1.10–1.24]", a 99.07% interval, said no level)."""

from __future__ import annotations

import re

from evalharness.analysis.speed import Side
from evalharness.render.html_data import page_data
from evalharness.render.report import render_markdown, summary_markdown
from evalharness.render.throughput import tok_s_text
from tests.unit.analysis.sweep_runs import cell, step, sweep_run

SLO = {"tpot": {"percentile": 90, "max_ms": 90}}
DISTURBED = "other processes kept 1.6 cores busy"
# an interval's ends: numbers (or an open end) joined by an en dash
BRACKET = re.compile(r"\[([^\[\]]*?)(-?[\d.,]+|open)–(-?[\d.,]+|open)\]")
LEVEL = re.compile(r"\d+(\.\d+)?%")


def _disturbed_run():
    """The demo's case: the fastest cell's fourth repeat at the operating load was disturbed (host-flagged) and
    measured nothing; the speed rule set it aside, and its figure is the other three's mean."""
    ref = cell("ref", [step(1, [30, 31, 29], tpot_s=0.033), step(8, [100, 102, 98, 101], tpot_s=0.06)], outcome=None)
    fast_c8 = step(8, [133.0, 134.6, 133.2, 0.0], tpot_s=0.05)
    fast_c8.repeat_figures[3] = fast_c8.repeat_figures[3].model_copy(update={"disturbed": DISTURBED})
    fast_c8.output_tok_s = (133.0 + 134.6 + 133.2) / 3  # as the runner records it: the kept repeats' mean
    fast = cell("fast", [step(1, [40, 41, 39], tpot_s=0.025), fast_c8])
    return sweep_run([ref, fast], concurrency=[1, 8], slo=SLO, operating_point={"concurrency": 8})


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Each pipe table of a Markdown text as (header, rows), cells stripped."""
    out, lines = [], text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and i + 1 < len(lines) and re.fullmatch(r"\|[\s:|-]+\|", lines[i + 1]) and \
                (i == 0 or not lines[i - 1].startswith("|")):
            split = lambda row: [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]  # noqa: E731
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(split(row))
            out.append((split(line), rows))
    return out


def unlabelled_brackets(text: str) -> list[str]:
    """Every `[a–b]` in a Markdown text whose level is neither beside its ends ('[90%: a–b]') nor in its table
    column's header ('output tok/s [90% interval]')."""
    bad = []
    for header, rows in _tables(text):
        for row in rows:
            for name, value in zip(header, row):
                bad += [m.group(0) for m in BRACKET.finditer(value)
                        if not LEVEL.search(m.group(1)) and not LEVEL.search(name)]
    for line in text.splitlines():
        if line.startswith("|"):
            continue
        bad += [m.group(0) for m in BRACKET.finditer(line) if not LEVEL.search(m.group(1))]
    return bad


def test_the_brackets_labels_every_interval_has_its_level_and_ranges_use_dots():
    run = _disturbed_run()
    report, summary = render_markdown(run), summary_markdown(run)
    assert unlabelled_brackets(report) == [] and unlabelled_brackets(summary) == []
    # the speed rule's interval says the level its look spent (here a fixed design: 90%)
    assert "x [90%: " in summary and "x [90%: " in report
    # the load table's interval carries its level in the header; the latency percentiles beside their ends
    assert "output tok/s [90% interval]" in report
    # a range of repeats is min..max, never a bracket; the set-aside repeat is counted, not shown as the range's end
    assert "133.6 (kept repeats 133.0..134.6; 1 set aside)" in report  # the Throughput table
    fast_row = next(r for r in summary.splitlines() if r.startswith("| `fast`"))
    assert "..134.6" in fast_row and "[" not in fast_row.split("|")[3]
    assert tok_s_text(10.5, Side((9.5, 10.5, 11.5))) == "10.5 (repeats 9.5..11.5)" and tok_s_text(10.5, None) == "10.5"


def test_the_brackets_labels_no_table_shows_a_disturbed_repeat_as_a_cell_s_figure():
    run = _disturbed_run()
    for text in (render_markdown(run), summary_markdown(run)):
        for header, rows in _tables(text):
            for row in rows:
                if row and row[0].startswith("`fast`"):
                    # neither the figure nor a range's end is the disturbed repeat's 0.0
                    assert not any(re.search(r"(^|[\s(\[])0\.0(\b|\.\.)(?!\d)", c) for c in row), (header, row)
    # the notes still name it, with what disturbed it
    assert f"repeat 4: 0.0 tok/s, set aside: {DISTURBED}" in render_markdown(run)


def test_the_brackets_labels_in_report_html(tmp_path):
    run = _disturbed_run()
    data = page_data(run, tmp_path)
    header = data["table"]["header"]
    for row in data["table"]["rows"]:
        for name, (text, _) in zip(header, row["columns"]):
            assert not [m.group(0) for m in BRACKET.finditer(str(text))
                        if not LEVEL.search(m.group(1)) and not LEVEL.search(name)], (name, text)
    fast = next(r for r in data["table"]["rows"] if r["cell"] == "fast")
    assert "(kept repeats" in fast["columns"][3][0] and " 0.0" not in fast["columns"][3][0]
    assert "[90%: " in fast["columns"][4][0]  # vs reference: the rule's interval with its level
    point = next(p for p in data["chart"]["points"] if p["cell"] == "fast")
    assert point["x_low"] > 100  # the bar is the kept repeats' range, not down to the disturbed 0.0
    assert unlabelled_brackets(data["recommendation"]) == []
