"""Garbage detectors as tables of real-looking outputs: what must be caught, and what must never be."""

import json

import pytest

from evalharness.phases.detectors import Sample, cell_verdict, judge

LOOP = "The capital of France is Paris. " * 8

GARBAGE = [
    # (name, sample fields) — each must be judged garbage
    ("exclamations", {"output": "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"}),
    ("exclamations after words", {"output": "The answer is!!!!!!!!!!!!!!!!!!"}),
    ("question marks", {"output": "??????????"}),
    ("dash line as answer", {"output": "------------------------"}),
    ("rope garbage 1", {"output": "_ further wis___1111_-10:---------"}),
    ("rope garbage 2", {"output": "time... wis the the the a a a"}),
    ("equals soup", {"output": "================================================"}),
    ("one letter", {"output": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}),
    ("one letter with spaces", {"output": "a a a a a a a a a a a a"}),
    ("same word", {"output": "the the the the the the the the"}),
    ("stutter pairs", {"output": "of of of in in in to to to"}),
    ("commas", {"output": ",,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,,"}),
    ("symbols", {"output": "#@!%^&*((#@!%^&*((#@!%^&*(("}),
    ("brackets", {"output": "]]]]][[[[[]]]]][[[[[]]]]]"}),
    ("unicode replacement", {"output": "The \ufffd\ufffd\ufffd answer \ufffd is"}),
    ("control characters", {"output": "abc\x00\x01\x02\x03def"}),
    ("empty", {"output": ""}),
    ("whitespace", {"output": "   \n\n  \t "}),
    ("newlines only", {"output": "\n\n\n\n\n\n\n\n"}),
    ("mixed scripts", {"output": "Theпривет日本語 wordsмир中文 textкнига字符 moreслово文字 andещё汉字"}),
    ("cyrillic answer to english", {"output": "Столица Франции это Париж, и это очень красивый город.",
                                    "prompt": "What is the capital of France? Answer in one short sentence."}),
    ("cjk answer to english", {"output": "法国的首都是巴黎。巴黎是一个美丽的城市，有很多博物馆。",
                               "prompt": "What is the capital of France? Answer in one short sentence."}),
    ("sentence loop that never stops", {"output": LOOP, "finish_reason": "length", "expect_stop": True}),
    ("loop unlike reference", {"output": "banana banana split. " * 10, "finish_reason": "length",
                               "reference_output": "The capital of France is Paris."}),
    ("dots", {"output": "..............................................."}),
    ("underscores", {"output": "________________________________"}),
    ("stars and words", {"output": "Paris ************************************"}),
    ("digits soup", {"output": "1111_-10:---------0000--__11"}),
    ("token salad punctuation", {"output": ";;;:::;;;:::;;;:::;;;:::"}),
    ("repeated token mid", {"output": "I think that that that that that that is right"}),
    ("slashes", {"output": "//////////////////////////////"}),
    ("tildes", {"output": "~~~~~~~~~~~~~~~~~~~~~~~~~~~~~"}),
    ("pipes", {"output": "|||||||||||||||||||||||||||||||"}),
    ("many replacement", {"output": "\ufffd" * 10}),
    ("phrase loop + disjoint", {"output": "I am a cat and I am a cat and I am a cat and I am a cat and I am a cat",
                                "reference_output": "Two plus three equals five."}),
    ("hashes", {"output": "################################"}),
    ("bell characters", {"output": "\x07\x07\x07\x07"}),
    ("mixed garbage", {"output": "!!!???!!!???!!!???"}),
    ("word repeat with punctuation", {"output": "yes, yes, yes, yes, yes, yes"}),
    ("arabic answer to english", {"output": "عاصمة فرنسا هي باريس وهي مدينة جميلة جدا",
                                  "prompt": "What is the capital of France? Answer in one short sentence."}),
    ("long loop never stops", {"output": "and then " * 30, "finish_reason": "length", "expect_stop": True}),
    ("html soup", {"output": "<><><><><><><><><><><><><><>"}),
]

CLEAN = [
    ("terse number", {"output": "4"}),
    ("terse word", {"output": "Paris"}),
    ("short sentence", {"output": "The capital of France is Paris."}),
    ("yes", {"output": "Yes."}),
    ("python code", {"output": "def add(a, b):\n    return a + b\n\nprint(add(2, 3))\n"}),
    ("javascript", {"output": "const f = (x) => { if (x) { return x * 2; } return 0; };"}),
    ("c code", {"output": "for (int i = 0; i < n; i++) {\n    sum += a[i];\n}\nreturn sum;"}),
    ("json", {"output": '{"name": "Ada", "age": 36, "tags": ["math", "computing"]}'}),
    ("markdown table", {"output": "| name | age |\n|------|-----|\n| Ada | 36 |\n| Alan | 41 |"}),
    ("wide table rule", {"output": "| col a | col b |\n|---------------------------|---------------------------|\n| 1 | 2 |"}),
    ("ascii table", {"output": "+-------+-------+\n| a     | b     |\n+-------+-------+\n| 1     | 2     |\n+-------+-------+"}),
    ("horizontal rule", {"output": "Intro text here.\n\n---\n\nMore text after the rule."}),
    ("setext heading", {"output": "Title\n=====\n\nSome body text follows here."}),
    ("bullet list", {"output": "- apples\n- pears\n- plums\n- cherries"}),
    ("numbered list", {"output": "1. Preheat the oven.\n2. Mix the flour.\n3. Bake for 20 minutes."}),
    ("long number", {"output": "2 to the power of 64 is 18446744073709551616."}),
    ("pi digits", {"output": "Pi is 3.14159265358979323846264338327950288."}),
    ("big round number", {"output": "One googol is 10000000000000000000000000000000000 and more."}),
    ("repeating decimal", {"output": "1/3 = 0.3333333333333333"}),
    ("poem with refrain", {"output": "Row, row, row your boat,\nGently down the stream.\nMerrily, merrily, merrily, merrily,\n"
                                     "Life is but a dream."}),
    ("song refrain", {"output": "Let it be, let it be,\nLet it be, let it be,\nWhisper words of wisdom,\nLet it be."}),
    ("french", {"output": "La capitale de la France est Paris, une ville magnifique.",
                "prompt": "Quelle est la capitale de la France ?"}),
    ("german", {"output": "Die Hauptstadt von Deutschland ist Berlin."}),
    ("japanese to japanese", {"output": "日本の首都は東京です。東京はとても大きな都市です。",
                              "prompt": "日本の首都はどこですか？短く答えてください。お願いします。"}),
    ("translation request", {"output": "Привет, как дела? Я очень рад тебя видеть сегодня.",
                             "prompt": "Translate to Russian: Hello, how are you? I am very glad to see you today."}),
    ("russian to russian", {"output": "Столица России — Москва. Это большой город.",
                            "prompt": "Какая столица России? Ответьте коротко, пожалуйста."}),
    ("math expression", {"output": "2 + 3 = 5"}),
    ("equation", {"output": "x = (-b ± sqrt(b^2 - 4ac)) / 2a"}),
    ("url", {"output": "See https://example.com/docs/getting-started for details."}),
    ("path", {"output": "/usr/local/lib/python3.11/site-packages/"}),
    ("emoji", {"output": "Great job! 🎉"}),
    ("single exclamation", {"output": "Wow, that is amazing!"}),
    ("ellipsis", {"output": "Well... I am not sure."}),
    ("shell", {"output": "$ pip install -e '.[test]' && pytest -q"}),
    ("regex", {"output": r"Use ^[A-Za-z0-9_]+$ to match identifiers."}),
    ("ten line story", {"output": "Once upon a time there was a small fox. It lived in a forest near a river. "
                                  "Every morning it went to drink water and watch the fish."}),
    ("chat ramble that stops", {"output": "Sure! Here is a short answer: Paris is the capital of France. "
                                          "It is known for the Eiffel Tower.", "finish_reason": "stop"}),
    ("long answer hitting max tokens, varied", {"output": "Photosynthesis is the process by which plants convert light "
                                                          "into chemical energy, storing it in sugars that",
                                                "finish_reason": "length", "expect_stop": True}),
    ("yaml", {"output": "name: demo\nengine: vllm\naxes:\n  dtype:\n    float32: {}\n"}),
    ("diff", {"output": "--- a/file.py\n+++ b/file.py\n@@ -1,2 +1,2 @@\n-old\n+new"}),
    ("csv", {"output": "a,b,c\n1,2,3\n4,5,6\n7,8,9"}),
    ("spelled out", {"output": "M-I-S-S-I-S-S-I-P-P-I"}),
    ("similar to reference", {"output": "Paris is the capital.", "reference_output": "The capital of France is Paris."}),
    ("laughing short", {"output": "Ha ha, that is funny."}),
]


@pytest.mark.parametrize("name,fields", GARBAGE, ids=[g[0] for g in GARBAGE])
def test_garbage_is_caught(name, fields):
    verdict = judge(Sample(**fields))
    assert verdict.garbage, verdict.findings
    assert all(f.evidence for f in verdict.findings)


@pytest.mark.parametrize("name,fields", CLEAN, ids=[c[0] for c in CLEAN])
def test_clean_is_not_garbage(name, fields):
    verdict = judge(Sample(**fields))
    assert not verdict.garbage, verdict.findings


def test_tables_are_big_enough():
    assert len(GARBAGE) >= 40 and len(CLEAN) >= 40


def test_cell_verdict_against_reference():
    assert cell_verdict([True] * 8 + [False] * 2, [False] * 9 + [True]).garbage
    # the reference loops just as often: this is the model, not the configuration
    assert not cell_verdict([True] * 6 + [False] * 4, [True] * 5 + [False] * 5).garbage
    assert not cell_verdict([True] * 2 + [False] * 8, None).garbage
    assert cell_verdict([True] * 6 + [False] * 4, None).garbage
    assert "6/10" in cell_verdict([True] * 6 + [False] * 4, None).reason


def test_detect_command(tmp_path, capsys):
    from evalharness.cli import main

    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"output": "!!!!!!!!!!!!"}) + "\n" + json.dumps({"output": "4", "prompt": "2+2?"}) + "\n\n")
    assert main(["detect", str(path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["garbage"] for line in lines] == [True, False]
    assert lines[0]["detectors"][0]["detector"] == "char_run" and "x12" in lines[0]["detectors"][0]["evidence"]
    assert lines[0]["line"] == 1 and lines[1]["line"] == 2


@pytest.mark.parametrize("content,message", [
    ("{not json}\n", "in.jsonl:1: not a JSON object"),
    ('{"prompt": "x"}\n', "in.jsonl:1: output"),
    ('{"output": 5}\n', "in.jsonl:1: output"),
    ('[1, 2]\n', "in.jsonl:1: not a JSON object"),
])
def test_detect_bad_input(tmp_path, capsys, content, message):
    from evalharness.cli import main

    path = tmp_path / "in.jsonl"
    path.write_text(content)
    assert main(["detect", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_the_same_answer_to_different_prompts_is_garbage_however_fluent():
    from evalharness.phases.detectors import same_answer

    fluent = "The capital of France is Paris, a city on the Seine."
    outputs = [fluent, " the capital of france is PARIS,  a city on the Seine.", fluent, "4", "Blue.", fluent]
    found = same_answer(outputs)
    assert sorted(found) == [0, 1, 2, 5] and found[0].detector == "same_answer" and found[0].strength == "hard"
    assert "4 of 6 different prompts" in found[0].evidence
    # short answers that happen to coincide twice are not enough; empty answers are another detector's business
    assert same_answer(["Yes.", "Yes.", "No.", "4", "", "", ""]) == {}
