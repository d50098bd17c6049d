"""Issue 42, items 2 and 3: probes with room for a reasoning model's thinking, and loops counted in quality (a chain
cut off while looping told from one cut off while still reasoning, paired against the reference)."""

import json

from evalharness.analysis.secondary import per_document, secondary_changes
from evalharness.phases._lmeval_results import chain_loops, generation_stats
from evalharness.phases.detectors.loops import loops_to_the_end
from evalharness.phases.probes import reasons, thought
from evalharness.records.measures import GenerationStats, ProbeOutput, ProbeSummary, TaskScore
from evalharness.records.run import CellResult, RunMeta, RunResult
from evalharness.render.probes import probe_budget_lines
from evalharness.render.quality import quality_section

LOOP = ("Wait, I think I made an error when I divided both sides by the common factor, so let me redo that step "
        "carefully from the top. ")
HEALTHY = ("First, 12 times 7 is 84. Then 84 minus 9 is 75. Let me double-check: 12 times 7 is 84, yes. "
           "So the result is 75, and the answer is 75.")


def test_a_reasoning_parser_in_the_args_or_thinking_in_the_answers_means_the_cell_reasons():
    assert reasons(["python", "-m", "sglang.launch_server", "--reasoning-parser", "deepseek-r1"])
    assert reasons(["vllm", "serve", "m", "--reasoning-parser=qwen3"])
    assert not reasons(["vllm", "serve", "m", "--dtype", "float32"])
    assert thought([ProbeOutput(id="a", prompt="p", output="4", reasoning="2 and 2")])
    assert thought([ProbeOutput(id="a", prompt="p", output="<think>2 and 2")])
    assert not thought([ProbeOutput(id="a", prompt="p", output="4")])


def _cell(cid, probes=None, quality=()):
    return CellResult(id=cid, axes={}, settings_hash="h", args={}, env={}, argv=[], status="ok", phase="done",
                      probes=probes, quality=list(quality), started_at="t", finished_at="t", duration_s=1.0)


def _run(cells):
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t")
    return RunResult(meta=meta, reference=cells[0].id, cell_order=[c.id for c in cells],
                     cells={c.id: c for c in cells})


def test_the_report_states_each_probe_budget_and_which_cells_reasoned():
    plain = ProbeSummary(garbage=False, flagged=0, total=12, errors=0, reason="", seconds=1.0, max_tokens=64)
    thinking = ProbeSummary(garbage=False, flagged=0, total=12, errors=0, reason="", seconds=1.0, max_tokens=2048,
                            reasoning=True)
    text = "\n".join(probe_budget_lines(_run([_cell("ref", plain), _cell("r1", thinking)])))
    assert "within 64 tokens" in text and "2048 (`r1`)" in text and "loop in the thinking" in text
    assert probe_budget_lines(_run([_cell("ref")])) == []


def test_a_chain_cut_off_inside_a_loop_is_told_from_one_cut_off_while_reasoning():
    looping = {"finish_reason": "length", "reasoning": HEALTHY + " " + LOOP * 6 + LOOP[:30], "content": ""}
    reasoning = {"finish_reason": "length", "reasoning": HEALTHY * 3 + " Now consider the next case", "content": ""}
    done = {"finish_reason": "stop", "reasoning": HEALTHY, "content": "75"}
    assert chain_loops(looping) and not chain_loops(reasoning) and not chain_loops(done)
    assert loops_to_the_end(LOOP * 5) and not loops_to_the_end(LOOP * 5 + HEALTHY * 2)
    stats = generation_stats([looping, reasoning, done])
    assert (stats["truncated"], stats["looping"], stats["truncated_looping"]) == (2, 1, 1)


def _samples(folder, name, loops):
    path = folder / f"{name}.jsonl"
    path.write_text("".join(json.dumps({"task": "t", "doc_id": i, "doc_hash": str(i), "finish_reason": "length" if l
                                        else "stop", "answer": "x", "loops": l}) + "\n" for i, l in enumerate(loops)))
    return TaskScore(task="t", metric="m", value=0.5, n=len(loops), samples=path.name)


def test_the_share_of_looping_chains_is_paired_against_the_reference(tmp_path):
    ref = _samples(tmp_path, "ref", [False] * 60 + [True] * 2)
    cell = _samples(tmp_path, "cell", [True] * 30 + [False] * 30 + [True] * 2)
    assert sum(per_document(tmp_path, cell)["looping_share"].values()) == 32
    changes = {c.field: c for c in secondary_changes(ref, tmp_path, cell, tmp_path, alpha=0.05)}
    assert changes["looping_share"].changed and changes["looping_share"].cell > changes["looping_share"].reference
    same = {c.field: c for c in secondary_changes(ref, tmp_path, ref, tmp_path, alpha=0.05)}
    assert not same["looping_share"].changed


def test_the_quality_table_says_how_many_were_cut_while_looping():
    ref = TaskScore(task="t", metric="m", value=0.5, n=10,
                    generation=GenerationStats(requests=10, truncated=1, looping=0, truncated_looping=0))
    cell = TaskScore(task="t", metric="m", value=0.4, n=10,
                     generation=GenerationStats(requests=10, truncated=6, looping=5, truncated_looping=4))
    text = "\n".join(quality_section(_run([_cell("ref", quality=[ref]), _cell("c", quality=[cell])])))
    assert "4 while looping, 2 still reasoning" in text and "1 more end in a loop" in text
    assert "(reference: 0 while looping)" in text


def test_the_reasoning_budget_stays_within_the_context_the_cell_serves():
    from evalharness.phases.probes import context_limit, reasoning_budget
    assert context_limit(["vllm", "--max-model-len", "1024"]) == 1024
    assert context_limit(["x", "--context-length=32k"]) == 32000 and context_limit(["x", "--max-model-len", "4K"]) == 4096
    assert context_limit(["x", "--dtype", "bfloat16"]) is None
    assert reasoning_budget(["--max-model-len", "1024"], 64, 2048) == 768  # 256 tokens left for the prompt
    assert reasoning_budget(["--context-length", "262144"], 64, 2048) == 2048
    assert reasoning_budget([], 64, 2048) == 2048 and reasoning_budget(["--max-model-len", "200"], 64, 2048) == 64
