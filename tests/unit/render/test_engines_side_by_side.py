"""Engines side by side (analysis/engines.py, render/engines.py): settings compared by meaning across vLLM's and
SGLang's names, the same chat requests paired by the order they were sent. Resolved keys as the real engines report
them (vLLM 0.32.0's config line and /v1/models; SGLang 0.5.23's /server_info, reports of 2026-12-04)."""

from __future__ import annotations

from evalharness.analysis.engines import engine_comparisons
from evalharness.records.engine_profile import MODEL_OWN
from evalharness.serving.engines import ENGINES
from evalharness.records.measures import Percentiles, ScenarioResult
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.engines import engines_section
from evalharness.render.report import render_markdown

VLLM = {"version": "0.32.0", "served.max_model_len": 2048, "engine.dtype": "torch.float32",
        "engine.kv_cache_dtype": "auto", "engine.tokenizer_mode": "auto", "engine.enable_prefix_caching": True,
        "engine.enable_chunked_prefill": True, "engine.quantization": None, "kv_cache.tokens": 46592}
SGLANG = {"dtype": "float32", "kv_cache_dtype": "auto", "context_length": 2048, "tokenizer_mode": "auto",
          "disable_radix_cache": False, "chunked_prefill_size": 4096, "quantization": None, "chat_template": None,
          "sampling_defaults": "model"}
SGLANG_SERVER = {"token_capacity": 16384, "max_running_requests": 4096, "versions": {"sglang": "0.5.23"}}


def _scenario(prompts: list[int | None], name: str = "load-c1") -> ScenarioResult:
    p = Percentiles(mean=0.1, p50=0.1, p90=0.1, p99=0.1)
    return ScenarioResult(name=name, concurrency=1, input_len=0, output_len=64, requests=len(prompts),
                          completed=len(prompts), duration_s=1.0, output_tokens=64, output_tok_s=10.0,
                          request_decode_tok_s=p, ttft_s=p, tpot_s=p, itl_s=p, e2e_s=p, request_prompt_tokens=prompts)


def _cell(cid: str, engine: str, resolved: dict, server: dict | None = None, prompts=(50, 53, 44)) -> CellResult:
    return CellResult(id=cid, axes={}, settings_hash="h", engine=engine, args={}, env={}, argv=[], status="ok",
                      phase="done", resolved=resolved, server=server or {}, throughput=[_scenario(list(prompts))],
                      started_at="t", finished_at="t", duration_s=1.0)


def _run(*cells: CellResult) -> RunResult:
    meta = RunMeta(harness_version="0", engine="vllm + sglang", matrix_name="m", matrix_path="m", started_at="t")
    return RunResult(meta=meta, reference=cells[0].id, cell_order=[c.id for c in cells], cells={c.id: c for c in cells})


def test_settings_are_compared_by_meaning_across_the_engines_names():
    run = _run(_cell("v", "vllm", VLLM), _cell("s", "sglang", SGLANG, SGLANG_SERVER),
               _cell("v2", "vllm", {**VLLM, "engine.dtype": "torch.bfloat16"}))
    # the cell on the reference's own engine is not an engine comparison
    [comparison] = engine_comparisons(run, ENGINES)
    settings = {s.concept: s for s in comparison.settings}
    assert (comparison.cell, comparison.reference_engine, comparison.cell_engine) == ("s", "vllm", "sglang")
    assert settings["weights dtype"].same and settings["weights dtype"].cell == "float32"  # torch.float32 read alike
    assert settings["context length"].same and settings["prefix caching"].same  # disable_radix_cache False: on
    assert settings["chunked prefill"].same
    assert settings["KV cache tokens"].same is False and settings["KV cache tokens"].cell == 16384
    # what vLLM does not list (no --chat-template, no --generation-config) is its default: the model's own
    assert settings["chat template"].reference == settings["chat template"].cell == MODEL_OWN
    assert settings["default sampling"].same
    # a setting one engine does not report is said so, never guessed equal
    assert settings["requests at once (ceiling)"].reference is None and settings["requests at once (ceiling)"].same is None


def test_a_different_bfloat16_on_the_other_engine_is_a_difference_the_report_names():
    run = _run(_cell("v", "vllm", VLLM), _cell("s", "sglang", {**SGLANG, "dtype": "bfloat16"}, SGLANG_SERVER))
    text = "\n".join(engines_section(run, ENGINES))
    assert "## Engines side by side" in text and "Resolved differently by the engines: weights dtype, KV cache tokens" in text


def test_the_same_prompts_counted_alike_say_the_templates_agree_and_a_different_count_says_they_do_not():
    same = _run(_cell("v", "vllm", VLLM), _cell("s", "sglang", SGLANG, prompts=(50, 53, 44, 46)))
    assert engine_comparisons(same, ENGINES)[0].prompt_tokens.differing == 0
    assert "every prompt the same length on both" in "\n".join(engines_section(same, ENGINES))
    # SGLang counted one prompt two tokens longer (another template or a BOS token): paired over the 3 both counted
    other = _run(_cell("v", "vllm", VLLM, prompts=(50, 53, 44, 46)), _cell("s", "sglang", SGLANG, prompts=(50, 55, 44)))
    tokens = engine_comparisons(other, ENGINES)[0].prompt_tokens
    assert (tokens.requests, tokens.differing) == (3, 1)
    assert "**1 of 3 prompts differ in length**" in "\n".join(engines_section(other, ENGINES))


def test_a_run_on_one_engine_has_no_such_section_and_keeps_its_key_by_key_differences():
    run = _run(_cell("v", "vllm", VLLM), _cell("v2", "vllm", {**VLLM, "engine.dtype": "torch.bfloat16"}))
    report = render_markdown(run)
    assert "Engines side by side" not in report and "engine.dtype" in report
    mixed = render_markdown(_run(_cell("v", "vllm", VLLM), _cell("s", "sglang", SGLANG, SGLANG_SERVER)))
    # the SGLang cell's keys are not listed against vLLM's one by one: they are compared by meaning instead
    assert "Served by sglang, whose settings have other names" in mixed and "disable_radix_cache" not in mixed
    assert "No ready cell differs from the reference" not in mixed
    # each engine with the version its own record gives (vLLM's resolved version, SGLang's server facts)
    assert "engines vllm 0.32.0 (the reference's) and sglang 0.5.23" in mixed


def test_the_seed_note_says_each_engines_own_words_whole_and_an_undescribed_engine_is_unknown():
    """What an engine does with a request's seed is its module's `seeds` (records/engine_profile.py), handed to the
    report: the transformers server had been called "an external endpoint" by a table keyed by name."""
    from evalharness.records.measures import RepeatScore, TaskScore
    from evalharness.render.drift import _seed_note

    cells = [_cell("v", "vllm", VLLM), _cell("s", "sglang", SGLANG, SGLANG_SERVER), _cell("t", "transformers", {}),
             _cell("x", "external", {})]
    for cell in cells:
        cell.quality = [TaskScore(task="eh_copy", value=0.5, n=10, seed=1234,
                                  repeats=[RepeatScore(repeat=1, seed=1235, value=0.5)])]
    run = _run(*cells)
    [note, _] = _seed_note(run, ENGINES)
    assert "generator.manual\\_seed(seed)" in note and "repeats of one seed differ" in note  # SGLang's, not cut
    assert "transformers serve sets the process" in note and "one at a time" in note
    assert note.count("unknown whether it honours per-request seeds") == 1  # the external endpoint only
    [unknown, _] = _seed_note(run, None)
    assert unknown.count("unknown whether it honours per-request seeds") == 4
