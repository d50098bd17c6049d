"""The verdict box (issue 58, 2): report.md and summary.md open with at most five short lines: the pick and what it
changes, its speed-up with the lower bound; its answers against the margin with documents and answers a document; the
runner-up and what held it back; the run's health."""

import re

from evalharness.analysis.drift import refresh_drift
from evalharness.render.report import render_markdown, summary_markdown
from evalharness.render.verdict import verdict_box
from tests.unit.runner.test_confirmation_stage import confirmed_run
from tests.headless import browser, open_page  # noqa: F401  (browser is a fixture)
from tests.unit.analysis.test_equivalence import _run_with, _scores

SAME = [1.0] * 150 + [0.0] * 50
SHAKY = [0.0] * 30 + [1.0] * 120 + [0.0] * 20 + [1.0] * 30  # 30 lost and 30 gained of 200: not shown equivalent


def _words(line: str) -> int:
    return len(re.sub(r"[*`>]", " ", line).split())


def _three(tmp_path):
    cells = {"ref": _scores(tmp_path, "ref", {"t": SAME}), "fast": _scores(tmp_path, "fast", {"t": SAME}),
             "faster": _scores(tmp_path, "faster", {"t": SHAKY})}
    run = _run_with(tmp_path, cells, gate={"margin": 0.05}, tok_s={"ref": 10.0, "fast": 13.0, "faster": 16.0})
    run.cells["ref"].args = {"--dtype": "float32", "--enforce-eager": True}
    run.cells["fast"].args = {"--dtype": "float32", "--enforce-eager": False}
    run.cells["faster"].args = {"--dtype": "bfloat16", "--enforce-eager": True}
    refresh_drift(run, tmp_path)
    return run


def test_the_report_opens_with_five_short_lines_the_pick_first(tmp_path):
    run = _three(tmp_path)
    box = [line for line in verdict_box(run) if line]
    assert 1 <= len(box) <= 5 and all(line.startswith("> ") for line in box)
    first = box[0]
    assert first.startswith("> **Ship `fast`** (without --enforce-eager): 1.30x (at least ") and _words(first) <= 40
    assert box[1].startswith("> Answers: equivalent to the reference within ±0.05 on 1 task (200 documents, 1 / 1 "
                             "answers a document; largest drop at most ")
    assert box[2].startswith("> Runner-up: `faster`, 1.60x, held back: inconclusive on t: drop up to ")
    assert box[3] == "> Run: 3/3 cells (3 ok)."  # no request tallied: nothing said of failures
    for page in (render_markdown(run), summary_markdown(run)):
        quoted = [line for line in page.splitlines() if line.startswith("> ")]
        assert quoted[:len(box)] == box
        assert page.index("> **Ship") < page.index("|")  # before any table


def test_no_pick_says_keep_the_reference_and_why(tmp_path):
    cells = {"ref": _scores(tmp_path, "ref", {"t": SAME}), "faster": _scores(tmp_path, "faster", {"t": SHAKY})}
    run = _run_with(tmp_path, cells, gate={"margin": 0.05}, tok_s={"ref": 10.0, "faster": 16.0})
    refresh_drift(run, tmp_path)
    box = [line for line in verdict_box(run) if line]
    assert box[0].startswith("> **No recommendation: keep the reference.** The fastest candidate, `faster` (1.60x), "
                             "is inconclusive on t: drop up to ") and _words(box[0]) <= 40
    assert not any(line.startswith("> Runner-up") for line in box)  # no other faster cell


def test_a_two_stage_run_ships_only_what_its_fresh_launches_confirmed(tmp_path):
    run = confirmed_run(tmp_path, [1.0] * 300 + [0.0] * 100)
    box = [line for line in verdict_box(run) if line]
    assert box[0].startswith("> **Ship `fast`**: ") and "confirmed on 2 fresh launches against 2" in box[0]
    assert _words(box[0]) <= 40
    assert box[1].startswith("> Answers: not worse than the reference by ±0.05 on 1 task (400 documents")
    assert len(box) <= 5 and box[-1].startswith("> Run: ")


def test_the_report_ends_with_how_to_read_it_and_cites_no_repository_file(tmp_path):
    text = render_markdown(_three(tmp_path))
    reading = text[text.index("## How to read this report"):]
    for term in ("margin", "equivalent", "not worse", "inconclusive", "worse", "goodput", "operating point", "SLO",
                 "look", "screening", "set aside", "KL", "flips", "A/A"):
        assert f"- **{term}" in reading or f"/ {term}" in reading, term
    assert not re.search(r"\b(docs|analysis|render|phases|serving|runner|records)/[\w/]+\.(md|py)\b", text)


def test_what_ships_is_decided_once_and_every_renderer_reads_it(tmp_path):
    """analysis/decision.py decides with the drift and saves the record; no render module imports the rules that
    choose (recommend, confirm, confirmation, decision) or the verdicts they rest on (the speed rule between two
    cells, the Pareto front), and a run whose record says otherwise is shown as recorded."""
    import ast
    from pathlib import Path

    import evalharness.render as render

    choosing = {"evalharness.analysis.recommend", "evalharness.analysis.decision", "evalharness.analysis.confirm",
                "evalharness.analysis.confirmation"}
    verdicts = {"pareto", "pareto_front", "vs_reference", "speedup", "verdict_between", "faster", "recommend",
                "decide", "scenario_verdict", "step_verdicts", "crossover"}
    for path in Path(render.__file__).parent.glob("*.py"):
        imports = [node for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.ImportFrom)]
        assert not {node.module for node in imports} & choosing, path.name
        names = {alias.name for node in imports if (node.module or "").startswith("evalharness.analysis")
                 for alias in node.names}
        assert not names & verdicts, (path.name, names & verdicts)
        # the length buckets' figures are read with their speed verdicts left out (the decided ones are shown)
        assert "bucket_figures(run, cid)" not in path.read_text(), path.name
    run = _three(tmp_path)
    assert run.decision.kind == "single" and run.decision.pick == "fast"
    assert run.decision.runner_up.cell == "faster" and run.decision.runner_up.reason == "inconclusive"
    run.decision.speed["fast"].text = "RECORDED SPEED WORDS"
    run.decision.pareto.points[0].on_front = not run.decision.pareto.points[0].on_front
    front = {p.cell for p in run.decision.pareto.points if p.on_front}
    run.decision = run.decision.model_copy(update={"pick": None, "kind": "none", "recommendation": None})
    text = render_markdown(run)
    assert "**Ship" not in text  # the renderer shows the record, it does not decide again
    assert "RECORDED SPEED WORDS" in text
    shown = {line.split("|")[1].strip().strip("`") for line in text.splitlines() if "| **yes** |" in line}
    assert shown == front, (shown, front)


def test_run_report_and_the_page_end_and_open_with_the_same_verdict(tmp_path, capsys, browser):
    """`report` prints the box as plain lines (as `run` does at its end); report.html shows them first, as text: a
    hostile cell name stays text."""
    from evalharness.cli import main
    from evalharness.render.html import render_html
    from evalharness.render.verdict import verdict_plain
    hostile = "fast <img src=x onerror=alert(1)>"
    cells = {"ref": _scores(tmp_path, "ref", {"t": SAME}), hostile: _scores(tmp_path, hostile, {"t": SAME})}
    run = _run_with(tmp_path, cells, gate={"margin": 0.05}, tok_s={"ref": 10.0, hostile: 13.0})
    refresh_drift(run, tmp_path)
    plain = verdict_plain(run)
    assert plain[0].startswith(f"Ship {hostile}: 1.30x (at least ") and not any("**" in line for line in plain)
    assert main(["report", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert plain[0] in printed and printed.index(plain[0]) < printed.index("report: ")
    page = tmp_path / "report.html"
    page.write_text(render_html(run, tmp_path), encoding="utf-8")
    open_page(browser, page)
    shown = browser.find_element("css selector", "#verdict").text.splitlines()
    assert shown == plain
    assert browser.execute_script("return document.querySelectorAll('#page img, #page script').length") == 0


def test_report_writes_the_decision_record_into_results_json(tmp_path):
    """Issue 58, 1: after `report`, as after `run`, results.json holds the decision as this version makes it (a run
    saved before the record existed gets one)."""
    import json

    from evalharness.cli import main
    from evalharness.records.io import save_run

    run = _three(tmp_path)
    run.decision = None
    save_run(run, tmp_path)
    assert json.loads((tmp_path / "results.json").read_text())["decision"] is None
    assert main(["report", str(tmp_path)]) == 0
    decision = json.loads((tmp_path / "results.json").read_text())["decision"]
    assert decision["pick"] == "fast" and decision["speed"]["fast"]["outcome"] == "faster"
    assert decision["pareto"]["points"] and decision["runner_up"]["cell"] == "faster"
