"""The first detectors: symbol soup, bad characters, an empty answer, never stopping, a script the prompt did not ask
for, and nothing in common with the reference's answer."""

from __future__ import annotations

import re
import unicodedata

from evalharness.phases.detectors.base import WORD, Finding, Sample, clip, prose, scripts


def symbol_soup(sample: Sample) -> Finding | None:
    """Mostly punctuation and symbols with few words: '_ further wis___1111_-10:---------', '#@!%^&*(('. Table rows and
    rules, code blocks and numeric rows (matrices) are left out first: they are symbols by design."""
    prose_text = prose(sample.output)
    text = "".join(prose_text.split())
    if len(text) < 12:
        return None
    letters = sum(ch.isalpha() for ch in text)
    digits = sum(ch.isdigit() for ch in text)
    symbols = len(text) - letters - digits
    # code has identifiers: a few symbols such as ';' and '=' in a soup with no names in it do not make it code
    code_like = bool(re.search(r"[{}();=]|def |return |=>|<\w+>|^\s*[-*|] |^(\+\+\+|---|@@) ", prose_text, re.M)) and \
        len(re.findall(r"[^\W\d_]{2,}", prose_text)) >= 2
    limit = 0.7 if code_like else 0.5
    symbol_runs = [r for r in re.findall(r"[^\w\s]{3,}|_{3,}", prose_text) if set(r) != {"."}]
    if (symbols / len(text) > limit and letters / len(text) < 0.3) or (
        len(symbol_runs) >= 2 and symbols / len(text) >= 0.4 and not code_like
    ):
        return Finding(detector="symbol_soup", strength="hard",
                       evidence=f"{symbols}/{len(text)} symbols, {letters} letters: {clip(sample.output.strip())!r}")
    return None


# separator runs that mix '-' with '_' or ',' ('_-_', '-_--_', '---,,--'), or 4+ separators glued to a letter
# ('A------'; LaTeX's em dash 'QA---a' is three):
# written text does neither (a rule stands on its own line, a dash between words is one or two characters)
TORN_SEPARATOR = re.compile(r"(?=[-_,]*-)(?=[-_,]*[_,])[-_,]*[-_][-_,]*[-_][-_,]*|(?<=[^\W_])[-_=~]{4,}"
                            r"|[-_=~]{4,}(?=[^\W_])")
TORN_MIN, TORN_MIN_CHARS = 2, 8  # two torn runs, or one long one


def torn_separators(sample: Sample) -> Finding | None:
    """Separator characters torn from their lines: runs mixing hyphens and underscores, or runs glued to words, the
    signature of a model whose position encoding is broken ('_- wis___1111_-10:---------'); and answers that are
    nothing but ASCII punctuation ('--------' to 'What is 2 + 3?')."""
    text = prose(sample.output)
    torn = TORN_SEPARATOR.findall(text)
    if len(torn) >= TORN_MIN or sum(map(len, torn)) >= TORN_MIN_CHARS:
        return Finding(detector="torn_separators", strength="hard",
                       evidence=f"{len(torn)} torn separator runs: {clip(' '.join(torn[:6]), 60)!r}")
    visible = "".join(sample.output.split())
    if len(visible) >= 4 and all(ch.isascii() and not ch.isalnum() for ch in visible):
        return Finding(detector="torn_separators", strength="hard", evidence=f"only punctuation: {clip(visible)!r}")
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
        return Finding(detector="never_stops", strength="soft",
                       evidence="hit max_tokens on a prompt that asks for a short answer")
    return None


LANGUAGE_WORDS = re.compile(
    r"translat|\bin (japanese|chinese|korean|russian|greek|arabic|hebrew|hindi|thai|french|german|spanish|ukrainian)\b"
    r"|japanese|chinese|mandarin|korean|russian|cyrillic|arabic|hebrew|hindi|greek alphabet", re.I)


def script_mismatch(sample: Sample) -> Finding | None:
    """Letters from several unrelated scripts at once, or a script the prompt neither uses nor asks for."""
    out = scripts(sample.output)
    total = sum(out.values())
    if total < 20:
        return None
    big = [s for s, n in out.items() if n / total >= 0.15]
    if len(big) >= 3:
        return Finding(detector="script_mismatch", strength="hard",
                       evidence=f"mixed scripts {dict(out.most_common(4))}")
    if sample.prompt:
        prompt = scripts(sample.prompt)
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
                       evidence=f"no shared word with the reference's {clip(sample.reference_output.strip(), 60)!r}")
    return None
