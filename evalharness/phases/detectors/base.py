"""What every detector shares: the sample, the finding, and the structure of a text (code, tables, rules, numeric rows)
that makes symbols, repeats and non-words legitimate."""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

from pydantic import BaseModel


class Sample(BaseModel):
    """One output to judge, with what is known about how it was asked for."""

    output: str
    prompt: str | None = None
    finish_reason: str | None = None  # "stop" | "length" | ...
    expect_stop: bool = False  # the prompt asks for a short answer: hitting max_tokens is suspicious
    reference_output: str | None = None  # the reference cell's answer to the same prompt
    answer_empty: bool = False  # `output` is a reasoning chain behind which the answer came back empty


class Finding(BaseModel):
    detector: str
    strength: str  # "hard" | "soft"
    evidence: str


class SampleVerdict(BaseModel):
    garbage: bool
    findings: list[Finding] = []


def clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


WORD = re.compile(r"\w+", re.UNICODE)
LETTERS = re.compile(r"[^\W\d_]+", re.UNICODE)
# Characters that legitimately repeat in formatting: table rules, underlines, dotted leaders, code fences.
FORMATTING_CHARS = set("-=_*#~.|:+`/\\<> ")
TABLE_LINE = re.compile(r"^\s*([|+].*[|+]|[-=:+| ]{3,})\s*$")
NUMBER = re.compile(r"^[-+±]?(\d+([.,]\d*)?|\.\d+)([eE][-+]?\d+)?[.,;%]?$")
FENCE = re.compile(r"^\s*(```|~~~)\s*[\w+#.-]*\s*$")  # a fence line holds at most a language name


RULE_CHARS = set("-=_*#~.^")
BORDER = re.compile(r"^[+|]?(\s*:?[-=]+:?\s*[+|])+\s*:?[-=]*:?\s*$")


def is_rule_line(line: str) -> bool:
    """A Markdown/ASCII rule, an underline or a separator: one rule character repeated, spaces allowed ('---', '***',
    '- - -', '^^^^', '====='), a table border ('+----+----+', '|---|:---:|'), or box drawing ('╒═══╤═══╕'). A line
    mixing rule characters at random ('_-_----_-') is no rule: that is what a broken model prints."""
    stripped = line.strip()
    if len(stripped) < 3:
        return False
    chars = set(stripped) - {" "}
    if len(chars) == 1 and chars <= RULE_CHARS:
        return True
    return bool(BORDER.match(stripped)) or all("\u2500" <= ch <= "\u257f" or ch == " " for ch in stripped)


def is_numeric_row(line: str) -> bool:
    """A row of a matrix, a vector or a numeric table: mostly numbers between brackets, bars and commas."""
    tokens = [t for t in re.split(r"[\s,;|\[\](){}]+", line) if t]
    numbers = sum(bool(NUMBER.match(t)) for t in tokens)
    return numbers >= 2 and numbers >= 0.6 * len(tokens)


CODE_LINE = re.compile(
    r"^\s*(>>>|\.\.\.\s|<[A-Za-z/!][^>]*>|@\w|def |class \w+\s*[:(]|import |from [\w.]+ import|return\b|"
    r"#include|//|/\*|[{}\[\]]\s*$)"
    r"|[;{]\s*$|\w\([^)]*\)\s*[:{]?\s*$|^\s*[\w.\[\]'\"]+\s*[-+*/]?=\s*\S|^\s*['\"]?\w+['\"]?\s*:\s*['\"\d\[{]")


def is_code_line(line: str) -> bool:
    """A line that reads as code or data (a prompt '>>>', a decorator, a definition, an assignment, a call ending the
    line, a 'key': value pair): its identifiers are not meant to be dictionary words."""
    return bool(CODE_LINE.search(line))


def structure_lines(text: str) -> list[bool]:
    """For each line: is it structure (inside a code fence, a fence, a table row or rule, a numeric row)?"""
    lines = text.splitlines()
    fences = [i for i, line in enumerate(lines) if FENCE.match(line)]
    if len(fences) % 2:  # a fence never closed (cut at max_tokens): code only if what follows reads as code
        rest = [line for line in lines[fences[-1] + 1 :] if line.strip()]
        if rest and sum(map(is_code_line, rest)) < 0.3 * len(rest):
            fences = fences[:-1]
    fence_set = set(fences)
    flags, in_code = [], False
    for i, line in enumerate(lines):
        if i in fence_set:
            flags.append(True)
            in_code = not in_code
            continue
        flags.append(in_code or bool(TABLE_LINE.match(line)) or is_rule_line(line) or is_numeric_row(line))
    return flags


def prose(text: str) -> str:
    """The text without its structure lines (code blocks, tables, rules, numeric rows)."""
    return "\n".join(line for line, structural in zip(text.splitlines(), structure_lines(text)) if not structural)


SCRIPT_NAMES = ("LATIN", "CYRILLIC", "GREEK", "ARABIC", "HEBREW", "DEVANAGARI", "THAI", "HANGUL", "HIRAGANA",
                "KATAKANA", "CJK", "BENGALI", "TAMIL", "GEORGIAN", "ARMENIAN", "ETHIOPIC", "TELUGU", "KANNADA",
                "MALAYALAM", "GUJARATI", "GURMUKHI", "SINHALA", "KHMER", "LAO", "MYANMAR", "TIBETAN")


@lru_cache(maxsize=8192)
def script_of(ch: str) -> str | None:
    """The writing system of a letter (kana and ideographs count as one, CJK), or None for a non-letter."""
    if not ch.isalpha():
        return None
    name = unicodedata.name(ch, "")
    for script in SCRIPT_NAMES:
        if name.startswith(script) or f" {script} " in f" {name} ":
            return "CJK" if script in ("HIRAGANA", "KATAKANA", "CJK") else script
    return "OTHER"


def scripts(text: str) -> Counter[str]:
    return Counter(s for s in map(script_of, text) if s)
