"""The classes issue 17 found missed or falsely flagged, as tables: each detector added for a missed class, and each
context that lowers false alarms. The examples are written here, apart from the corpus (tests/data), so they test the
measures rather than the corpus's own strings."""

import pytest

from evalharness.phases.detectors import Sample, judge
from evalharness.phases.detectors.base import is_numeric_row, is_rule_line, prose
from evalharness.phases.detectors.language import bpe_markers, letter_salad, mixed_script_words, plausibility
from evalharness.phases.detectors.repetition import glued_repeat, periodic_region, word_repeat

# (name, sample fields, the detector that must fire)
MISSED = [
    # a unit repeated with no spaces between repeats
    ("name glued", {"output": "LondonLondonLondonLondonLondonLondonLondonLondonLondonLondonLondonLondon"}, "glued_repeat"),
    ("number glued", {"output": "The result is 17171717171717171717171717171717171717171717"}, "glued_repeat"),
    ("word with dot glued", {"output": "yes.yes.yes.yes.yes.yes.yes.yes.yes.yes.yes.yes."}, "glued_repeat"),
    ("cyrillic glued", {"output": "ДаДаДаДаДаДаДаДаДаДаДаДаДаДа"}, "glued_repeat"),
    ("glued after prose", {"output": "Sure, the capital is Rome Rome RomeRomeRomeRomeRomeRomeRomeRome"}, "glued_repeat"),
    # byte-level BPE markers printed as text
    ("space markers", {"output": "ĠIĠthinkĠtheĠanswerĠisĠfour"}, "bpe_markers"),
    ("newline markers alone", {"output": "ĊĊ"}, "bpe_markers"),
    ("one marker answer", {"output": "Ġ4"}, "bpe_markers"),
    ("code with markers", {"output": "defĠadd(a,Ġb):ĊĠĠĠĠreturnĠaĠ+Ġb"}, "bpe_markers"),
    ("curly quote bytes", {"output": "ThatâĢĻs right, itâĢĻs Paris"}, "bpe_markers"),
    ("markers before words", {"output": "Ġthe Ġsky Ġis Ġblue Ġtoday"}, "bpe_markers"),
    # letter salad
    ("home row mash", {"output": "jkfd sla dkfj gh sldkfj, aslkdj fhg. kdjf lsk ajdh"}, "letter_salad"),
    ("consonant salad", {"output": "Brxt plmq vwz krrt snxp, dfgt wqmz prst lkjn."}, "letter_salad"),
    ("random letters", {"output": "qoz vuxe ykiw jepf ozuq xwyv ghqz ifpo"}, "letter_salad"),
    ("english-looking non-words", {"output": "ther anding mentation ousness eredly atingly ouslyness tionering "
                                             "alitive ementing"}, "letter_salad"),
    # token salad across scripts
    ("latin cyrillic greek", {"output": "stateмент ρησιςing отation ableνος"}, "mixed_script_words"),
    ("latin arabic hebrew", {"output": "theالمation שלness ingحب"}, "mixed_script_words"),
    ("four scripts with kana", {"output": "ationのing ческийness 的tion σειing"}, "mixed_script_words"),
    # a single token repeated with spaces
    ("zero repeated", {"output": "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"}, "word_repeat"),
    ("zero repeated with text", {"output": "The answer is 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0"}, "word_repeat"),
    ("comma repeated", {"output": "Here , , , , , , , , , , , , , , ,"}, "word_repeat"),
    ("word repeated to the end", {"output": "I like like like like like like"}, "word_repeat"),
    ("long run even if closed", {"output": "go go go go go go go go go go go go go go go go."}, "word_repeat"),
    ("dash word repeated", {"output": "- - - - - - - - - - - - - - - - - -"}, "char_run|word_repeat|symbol_soup"),
]

CLEAN = [
    # short, legitimate repetition
    ("laughter words", {"output": "Ha ha ha ha ha ha! That's the funniest thing I've heard."}),
    ("laughter glued", {"output": "Hahahahahahahahaha! Stop it, I can't breathe."}),
    ("laughter glued short", {"output": "hahahaha"}),
    ("laughter mixed case", {"output": "HAHAHA ok ok, you win this round."}),
    ("buffalo plain", {"output": "Buffalo buffalo Buffalo buffalo buffalo buffalo Buffalo buffalo."}),
    ("buffalo explained", {"output": "Yes: \"buffalo buffalo buffalo buffalo buffalo buffalo buffalo buffalo\" is a "
                                     "valid sentence, because buffalo is a noun, a verb and a city."}),
    ("police sentence", {"output": "Police police police police police police police."}),
    ("requested repetition", {"output": "cat cat cat cat cat cat", "prompt": "Say the word cat six times."}),
    ("reference repeats too", {"output": "no no no no no no",
                               "reference_output": "no no no no no no no, said the toddler"}),
    ("chant", {"output": "We will, we will rock you! We will, we will rock you!"}),
    ("count", {"output": "1 2 3 4 5 6 7 8 9 10"}),
    # a Markdown rule or separator before normal text
    ("dash rule first", {"output": "----------------------------------------\nThe results are below."}),
    ("equals rule around title", {"output": "========================\nSummary\n========================\n"
                                            "Everything went well."}),
    ("underscore separator", {"output": "____________________________\nSigned, the committee"}),
    ("star rule", {"output": "* * *\n\nThe next morning, the town was quiet."}),
    ("box drawing rule", {"output": "────────────────────────\nDone."}),
    # a small matrix or other structured numeric output
    ("zero matrix", {"output": "0 0 0 0\n0 0 0 0\n0 0 0 0\n0 0 0 0"}),
    ("bracket matrix", {"output": "[[1, 2],\n [3, 4]]"}),
    ("numpy zeros", {"output": "[[0. 0. 0.]\n [0. 0. 0.]\n [0. 0. 0.]]"}),
    ("latex matrix", {"output": "\\begin{pmatrix} 1 & 0 \\\\ 0 & 1 \\end{pmatrix}"}),
    ("vector", {"output": "v = (0, 0, 0, 1)"}),
    ("table of squares", {"output": "n | n^2\n--|----\n1 | 1\n2 | 4\n3 | 9"}),
    ("binary", {"output": "10 in binary is 1010, and 255 is 11111111."}),
    ("repeating decimal", {"output": "1/7 = 0.142857142857142857..."}),
    ("hex", {"output": "The mask is 0xFFFFFFFF and the address 0x00000000."}),
    # languages the English word list does not cover
    ("polish", {"output": "Dzień dobry! Dziękuję bardzo za pomoc, to było naprawdę miłe."}),
    ("czech", {"output": "Praha je hlavní město České republiky a leží na řece Vltavě."}),
    ("turkish", {"output": "İstanbul, Türkiye'nin en kalabalık şehridir ve iki kıtada yer alır."}),
    ("maltese capital g", {"output": "Ġużeppi jgħix f'Għawdex u jaħdem il-Ġimgħa."}),
    ("esperanto", {"output": "Ĉu vi parolas Esperanton? Jes, mi ŝatas ĝin tre multe."}),
    ("vietnamese", {"output": "Hà Nội là thủ đô của Việt Nam, một thành phố rất đẹp."}),
    ("chinese with english words", {"output": "我喜欢用Python和JavaScript写程序，也喜欢Linux系统。"}),
    ("korean particles on english", {"output": "저는 Python을 좋아하고 API를 자주 사용합니다."}),
    ("units with greek letters", {"output": "The wire is 5μm thick and Δt is 10μs, so v = Δx/Δt."}),
    ("names and acronyms", {"output": "Dr. Nguyen Thi Minh and Prof. Oyelaran-Oyeyinka met at MIT and KTH."}),
    ("code identifiers", {"output": "Call np.linalg.svd(x) then torch.nn.functional.softmax(logits, dim=-1)."}),
]


@pytest.mark.parametrize("name,fields,detector", MISSED, ids=[m[0] for m in MISSED])
def test_missed_classes_are_caught(name, fields, detector):
    verdict = judge(Sample(**fields))
    assert verdict.garbage, verdict.findings
    assert any(f.detector in detector.split("|") and f.strength == "hard" for f in verdict.findings), verdict.findings


@pytest.mark.parametrize("name,fields", CLEAN, ids=[c[0] for c in CLEAN])
def test_false_alarm_classes_are_clean(name, fields):
    verdict = judge(Sample(**fields))
    assert not verdict.garbage, verdict.findings


@pytest.mark.parametrize("text,unit,at_least", [
    ("abcabcabcabc", "abc", 12), ("xxParisParisParisyy", "Paris", 15), ("no repeat here", None, 0),
])
def test_periodic_region(text, unit, at_least):
    region = periodic_region(text)
    if unit is None:
        assert region is None
    else:
        start, period, length = region
        assert text[start : start + period] == unit and length >= at_least


@pytest.mark.parametrize("line,rule,numeric", [
    ("---", True, False), ("- - -", True, False), ("+------+------+", True, False), ("1 0 0", False, True),
    ("[0.5, -1.25e3, 7]", False, True), ("Paris is nice", False, False), ("<><><>", False, False),
])
def test_structure_lines(line, rule, numeric):
    assert is_rule_line(line) == rule and is_numeric_row(line) == numeric


def test_prose_drops_code_blocks_and_tables():
    text = "Intro words.\n```\nxq_zz = 1\n```\n| a | b |\n|---|---|\nOutro words."
    assert prose(text) == "Intro words.\nOutro words."


def test_plausibility_prefers_the_right_language():
    assert plausibility(["the", "house", "is", "green"])[1] == "en"
    assert plausibility(["das", "haus", "ist", "schön"])[1] == "de"
    assert plausibility(["asdfgh", "qwrtz", "zxcvb"])[0] < plausibility(["the", "house", "is", "green"])[0] - 1


def test_detectors_return_evidence_or_none():
    for detector in (bpe_markers, letter_salad, mixed_script_words, glued_repeat, word_repeat):
        assert detector(Sample(output="The capital of France is Paris.")) is None


@pytest.mark.parametrize("text", ["a" * 20000, "ParisParis" * 2000, "asdkj qwe " * 2000, "x_" * 10000 + "y" * 10000])
def test_long_pathological_outputs_stay_fast(text):
    import time

    judge(Sample(output="warm the tables up"))
    started = time.perf_counter()
    assert judge(Sample(output=text)).garbage
    assert time.perf_counter() - started < 2.0
