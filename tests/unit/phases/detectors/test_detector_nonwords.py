"""Reversed text, glued words, answers with no content, short word salad, and loops judged against the reference's
answer: tables of examples written here (not taken from tests/data), so they test the measures, not the corpus."""

import pytest

from evalharness.phases.detectors import Sample, judge
from evalharness.phases.detectors.nonwords import glued_pair, glued_words, no_content, reversed_text
from evalharness.phases.detectors.repetition import phrase_repeat

GARBAGE = [
    # a prompt echoed backwards by a template that reverses its input
    ("english backwards", {"output": "?yadot rehtaew eht si tahw ,olleH [/INST] .yadot rehtaew eht si tahw"},
     "reversed_text"),
    ("french backwards", {"output": "elbatéglav ertua nu ,esicérp eettecer enu sniom ua emrof ertov erid suov-zeuP"},
     "reversed_text"),
    ("backwards line before prose", {"output": "sgnivas tnuocca rof metsys a ngiseD\n\nSure. The system has three parts."},
     "reversed_text"),
    # words glued together, with a second sign that the answer is broken
    ("glued salad that loops", {"output": "garden windowpaper coffeeriver garden windowpaper coffeeriver garden "
                                          "windowpaper coffeeriver garden windowpaper coffeeriver garden windowpaper"},
     "glued_words"),
    ("glued words that never stop", {"output": "the mountainshelf of the orangebottle", "expect_stop": True,
                                     "finish_reason": "length"}, "glued_words"),
    # function words only, where a short answer was asked for and max_tokens ran out
    ("function words to the cut", {"output": "the. of the. of the the", "expect_stop": True,
                                   "finish_reason": "length"}, "no_content"),
    # a few content words with no syntax, to the cut
    ("short salad to the cut", {"output": "pillow tractor anxious leaves paint", "expect_stop": True,
                                "finish_reason": "length"}, "word_salad"),
    # a loop the reference cell did not make on the same prompt
    ("loop the reference did not make", {
        "output": "I can help with that. I can help with that. I can help with that. I can help with that. I can",
        "reference_output": "The capital of Australia is Canberra."}, "phrase_repeat"),
]

CLEAN = [
    ("reversal asked and given", {"output": "Here it is: emoh ekil ecalp on si ereht",
                                  "prompt": "Write 'there is no place like home' backwards."}),
    ("palindromes", {"output": "Level, radar, civic, kayak and refer read the same both ways."}),
    ("esperanto", {"output": "Ĉiuj homoj estas egalaj kaj liberaj, kaj ili havas la samajn rajtojn."}),
    ("technical compounds", {"output": "Set the filename and the username in the config, then check the timestamp "
                                       "on the homepage and in the codebase."}),
    ("german compounds", {"output": "Der Bundesverkehrsminister besuchte die Autobahnraststätte am Donnerstag."}),
    ("terse no", {"output": "No, it is not."}),
    ("a short list", {"output": "Apples, pears, plums, cherries, grapes"}),
    ("a short list that was cut", {"output": "Mercury, Venus, Earth, Mars", "expect_stop": True,
                                   "finish_reason": "length"}),
    ("a loop the reference makes too", {
        "output": "a lullaby, a lullaby, a lullaby, a lullaby, a lullaby, a lullaby, a lullaby, a lullaby, a lull",
        "reference_output": "a lullaby, a lullaby, a lullaby, a lullaby, a lullaby, a lullaby, a lullaby, a lullaby"}),
    ("a loop with no reference", {"output": "A dog with a heart of gold, a dog with a heart of gold, a dog with a "
                                            "heart of gold, a dog with a heart of gold."}),
]


@pytest.mark.parametrize("name,fields,detector", GARBAGE, ids=[g[0] for g in GARBAGE])
def test_garbage_is_marked_with_the_right_evidence(name, fields, detector):
    verdict = judge(Sample(**fields))
    assert verdict.garbage, verdict.findings
    assert any(f.detector == detector for f in verdict.findings), verdict.findings


@pytest.mark.parametrize("name,fields", CLEAN, ids=[c[0] for c in CLEAN])
def test_legitimate_answers_are_not_marked(name, fields):
    verdict = judge(Sample(**fields))
    assert not verdict.garbage, verdict.findings


@pytest.mark.parametrize("word,pair", [
    ("holesreally", ("holes", "really")), ("gardenwindow", ("garden", "window")), ("window", None),
    ("windows", None), ("xqzvbrtw", None), ("cat", None),
])
def test_glued_pair(word, pair):
    assert glued_pair(word) == pair


def test_glued_words_alone_is_soft():
    finding = glued_words(Sample(output="the gardenwindow and the coffeeriver were there"))
    assert finding is not None and finding.strength == "soft"
    assert not judge(Sample(output="the gardenwindow and the coffeeriver were there")).garbage


def test_reversed_text_is_soft_when_the_prompt_asks_for_reversal_and_off_when_the_reference_reverses():
    backwards = ".yadot rehtaew eht si tahw ,olleH"
    assert reversed_text(Sample(output=backwards)).strength == "hard"
    assert reversed_text(Sample(output=backwards, prompt="Reverse this sentence.")).strength == "soft"
    assert reversed_text(Sample(output=backwards, reference_output=".yadot rehtaew eht si tahw ,iH")) is None


def test_no_content_needs_three_words():
    assert no_content(Sample(output="It is.")) is None
    assert no_content(Sample(output="it is not")).strength == "soft"
    assert no_content(Sample(output="It is Paris.")) is None


def test_phrase_repeat_is_soft_without_a_reference():
    loop = "we are here to help you " * 6
    assert phrase_repeat(Sample(output=loop)).strength == "soft"
    assert phrase_repeat(Sample(output=loop, reference_output="Hello! How can I help?")).strength == "hard"
    assert phrase_repeat(Sample(output=loop, reference_output=loop)).strength == "soft"
