"""Repetition detectors: one character, one token, one unit glued to itself, one phrase, and compressibility.

A decoding loop is unbounded: it runs until max_tokens, dozens of times, and its last repeat is cut off mid-way.
Legitimate repetition is bounded: laughter ("Ha ha ha ha ha!"), the one-word sentence "Buffalo buffalo Buffalo
buffalo ...", a chant, a refrain, a requested "hello hello hello". So each repeat detector has two thresholds, chosen on
the train split of tests/data/detector_corpus.jsonl (docs/quality.md):
- LONG repeats are a hard finding whatever surrounds them;
- SHORT (>= the lower threshold) repeats are a hard finding unless the run is closed (a sentence mark right after it),
  varies in case (a loop repeats the identical token; "Buffalo buffalo" alternates), or the context licenses it
  (the prompt names the repeated unit, or the reference cell's answer repeats it too).
"""

from __future__ import annotations

import re
import zlib
from collections import Counter

from evalharness.phases.detectors.base import (FORMATTING_CHARS, WORD, Finding, Sample, clip, is_numeric_row,
                                                is_rule_line, structure_lines)

SHOUTING_CHARS = set("!?")
BANNER = re.compile(r"^\s*([-=_*#~+])\1{2,}\s+\S.{0,78}?\s+\1{3,}\s*$")
WORD_RUN_SHORT, WORD_RUN_LONG = 5, 12  # one token repeated with separators
NUMBER_RUN_SHORT = 8  # "0 0 0 0" rows of a small matrix are structure, measured per line
GLUED_SHORT, GLUED_LONG, GLUED_MIN_CHARS = 6, 12, 20  # one unit glued to itself: repeats, and the region's length
CLOSERS = ".!?…)\"'»"
# a run of one digit is a number until it is long (40) or, from 20 digits (past a float's 17), most of the text
# (zeros and a decimal part stay numbers: a googol, 0.333...)
DIGIT_RUN_LONG, DIGIT_RUN_MIN, DIGIT_RUN_SHARE = 40, 20, 0.5
PUNCT = "\"'«»“”‘’()[]{}<>.,;:!?…*_`"


def char_run(sample: Sample) -> Finding | None:
    """A long run of one character: '!!!!!!!!', '------------------------' as the whole answer, '??????'. A rule line
    (Markdown, a separator, an underline) followed or preceded by normal text is structure, not a run."""
    text = sample.output
    lines = text.splitlines() or [text]
    content = [line for line in lines if line.strip() and not is_rule_line(line)]
    rules = "".join("".join(line.split()) for line in lines if is_rule_line(line))
    if not content and len(rules) >= 16:
        return Finding(detector="char_run", strength="hard", evidence=f"only separator characters: {clip(rules)!r}")
    for found in re.finditer(r"(\S)\1{5,}", text):
        char, length = found.group(1), len(found.group(0))
        if char in SHOUTING_CHARS and length >= 6:
            return Finding(detector="char_run", strength="hard", evidence=f"{char!r} x{length}")
        if char.isdigit() and length < DIGIT_RUN_LONG and (
                char == "0" or text[found.start() - 1 : found.start()] in (".", ",") or length < DIGIT_RUN_MIN
                or length < DIGIT_RUN_SHARE * len("".join(text.split()))):
            continue  # 1000000000, 0.3333333333333333, a googol: numbers; '3' x31 as the whole thought is not
        line = text[text.rfind("\n", 0, found.start()) + 1 : (text.find("\n", found.end()) + 1 or len(text) + 1) - 1]
        if BANNER.match(line):
            continue  # '===== Results =====', '---- FAILURES ----': a title between rules
        formatting_line = is_rule_line(line) or (char in FORMATTING_CHARS and set(line.strip()) <= FORMATTING_CHARS)
        if formatting_line:
            # a rule is garbage only when nothing else was said, or when it runs away
            if (not content and length >= 16) or (length >= 160 and length > 1.5 * max(map(len, content))):
                return Finding(detector="char_run", strength="hard", evidence=f"{char!r} x{length}, nothing else")
        elif length >= 24:
            return Finding(detector="char_run", strength="hard",
                           evidence=f"{char!r} x{length} in {clip(line.strip())!r}")
    return None


def _licensed(unit: str, sample: Sample) -> bool:
    """The prompt names the repeated unit, or the reference cell's answer repeats it as well."""
    unit = unit.lower()
    if sample.prompt and re.search(rf"(?<!\w){re.escape(unit)}(?!\w)", sample.prompt.lower()):
        return True
    if sample.reference_output:
        ref = sample.reference_output.lower()
        return ref.count(unit) >= 3 and len(unit) >= 2
    return False


def _key(token: str) -> str:
    stripped = token.strip(PUNCT)
    return (stripped or token).lower()


QUOTED = re.compile(r'"[^"]+"|“[^”]+”|«[^»]+»|„[^“”]+[“”]')


def _quoted(run: str, line: str) -> bool:
    """The run is inside quotation marks: a sentence mentioned, not a loop ('"James while John had had had ..."')."""
    return any(run.strip(PUNCT) in span.group(0) for span in QUOTED.finditer(line))


def word_repeat(sample: Sample) -> Finding | None:
    """One token again and again with separators: 'the the the the', '0 0 0 0 0 0 0 0', ', , , , ,'; or several tokens
    stuttering until they fill half the answer: 'the the the a a a'. Runs are counted per line, so the rows of a
    small matrix are not one run."""
    runs: list[tuple[str, int, list[str], str, bool]] = []  # key, length, tokens, what follows, in a numeric row
    total = 0
    lines = sample.output.splitlines()
    numeric_rows = [is_numeric_row(line) for line in lines]
    grid = sum(numeric_rows) >= 2  # a matrix: its rows repeat numbers by design
    for line, structural, numeric_row in zip(lines, structure_lines(sample.output), numeric_rows):
        if structural and not numeric_row:
            continue  # table rows, rules, code: measured by the glued and character detectors
        tokens = line.split()
        total += len(tokens)
        index = 0
        while index < len(tokens):
            end = index
            while end + 1 < len(tokens) and _key(tokens[end + 1]) == _key(tokens[index]):
                end += 1
            if end - index + 1 >= 3 and not _quoted(" ".join(tokens[index : end + 1]), line):
                runs.append((_key(tokens[index]), end - index + 1, tokens[index : end + 1],
                             " ".join(tokens[end + 1 :]), numeric_row))
            index = end + 1
    for key, n, tokens, after, _ in sorted(runs, key=lambda r: -r[1]):
        numeric = key.replace(".", "").isdigit()
        short = (WORD_RUN_LONG if grid else NUMBER_RUN_SHORT) if numeric else WORD_RUN_SHORT
        if n < short:
            continue
        evidence = f"{key!r} x{n}" + ("" if after else ", to the end")
        if n >= WORD_RUN_LONG and not (_licensed(key, sample) and n < 2 * WORD_RUN_LONG):
            return Finding(detector="word_repeat", strength="hard", evidence=evidence)
        closed = tokens[-1].rstrip("\"'»”’)*_").endswith(tuple(CLOSERS[:4])) and len(tokens[-1].strip(PUNCT)) > 0
        varied = len({t.strip(PUNCT) for t in tokens}) > 1
        if not (closed or varied or _licensed(key, sample)):
            return Finding(detector="word_repeat", strength="hard", evidence=evidence)
    prose_runs = [r for r in runs if not r[4]]
    covered = sum(r[1] for r in prose_runs) / max(1, total)
    if len(prose_runs) >= 2 and covered >= 0.5:
        shown = ", ".join(f"{r[0]!r} x{r[1]}" for r in prose_runs[:4])
        return Finding(detector="word_repeat", strength="hard", evidence=f"stuttering {shown}")
    return None


def periodic_region(chunk: str, max_period: int = 40) -> tuple[int, int, int] | None:
    """The longest stretch of `chunk` that repeats a unit of 2..max_period characters: (start, period, length)."""
    best = None
    n = len(chunk)
    for period in range(2, min(max_period, n // 3) + 1):
        run = 0
        for i in range(n - period):
            if chunk[i] == chunk[i + period]:
                run += 1
                length = run + period
                if length >= 3 * period and (best is None or length > best[2]):
                    best = (i - run + 1, period, length)
            else:
                run = 0
    return best


def glued_repeat(sample: Sample) -> Finding | None:
    """A unit glued to itself with no separator: 'ParisParisParisParis...', '4242424242...', 'abcabcabc...'.
    Periodicity is measured inside each whitespace-free chunk; the unit must hold a letter or digit (a rule such as
    '=-=-=-' or '|---|---|' is formatting). Laughter is bounded: 'hahahaha!' stops, a loop does not."""
    text = sample.output
    for found in re.finditer(r"\S{12,}", text):
        chunk = found.group(0)[:2000]
        region = periodic_region(chunk)
        if region is None:
            continue
        start, period, length = region
        unit = chunk[start : start + period]
        repeats = length / period
        if not any(ch.isalnum() for ch in unit) or len(set(unit)) == 1:
            continue  # formatting, or one character (char_run's business)
        if repeats < GLUED_SHORT or length < GLUED_MIN_CHARS:
            continue
        evidence = f"{unit!r} x{repeats:.0f} glued ({length} characters)"
        if repeats >= GLUED_LONG and length >= 2 * GLUED_MIN_CHARS and not _licensed(unit, sample):
            return Finding(detector="glued_repeat", strength="hard", evidence=evidence)
        rest = chunk[start + length :]
        closed = (rest[:1] in tuple(CLOSERS + ",;:")
                  or (start + length < len(chunk) and found.end() < len(text.rstrip())))
        if not (closed or _licensed(unit, sample)):
            return Finding(detector="glued_repeat", strength="hard", evidence=evidence)
    return None


def phrase_repeat(sample: Sample) -> Finding | None:
    """One phrase of four or more words repeated so often that it fills half of the answer (a decoding loop). Healthy
    small models loop too, so this is soft, unless the reference cell answered the same prompt without looping."""
    words = [w.lower() for w in WORD.findall(sample.output)]
    if len(words) < 16:
        return None
    for n in (8, 6, 4):
        counts = Counter(tuple(words[i : i + n]) for i in range(len(words) - n + 1))
        phrase, times = counts.most_common(1)[0]
        if times >= 3 and times * n >= 0.5 * len(words):
            evidence = f"{' '.join(phrase)!r} x{times} ({times * n}/{len(words)} words)"
            if sample.reference_output is not None and phrase_repeat(Sample(output=sample.reference_output)) is None:
                # the reference cell answered the same prompt without a loop: this loop is the cell's own
                return Finding(detector="phrase_repeat", strength="hard",
                               evidence=f"{evidence}; the reference does not loop")
            return Finding(detector="phrase_repeat", strength="soft", evidence=evidence)
    return None


LOW_COMPRESSION = 0.16


def low_compression(sample: Sample) -> Finding | None:
    """Text that zlib shrinks to under a sixth of its size is mostly repetition."""
    raw = sample.output.encode("utf-8")
    if len(raw) < 120:
        return None
    ratio = len(zlib.compress(raw, 9)) / len(raw)
    if ratio < LOW_COMPRESSION:
        return Finding(detector="low_compression", strength="soft",
                       evidence=f"compresses to {ratio:.0%} of {len(raw)} bytes")
    return None
