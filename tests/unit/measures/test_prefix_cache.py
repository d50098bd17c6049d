"""The prefix-cache check (evalharness/measures/prefix_cache/, issue 60, 1): its prompts, its flush, its rule against
the reference's own rate, its place in the matrix, the confirmation stage, the decision and the report."""

from __future__ import annotations

import httpx
import pytest

from evalharness.analysis.decision import qualifiers
from evalharness.serving.engines import ENGINES, load_matrix
from evalharness.measures.comparisons import flagged
from evalharness.measures.prefix_cache.compare import compare as cache_change
from evalharness.measures.prefix_cache.phase import ASK, cache_prompts, flush, logprob_gap, warmer
from evalharness.measures.prefix_cache.spec import KEY, CacheAnswer, PrefixCacheChange, PrefixCacheRecord
from evalharness.measures.reports import measure_data, measure_sections
from evalharness.measures.specs import read
from evalharness.records.decision import Decision
from evalharness.records.run import RunResult
from tests.unit.measures.runs import run_of
from tests.headless import browser  # noqa: F401  (a fixture)

ANSWER = "The lighthouse keeper trimmed the wick at dusk and cleaned the lens."


def _record(changed: set[int], n: int = 64, gap: float = 1e-6) -> PrefixCacheRecord:
    return PrefixCacheRecord(flush="POST /reset_prefix_cache", max_tokens=32, prefix_words=300, answers=[
        CacheAnswer(id=f"p{i}", cold=ANSWER, warm=ANSWER[:20] + "<b>oops</b>" if i in changed else ANSWER,
                    logprob_gap=gap) for i in range(n)])


def test_prompts_share_long_prefixes_in_groups_and_are_the_same_in_every_cell():
    prompts = cache_prompts(10, 4, 120, seed=0)
    assert len(prompts) == 10 and prompts == cache_prompts(10, 4, 120, seed=0)
    assert [group for _, group, _ in prompts] == [0, 0, 0, 0, 1, 1, 1, 1, 2, 2]
    prefix = prompts[0][2].split("Now, without repeating the notes: ")[0]
    assert len(prefix.split()) >= 120 and all(text.startswith(prefix) for _, group, text in prompts if group == 0)
    assert not prompts[4][2].startswith(prefix)  # another group, another prefix
    assert len({text for _, _, text in prompts}) == 10
    assert cache_prompts(10, 4, 120, seed=1) != prompts
    assert warmer(prompts, 0) == prompts[1][2] and warmer(prompts, 3) == prompts[0][2]  # the group's next prompt
    alone = cache_prompts(9, 4, 120, seed=0)  # the last group holds one prompt: its prefix warms the cache
    assert warmer(alone, 8) == alone[8][2].split(ASK)[0] + ASK + "say nothing." != alone[8][2]


def test_the_logprob_gap_is_read_over_the_tokens_both_answers_chose():
    cold = [("The", -0.10), (" keeper", -0.50), (" slept", -1.0)]
    warm = [("The", -0.10), (" keeper", -0.52), (" woke", -0.9)]
    assert logprob_gap(cold, warm) == pytest.approx(0.02)
    assert logprob_gap([], warm) is None and logprob_gap([("a", -1.0)], [("b", -1.0)]) is None


def _client(handler) -> httpx.Client:
    return httpx.Client(transport=httpx.MockTransport(handler))


def test_flush_says_when_the_endpoint_cannot_empty_its_cache_and_retries_a_refusal():
    assert flush(_client(lambda r: httpx.Response(200, json={"success": True})), "http://x/reset_prefix_cache") is None
    why = flush(_client(lambda r: httpx.Response(404, text="Not Found")), "http://x/reset_prefix_cache")
    assert "404" in why and "cannot empty its prefix cache" in why
    answers = iter([httpx.Response(200, json={"success": False}), httpx.Response(200, json={"success": True})])
    assert flush(_client(lambda r: next(answers)), "http://x/reset_prefix_cache") is None  # blocks were held once
    why = flush(_client(lambda r: httpx.Response(400, text="Flush cache failed.")), "http://x/flush_cache")
    assert "did not empty the cache" in why


def test_a_cell_whose_answers_change_with_the_cache_more_than_the_references_is_flagged_and_its_twin_is_not():
    reference = _record({5})
    broken = cache_change(reference, _record(set(range(0, 64, 3))), alpha=0.05)
    assert broken.flagged and broken.cell == pytest.approx(22 / 64) and broken.reference == pytest.approx(1 / 64)
    assert broken.p_value < 0.05
    twin = cache_change(reference, _record({5}), alpha=0.05)
    assert not twin.flagged and twin.p_value == 1.0
    assert not cache_change(reference, _record({7}), alpha=0.05).flagged  # one other prompt: not credible
    assert cache_change(reference, PrefixCacheRecord(flush="none", unavailable="no endpoint"), 0.05) is None
    failed = _record(set(range(0, 64, 3)))
    for answer in failed.answers[:60]:
        answer.error = "timeout"
    assert cache_change(reference, failed, 0.05).prompts == 4  # failed prompts are left out of the pairing


def _run(records: dict) -> RunResult:
    return run_of(KEY, records)


def test_the_report_gives_the_references_own_count_and_each_cells_verdict_escaped():
    run = _run({"ref": _record({5}), "warm<b>": _record(set(range(0, 64, 3))), "twin": _record({5})})
    text = "\n".join(measure_sections(run))
    assert "## Prefix cache" in text and "prefix of 300 words" in text and "POST /reset_prefix_cache" in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| `")}
    assert rows["`ref` (reference)"][0] == "1/64"
    assert rows["`warm&lt;b&gt;`"][0] == "22/64" and rows["`warm&lt;b&gt;`"][2].startswith("**flagged**")
    assert rows["`twin`"][2].startswith("not flagged")
    assert "<b>oops" not in text  # answers are never printed; ids sit in code spans
    assert [m["key"] for m in measure_data(run)] == [KEY]
    assert measure_sections(_run({"ref": None, "x": None})) == []  # the check off: no section


def test_an_endpoint_that_cannot_flush_says_so_in_the_report():
    off = PrefixCacheRecord(flush="none", unavailable="the endpoint names no endpoint that empties its prefix cache")
    text = "\n".join(measure_sections(_run({"ref": off, "x": off})))
    assert "not measured: the endpoint names no endpoint" in text


def test_a_flagged_pick_is_named_in_what_qualifies_the_decision():
    run = _run({"ref": _record({5}), "fast": _record(set(range(0, 64, 3)))})
    assert [spec.key for spec, _ in flagged(run.cells["fast"].drift.measures)] == [KEY]
    said = qualifiers(run, Decision(kind="single", pick="fast"))
    assert any(w.startswith("fast: prefix cache: answers changed between a cold and a warm prefix cache 34%") for w in said)
    assert not [w for w in qualifiers(run, Decision(kind="single", pick="ref")) if "prefix cache" in w]


def test_the_section_is_off_unless_enabled_checked_and_turns_on_vllms_dev_endpoint(tmp_path):
    body = ("name: x\nengine: vllm\nmodel: some/model\ncommand: [python, -m, vllm.entrypoints.openai.api_server]\n"
            "axes:\n  p:\n    a: {}\n")
    (tmp_path / "off.yaml").write_text(body)
    matrix, cells, _ = load_matrix(tmp_path / "off.yaml")
    assert matrix.prefix_cache.enabled is False
    plan = ENGINES["vllm"].launch_plan(matrix, cells[0], 8000, str(tmp_path))
    assert "VLLM_SERVER_DEV_MODE" not in plan.env
    (tmp_path / "on.yaml").write_text(body + "prefix_cache: {enabled: true, count: 8}\n")
    matrix, cells, _ = load_matrix(tmp_path / "on.yaml")
    assert matrix.prefix_cache.count == 8
    assert ENGINES["vllm"].launch_plan(matrix, cells[0], 8000, str(tmp_path)).env["VLLM_SERVER_DEV_MODE"] == "1"
    assert {name: engine.cache_flush_path for name, engine in ENGINES.items()} == {
        "vllm": "/reset_prefix_cache", "sglang": "/flush_cache", "transformers": None, "llamacpp": None,
        "external": None}  # llama.cpp erases per slot only (serving/engines/llamacpp.py)
    (tmp_path / "bad.yaml").write_text(body + "prefix_cache: {enabled: true, cout: 8}\n")
    from evalharness.matrix.errors import SpecError
    with pytest.raises(SpecError, match="prefix_cache"):
        load_matrix(tmp_path / "bad.yaml")


def test_a_confirmation_launch_does_not_run_the_check(tmp_path):
    from evalharness.runner.confirmstage import launch_matrix

    body = ("name: x\nengine: vllm\nmodel: some/model\ncommand: [python, -m, vllm.entrypoints.openai.api_server]\n"
            "axes:\n  p:\n    a: {}\n    b: {}\nprefix_cache: {enabled: true}\n"
            "throughput: {scenarios: [{name: s, requests: 4, output_len: 8, concurrency: 1}]}\nconfirm: {}\n")
    (tmp_path / "m.yaml").write_text(body)
    matrix, _, _ = load_matrix(tmp_path / "m.yaml")
    assert launch_matrix(matrix, "s", [], "reference", 1, 1).prefix_cache.enabled is False


def test_a_stored_record_reads_back_as_its_model():
    stored = {KEY: _record({1}, n=4).model_dump(mode="json")}
    assert read(stored, KEY, PrefixCacheRecord).differing() == 1 and read({}, KEY, PrefixCacheRecord) is None
    assert read({KEY: PrefixCacheChange(prompts=4, reference=0, cell=0).model_dump()}, KEY, PrefixCacheChange).prompts == 4


def test_report_html_shows_the_measures_table_as_text(browser, tmp_path):
    from evalharness.render.html import render_html
    from tests.headless import open_page

    run = _run({"ref": _record({5}), "broken": _record(set(range(0, 64, 3))), "twin": _record({5})})
    page = tmp_path / "report.html"
    page.write_text(render_html(run, tmp_path), encoding="utf-8")
    open_page(browser, page)
    assert browser.find_element("css selector", "#measure-prefix_cache h2").text == "Prefix cache"
    rows = browser.find_elements("css selector", "#measure-prefix_cache table.measure-table tbody tr")
    assert [r.find_elements("css selector", "td")[0].text for r in rows] == ["ref (reference)", "broken", "twin"]
    assert rows[1].find_elements("css selector", "td.worse")[0].text.startswith("flagged")
