"""Garbage in the shape of a reasoning chain (issue 60, 5): the four shapes users found passing every detector, each
marked, and the healthy text each could be mistaken for, not. Hand-made cases of each shape; the detector corpus
checks precision on real outputs (test_detector_corpus.py) and here on every healthy record."""

import json
from pathlib import Path

import pytest

from evalharness.phases.detectors import Sample, judge
from evalharness.phases.detectors.chains import foreign_fragment, reasoning_salad, template_token
from evalharness.phases.detectors.loops import loop_repeat, loops_to_the_end
from evalharness.phases.probes import _judge_parts
from evalharness.records.measures import ProbeOutput

DATA = Path(__file__).resolve().parents[3] / "data"

HEALTHY_CHAIN = (
    "Okay, so the user wants the sum of the first ten odd numbers. Let me think. The odd numbers are 1, 3, 5, 7, 9, "
    "11, 13, 15, 17 and 19. Hmm, there is a pattern: the sum of the first n odd numbers is n squared. Wait, let me "
    "check that with a small case: 1 + 3 = 4, which is 2 squared, and 1 + 3 + 5 = 9, which is 3 squared. So for ten "
    "of them the sum should be 100. Let's add them to be sure: 1 + 19 = 20, 3 + 17 = 20, and there are five such "
    "pairs, so the total is 100. Okay, that matches. Alternatively, I could use the formula for an arithmetic series, "
    "which gives the same answer.")


def test_word_salad_in_the_shape_of_thinking_is_garbage():
    salad = ("Okay, so the user is asking me what the capital of France is, and I need to think about it carefully. "
             "Hmm, river purple compile seventeen window basket. Wait, I think that the answer might be in the list of "
             "the cities that I know. Let's ladder orange quantum blanket silver thunder. Hmm, pencil dragon yellow "
             "cotton velvet harbor. Wait, tomato rocket saddle walnut island kettle. Okay, so I should mirror candle "
             "forest lantern meadow.")
    finding = reasoning_salad(Sample(output=salad))
    assert finding is not None and finding.strength == "hard", finding
    assert judge(Sample(output=salad)).garbage
    # word_salad alone passed it: the markers and one fluent clause lift the text's share of function words
    assert not any(f.detector == "word_salad" and f.strength == "hard" for f in judge(Sample(output=salad)).findings)


@pytest.mark.parametrize("text", [
    HEALTHY_CHAIN,
    # terse steps between markers: too short to need syntax, and numbers are not words
    "Hmm, 12 squared. Wait, 144. Let me check: 12 times 12 is 144. Okay, so 144. Hmm, yes. Wait, and 13 squared is 169.",
    # a list of items under a thinking preamble
    "Okay, let me list the ingredients.\n- two eggs\n- fresh basil leaves\n- grated parmesan cheese\n- olive oil\n"
    "Hmm, that covers it. Wait, salt too.\n- sea salt flakes\nLet's write the recipe now.",
])
def test_healthy_thinking_is_not_salad(text):
    assert reasoning_salad(Sample(output=text)) is None
    assert not judge(Sample(output=text)).garbage


def test_a_fragment_of_another_script_dropped_into_english_thinking_is_garbage():
    chain = HEALTHY_CHAIN.replace("Hmm, there is a pattern:", "Hmm, there is a pattern 我们需要计算这个总和的值:")
    finding = foreign_fragment(Sample(output=chain, prompt="What is the sum of the first ten odd numbers?"))
    assert finding is not None and finding.strength == "hard" and "CJK" in finding.evidence
    cyrillic = HEALTHY_CHAIN.replace("Let's add them", "Давайте сложим их все вместе. Let's add them")
    assert foreign_fragment(Sample(output=cyrillic)) is not None


@pytest.mark.parametrize("text, prompt", [
    # quoted, or in brackets: a word discussed, not a word dropped in
    (HEALTHY_CHAIN.replace("Hmm,", 'Hmm, the Chinese for "sum" is "总和的值" and', 1), None),
    (HEALTHY_CHAIN.replace("Hmm,", "Hmm, (Russian: сумма нечётных чисел)", 1), None),
    # the prompt asks for the language
    (HEALTHY_CHAIN.replace("Hmm,", "Hmm, 我们需要计算这个总和的值", 1), "Answer in Chinese and English."),
    # Latin terms inside Chinese reasoning are ordinary, and Greek letters are notation
    ("我们需要计算这个积分。首先使用 substitution method 然后化简表达式得到结果。接下来检查边界条件是否满足要求，最后得到答案。", None),
    ("Let the angles be α, β and γ, so α + β + γ = 180 degrees in any triangle, and the rest follows from that.", None),
])
def test_quoted_asked_for_or_notation_is_not_a_foreign_fragment(text, prompt):
    assert foreign_fragment(Sample(output=text, prompt=prompt)) is None


def test_a_template_token_mid_chain_with_the_text_starting_again_is_garbage():
    restart = HEALTHY_CHAIN[:200] + "<|im_end|>" + HEALTHY_CHAIN
    finding = template_token(Sample(output=restart))
    assert finding is not None and finding.strength == "hard" and "starts again" in finding.evidence
    new_turn = HEALTHY_CHAIN[:300] + "<|im_start|>assistant\nThe answer is 100."
    assert template_token(Sample(output=new_turn)).strength == "hard"
    assert judge(Sample(output=restart)).garbage and judge(Sample(output=new_turn)).garbage
    deepseek = HEALTHY_CHAIN[:250] + "<｜end▁of▁sentence｜>" + HEALTHY_CHAIN[:120]
    assert template_token(Sample(output=deepseek)).strength == "hard"
    alone = HEALTHY_CHAIN[:250] + " <|endoftext|> and then the sum is 100 as computed."
    assert template_token(Sample(output=alone)).strength == "soft"  # a token alone: a second finding must agree


@pytest.mark.parametrize("text", [
    HEALTHY_CHAIN + "<|im_end|>",  # a stop token printed at the very end
    "<think>\n" + HEALTHY_CHAIN + "\n</think>\n\nThe sum is 100.",  # thinking as the template writes it
    "In ChatML a turn starts with `<|im_start|>user` and ends with `<|im_end|>`; the template adds them for you.",
    "```python\nprompt = '<|im_start|>system\\nYou are helpful.<|im_end|>\\n<|im_start|>user\\nHi<|im_end|>'\n```",
])
def test_a_template_token_where_it_belongs_is_not_garbage(text):
    assert template_token(Sample(output=text)) is None


CYCLE = ("Wait, maybe I should recompute the total from the start. The sum of the odd numbers up to nineteen "
         "should be one hundred. ")


def test_a_short_cycle_behind_an_empty_answer_is_a_loop():
    """Two sentences (about 30 tokens) three times at the end of a short chain, and no answer: a chain that gave
    up in a cycle. With an answer after it, three copies are what a careful model can write: not judged so."""
    chain = HEALTHY_CHAIN[:300] + " " + CYCLE * 3
    finding = loop_repeat(Sample(output=chain, answer_empty=True))
    assert finding is not None and finding.strength == "hard" and "answer empty" in finding.evidence
    assert loop_repeat(Sample(output=chain)) is None or loop_repeat(Sample(output=chain)).strength == "soft"
    assert loops_to_the_end(chain, answer_empty=True) and not loops_to_the_end(chain)
    # the probes judge a reasoning model's chain knowing its answer came back empty
    garbage, findings = _judge_parts(ProbeOutput(id="p", prompt="q", output="", reasoning=chain,
                                                 finish_reason="stop"), False, None)
    assert garbage and any(f["detector"] == "reasoning:loop" for f in findings)
    answered, _ = _judge_parts(ProbeOutput(id="p", prompt="q", output="The sum is 100.", reasoning=chain,
                                           finish_reason="stop"), False, None)
    assert not answered


def test_the_quality_phase_counts_a_cycle_behind_an_empty_answer_as_looping():
    from evalharness.phases._lmeval_results import chain_loops

    chain = HEALTHY_CHAIN[:300] + " " + CYCLE * 3
    assert chain_loops({"reasoning": chain, "content": ""})
    assert not chain_loops({"reasoning": chain, "content": "The sum is 100."})


def test_no_healthy_record_of_the_corpus_is_marked_by_the_chain_detectors():
    records = []
    for name in ("detector_corpus.jsonl", "detector_corpus_raw.jsonl", "detector_corpus_raw_detok.jsonl"):
        path = DATA / name
        records += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    healthy = [r for r in records if r.get("label") == "healthy"]
    assert len(healthy) >= 200
    for r in healthy:
        sample = Sample(output=r["text"], prompt=r.get("prompt"))
        for detector in (reasoning_salad, foreign_fragment, template_token):
            assert detector(sample) is None, (detector.__name__, r["id"], r["text"][:200])
