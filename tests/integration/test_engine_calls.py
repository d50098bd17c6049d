"""Tool calls and JSON output through the real embedded engine (issue 40): the shipped calls tasks run end to end
through vLLM's tools API with its `hermes` tool parser (the model's template made to render tools:
tasks/calls/smollm2_tools.jinja) and its structured outputs, and a cell whose grammar backend breaks calls is caught.

Two cells, each its own engine (the flags differ from the session engine's): `ref`, xgrammar as vLLM's
structured-outputs backend, and `guidance`, llguidance. Measured on this vLLM (0.32.0, 2026-12-04): llguidance
refuses every request with tools ("Invalid grammar specification: 'triggers'", HTTP 400: vLLM builds a structural tag
with triggers for the hermes format that llguidance does not take) and answers JSON as xgrammar does. The test asserts
what the harness must make of that, not the engine's rate: the tool cases of `guidance` are refused and reported so,
its invalid share is credibly above the reference's, and its JSON is not called worse.
"""

from __future__ import annotations

import json
import time

import pytest

from evalharness.records.io import load_run
from evalharness.render.html_data import page_data
from tests.integration.conftest import REPO, matrix_yaml, run_harness

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1200)]

TEMPLATE = REPO / "tasks" / "calls" / "smollm2_tools.jinja"
CASES = 24  # of each task, the same seeded subset in both cells
MODE_CASES = 4  # of each task, answered one at a time and four at once, streamed and not (measures/calls/)


def _cell(backend: str) -> str:
    # float32: the folder's own bfloat16 is emulated, and slower, on a CPU without native bf16
    return json.dumps({"args": {"--dtype": "float32", "--enable-auto-tool-choice": True, "--tool-call-parser": "hermes",
                                "--chat-template": str(TEMPLATE), "--structured-outputs-config.backend": backend}})


@pytest.fixture(scope="module")
def calls_run(engine, tmp_path_factory):
    folder = tmp_path_factory.mktemp("calls")
    extra = ("reference: {cell: ref}\nprobes: {enabled: false}\ndistribution: {enabled: false}\n"
             f"quality: {{tasks: [eh_tools, eh_json], limit: {CASES}, max_gen_toks: 64, concurrency: 8}}\n"
             "gate: {margin: 0.1, alpha: 0.05}\n"
             f"calls_modes: {{enabled: true, cases: {MODE_CASES}, concurrency: 4, max_tokens: 64}}\n")
    (folder / "matrix.yaml").write_text(matrix_yaml(engine, {"ref": _cell("xgrammar"), "guidance": _cell("guidance")},
                                                    extra=extra))
    out = folder / "out"
    begin = time.monotonic()
    proc = run_harness("run", "--matrix", str(folder / "matrix.yaml"), "--out", str(out), timeout=1100)
    print(f"calls run: {time.monotonic() - begin:.0f}s")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return out, load_run(out)


def test_both_tasks_run_end_to_end_through_the_tool_parser_and_structured_outputs(calls_run):
    out, run = calls_run
    ref = {t.task: t for t in run.cells["cell-ref"].quality}
    for task in ("eh_tools", "eh_json"):
        score = ref[task]
        assert score.error is None and score.calls is not None and score.calls.cases == CASES, score
        print(f"ref {task}: valid {score.calls.valid}/{score.calls.cases}, correct {score.value:.3f}, "
              f"by way {score.calls.by_way}")
        assert score.calls.refused == 0
    # calls came back parsed by the hermes parser (required and named are constrained by vLLM's structural tag)
    rows = [json.loads(line) for line in (out / ref["eh_tools"].samples).read_text().splitlines()]
    parsed = [r for r in rows if isinstance(r["response"], list) and r["response"]]
    assert parsed, "no tool call was parsed: the tool parser or the template is not in effect"
    assert all(r["metrics"]["valid_call"] == 1.0 for r in parsed if not r["errors"])
    # JSON through response_format comes back valid against its schema (the grammar constrains it)
    assert ref["eh_json"].calls.valid >= CASES // 2, ref["eh_json"].calls


def test_a_grammar_backend_that_refuses_tools_is_caught_and_reported(calls_run):
    out, run = calls_run
    cell = {t.task: t for t in run.cells["cell-guidance"].quality}
    tools = cell["eh_tools"].calls
    print(f"guidance eh_tools: {tools.refused}/{tools.cases} refused, valid {tools.valid}")
    assert tools.refused == tools.cases and tools.valid == 0
    rows = [json.loads(line) for line in (out / cell["eh_tools"].samples).read_text().splitlines()]
    assert all(r["refused"] and r["finish_reason"] == "refused" and "400" in r["refused"] for r in rows)
    changes = {(c.task, c.field): c for c in run.cells["cell-guidance"].drift.calls}
    invalid = changes[("eh_tools", "invalid_share")]
    assert invalid.changed and invalid.cell > invalid.reference, invalid
    assert changes[("eh_tools", "refused_share")].changed
    assert not changes[("eh_json", "invalid_share")].changed, changes[("eh_json", "invalid_share")]
    report = (out / "report.md").read_text()
    section = report.split("## Calls and structured output", 1)[1].split("\n## ", 1)[0]
    tools_table = section.split("### eh\\_tools", 1)[1].split("### ", 1)[0]  # Markdown-escaped
    columns = next(line for line in tools_table.splitlines() if line.startswith("| `cell-guidance`")).split("|")
    # cell, valid calls, correct, refused, valid vs reference, correct vs reference, refusals vs reference, by way
    assert columns[2].strip().startswith(f"0/{CASES}") and columns[4].strip() == str(CASES), columns
    assert columns[5].strip().startswith("**worse") and columns[7].strip().startswith("**worse"), columns
    # the viewer's data carries each answer's schema errors and refusals beside the reference's
    data = page_data(run, out)
    task = next(t for t in data["tasks"] if t["task"] == "eh_tools")
    answers = task["cells"]["cell-guidance"]
    assert all(a["refused"] and a["invalid"] for a in answers)
    assert any(d["reference"]["errors"] for d in task["documents"]) or all(
        not d["reference"]["invalid"] for d in task["documents"])


def test_the_calls_tasks_streamed_and_not_at_two_concurrencies(calls_run):
    """Issue 60, 2, on the real vLLM: each calls task's first cases answered in the four modes through the hermes
    parser (streamed tool calls put together from vLLM's deltas) and xgrammar; greedy, so a healthy engine answers
    alike in every mode and no pair is flagged; llguidance refuses the tool cases in every mode alike."""
    out, run = calls_run
    modes = ("alone", "streamed", "load", "load_streamed")
    ref = run.cells["cell-ref"].measures["calls_modes"]
    assert ref["unavailable"] is None and ref["concurrency"] == 4
    assert [t["task"] for t in ref["tasks"]] == ["eh_tools", "eh_json"]
    for task in ref["tasks"]:
        assert len(task["cases"]) == MODE_CASES
        for case in task["cases"]:
            assert set(case["outcomes"]) == set(modes) and "error" not in case["outcomes"].values(), case
            assert "refused" not in case["outcomes"].values(), case
        valid = {m: sum(c["outcomes"][m] == "valid" for c in task["cases"]) for m in modes}
        print(f"vLLM {task['task']} valid by mode: {valid}")
        assert valid["alone"] > 0 and abs(valid["streamed"] - valid["alone"]) <= 1, valid
    guidance = run.cells["cell-guidance"].measures["calls_modes"]
    tools = next(t for t in guidance["tasks"] if t["task"] == "eh_tools")
    assert all(set(c["outcomes"].values()) == {"refused"} for c in tools["cases"]), tools
    change = run.cells["cell-guidance"].drift.measures["calls_modes"]
    assert not change["flagged"] and {(c["task"], c["base"], c["mode"]) for c in change["reference"]} >= {
        ("eh_tools", "alone", "streamed"), ("eh_json", "load", "load_streamed")}
    assert "## Calls under load and streamed" in (out / "report.md").read_text()
