"""The long-context task (issue 39): keyed facts hidden at a stated depth in a seeded haystack, one lm-eval task per
length bucket of the matrix's `length:` section, written as files the quality phase and the per-bucket speed
scenarios read. Owns the documents, their sizing and the task files; imports nothing of runner, analysis or render.

A document is a run of plain narrative sentences (names, places, seasons, objects: built from the word lists below,
never from a hub), three sentences "The code of the <colour> <animal> is <four digits>." placed in it, and a question
about the first of them, whose sentence sits at the document's depth (0 = the start of the haystack, 1 = its end):

    ... Greta went to the harbour in the autumn and repaired a wooden boat. The code of the green owl is 4821. ...

    Question: What is the code of the green owl?
    Answer: The code of the green owl is

The two other codes are distractors. The answer is scored by lm-eval as an exact match of the first number the
model writes. SmolLM2-135M-Instruct on vLLM's CPU build, float32, greedy, 20 documents a bucket (2026-12-04,
a prototype of this generator): 0.90 right at 220 prompt tokens, 0.85 at 850, 0.55 at 1,630: a task that a small
model answers and that gets harder with length, which is what a per-bucket comparison needs.

Sizing: a bucket is a count of prompt tokens. Where the served model's tokenizer.json is on this machine (a model
folder, or the Hugging Face cache) documents are cut to the bucket by it (phases/_local_tokenizer.py's files, the
`tokenizers` library); otherwise by 4 characters a token, which the report states. Document i of a bucket is the
prefix of one seeded stream of sentences, so the same seed, bucket and tokenizer give the same documents in every
cell and on every machine (the pairing of documents across cells depends on it).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

VERSION = 1
CHARS_PER_TOKEN = 4.0  # the sizing without a tokenizer (English prose; SmolLM2's tokenizer: 4.3 on these documents)
FACTS = 3  # keyed facts in every document: the one asked about and two distractors

NAMES = ("Anna Ben Clara David Elena Farid Greta Hugo Iris Jonas Kira Leo Maya Nils Olga Pavel Rosa Sami Tara Umar "
         "Vera Wim Aiko Bruno Chiara Dmitri Esther Felix").split()
PLACES = ("market harbour library bakery station garden museum school bridge square mill farm church workshop "
          "theatre orchard quarry lighthouse chapel tavern").split()
TIMES = "morning afternoon evening spring autumn winter summer night".split()
VERBS = "found bought painted repaired carried borrowed sold cleaned measured photographed".split()
OBJECTS = "lamp basket chair map kettle ladder boat clock drum rug bicycle letter bell mirror saddle".split()
ADJECTIVES = "old small heavy blue wooden bright quiet long narrow round".split()
TEMPLATES = (
    "{name} went to the {place} in the {time} and {verb} a {adj} {obj}.",
    "In the {time}, the {place} was busy, and {name} {verb} a {adj} {obj} there.",
    "People say that the {adj} {obj} near the {place} was {verb} by {name} one {time}.",
    "{name} remembered the {time} when the {place} had a {adj} {obj} by the door.",
    "Nobody at the {place} knew why {name} {verb} the {adj} {obj} that {time}.",
    "The {adj} {obj} stayed at the {place} all {time}, until {name} {verb} it.",
)
COLOURS = "red blue green yellow purple orange white black silver golden".split()
ANIMALS = "fox owl bear wolf hare deer swan crow goat lynx".split()


@dataclass(frozen=True)
class LongDocument:
    """One document of one bucket: its prompt (haystack, question and the answer's start) and the code asked for."""

    id: str
    bucket: int
    depth: float
    prompt: str
    answer: str

    def row(self, tokens: int | None) -> dict:
        return {"id": self.id, "bucket": self.bucket, "depth": self.depth, "prompt": self.prompt,
                "answer": self.answer, "prompt_tokens": tokens}


def _sentence(rng: random.Random) -> str:
    return rng.choice(TEMPLATES).format(name=rng.choice(NAMES), place=rng.choice(PLACES), time=rng.choice(TIMES),
                                        verb=rng.choice(VERBS), adj=rng.choice(ADJECTIVES), obj=rng.choice(OBJECTS))


def _question(key: tuple[str, str]) -> str:
    colour, animal = key
    return f"\n\nQuestion: What is the code of the {colour} {animal}?\nAnswer: The code of the {colour} {animal} is"


def _compose(haystack: list[str], facts: list[str], places: list[int], key: tuple[str, str]) -> str:
    sentences = list(haystack)
    for fact, place in sorted(zip(facts, places), key=lambda pair: -pair[1]):  # from the end: indices stay valid
        sentences.insert(min(place, len(sentences)), fact)
    return " ".join(sentences) + _question(key)


def make_document(seed: int, bucket: int, index: int, depth: float, count_tokens: Callable[[str], int]) -> LongDocument:
    """Document `index` of a bucket: the longest prefix of its sentence stream whose prompt stays within `bucket`
    tokens (by `count_tokens`), the asked fact at `depth` of it, the distractors at seeded places."""
    rng = random.Random(f"{seed}:{bucket}:{index}")
    keys = rng.sample([(c, a) for c in COLOURS for a in ANIMALS], FACTS)
    codes = [str(rng.randint(1000, 9999)) for _ in keys]
    facts = [f"The code of the {c} {a} is {code}." for (c, a), code in zip(keys, codes)]
    spreads = [rng.random() for _ in range(FACTS - 1)]  # the distractors' places, as shares of the haystack
    stream_rng = random.Random(f"{seed}:{bucket}:{index}:haystack")
    stream: list[str] = []

    def text(n: int) -> str:
        while len(stream) < n:
            stream.append(_sentence(stream_rng))
        places = [round(depth * n)] + [int(s * n) for s in spreads]
        return _compose(stream[:n], facts, places, keys[0])

    def over(n: int) -> bool:
        return count_tokens(text(n)) > bucket

    # the longest n that fits. Tokens grow about linearly with sentences, so a guess in proportion to a short prefix's
    # count, a bracket widened around it, then bisection: about 10 counts a document instead of 25 from doubling
    # (65,536 tokens: 2.1 s a document with SmolLM2's tokenizer, so 100 documents cost minutes either way)
    guess = max(1, int(8 * bucket / max(1, count_tokens(text(8)))))
    step = max(1, guess // 50)
    low = guess
    while low > 0 and over(low):
        low, step = max(0, low - step), step * 2
    high = low + step
    while not over(high):
        low, high, step = high, high + step, step * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if over(mid) else (mid, high)
    fits = low
    if fits < 1:
        raise ValueError(f"length bucket {bucket}: too short for even one sentence and the question")
    return LongDocument(id=f"b{bucket}-{index:03d}", bucket=bucket, depth=depth, prompt=text(fits), answer=codes[0])


def make_documents(seed: int, bucket: int, count: int, depths: list[float],
                   count_tokens: Callable[[str], int]) -> list[LongDocument]:
    """A bucket's documents, the depths taken in turn."""
    return [make_document(seed, bucket, i, depths[i % len(depths)], count_tokens) for i in range(count)]


def char_estimate(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


def token_counter(model: str) -> tuple[Callable[[str], int], str]:
    """How documents are sized: the served model's tokenizer where its tokenizer.json is on this machine (how it
    was found is the second value), else 4 characters a token."""
    try:
        from tokenizers import Tokenizer

        from evalharness.phases._local_tokenizer import TOKENIZER_FILE, TokenizerProblem, tokenizer_folder
    except ImportError:
        return char_estimate, "4 characters a token (no tokenizers library)"
    try:
        folder = tokenizer_folder(model)
    except TokenizerProblem:
        return char_estimate, f"4 characters a token ({model}'s tokenizer.json is not on this machine)"
    tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
    return (lambda text: len(tokenizer.encode(text, add_special_tokens=True).ids)), f"the tokenizer of {model}"


def task_yaml(task: str, data_file: Path, max_gen_toks: int) -> str:
    """The lm-eval task of one bucket: greedy completion, exact match of the first number written."""
    config = {
        "task": task, "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data_file)}},
        "test_split": "test", "output_type": "generate_until", "doc_to_text": "{{prompt}}",
        "doc_to_target": "{{answer}}", "target_delimiter": " ",
        "generation_kwargs": {"until": ["\n"], "max_gen_toks": max_gen_toks, "do_sample": False, "temperature": 0.0},
        "filter_list": [{"name": "code", "filter": [{"function": "regex", "regex_pattern": r"(\d+)",
                                                     "fallback": "[no number]"},
                                                    {"function": "take_first"}]}],
        "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True}],
        "metadata": {"version": float(VERSION)},
    }
    return json.dumps(config, indent=2) + "\n"  # JSON is YAML: no YAML writer needed


def write_tasks(folder: Path, seed: int, tasks: dict[int, str], count: int, depths: list[float], max_gen_toks: int,
                model: str) -> str:
    """Every bucket's data (<task>.jsonl) and task (<task>.yaml) in `folder`, `tasks` naming each bucket's task,
    rewritten only where they changed (the same inputs give the same bytes). Returns how documents were sized."""
    folder.mkdir(parents=True, exist_ok=True)
    count_tokens, sizing = token_counter(model)
    for bucket, task in tasks.items():
        docs = make_documents(seed, bucket, count, depths, count_tokens)
        data = "".join(json.dumps(d.row(count_tokens(d.prompt) if count_tokens is not char_estimate else None),
                                  ensure_ascii=False) + "\n" for d in docs)
        data_file = (folder / f"{task}.jsonl").absolute()
        for path, content in ((data_file, data), (folder / f"{task}.yaml", task_yaml(task, data_file, max_gen_toks))):
            if not path.exists() or path.read_text(encoding="utf-8") != content:
                path.write_text(content, encoding="utf-8")
    (folder / "sizing.txt").write_text(sizing + "\n", encoding="utf-8")
    return sizing

