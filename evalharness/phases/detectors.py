"""Garbage detectors: small pure functions over one model output, each returning its evidence or None, and the
per-sample and per-cell verdicts built from them.

Precision matters as much as recall: code, tables, lists, long numbers, poetry with refrains, non-English answers and
terse answers are not garbage. So detectors come in two strengths. A *hard* finding alone marks a sample (a run of
"!!!!!!!!", symbol soup, replacement characters, an empty answer, the same word over and over). *Soft* findings
(a repeated phrase, very low compression ratio, never stopping, sharing no word with the reference's answer) are
things healthy small models do too, so a sample needs two of them. The cell's verdict then compares its share of
marked samples with the reference cell's, because a 135M model loops on some prompts in every configuration.
"""

from __future__ import annotations

import math

import re
import unicodedata
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import Callable

from pydantic import BaseModel


class Sample(BaseModel):
    """One output to judge, with what is known about how it was asked for."""

    output: str
    prompt: str | None = None
    finish_reason: str | None = None  # "stop" | "length" | ...
    expect_stop: bool = False  # the prompt asks for a short answer: hitting max_tokens is suspicious
    reference_output: str | None = None  # the reference cell's answer to the same prompt


class Finding(BaseModel):
    detector: str
    strength: str  # "hard" | "soft"
    evidence: str


class SampleVerdict(BaseModel):
    garbage: bool
    findings: list[Finding] = []


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


WORD = re.compile(r"\w+", re.UNICODE)
# Characters that legitimately repeat in formatting: table rules, underlines, dotted leaders, code fences.
FORMATTING_CHARS = set("-=_*#~.|:+`/\\<>0 ")
SHOUTING_CHARS = set("!?")


def char_run(sample: Sample) -> Finding | None:
    """A long run of one character: '!!!!!!!!', '------------------------' as the whole answer, '??????'."""
    text = sample.output
    for found in re.finditer(r"(\S)\1{5,}", text):
        char, length = found.group(1), len(found.group(0))
        if char in SHOUTING_CHARS and length >= 6:
            return Finding(detector="char_run", strength="hard", evidence=f"{char!r} x{length}")
        if char.isdigit() and length < 40:
            continue  # 1000000000, 0.33333333333
        line = text[text.rfind("\n", 0, found.start()) + 1 : (text.find("\n", found.end()) + 1 or len(text) + 1) - 1]
        formatting_line = char in FORMATTING_CHARS and set(line.strip()) <= FORMATTING_CHARS
        dominated = length >= 0.5 * len(text.strip())
        if (formatting_line and dominated and length >= 16) or (not formatting_line and length >= 24):
            return Finding(detector="char_run", strength="hard", evidence=f"{char!r} x{length} in {_clip(line.strip())!r}")
    return None


def word_repeat(sample: Sample) -> Finding | None:
    """The same word again and again in a row: 'the the the the', or several words stuttering: 'the the the a a a'."""
    words = [w.lower() for w in WORD.findall(sample.output)]
    runs: list[tuple[str, int]] = []
    index = 0
    while index < len(words):
        end = index
        while end + 1 < len(words) and words[end + 1] == words[index]:
            end += 1
        if end - index + 1 >= 3:
            runs.append((words[index], end - index + 1))
        index = end + 1
    longest = max(runs, key=lambda r: r[1], default=None)
    covered = sum(n for _, n in runs) / max(1, len(words))
    # "Merrily, merrily, merrily, merrily" in a song is a run, but it does not fill the answer
    if longest and (longest[1] >= 5 or (len(runs) >= 2 and covered >= 0.5)) and not longest[0].isdigit():
        shown = ", ".join(f"{w!r} x{n}" for w, n in runs[:4])
        return Finding(detector="word_repeat", strength="hard", evidence=shown)
    return None


def phrase_repeat(sample: Sample) -> Finding | None:
    """One phrase of four or more words repeated so often that it fills half of the answer (a decoding loop)."""
    words = [w.lower() for w in WORD.findall(sample.output)]
    if len(words) < 16:
        return None
    for n in (8, 6, 4):
        counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
        phrase, times = counts.most_common(1)[0]
        if times >= 3 and times * n >= 0.5 * len(words):
            return Finding(detector="phrase_repeat", strength="soft",
                           evidence=f"{' '.join(phrase)!r} x{times} ({times * n}/{len(words)} words)")
    return None


def low_compression(sample: Sample) -> Finding | None:
    """Text that zlib shrinks to under a sixth of its size is mostly repetition."""
    raw = sample.output.encode("utf-8")
    if len(raw) < 120:
        return None
    ratio = len(zlib.compress(raw, 9)) / len(raw)
    if ratio < 0.16:
        return Finding(detector="low_compression", strength="soft", evidence=f"compresses to {ratio:.0%} of {len(raw)} bytes")
    return None


TABLE_LINE = re.compile(r"^\s*([|+].*[|+]|[-=:+| ]{3,})\s*$")


def symbol_soup(sample: Sample) -> Finding | None:
    """Mostly punctuation and symbols with few words: '_ further wis___1111_-10:---------', '#@!%^&*(('. Table rows and
    rules are left out first: a Markdown or ASCII table is symbols by design."""
    prose = "\n".join(line for line in sample.output.splitlines() if not TABLE_LINE.match(line))
    text = "".join(prose.split())
    if len(text) < 12:
        return None
    letters = sum(ch.isalpha() for ch in text)
    digits = sum(ch.isdigit() for ch in text)
    symbols = len(text) - letters - digits
    code_like = bool(re.search(r"[{}();=]|def |return |=>|<\w+>|^\s*[-*|] |^(\+\+\+|---|@@) ", prose, re.M))
    limit = 0.7 if code_like else 0.5
    symbol_runs = [r for r in re.findall(r"[^\w\s]{3,}|_{3,}", prose) if set(r) != {"."}]
    if (symbols / len(text) > limit and letters / len(text) < 0.3) or (
        len(symbol_runs) >= 2 and symbols / len(text) >= 0.4 and not code_like
    ):
        return Finding(detector="symbol_soup", strength="hard",
                       evidence=f"{symbols}/{len(text)} symbols, {letters} letters: {_clip(sample.output.strip())!r}")
    return None


def bad_characters(sample: Sample) -> Finding | None:
    """Replacement characters (a broken byte-level decode) and control characters."""
    replacement = sample.output.count("\ufffd")
    control = sum(1 for ch in sample.output if unicodedata.category(ch) in ("Cc", "Cs", "Co") and ch not in "\n\r\t")
    if replacement >= 3 or control >= 3 or (sample.output and (replacement + control) / len(sample.output) > 0.05):
        return Finding(detector="bad_characters", strength="hard",
                       evidence=f"{replacement} replacement and {control} control characters")
    return None


def empty_output(sample: Sample) -> Finding | None:
    if not sample.output.strip():
        return Finding(detector="empty_output", strength="hard", evidence=f"{len(sample.output)} characters, all blank")
    return None


def never_stops(sample: Sample) -> Finding | None:
    """A prompt that asks for a short answer, answered until max_tokens ran out."""
    if sample.expect_stop and sample.finish_reason == "length":
        return Finding(detector="never_stops", strength="soft", evidence="hit max_tokens on a prompt that asks for a short answer")
    return None


def _script(ch: str) -> str | None:
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    for script in ("LATIN", "CYRILLIC", "GREEK", "ARABIC", "HEBREW", "DEVANAGARI", "THAI", "HANGUL", "HIRAGANA",
                   "KATAKANA", "CJK", "BENGALI", "TAMIL", "GEORGIAN", "ARMENIAN", "ETHIOPIC"):
        if name.startswith(script) or f" {script} " in f" {name} ":
            return "CJK" if script in ("HIRAGANA", "KATAKANA", "CJK") else script
    return "OTHER"


def _scripts(text: str) -> Counter[str]:
    return Counter(s for s in map(_script, text) if s)


LANGUAGE_WORDS = re.compile(
    r"translat|\bin (japanese|chinese|korean|russian|greek|arabic|hebrew|hindi|thai|french|german|spanish|ukrainian)\b"
    r"|japanese|chinese|mandarin|korean|russian|cyrillic|arabic|hebrew|hindi|greek alphabet", re.I)


def script_mismatch(sample: Sample) -> Finding | None:
    """Letters from several unrelated scripts at once, or a script the prompt neither uses nor asks for."""
    out = _scripts(sample.output)
    total = sum(out.values())
    if total < 20:
        return None
    big = [s for s, n in out.items() if n / total >= 0.15]
    if len(big) >= 3:
        return Finding(detector="script_mismatch", strength="hard", evidence=f"mixed scripts {dict(out.most_common(4))}")
    if sample.prompt:
        prompt = _scripts(sample.prompt)
        if sum(prompt.values()) >= 20 and not LANGUAGE_WORDS.search(sample.prompt):
            main_out = out.most_common(1)[0][0]
            if main_out not in prompt and out[main_out] / total > 0.5:
                return Finding(detector="script_mismatch", strength="hard",
                               evidence=f"answer mostly {main_out}, prompt {dict(prompt.most_common(2))}")
    return None


def disjoint_from_reference(sample: Sample) -> Finding | None:
    """Shares not a single word with the reference cell's answer to the same prompt, which had something to say."""
    if sample.reference_output is None:
        return None
    ref = {w.lower() for w in WORD.findall(sample.reference_output) if len(w) > 2}
    out = {w.lower() for w in WORD.findall(sample.output) if len(w) > 2}
    if len(ref) >= 4 and not (ref & out):
        return Finding(detector="disjoint_from_reference", strength="soft",
                       evidence=f"no shared word with the reference's {_clip(sample.reference_output.strip(), 60)!r}")
    return None


DETECTORS: tuple[Callable[[Sample], Finding | None], ...] = (
    empty_output, char_run, word_repeat, symbol_soup, bad_characters, script_mismatch,
    phrase_repeat, low_compression, never_stops, disjoint_from_reference,
)


def judge(sample: Sample) -> SampleVerdict:
    """All findings for one output; garbage when one is hard or two are soft."""
    findings = [f for f in (detector(sample) for detector in DETECTORS) if f is not None]
    hard = any(f.strength == "hard" for f in findings)
    soft = sum(f.strength == "soft" for f in findings)
    return SampleVerdict(garbage=hard or soft >= 2, findings=findings)


def same_answer(outputs: list[str], min_count: int = 3, min_share: float = 0.25) -> dict[int, Finding]:
    """Across a cell's answers to different prompts: the same answer, word for word, to at least `min_count` prompts
    (and `min_share` of them). An engine that ignores its input (a broken cache, a stuck sampler, a proxy in the way)
    answers fluently and passes every per-answer check. Returns a finding per index of such an answer (pure)."""
    groups: dict[str, list[int]] = {}
    for index, text in enumerate(outputs):
        normal = " ".join(text.split()).lower()
        if normal:
            groups.setdefault(normal, []).append(index)
    needed = max(min_count, math.ceil(min_share * len(outputs)))
    found: dict[int, Finding] = {}
    for normal, indices in groups.items():
        if len(indices) >= needed:
            evidence = f"the same answer to {len(indices)} of {len(outputs)} different prompts: {_clip(normal, 60)!r}"
            for index in indices:
                found[index] = Finding(detector="same_answer", strength="hard", evidence=evidence)
    return found


@dataclass(frozen=True)
class CellVerdict:
    garbage: bool
    flagged: int
    total: int
    reason: str


def cell_verdict(flags: list[bool], reference_flags: list[bool] | None, min_share: float = 0.5,
                 min_excess: float = 0.3) -> CellVerdict:
    """A cell serves garbage when at least `min_share` of its probes are marked and, where the reference's probes are
    known, that share exceeds the reference's by `min_excess` (the reference loops on some prompts too)."""
    total = len(flags)
    flagged = sum(flags)
    if total == 0:
        return CellVerdict(False, 0, 0, "no probe outputs")
    share = flagged / total
    if reference_flags:
        ref_share = sum(reference_flags) / len(reference_flags)
        garbage = share >= min_share and share - ref_share >= min_excess
        reason = f"{flagged}/{total} probe outputs marked as garbage (reference: {sum(reference_flags)}/{len(reference_flags)})"
    else:
        garbage = share >= min_share
        reason = f"{flagged}/{total} probe outputs marked as garbage"
    return CellVerdict(garbage, flagged, total, reason)
