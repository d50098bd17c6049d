"""Drift and speed by context length (issue 39): the long-context task's generator (the same seed gives the same
documents), the matrix's length section (its tasks and scenarios join the run once; what does not fit is refused),
the per-bucket figures and the envelope from records, and the report's section."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pytest
from pydantic import ValidationError

from evalharness.analysis.decision import decide
from evalharness.analysis.length import bucket_figures, buckets_of, envelope_text, equivalent_up_to
from evalharness.analysis.operating import operating_point
from evalharness.matrix.schema import Matrix
from evalharness.phases.longcontext import (char_estimate, make_document, make_documents, task_yaml, token_counter,
                                            write_tasks)
from evalharness.phases.throughput.prompts import PromptSourceError, load_source
from evalharness.records.drift import CellDrift, TaskDrift
from evalharness.records.measures import Percentiles, RepeatFigures, ScenarioResult, TaskScore
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.length import length_section, stops_paying
from tests.headless import browser  # noqa: F401  (a fixture)
from tests.unit.phases.test_local_tokenizer import MODEL as MODEL_DIR

BASE = {"name": "x", "engine": "vllm", "model": "some/model", "axes": {"p": {"a": {}, "b": {}}},
        "args": {"--max-model-len": 2048}, "quality": {"tasks": ["eh_copy"]}}


def test_the_same_seed_gives_the_same_documents_and_another_seed_others(tmp_path):
    first = make_documents(7, 512, 9, [0.1, 0.5, 0.9], char_estimate)
    again = make_documents(7, 512, 9, [0.1, 0.5, 0.9], char_estimate)
    other = make_documents(8, 512, 9, [0.1, 0.5, 0.9], char_estimate)
    assert first == again and len(first) == 9
    assert all(a.prompt != b.prompt for a, b in zip(first, other))
    assert len({d.prompt for d in first}) == 9 and [d.depth for d in first[:4]] == [0.1, 0.5, 0.9, 0.1]
    write_tasks(tmp_path / "a", 7, {512: "eh_long_512"}, 9, [0.1, 0.5, 0.9], 8, "no/such-model")
    write_tasks(tmp_path / "b", 7, {512: "eh_long_512"}, 9, [0.1, 0.5, 0.9], 8, "no/such-model")
    assert (tmp_path / "a" / "eh_long_512.jsonl").read_bytes() == (tmp_path / "b" / "eh_long_512.jsonl").read_bytes()


@pytest.mark.parametrize("depth", [0.0, 0.5, 1.0])
def test_a_document_asks_for_one_of_its_codes_at_its_depth_and_fills_its_bucket(depth):
    doc = make_document(3, 1024, 0, depth, char_estimate)
    haystack, question = doc.prompt.split("\n\nQuestion: ")
    asked = re.match(r"What is the code of the (\w+ \w+)\?", question).group(1)
    facts = re.findall(r"The code of the (\w+ \w+) is (\d{4})\.", haystack)
    assert len(facts) == 3 and len({key for key, _ in facts}) == 3  # the asked code and two distractors
    assert dict(facts)[asked] == doc.answer and doc.prompt.endswith(f"The code of the {asked} is")
    where = haystack.index(f"The code of the {asked} is") / len(haystack)
    assert abs(where - depth) < 0.08, where
    assert 0.9 * 1024 <= char_estimate(doc.prompt) <= 1024


def test_documents_are_sized_by_the_models_tokenizer_where_it_is_here():
    count, how = token_counter("no/such-model")
    assert count is char_estimate and "4 characters a token" in how
    if not (MODEL_DIR / "tokenizer.json").is_file():
        pytest.fail(f"{MODEL_DIR} is not built: run scripts/setup.sh")
    count, how = token_counter(str(MODEL_DIR))
    assert "tokenizer" in how and count is not char_estimate
    sizes = [count(d.prompt) for d in make_documents(1, 700, 6, [0.5], count)]
    assert all(0.95 * 700 <= s <= 700 for s in sizes), sizes


def test_a_bucket_too_short_for_a_document_is_refused():
    with pytest.raises(ValueError, match="too short"):
        make_document(1, 40, 0, 0.5, char_estimate)


def test_the_task_is_greedy_exact_match_on_the_first_number(tmp_path):
    config = json.loads(task_yaml("eh_long_256", tmp_path / "d.jsonl", 8))  # JSON is YAML: lm-eval reads it
    assert config["generation_kwargs"]["do_sample"] is False and config["generation_kwargs"]["max_gen_toks"] == 8
    assert config["filter_list"][0]["filter"][0]["regex_pattern"] == r"(\d+)"
    assert config["dataset_kwargs"]["data_files"]["test"] == str(tmp_path / "d.jsonl")


def test_the_section_adds_its_tasks_and_scenarios_once():
    matrix = Matrix.model_validate({**BASE, "length": {"enabled": True, "buckets": [256, 1024]}})
    assert matrix.quality.tasks == ["eh_copy", "eh_long_256", "eh_long_1024"]
    scenarios = matrix.throughput.all_scenarios()
    assert [s.name for s in scenarios] == ["length-256", "length-1024"]
    assert all(s.concurrency == 1 and s.prompts == f"length:{b}" for s, b in zip(scenarios, (256, 1024)))
    again = Matrix.model_validate(matrix.model_dump())  # results.json keeps the matrix; a resume validates it again
    assert again.quality.tasks == matrix.quality.tasks and len(again.throughput.all_scenarios()) == 2
    off = Matrix.model_validate(BASE)
    assert off.quality.tasks == ["eh_copy"] and off.throughput is None


@pytest.mark.parametrize("length, quality, message", [
    ({"enabled": True, "buckets": [256, 2044]}, True, "do not fit the served context of 2048"),
    ({"enabled": True, "buckets": [1024, 256]}, True, "buckets must increase"),
    ({"enabled": True, "buckets": [32]}, True, "greater than or equal to 64"),
    ({"enabled": True}, False, "need a quality section"),
])
def test_what_cannot_run_is_refused(length, quality, message):
    data = {**BASE, "length": length}
    if not quality:
        data.pop("quality")
    with pytest.raises(ValidationError, match=message):
        Matrix.model_validate(data)


def test_validate_names_the_key_and_exits_2(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(json.dumps({**BASE, "length": {"enabled": True, "buckets": [4096]}}))
    proc = subprocess.run([sys.executable, "-m", "evalharness", "validate", "--matrix", str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "length.buckets" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def test_bucket_prompts_exist_inside_a_run_only(tmp_path):
    with pytest.raises(PromptSourceError, match="inside a run only"):
        load_source("length:256")
    with pytest.raises(PromptSourceError, match="was not written"):
        load_source("length:256", {"length:256": tmp_path / "missing.jsonl"})


def test_the_headline_scenario_is_the_matrixs_own_not_a_length_bucket():
    matrix = Matrix.model_validate({**BASE, "length": {"enabled": True, "buckets": [256]},
                                    "throughput": {"scenarios": [{"name": "chat", "concurrency": 4, "requests": 8}]}})
    assert operating_point(matrix.model_dump(mode="json")).scenario == "chat"
    alone = Matrix.model_validate({**BASE, "length": {"enabled": True, "buckets": [256]}})
    assert operating_point(alone.model_dump(mode="json")).scenario == "length-256"  # nothing else to read it at


def _scenario(name: str, rates: list[float], ttft: float, acceptance: float | None = None) -> ScenarioResult:
    figures = [RepeatFigures(tok_s=r, seconds=1.0, requests=1, completed=1) for r in rates]
    return ScenarioResult(name=name, concurrency=1, input_len=256, output_len=32, requests=len(rates),
                          completed=len(rates), duration_s=1, output_tokens=32, prompt_tokens=250 * len(rates),
                          output_tok_s=float(np.mean(rates)), request_decode_tok_s=Percentiles(p50=float(rates[0])),
                          ttft_s=Percentiles(p50=ttft), tpot_s=Percentiles(), itl_s=Percentiles(), e2e_s=Percentiles(),
                          repeat_tok_s=rates, repeat_figures=figures,
                          engine={} if acceptance is None else {"spec_mean_acceptance_length": acceptance})


def _drift(task: str, outcome: str, delta: float) -> TaskDrift:
    return TaskDrift(task=task, paired=20, reference=0.8, cell=0.8 + delta, delta=delta, ci_low=delta - 0.1,
                     ci_high=delta + 0.1, outcome=outcome, margin=0.1)


def _cell(cid: str, scores: dict[int, float], scenarios: list[ScenarioResult], drifts: list[TaskDrift]) -> CellResult:
    quality = [TaskScore(task=f"eh_long_{b}", value=v, n=20) for b, v in scores.items()]
    cell = CellResult(id=cid, axes={}, settings_hash=cid, args={}, env={}, argv=[], status="ok", phase="done",
                      started_at="t", finished_at="t", duration_s=1, quality=quality, throughput=scenarios)
    if drifts:
        cell.drift = CellDrift(cell=cid, tasks=drifts)
    return cell


def _run() -> RunResult:
    ref = _cell("ref", {256: 0.9, 1920: 0.6},
                [_scenario("length-256", [20, 20.2, 19.9], 0.2), _scenario("length-1920", [18, 18.1, 17.9], 1.9)], [])
    ngram = _cell("ngram", {256: 0.9, 1920: 0.6},
                  [_scenario("length-256", [40, 40.5, 39.8], 0.2, 3.2), _scenario("length-1920", [18.2, 18, 18.1],
                                                                                   2.0, 1.4)],
                  [_drift("eh_long_256", "equivalent", 0.0), _drift("eh_long_1920", "equivalent", 0.0)])
    rope = _cell("rope", {256: 0.85, 1920: 0.0}, [],
                 [_drift("eh_long_256", "equivalent", -0.05), _drift("eh_long_1920", "worse", -0.6)])
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t",
                   matrix={"quality": {"concurrency": 16}, "length": {"documents": 20}})
    run = RunResult(meta=meta, reference="ref", cell_order=["ref", "ngram", "rope"],
                    cells={"ref": ref, "ngram": ngram, "rope": rope})
    run.decision = decide(run)  # the buckets' speed verdicts, decided as every run is before it is rendered
    return run


def test_the_figures_and_the_envelope_come_from_the_records():
    run = _run()
    assert buckets_of(run) == [256, 1920]
    ngram = bucket_figures(run, "ngram")
    assert [f.acceptance for f in ngram] == [3.2, 1.4]
    assert ngram[0].speed.faster and not ngram[1].speed.faster  # 2x at 256, the same speed near the context's end
    assert ngram[0].prompt_tokens == 250 and ngram[1].ttft_s == 2.0
    assert equivalent_up_to(ngram) == 1920 and equivalent_up_to(bucket_figures(run, "rope")) == 256
    assert envelope_text(run, "ngram", 16) == "by length: equivalent up to 1,920 prompt tokens at concurrency 16; not measured beyond"
    assert envelope_text(run, "rope", 16) == "by length: equivalent up to 256 prompt tokens at concurrency 16, worse at 1,920"
    decided = run.decision.buckets["ngram"]
    assert decided["256"].outcome == "faster" and decided["1920"].text == ngram[1].speed.text()
    paired = [(f, decided.get(str(f.bucket))) for f in ngram]
    assert stops_paying(paired).startswith("faster up to 256 prompt tokens; at 1,920 prompt tokens 1.01x [90%: 1.00–1.02] equal")
    assert stops_paying([(f, None) for f in bucket_figures(run, "rope")]) is None  # no speculation: nothing to say


def test_the_report_section_has_a_row_per_cell_and_bucket():
    text = "\n".join(length_section(_run()))
    assert text.startswith("## By length") and "20 seeded documents" in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert len(rows) == 6 and rows[0].startswith("| `ref` (reference) | 256 (250)")
    rope_long = next(r for r in rows if r.startswith("| `rope`") and "| 1,920" in r)
    assert "| worse |" in rope_long and "-0.600" in rope_long
    assert "`ngram`: by length: equivalent up to 1,920 prompt tokens at concurrency 16; not measured beyond; faster up to 256 prompt tokens; at 1,920" \
        in text
    plain = _run()
    for cell in plain.cells.values():
        cell.quality, cell.throughput = [], []
    assert length_section(plain) == []  # no buckets: no section


def test_report_html_shows_the_section_as_text(browser, tmp_path):
    """In headless chromium: a row per cell and bucket, the reference first, a worse bucket marked, where each cell's
    verdicts hold; a hostile cell name stays text."""
    from evalharness.render.html import render_html
    from tests.headless import open_page

    run = _run()
    hostile = "<img src=x onerror=\"window.__pwned=1\">"
    run.cells[hostile] = run.cells.pop("rope").model_copy(update={"id": hostile})
    run.cell_order = ["ref", "ngram", hostile]
    page = tmp_path / "report.html"
    page.write_text(render_html(run, tmp_path), encoding="utf-8")
    open_page(browser, page)
    rows = browser.find_elements("css selector", "#length table.length-table tbody tr")
    assert [r.find_elements("css selector", "td")[0].text for r in rows] == [
        "ref (reference)", "ref (reference)", "ngram", "ngram", hostile, hostile]
    assert [td.text for td in rows[5].find_elements("css selector", "td.worse")] == ["worse"]
    holds = browser.execute_script("return document.querySelector('#length ul.length-holds').textContent")
    assert "equivalent up to 1,920 prompt tokens at concurrency 16" in holds and "worse at 1,920" in holds
    assert browser.execute_script("return window.__pwned") is None


def test_the_buckets_tasks_are_greedy_completions_of_every_document_and_plan_prices_them():
    from evalharness.analysis.plan import make_plan
    from evalharness.serving.engines import load_matrix
    from tests.unit.phases.test_local_tokenizer import REPO

    matrix, _, _ = load_matrix(REPO / "matrices" / "sm120.yaml")  # samples its standard tasks, thinking on
    assert matrix.quality.settings_for("gsm8k")["gen_kwargs"]["temperature"] == 0.6
    own = matrix.quality.settings_for("eh_long_32768")
    assert own["api"] == "completions" and own["limit"] is None and own["max_gen_toks"] == 8
    assert own["gen_kwargs"]["temperature"] == 0.0 and own["gen_kwargs"]["do_sample"] is False
    assert own["chat_template_kwargs"] is None and own["stop_strings"] is None
    rows = {row.task: row for row in make_plan(matrix.model_dump(mode="json"), tok_s=2000.0).tasks}
    assert rows["eh_long_65536"].documents == matrix.length.documents == 100
    assert rows["eh_long_65536"].tokens_per_answer == 8 and rows["eh_long_65536"].margin == 0.05
    assert "length.documents" in rows["eh_long_65536"].source


def test_the_numerics_check_on_the_buckets_documents_is_reported_per_bucket_and_kept_out_of_the_headline():
    from evalharness.analysis.numerics import bucket_of, compare_distributions
    from evalharness.records.measures import Scored

    def scored(cid: str, logprob: float) -> Scored:
        return Scored(id=cid, token_ids=[1, 2, 3], logprobs=[logprob] * 3, top=[{"1": logprob}] * 3)

    ids = ["p1", "p2", "length-256/b256-000", "length-256/b256-001", "length-1920/b1920-000"]
    reference = [scored(c, -1.0) for c in ids]
    # the cell agrees with the reference on the check's own contexts and diverges on the longest bucket's document
    cell = [scored(c, -3.0 if c.startswith("length-1920") else -1.0) for c in ids]
    out = compare_distributions(reference, cell)
    assert [bucket_of(c) for c in ids] == [None, None, 256, 256, 1920] and bucket_of("length-x/1") is None
    assert out.forward.contexts == 2 and out.forward.estimate == 0.0
    assert sorted(out.by_bucket) == [256, 1920]
    assert out.by_bucket[256].forward.contexts == 2 and out.by_bucket[256].forward.estimate == 0.0
    assert out.by_bucket[1920].forward.estimate == 2.0  # log p_ref - log p_cell per token


def test_a_length_bucket_states_the_recommendations_envelope_and_rules_out_only_a_worse_cell(tmp_path):
    """The recommendation rests on the matrix's own tasks; a bucket too small to be settled leaves it standing with
    its envelope said, and a cell worse on a bucket is never recommended."""
    from evalharness.analysis.drift import refresh_drift
    from evalharness.analysis.recommend import recommend
    from evalharness.render.report import render_markdown
    from tests.unit.analysis.test_equivalence import _run_with, _scores

    same = [1.0] * 150 + [0.0] * 50
    few = [1.0] * 10 + [0.0] * 2  # 12 documents: never equivalent within 0.05
    lost = [0.0] * 12
    cells = {"ref": _scores(tmp_path, "ref", {"t": same, "eh_long_1920": few}),
             "fast": _scores(tmp_path, "fast", {"t": same, "eh_long_1920": few}),
             "faster": _scores(tmp_path, "faster", {"t": same, "eh_long_1920": lost})}
    run = _run_with(tmp_path, cells, gate={"margin": 0.05}, tok_s={"ref": 10.0, "fast": 20.0, "faster": 40.0})
    run.meta.matrix["quality"] = {"concurrency": 16}
    refresh_drift(run, tmp_path)
    long_fast = next(t for t in run.cells["fast"].drift.tasks if t.task == "eh_long_1920")
    assert long_fast.outcome == "inconclusive" and run.cells["fast"].drift.outcome == "equivalent"
    assert run.cells["faster"].drift.outcome == "worse"  # lost every long document: worse, and so the cell
    rec = recommend(run)
    assert rec.cell == "fast"
    line = render_markdown(run).split("\n## ")[0]
    assert "by length: not shown equivalent at any length measured (inconclusive at 1,920 prompt tokens at " \
           "concurrency 16)" in line
    # "every task" leaves out the lengths (issue 61, 5): the line names the tasks its error bound covers, and says
    # the lengths are outside it
    assert "equivalent to the reference on its 1 task (t) within their margins" in line
    assert "on every task" not in line and "truly worse than the reference by a margin or more on one of those tasks is at most 0.05; the " \
        "lengths are measured beside them, not covered by that bound" in line


def test_the_runs_files_are_written_once_for_the_same_settings_and_again_when_they_change(tmp_path):
    from evalharness.runner.lengthfiles import ensure_length_files

    data = {**BASE, "model": "no/such-model", "length": {"enabled": True, "buckets": [256], "documents": 3}}
    assert "4 characters a token" in ensure_length_files(Matrix.model_validate(data), tmp_path)
    assert ensure_length_files(Matrix.model_validate(data), tmp_path) is None  # a resume: nothing sized again
    changed = {**data, "length": {**data["length"], "documents": 4}}
    assert ensure_length_files(Matrix.model_validate(changed), tmp_path) is not None
    assert len((tmp_path / "length" / "eh_long_256.jsonl").read_text().splitlines()) == 4
