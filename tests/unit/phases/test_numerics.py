"""The numerics check (issue 26): the per-token KL estimate against constructed distributions whose true KL is known,
beside the coarse top-k figure it replaces; the engines' logprob answers parsed by count and by id; old records."""

import math

import numpy as np
import pytest

from evalharness.analysis.gate import GateCell, _judge_kld
from evalharness.analysis.numerics import compare_distributions, identical_samples, kl_estimate, topk_figures
from evalharness.analysis.stats import topk_kl
from evalharness.phases.logprobs import BadAnswer, fit_context, parse_generate_logprobs, parse_openai_logprobs
from evalharness.records.drift import DistributionDrift, KLEstimate
from evalharness.records.measures import Scored

V = 40  # vocabulary of the constructed cases


def _dist(mass: dict[int, float]) -> np.ndarray:
    """A distribution over V tokens: the given masses, the rest spread evenly over the other tokens."""
    p = np.zeros(V)
    for t, m in mass.items():
        p[t] = m
    rest = [t for t in range(V) if t not in mass]
    p[rest] = (1 - sum(mass.values())) / len(rest)
    return p


def _true_kl(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.sum(p * np.log(p / q)))


def _top(p: np.ndarray, k: int = 5, names=None) -> dict[str, float]:
    order = np.argsort(-p, kind="stable")[:k]
    out: dict[str, float] = {}
    for t in order:
        out[names[t] if names else str(t)] = float(math.log(p[t]))  # a name seen twice: the later token overwrites
    return out


DECODE_ALIKE = {0: "a", 1: "a"}  # two ids whose text is the same (a byte fragment and a whole token, say)
CASES = {
    # name: (reference p, cell q, how the coarse figure keys tokens)
    "identical": (_dist({0: 0.5, 1: 0.2, 2: 0.1}), _dist({0: 0.5, 1: 0.2, 2: 0.1}), None),
    "disjoint top-5": (_dist({0: 0.3, 1: 0.25, 2: 0.2, 3: 0.1, 4: 0.1}),
                       _dist({5: 0.3, 6: 0.25, 7: 0.2, 8: 0.1, 9: 0.1}), None),
    "dropped top token": (_dist({0: 0.8, 1: 0.05, 2: 0.05}), _dist({0: 0.004, 1: 0.3, 2: 0.3, 3: 0.1, 4: 0.1, 5: 0.1}),
                          None),
    "tokens that decode alike": (_dist({0: 0.6, 1: 0.1, 2: 0.1}), _dist({0: 0.1, 1: 0.6, 2: 0.1}),
                                 {t: DECODE_ALIKE.get(t, f"t{t}") for t in range(V)}),
}


def _simulate(p: np.ndarray, q: np.ndarray, rng: np.random.Generator, contexts: int = 40, positions: int = 50):
    """Each context: `positions` tokens sampled from p, with log p(x) - log q(x) at each."""
    rows = []
    for _ in range(contexts):
        x = rng.choice(V, size=positions, p=p)
        rows.append(np.log(p[x]) - np.log(q[x]))
    return rows


@pytest.mark.parametrize("name", CASES)
def test_the_estimate_tracks_the_true_kl_where_the_coarse_top_k_figure_does_not(name):
    p, q, names = CASES[name]
    truth = _true_kl(p, q)
    est = kl_estimate(_simulate(p, q, np.random.default_rng(26)))
    coarse = topk_kl(_top(p, names=names), _top(q, names=names))
    assert est.available and est.positions == 2000 and est.contexts == 40
    assert est.ci_low <= truth <= est.ci_high, (name, truth, est)
    if name == "identical":
        assert est.estimate == 0.0 and (est.ci_low, est.ci_high) == (0.0, 0.0) and coarse == pytest.approx(0)
    else:
        # the coarse figure is far below the truth and outside the estimate's interval: it would pass such a cell
        assert truth > 0.5 and coarse < est.ci_low and coarse < 0.5 * truth, (name, truth, coarse, est)


def test_the_table_of_constructed_cases_has_the_figures_the_issue_names():
    # the issue's cases: two disjoint top-5 sets give exactly 0; a 0.8 token dropping out of the top-5 is cut short
    p, q, _ = CASES["disjoint top-5"]
    assert topk_kl(_top(p), _top(q)) == 0.0 and _true_kl(p, q) > 2.0
    p, q, _ = CASES["dropped top token"]
    assert topk_kl(_top(p), _top(q)) < 0.5 * _true_kl(p, q)


def test_the_interval_covers_the_true_kl_about_as_often_as_it_says():
    p, q, _ = CASES["dropped top token"]
    truth = _true_kl(p, q)
    rng = np.random.default_rng(7)
    covered = 0
    for i in range(120):
        est = kl_estimate(_simulate(p, q, rng, contexts=20, positions=30), resamples=500, seed=i)
        covered += est.ci_low <= truth <= est.ci_high
    assert 0.82 <= covered / 120 <= 0.97  # stated 90%; 120 draws: about +-5 points of noise


def test_one_context_gives_an_estimate_without_an_interval_and_none_gives_a_reason():
    one = kl_estimate([[0.1, 0.3]])
    assert one.available and one.estimate == pytest.approx(0.2) and one.ci_low is None
    assert not kl_estimate([]).available


def _scored(cid, ids, logprobs, top=None, **extra):
    return Scored(id=cid, token_ids=ids, logprobs=logprobs, top=top or [{str(i): lp} for i, lp in zip(ids, logprobs)],
                  **extra)


def test_both_directions_pair_by_id_and_the_reverse_one_is_the_cells_own():
    ref_ctx = [_scored("a", [5, 6], [-0.5, -1.0], prompt_ids=[1], seed=1),
               _scored("b", [7], [-0.2], prompt_ids=[2], seed=2)]
    ref_echo = [_scored("a", [5, 6], [-0.5, -1.0]), _scored("b", [7], [-0.2])]
    cell_echo = [_scored("a", [5, 6], [-0.75, -1.5]), _scored("b", [7], [-0.2])]
    own = [_scored("a", [5, 6], [-0.4, -0.9], prompt_ids=[1], seed=1),
           _scored("b", [8], [-0.1], prompt_ids=[2], seed=2)]  # context b: the cell sampled another token
    rev = [_scored("a", [5, 6], [-0.5, -1.0]), _scored("b", [8], [-2.1])]
    out = compare_distributions(ref_echo, cell_echo, own, rev, ref_ctx)
    assert out.forward.estimate == pytest.approx((0.25 + 0.5 + 0.0) / 3) and out.forward.positions == 3
    assert out.reverse.estimate == pytest.approx((0.1 + 0.1 + 2.0) / 3)
    assert out.reverse.own_samples_identical == 1 and identical_samples(own, ref_ctx) == 1
    assert out.unbiased()[0][0] == "KL(ref‖cell)" and len(out.unbiased()) == 2
    not_yet = compare_distributions(ref_echo, cell_echo, own, [], ref_ctx)
    assert not not_yet.reverse.available and "run --resume" in not_yet.reverse.reason
    failed = [Scored(id="a", error="bad_answer: the engine returned no output log-probabilities")]
    assert "no output log-probabilities" in compare_distributions(ref_echo, cell_echo, failed, [], ref_ctx).reverse.reason


def test_a_record_from_before_issue_26_loads_and_keeps_only_the_coarse_figure():
    old = Scored.model_validate_json('{"id": "x", "tokens": ["A", "B"], "top": [{"A": -0.1, "C": -2.5}, '
                                     '{"B": -0.2, "D": -2.0}], "error": null}')
    out = compare_distributions([old], [old])
    assert out.available and out.mean_kld == pytest.approx(0) and out.disjoint_topk is None
    assert not out.forward.available and "before issue 26" in out.forward.reason and out.unbiased() == []
    assert topk_figures([old], [old]).same_top_token == 1.0


def test_the_disjoint_share_counts_positions_whose_top_k_share_nothing():
    ref = [_scored("x", [1, 2], [-0.1, -0.2], top=[{"1": -0.1, "3": -2.5}, {"2": -0.2, "4": -2.0}])]
    cell = [_scored("x", [1, 2], [-3.0, -0.2], top=[{"5": -0.1, "6": -2.5}, {"2": -0.2, "4": -2.0}])]
    out = topk_figures(ref, cell)
    assert out.disjoint_topk == 0.5 and out.same_top_token == 0.5


def test_vllms_ids_and_sglangs_text_tokens_are_read_by_count_never_by_offset():
    class LP:  # SGLang's /v1/completions with echo: text tokens, text_offset -1 everywhere, top-k keyed by text
        tokens = ["Hi", " there", " you"]
        token_logprobs = [None, -2.0, -0.5]
        text_offset = [-1, -1, -1]
        top_logprobs = [None, {" there": -2.0, " all": -1.0}, {" you": -0.5}]

    got = parse_openai_logprobs(LP, skip=1, sent_ids=[10, 11, 12])
    assert got.token_ids == [11, 12] and got.logprobs == [-2.0, -0.5] and got.top[1] == {" you": -0.5}
    with pytest.raises(BadAnswer, match="as text, not as an id"):  # a sampled token given as text: no id to rescore
        parse_openai_logprobs(LP, skip=0)

    class Short(LP):
        tokens, token_logprobs = ["Hi"], [None]

    with pytest.raises(BadAnswer, match="echoed 1 tokens of the 3 sent"):
        parse_openai_logprobs(Short, skip=1, sent_ids=[10, 11, 12])


def test_sglang_generate_meta_info_is_read_as_triples():
    # srt/managers/tokenizer_manager.py detokenize_logprob_tokens: (logprob, token_id, None) without
    # return_text_in_logprobs; the first input position's logprob is None (logprob_result_processor.py)
    meta = {"input_token_logprobs": [[None, 1, None], [-1.5, 7, None], [-0.25, 8, None]],
            "input_top_logprobs": [None, [[-0.5, 9, None], [-1.5, 7, None]], [[-0.25, 8, None]]],
            "output_token_logprobs": [[-0.1, 4, None]], "output_top_logprobs": [[[-0.1, 4, None]]]}
    got = parse_generate_logprobs(meta, "input", skip=1)
    assert got.token_ids == [7, 8] and got.logprobs == [-1.5, -0.25] and got.top[0] == {"9": -0.5, "7": -1.5}
    assert parse_generate_logprobs(meta, "output").token_ids == [4]
    with pytest.raises(BadAnswer, match="no output log-probabilities"):
        parse_generate_logprobs({"output_token_logprobs": []}, "output")


def test_long_prompts_are_trimmed_from_the_front_to_fit_the_context():
    assert fit_context(list(range(100)), max_tokens=20, context=50) == list(range(72, 100))
    assert fit_context([1, 2], max_tokens=20, context=50) == [1, 2]


def test_the_matrix_can_cap_the_longest_context_the_check_sends():
    from evalharness.phases.distribution import make_contexts

    class Path:  # one id per character; records what each sample request was sent
        sent: dict[int, list[int]] = {}

        def tokenize(self, text):
            return [ord(c) for c in text]

        def sample(self, ids, max_tokens, seed, k):
            self.sent[seed] = list(ids)
            return Scored(token_ids=[1] * max_tokens, logprobs=[-1.0] * max_tokens)

    prompts = [{"id": "short", "prompt": "abc"}, {"id": "long", "prompt": "x" * 500 + "end"}]
    served = make_contexts(Path(), prompts, max_tokens=8, context=100)
    assert [len(c.prompt_ids) for c in served] == [3, 90]  # the served context's room: 100 - 8 - 2
    capped = make_contexts(Path(), prompts, max_tokens=8, context=100, longest=20)
    assert [len(c.prompt_ids) for c in capped] == [3, 20] and capped[1].prompt_ids[-3:] == [ord(c) for c in "end"]
    assert Path.sent[capped[1].seed] == capped[1].prompt_ids  # what is sampled from is what is recorded


def _gate(forward: KLEstimate | None, reverse: KLEstimate | None = None, max_kld: float = 0.1) -> GateCell:
    out = GateCell(cell="c", baseline_cell="b", outcome="pass")
    _judge_kld(out, "c", DistributionDrift(available=True, forward=forward, reverse=reverse), max_kld)
    return out


def test_max_kld_gates_the_unbiased_figures_by_their_intervals():
    est = lambda v, lo, hi: KLEstimate(available=True, estimate=v, ci_low=lo, ci_high=hi, contexts=24)
    assert _gate(est(0.02, 0.01, 0.03), est(0.03, 0.02, 0.04)).violations == []
    above = _gate(est(0.02, 0.01, 0.03), est(0.5, 0.3, 0.7))
    assert len(above.violations) == 1 and "KL(cell‖ref) 0.5000" in above.violations[0]
    across = _gate(est(0.09, 0.05, 0.15))
    assert across.violations == [] and "its interval holds max_kld 0.1" in across.inconclusive[0]
    none = _gate(KLEstimate(available=False, reason="scored without token ids (a record from before issue 26)"))
    assert none.violations == [] and "before issue 26" in none.inconclusive[0]


def test_a_prompt_longer_than_the_context_is_tokenized_from_its_end():
    from evalharness.phases.distribution import tokenize_within
    from evalharness.phases.logprobs import TooLong
    from evalharness.phases.retries import RequestFailed

    class Path:  # refuses more than 100 characters, as vLLM refuses a prompt beyond max_model_len (http_400)
        seen: list[int] = []

        def tokenize(self, text):
            self.seen.append(len(text))
            if len(text) > 100:
                raise TooLong("This model's maximum context length is 100 tokens")
            return [ord(c) for c in text]

    path = Path()
    assert tokenize_within(path, "a" * 1000 + "xyz", context=40) == [ord("a")] * 77 + [ord(c) for c in "xyz"]
    assert path.seen == [1003, 120, 80]  # the whole text, then its last 3x and 2x the context in characters
    assert tokenize_within(Path(), "abc", context=40) == [97, 98, 99]
    with pytest.raises(RequestFailed, match="http_500"):
        class Broken(Path):
            def tokenize(self, text):
                raise RequestFailed("http_500", "down")
        tokenize_within(Broken(), "abc", context=40)


def test_vllms_extra_top_entry_for_the_scored_token_is_dropped():
    class LP:  # logprobs=2: the token (id 9) is not in the top 2, so vLLM sends it as a third entry
        tokens = ["token_id:9"]
        token_logprobs = [-4.0]
        top_logprobs = [{"token_id:1": -0.5, "token_id:2": -1.0, "token_id:9": -4.0}]

    got = parse_openai_logprobs(LP, skip=0, k=2)
    assert got.top == [{"1": -0.5, "2": -1.0}] and got.logprobs == [-4.0]
    ref = _scored("x", [9], [-0.1], top=[{"9": -0.1, "3": -3.0}])
    assert topk_figures([ref], [Scored(id="x", token_ids=[9], logprobs=[-4.0], top=got.top)]).disjoint_topk == 1.0


def test_the_reverse_pass_scores_each_ready_cells_samples_once_and_the_report_gives_both_directions(tmp_path):
    from evalharness.analysis.drift import refresh_drift
    from evalharness.records.cellfiles import save_scored
    from evalharness.runner.reverse import cells_to_score
    from tests.unit.analysis.test_gate import _run

    run = _run(tmp_path, {"ref": [1, 0, 1], "a": [1, 0, 1], "bad": [0, 0, 0], "gone": [1, 1, 1]})
    run.cells["bad"].status, run.cells["gone"].status = "garbage", "crashed"
    ctx = [_scored(f"c{i}", [5 + i, 6], [-0.5, -1.0], prompt_ids=[1], seed=i) for i in range(5)]  # five: fewer get no interval
    for cid in run.cells:
        folder = tmp_path / "cells" / cid
        save_scored(folder / "distribution.jsonl", [_scored(c.id, c.token_ids, c.logprobs) for c in ctx])
        if cid == "ref":
            save_scored(folder / "contexts.jsonl", ctx)
        else:
            save_scored(folder / "own_samples.jsonl", ctx)
    assert cells_to_score(run, tmp_path) == ["a", "bad"]  # ready cells with samples; not the reference or a crash
    for cid in ("a", "bad"):
        shifted = 2.0 if cid == "bad" else 0.0
        save_scored(tmp_path / "cells" / cid / "reverse_scored.jsonl",
                    [_scored(c.id, c.token_ids, [v - shifted - 0.1 * i for v in c.logprobs]) for i, c in enumerate(ctx)])
    assert cells_to_score(run, tmp_path) == []  # a finished pass does nothing on resume
    refresh_drift(run, tmp_path)
    bad = run.cells["bad"].drift.numerics()
    assert bad.forward.estimate == 0 and bad.reverse.estimate == pytest.approx(2.2)
    assert bad.reverse.own_samples_identical == 5 and bad.reverse.ci_low < 2.2 < bad.reverse.ci_high
    from evalharness.measures.numerics.report import section as numerics_section
    section = "\n".join(numerics_section(run))
    assert "| `bad` (garbage) | 0.0000 [0.0000, 0.0000] | 2.2000 [" in section and "0/5 differ" in section
    assert "task-like prompts, some long)" in section
    run.cells["ref"].measures["distribution"] = {"max_context_tokens": 256}  # the matrix capped the contexts: the report says so
    assert "any longer than 256 tokens cut to its last 256: distribution.max_context_tokens" in "\n".join(numerics_section(run))


def test_a_refusal_as_too_long_is_not_a_failed_request_but_other_failures_are():
    from evalharness.phases.logprobs import TooLong, refused_as_too_long
    from evalharness.phases.retries import AttemptFailed

    def send(counted):
        if counted:
            return "sent through the counted sender"
        raise AttemptFailed("http_400", "maximum context length")

    with pytest.raises(TooLong):
        refused_as_too_long(send)

    def flaky(counted):
        if counted:
            return "sent through the counted sender"
        raise AttemptFailed("reset", "connection reset")

    assert refused_as_too_long(flaky) == "sent through the counted sender"


def _floor_case(extra: float, rng: np.random.Generator, contexts: int = 30, positions: int = 16):
    """Decode-time log-probabilities that sit 1e-5 (and some float noise) above the prefill's of the same tokens, on
    the reference as on the cell (the real SGLang's gap, test_sglang_real.py), plus `extra` on the cell's decode
    path alone."""
    ref_ctx, ref_echo, own, rev = [], [], [], []
    for c in range(contexts):
        ids = [int(i) for i in rng.integers(1, 1000, positions)]
        prefill = [float(v) for v in -rng.exponential(2.0, positions)]
        ref_ctx.append(_scored(f"c{c}", ids, [p + 1e-5 + rng.normal(0, 1e-6) for p in prefill], prompt_ids=[1]))
        ref_echo.append(_scored(f"c{c}", ids, prefill))
        mine = [int(i) for i in rng.integers(1, 1000, positions)]
        their = [float(v) for v in -rng.exponential(2.0, positions)]
        own.append(_scored(f"c{c}", mine, [p + 1e-5 + extra + rng.normal(0, 1e-6) for p in their], prompt_ids=[1]))
        rev.append(_scored(f"c{c}", mine, their))
    return ref_ctx, ref_echo, own, rev


def test_the_reverse_direction_subtracts_the_references_own_decode_against_prefill_gap():
    """Decode and prefill differ a little in one engine (SGLang 0.5.23 on this CPU: 7.3e-6 per token, a server
    against itself, interval without zero): a cell with the reference's settings must measure zero, and a cell whose
    decode path differs must still show it."""
    rng = np.random.default_rng(7)
    ref_ctx, ref_echo, own, rev = _floor_case(0.0, rng)
    same = compare_distributions(ref_echo, ref_echo, own, rev, ref_ctx).reverse
    assert same.floor == pytest.approx(1e-5, abs=1e-6)
    assert same.ci_low <= 0 <= same.ci_high and abs(same.estimate) < 2e-6, same
    raw = compare_distributions(ref_echo, ref_echo, own, rev).reverse  # no reference samples: nothing subtracted
    assert raw.floor is None and raw.ci_low > 0, raw  # the gap alone, called a divergence
    ref_ctx, ref_echo, own, rev = _floor_case(0.01, rng)
    broken = compare_distributions(ref_echo, ref_echo, own, rev, ref_ctx).reverse
    assert broken.estimate == pytest.approx(0.01, abs=1e-4) and broken.ci_low > 0.009, broken
