"""The numerics check's logprob path on the real engine (vLLM CPU 0.32, float32, max-model-len 1024), as the harness
uses it (phases/logprobs.py CompletionsPath): ids in, "token_id:N" out, echo of a prompt, samples at temperature 1
with their decode-time log-probabilities; and the phase end to end, the engine against itself, in both directions."""

import time

import pytest

from evalharness.analysis.numerics import compare_distributions
from evalharness.measures.numerics import phase as numerics_phase
from evalharness.phases import distribution
from evalharness.phases.logprobs import CompletionsPath, open_path
from evalharness.records.cellfiles import load_scored, save_scored
from tests.integration.conftest import BASE_ARGS, SERVED_NAME

pytestmark = [pytest.mark.engine, pytest.mark.timeout(1200)]
# "holds zero" at float32's resolution: the same tokens' decode-time log-probabilities move by about 1e-7 per token
# between two batches of one server (vLLM 0.32.0, 2026-12-04: the server against itself, 24/24 samples identical,
# KL(cell||ref) -7.3e-8 [-1.5e-7, -3.1e-8] once the reference's own decode-vs-prefill gap, 3.7e-8, is subtracted), and
# with identical samples the interval is that narrow. Where samples differ (a float-level tie flips a draw; SGLang
# ignores seeds) the per-token decode-vs-prefill gap, up to 1.5e-5, cancels only on average: the interval must reach
# zero within that gap's scale, a hundredth of what a bfloat16 cell measures (about 1e-3)
FLOAT_RESOLUTION = 1e-5


@pytest.fixture(scope="module")
def path(shared_engine):
    p = CompletionsPath(shared_engine.root_url + "/v1", SERVED_NAME, 300.0, 2, 3)
    yield p
    p.close()


def test_vllm_gives_ids_and_the_decode_time_logprobs_of_its_samples_agree_with_its_echo(path):
    assert path.context_length() == BASE_ARGS["--max-model-len"]
    prompt = path.tokenize("The capital of France is Paris. The capital of Germany is")
    assert len(prompt) == 12 and all(isinstance(t, int) for t in prompt)
    first = path.sample(prompt, max_tokens=24, seed=7, k=5)
    again = path.sample(prompt, max_tokens=24, seed=7, k=5)
    assert len(first.token_ids) == 24 and first.token_ids == again.token_ids  # vLLM seeds a generator per request
    assert all(lp is not None and lp <= 0 for lp in first.logprobs)
    # top-5 keyed by id, the engine's 5 most likely (vLLM's extra entry for a sampled token outside them dropped)
    assert all(len(top) == 5 and all(key.isdigit() for key in top) for top in first.top)
    echoed = path.echo(prompt, first.token_ids, k=5)
    assert echoed.token_ids == first.token_ids
    # the same tokens scored by prefill and by decode: float32 agrees to about 1e-5 (seen: 1.5e-5 at most)
    assert max(abs(a - b) for a, b in zip(first.logprobs, echoed.logprobs)) < 1e-3
    assert all(set(top) <= {str(i) for i in range(49152)} for top in echoed.top)


def test_the_phase_against_itself_gives_about_zero_in_both_directions(shared_engine, tmp_path):
    ref_dir, cell_dir = tmp_path / "ref", tmp_path / "cell"
    ref_dir.mkdir()
    cell_dir.mkdir()
    url = shared_engine.root_url + "/v1"
    begin = time.monotonic()
    ref_summary, ref_tally = numerics_phase.measure(url, SERVED_NAME, ref_dir, ref_dir, True, 300.0)
    ref_s = time.monotonic() - begin
    begin = time.monotonic()
    cell_summary, _ = numerics_phase.measure(url, SERVED_NAME, cell_dir, ref_dir, False, 300.0)
    cell_s = time.monotonic() - begin
    assert ref_summary["error"] is None and cell_summary["error"] is None, (ref_summary, cell_summary)
    prompts = len(distribution.load_prompts())
    assert ref_summary["contexts"] == prompts == cell_summary["own_samples"] and ref_tally.failed == 0
    contexts = load_scored(ref_dir / "contexts.jsonl")
    assert max(len(c.prompt_ids) + len(c.token_ids) for c in contexts) > 900  # the long contexts reach the window
    # the reference's turn after the cells (runner/reverse.py): here the same server scores the cell's own samples
    scorer = open_path("completions", url, shared_engine.root_url, SERVED_NAME, 300.0)
    try:
        save_scored(cell_dir / "reverse_scored.jsonl",
                    distribution.score_samples(scorer, load_scored(cell_dir / "own_samples.jsonl")))
    finally:
        scorer.close()
    out = compare_distributions(load_scored(ref_dir / "distribution.jsonl"), load_scored(cell_dir / "distribution.jsonl"),
                                load_scored(cell_dir / "own_samples.jsonl"),
                                load_scored(cell_dir / "reverse_scored.jsonl"), contexts)
    print(f"numerics phase on the real engine: reference {ref_s:.1f}s, cell {cell_s:.1f}s; forward "
          f"{out.forward.estimate:.2e} [{out.forward.ci_low:.2e}, {out.forward.ci_high:.2e}], reverse "
          f"{out.reverse.estimate:.2e} [{out.reverse.ci_low:.2e}, {out.reverse.ci_high:.2e}], own samples identical "
          f"{out.reverse.own_samples_identical}/{out.reverse.contexts}")
    assert out.forward.positions == sum(len(c.token_ids) for c in contexts) and out.reverse.contexts == prompts
    # one engine against itself: float32 noise at most, and an interval that holds zero (at float resolution) once
    # the reference's own decode-vs-prefill gap is subtracted, as a relaunch of an unchanged configuration must
    # before a nonzero divergence of a real cell means anything
    assert abs(out.forward.estimate) < 1e-3 and abs(out.reverse.estimate) < 1e-3
    for direction in (out.forward, out.reverse):
        assert direction.ci_low <= FLOAT_RESOLUTION and direction.ci_high >= -FLOAT_RESOLUTION, direction
    assert out.same_top_token > 0.99 and out.disjoint_topk == 0
    assert out.reverse.own_samples_identical >= prompts // 2  # same seeds: a float-level tie may flip a draw
