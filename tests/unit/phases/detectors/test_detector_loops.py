"""Issue 42: loops of any unit length (detectors/loops.py) and the three false alarms named in the issue (a digit
run judged by its share, a short soup with ';' and '=' not code, LaTeX not reversed text)."""

from evalharness.phases.detectors import Sample, judge
from evalharness.phases.detectors.classic import symbol_soup
from evalharness.phases.detectors.language import prose_words
from evalharness.phases.detectors.loops import LONG_UNIT, longest_loop, loop_repeat, loops_to_the_end
from evalharness.phases.detectors.nonwords import reversed_text
from evalharness.phases.detectors.repetition import char_run, phrase_repeat

SENTENCE = ("Wait, maybe I should reconsider whether the triangle inequality holds for these three side lengths, "
            "because the sum of the two shorter sides has to exceed the longest one. ")


def test_a_loop_of_a_sentence_longer_than_16_words_is_caught_where_phrase_repeat_cannot_see_it():
    text = "Okay, let me think about the triangle. " + SENTENCE * 8 + SENTENCE[:50]
    assert phrase_repeat(Sample(output=text)) is None  # the gap the issue names: units over 16 words
    finding = loop_repeat(Sample(output=text))
    assert finding is not None and finding.strength == "hard" and "to the end" in finding.evidence
    assert judge(Sample(output=text)).garbage


def test_a_paragraph_loop_is_measured_at_its_own_period():
    paragraph = ("Let me recompute the determinant. Expanding along the first row gives a(ei - fh) - b(di - fg) + "
                 "c(dh - eg), and substituting the values gives 3(4 - 0) - 1(2 - 0) + 2(0 - 4) = 12 - 2 - 8 = 2.\n\n")
    loop = longest_loop("Some thinking first.\n\n" + paragraph * 5)
    assert loop is not None and loop.repeats >= 4.9 and loop.at_end
    assert 60 <= loop.period <= 90  # one paragraph, not a multiple of it


def test_a_sub_calculation_repeated_two_or_three_times_in_a_healthy_chain_is_not_garbage():
    check = "Let me double-check: 17 times 23 is 17 times 20 plus 17 times 3, which is 340 plus 51, so 391. "
    text = ("We need the product of 17 and 23 and then subtract 100. " + check + check +
            "Yes, 391. Then 391 - 100 = 291. Hmm, " + check + "So the answer is \\boxed{291}.")
    assert loop_repeat(Sample(output=text)) is None or loop_repeat(Sample(output=text)).strength == "soft"
    assert not judge(Sample(output=text)).garbage


def test_a_loop_in_another_script_is_caught():
    text = "首先，我们需要计算这个数列的和。" + "等等，我再检查一下这个计算是否正确，因为结果看起来不对。" * 8
    assert loop_repeat(Sample(output=text)).strength == "hard"


def test_a_short_refrain_is_left_to_the_phrase_detectors():
    song = "In the sweet morning light,\n" + "A lullaby, a lullaby,\n" * 12
    assert loop_repeat(Sample(output=song)) is None


def test_an_enumeration_that_changes_its_numbers_is_not_a_loop():
    text = "".join(f"For k = {k}, we get k squared = {k * k}, which is not congruent to 3 modulo 4, so this case "
                   f"fails as well. " for k in range(1, 12))
    assert loop_repeat(Sample(output=text)) is None


def test_digit_runs_are_judged_by_their_share_of_the_text():
    assert char_run(Sample(output="3" * 31)) is not None  # the whole thought one digit thirty-one times
    assert char_run(Sample(output="The answer is 0.3333333333333333 (one third).")) is None  # a float
    assert char_run(Sample(output="1000000000")) is None  # a number
    assert char_run(Sample(output="One googol is 10000000000000000000000000000000000.")) is None  # zeros are a number
    assert char_run(Sample(output="1/3 = 0.33333333333333333333333333")) is None  # a repeating decimal


def test_a_short_soup_with_semicolons_and_equals_is_not_taken_for_code():
    assert symbol_soup(Sample(output="wis;=;=__;=;1111;=")) is not None  # passed as code before issue 42
    assert symbol_soup(Sample(output="x = 1; y = 2; z = x + y;")) is None


def test_latex_is_not_read_as_words_so_its_variable_names_cannot_read_as_reversed_english():
    line = r"Then $ab + ba = 2ab$, and with $\frac{nis}{soc} = pot$ and \(tan = rats\) the identity holds."
    words = prose_words(line)
    assert not {"nis", "soc", "pot", "rats", "tan", "frac"} & set(words)
    assert {"then", "and", "with", "the", "identity", "holds"} <= set(words)
    assert reversed_text(Sample(output=line)) is None
    assert reversed_text(Sample(output=".gnirts a sesrever taht noitcnuf a etirw ot woh si siht")) is not None


def test_a_short_unit_repeated_to_the_budget_after_a_chain_of_reasoning_is_a_loop():
    chain = "".join(f"Bale {k} weighs {70 + k} pounds, so {k} bales weigh {k * (70 + k)} in all; adding the "
                    f"{k + 2} sacks of oats at 65 pounds gives {k * (70 + k) + 65 * (k + 2)}. " for k in range(1, 9))
    looping = chain + "Wait, 3150 + 50 is 3200? " * 12 + "Wait, 3150 + 50"
    finding = loop_repeat(Sample(output=looping))
    assert finding is not None and finding.strength == "hard" and "at the end" in finding.evidence
    assert loop_repeat(Sample(output=chain + "So the answer is 4500.")) is None
    # the same refrain as the whole of a short answer is the phrase detectors' to judge (soft), not this one's
    assert loop_repeat(Sample(output="Wait, 3150 + 50 is 3200? " * 12)) is None


def test_latin_terms_inside_chinese_reasoning_are_not_judged_as_english_prose():
    text = ("嗯，我需要总结这个Zig代码文件的主要函数流程。首先，结构体Object有很多字段，比如offset、path、sections、"
            "symtab等等，这些应该都是用来存储目标文件的各种信息。然后看button center event tick command size widget "
            "surface这些组件的作用，最后整理调用顺序。")
    assert prose_words(text) == []
    assert not judge(Sample(output=text)).garbage
    assert prose_words("The sections and symtab fields store the object file's data.")  # English prose is still read


def test_a_unit_longer_than_the_scanned_periods_is_caught_when_it_loops_to_the_end():
    # a whole re-derivation of about 900 tokens (three times MAX_PERIOD's paragraph) repeated until the budget
    steps = "".join(f"Step {k}: multiply the {k}th coefficient by the root and carry the remainder {k * 7} forward, "
                    f"then compare it with the bound from the previous step before moving on. " for k in range(1, 36))
    assert len(steps.split()) > 600
    text = "Let me set up the recurrence first. " + steps * 5 + steps[:200]
    loop = longest_loop(text)
    assert loop is not None and loop.period > 600 and loop.at_end and loop.repeats >= 5
    assert loop_repeat(Sample(output=text)).strength == "hard"
    assert loops_to_the_end(text) and not loops_to_the_end(steps * 2 + "So the bound holds and the answer is 12.")


def test_a_short_cycle_that_is_most_of_a_pasted_chain_is_a_loop_when_something_else_came_first():
    # the shape of a leaked thinking loop pasted into an issue and cut there by its reporter: some varied lines, then
    # a two-line cycle that is over a third of what is left (the share rule of before called that a refrain)
    before = ("I checked the diff once more and the tests pass now.\n  The change is small and the message says why.\n"
              "  I will write the summary and then stop.\n  I am confident this is the final version.\n"
              "  The reviewer asked for one more test, and it is there.\n")
    text = before + '  I\'ll send.\n  "Yes."\n' * 10
    assert loop_repeat(Sample(output=text)).strength == "hard"
    # a diagram whose rule row repeats until the paste ends
    diagram = ("The pipeline and its parts, as a diagram:\n\nText\n  |\n  v\nLanguage identification\n  |\n  v\nString -> Tokenization -> Sentence splitter -> "
               "POS tagger\n  |                     |\n  |                     v\n  |                Sentences\n"
               "  |-----------------|\n  | Segmentation    |\n")
    assert loop_repeat(Sample(output=diagram + "  |                 |\n" * 30)).strength == "hard"
    # a diagram that closes its box is not one
    assert loop_repeat(Sample(output=diagram + "  |                 |\n" * 3 + "  |-----------------|\n")) is None


def test_a_sampled_loop_whose_copies_change_a_word_is_still_a_loop_but_a_list_checked_item_by_item_is_not():
    sentence = ("Wait, maybe I should go back and check whether the farmer really needs three trips with the truck, "
                "because each trip carries at most twenty bags of feed and the order is sixty bags. ")
    # one word swapped per copy, at different places of the sentence (swaps closer than MIN_FLANK tokens apart in
    # two neighbouring copies leave the gap unbridged)
    swaps = [("maybe", "perhaps"), ("trips", "runs"), ("check", "verify"), ("carries", "holds"), ("order", "total")]
    copies = [sentence.replace(*swaps[k % len(swaps)], 1) for k in range(8)]
    text = "Okay, the farmer buys feed for his horses. " + "".join(copies)
    assert loop_repeat(Sample(output=text)).strength == "hard"
    assert loop_repeat(Sample(output="Okay. " + "".join(copies[:2]))) is None  # two copies are not a loop
    # one slot changes in every copy: a template filled item by item, not a loop (nor two copies taken as one unit)
    items = ["apples", "pears", "plums", "figs", "dates", "limes", "kiwis", "grapes"]
    listing = "".join(f"Next, the crate of {item} goes on the truck only if the scale still reads under the limit of "
                      f"the axle, so I check the scale again. " for item in items)
    assert loop_repeat(Sample(output="Loading the truck. " + listing)) is None


def test_a_paragraph_three_times_to_the_budget_is_a_loop_but_three_times_before_an_answer_is_not():
    # the shape of a GSM8K answer cut at its budget in the fourth copy of a 173-token paragraph (docs/quality.md)
    paragraph = ("Wait, maybe I should think of it as he had six balls, he drops three of them, so he has three left, "
                 "and then he picks up two more, which would make five, but the problem says he adds two balls each "
                 "round after the first one, so after the second round he has five and after the third round he has "
                 "seven, unless the dropped balls are not picked up again before the next round starts. Hmm, the "
                 "question asks how many balls he is juggling at the end of the show, not how many he dropped, so I "
                 "need the count after the last round, which depends on whether he stops adding balls when he drops. ")
    reasoning = "Josh starts with 3 balls and adds 2 each round. Let me count the rounds one at a time. "
    cut = reasoning + paragraph * 3 + paragraph[:150]
    assert LONG_UNIT <= longest_loop(cut).period < 200  # tokens: words, numbers and punctuation (about 130)
    assert loop_repeat(Sample(output=cut)).strength == "hard"
    assert loops_to_the_end(cut)
    # the same three copies followed by an answer: a chain that repeated itself and moved on is not cut in a loop
    moved_on = reasoning + paragraph * 3 + paragraph[:150] + " So the answer is 7 balls.\n\n**Answer: 7**"
    assert not loops_to_the_end(moved_on)
    assert loop_repeat(Sample(output=moved_on)).strength == "soft"
    # fewer than three copies to the end, or a shorter unit three times, stays below the hard finding
    assert not loops_to_the_end(reasoning + paragraph * 2 + paragraph[:150])
    sentence = "Wait, so the farmer has to make two trips with the truck, since the total is exactly 4500 pounds. "
    short = reasoning + sentence * 3 + sentence[:40]
    assert not loops_to_the_end(short)
    found = loop_repeat(Sample(output=short))
    assert found is None or found.strength == "soft"
