"""Loops at any unit length: a word, a sentence, a formula, a table row or a paragraph repeated back to back.

The way a broken kernel or sampler shows in a reasoning model is often not symbol soup but a loop: the same sentence
or paragraph again and again until the token budget. `phrase_repeat` (repetition.py) needs one n-gram of at most 8
words to fill half the text, so a loop whose unit is longer than 16 words never fires it. This detector works on
the text's tokens (words, numbers, each CJK character and each symbol) and, for every period p up to MAX_PERIOD
tokens, finds the longest stretch where token i equals token i + p: that stretch is a unit of p tokens repeated
back to back, `(run + p) / p` times. Near-exact repeats: a sampled model's copies may differ by a word or two
(`_bridged`: gaps of at most MAX_GAP differing words between matches of MIN_FLANK tokens, at two or more offsets of
the unit); numbers and symbols must match, so an enumeration ('for k = 1 ... for k = 2 ...') is not a loop, and a
template whose one word slot changes (a list checked item by item) is not either. On the rebuilt R1-distill batch
(docs/quality.md) this took loops caught from 10 to 11 of 16 (12 with LONG_UNIT's rule), no healthy chain of 405 marked.

Healthy long chains of thought repeat a sub-calculation two to four times, and rarely word for word back to back;
a loop runs until it is cut off. So:
- hard: at least LOOP_REPEATS copies back to back covering at least LOOP_MIN_TOKENS tokens, and either the
  repeated stretch runs to the end of the text (cut off inside the loop) or it covers LOOP_MIN_SHARE of the text;
- soft: at least SOFT_REPEATS copies over LOOP_MIN_TOKENS tokens anywhere (it needs a second soft finding).
A unit of LONG_UNIT tokens or more (two sentences) is a hard finding at LONG_END_REPEATS copies when they run to the
end: a short budget cuts a paragraph loop early (a GSM8K answer cut at 2,000 tokens in the fourth copy of a
173-token paragraph). No healthy chain of the 405 in docs/quality.md, nor of the detector corpus, ends in three
copies of any unit of 20 tokens or more.
A unit without a letter ('= (16 * 315) / 10 =', '1 +') counts only when it runs to the end of the text
LETTERLESS_REPEATS times or more: a table's rule or a matrix's rows repeat by design, but not until the budget.
A unit shorter than LOOP_MIN_PERIOD is a hard finding only at the end of a chain that reasoned first
(SHORT_END_REPEATS copies after at least SHORT_END_PRIOR tokens of something else: QwQ's 'Wait, 3150 + 50 is
3200?' to the budget, or a pasted chain cut by its reporter where the loop is most of what is left).
Elsewhere the detector leaves units shorter than LOOP_MIN_PERIOD tokens to word_repeat and phrase_repeat, which
know refrains, chants and laughter (a healthy 135M model sings 'A lullaby, a lullaby,' twenty times; the corpus
calls that healthy, and the cell's verdict against the reference's share is what judges it): counting such a loop
twice would make two soft findings of one.

Units longer than MAX_PERIOD (a whole re-derivation repeated) are found from the distances at which the text's
GRAM-token windows recur: at the end, those of its last tokens; anywhere, those where half a unit's windows recur.

numpy only (no library finds tandem repeats in a token sequence): MAX_PERIOD comparisons of the token array with
itself, and a few for the longer periods found. The probes' detector takes 30-60 ms on a 110,000-character chain
of thought (2 cores); the quality phase's end-of-chain check (`tail_loop`) reads the last TAIL_TOKENS tokens
first, about 2 ms a chain on the 77 R1-distill chains of docs/quality.md (quiet machine, 2026-12-05). Imports
nothing outside phases/detectors.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from evalharness.phases.detectors.base import Finding, Sample, clip

TOKEN = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]|"
                   r"[^\W_\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]+|[^\w\s]", re.UNICODE)
MAX_PERIOD = 600  # tokens: every period up to a paragraph of about 450 words is compared; longer ones as found
GRAM = 8  # tokens in the windows whose recurrences point at the longer periods
MAX_TOKENS = 24_000  # the last tokens looked at (a loop runs to the end; older text cannot hide one there)
LOOP_REPEATS, SOFT_REPEATS = 4, 3
LOOP_MIN_TOKENS = 48
LETTERLESS_REPEATS = 5  # a unit with no letter ('= (16 * 315) / 10', '1 +') counts only to the end, this often
SHORT_END_REPEATS, SHORT_END_PRIOR = 8, 48  # a short unit at the end of a chain that reasoned before it (tokens)
LOOP_MIN_PERIOD = 12  # tokens: about a sentence; shorter units are phrase_repeat's (n-grams of 4 to 8 words)
LOOP_MIN_SHARE = 0.3
MAX_GAP, MIN_FLANK = 2, 4  # a sampled loop's copies may differ by a word or two between matches of 4+ tokens
LONG_UNIT, LONG_END_REPEATS = 50, 3  # two sentences or more (50+ tokens) three times back to back to the end
# behind an empty answer a chain that ends in a cycle gave up in it: a unit of EMPTY_UNIT tokens (two short sentences)
# three times back to back to the end is a loop there (issue 60, 5: "a two-sentence cycle repeated three times in a
# short chain with an empty answer"); no healthy chain of the 405 above ends in three copies of 20 tokens or more
EMPTY_UNIT, EMPTY_END_REPEATS = 20, 3


@dataclass(frozen=True)
class Loop:
    period: int  # tokens in the repeated unit
    start: int  # first token of the repeated stretch
    length: int  # tokens in the stretch (every copy, the last one possibly cut)
    total: int  # tokens in the text
    unit: str  # the unit's text, as it first appears

    @property
    def repeats(self) -> float:
        return self.length / self.period

    @property
    def at_end(self) -> bool:
        return self.start + self.length >= self.total - 2  # a word cut by max_tokens leaves one token unmatched

    @property
    def share(self) -> float:
        return self.length / max(1, self.total)


def _tokens(text: str, limit: int = MAX_TOKENS) -> tuple[np.ndarray, list[re.Match]]:
    """The last `limit` tokens of `text` as ids (case folded) and as matches (to quote the unit)."""
    matches = list(TOKEN.finditer(text))[-limit:]
    ids: dict[str, int] = {}
    codes = np.fromiter((ids.setdefault(m.group(0).lower(), len(ids)) for m in matches), dtype=np.int64,
                        count=len(matches))
    return codes, matches


def _gram_hashes(codes: np.ndarray) -> np.ndarray:
    """A hash of each GRAM-token window (wrapping uint64 arithmetic: a collision only costs one period checked)."""
    count = len(codes) - GRAM + 1
    hashes = np.zeros(max(0, count), dtype=np.uint64)
    for offset in range(GRAM if count > 0 else 0):
        hashes = hashes * np.uint64(1_000_003) + codes[offset : offset + count].astype(np.uint64)
    return hashes


def _periods(codes: np.ndarray, min_period: int, min_repeats: float) -> list[int]:
    """Every period up to MAX_PERIOD, then the longer ones worth checking: distances at which at least half a unit's
    GRAM-token windows recur (a unit of p tokens repeated c times puts (c - 1) p windows at distance p; prose that
    merely reuses phrases puts a handful at any one distance)."""
    n = len(codes)
    short = list(range(min_period, min(MAX_PERIOD, n // 2) + 1))
    longest = int(n / max(2.0, min_repeats))
    if longest <= MAX_PERIOD:
        return short
    hashes = _gram_hashes(codes)
    order = np.argsort(hashes, kind="stable")  # equal windows stay in text order, so each distance is to the last one
    equal = hashes[order][1:] == hashes[order][:-1]
    distances = (order[1:] - order[:-1])[equal]
    distances = distances[(distances > MAX_PERIOD) & (distances <= longest)]
    if not len(distances):
        return short
    counts = np.bincount(distances)
    periods = np.flatnonzero(counts * 2 >= np.arange(len(counts)))
    return short + [int(p) for p in periods if p > MAX_PERIOD]


def _periods_to_the_end(codes: np.ndarray) -> list[int]:
    """Periods longer than MAX_PERIOD at which the text's last GRAM tokens (or those before a last word cut by
    max_tokens) appeared before: the only long units a loop running to the end can have."""
    n = len(codes)
    if n // LOOP_REPEATS <= MAX_PERIOD:
        return []
    hashes = _gram_hashes(codes)
    found: set[int] = set()
    for last in (len(hashes) - 1, len(hashes) - 2):
        distances = last - np.flatnonzero(hashes[:last] == hashes[last])
        found.update(int(d) for d in distances if MAX_PERIOD < d <= n // LOOP_REPEATS)
    return sorted(found)


def _words(matches: list[re.Match]) -> np.ndarray:
    return np.fromiter((m.group(0).isalpha() for m in matches), dtype=bool, count=len(matches))


def _bridged(same: np.ndarray, words: np.ndarray, period: int) -> np.ndarray:
    """`same` with the gaps of a sampled loop filled: at most MAX_GAP tokens that differ, every one a word on both
    sides (a number or symbol that differs breaks the loop, so an enumeration stays one), between matches of at
    least MIN_FLANK tokens. Only where the differing words sit at two or more offsets of the unit, and of every
    divisor of it: a template whose one slot changes each time (a list checked item by item) is not a loop, and
    neither is two of its copies taken as one unit."""
    miss = ~same
    if not miss.any() or same.sum() < MIN_FLANK * 2:
        return same
    edges = np.diff(np.concatenate(([0], miss.view(np.int8), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    soft = words[period:] & words[:-period]
    hard = np.concatenate(([0], np.cumsum(~soft)))
    before = starts - np.concatenate(([0], ends[:-1]))
    after = np.concatenate((starts[1:], [len(same)])) - ends
    fill = ((ends - starts <= MAX_GAP) & (hard[ends] == hard[starts]) & (before >= MIN_FLANK) & (after >= MIN_FLANK)
            & (starts > 0) & (ends < len(same)))
    if not fill.any():
        return same
    offsets = [int(x) for x in starts[fill]]
    if any(len({o % q for o in offsets}) < 2 for q in range(MIN_FLANK, period + 1) if period % q == 0):
        return same
    bridged = same.copy()
    for start, end in zip(starts[fill], ends[fill]):
        bridged[start:end] = True
    return bridged


def _primitive(unit: np.ndarray) -> int:
    """The shortest period of a unit that is itself a repeat ('a lullaby , a lullaby ,' -> 3)."""
    size = len(unit)
    return next((q for q in range(1, size) if size % q == 0 and np.array_equal(unit[q:], unit[:-q])), size)


def longest_loop(text: str, min_repeats: float = SOFT_REPEATS, min_period: int = 1) -> Loop | None:
    """The longest stretch of `text` that repeats one unit (of at least `min_period` tokens and not itself a repeat of
    a shorter one; a unit without a letter only to the end of the text) back to back at least `min_repeats` times;
    ties go to the shorter unit. None when there is none (pure)."""
    codes, matches = _tokens(text)
    n = len(codes)
    has_letter = np.fromiter((any(ch.isalpha() for ch in m.group(0)) for m in matches), dtype=bool, count=n)
    words = _words(matches)
    best: Loop | None = None
    for period in _periods(codes, min_period, min_repeats):
        same = _bridged(codes[period:] == codes[:-period], words, period)
        if not same.any():
            continue
        edges = np.diff(np.concatenate(([0], same.view(np.int8), [0])))
        starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        runs = ends - starts
        index = int(np.argmax(runs))
        length = int(runs[index]) + period
        if length < min_repeats * period or (best is not None and length <= best.length):
            continue
        start = int(starts[index])
        if _primitive(codes[start : start + period]) < min_period:
            continue
        if not has_letter[start : start + period].any() and (start + length < n - 2 or length < LETTERLESS_REPEATS
                                                               * period):
            continue  # numbers and symbols: a loop only when it runs to the end, LETTERLESS_REPEATS times or more
        unit = text[matches[start].start() : matches[start + period - 1].end()]
        best = Loop(period=period, start=start, length=length, total=n, unit=unit)
    return best


def loop_repeat(sample: Sample) -> Finding | None:
    """A unit of any length repeated back to back (see the module docstring for the thresholds)."""
    if sample.answer_empty and (cycle := tail_loop(sample.output, answer_empty=True)) is not None \
            and cycle.period >= EMPTY_UNIT:
        unit = " ".join(cycle.unit.split())
        return Finding(detector="loop", strength="hard", evidence=f"{clip(unit, 70)!r} ({cycle.period} tokens) "
                       f"x{cycle.repeats:.1f} back to back at the end of the chain, and the answer empty")
    found = longest_loop(sample.output, min_period=LOOP_MIN_PERIOD)
    if found is None or found.length < LOOP_MIN_TOKENS:
        return _loop_at_the_end(sample.output)
    unit = " ".join(found.unit.split())
    evidence = (f"{clip(unit, 70)!r} ({found.period} tokens) x{found.repeats:.1f} back to back, "
                f"{found.length} of {found.total} tokens" + (", to the end" if found.at_end else ""))
    if found.repeats >= LOOP_REPEATS and (found.at_end or found.share >= LOOP_MIN_SHARE):
        return Finding(detector="loop", strength="hard", evidence=evidence)
    return _loop_at_the_end(sample.output) or Finding(detector="loop", strength="soft", evidence=evidence)


def _loop_at_the_end(text: str) -> Finding | None:
    """The chain's end inside a loop that the longest stretch anywhere did not show: a paragraph repeated
    LONG_END_REPEATS times to the budget (a GSM8K answer cut at 2,000 tokens in its fourth copy of a 173-token
    paragraph), or a short unit SHORT_END_REPEATS times or more after at least SHORT_END_PRIOR tokens of other text
    ('Wait, 3150 + 50 is 3200?' eleven times after 5,000 characters of arithmetic). A text that is nothing but its
    refrain (a title line and a song's chorus) is phrase_repeat's to judge (soft). The prior text is counted in
    tokens, not as a share of the text: a loop reported in an issue is cut by its reporter, so its share says more
    about the paste than about the chain."""
    found = tail_loop(text)
    if found is None:
        return None
    if found.period >= LOOP_MIN_PERIOD:
        if found.period < LONG_UNIT:
            return None
    elif found.repeats < SHORT_END_REPEATS or found.total - found.length < SHORT_END_PRIOR:
        return None
    unit = " ".join(found.unit.split())
    return Finding(detector="loop", strength="hard", evidence=f"{clip(unit, 70)!r} ({found.period} tokens) "
                   f"x{found.repeats:.1f} back to back at the end, after {found.total - found.length} tokens")


TAIL_TOKENS = (LOOP_REPEATS + 1) * MAX_PERIOD  # room for the longest unit's copies at the end of a chain
TAIL_CHARS = 40_000  # characters enough for TAIL_TOKENS tokens: only the end of a long chain is tokenised


def tail_loop(text: str, answer_empty: bool = False) -> Loop | None:
    """The longest stretch that reaches the last token (a word cut by max_tokens may leave one unmatched) and repeats
    one unit back to back: LOOP_REPEATS copies over LOOP_MIN_TOKENS tokens (a unit without a letter
    LETTERLESS_REPEATS copies). The end is read first (the last TAIL_TOKENS tokens, every period up to MAX_PERIOD):
    per period, the run of matches reaching the last token, so it costs a few milliseconds on a chain of any length.
    Only where that finds nothing and the chain is longer is the rest read (up to MAX_TOKENS), for the units longer
    than MAX_PERIOD at which its last tokens recur. `total` counts the tokens read. `answer_empty`: the chain's answer
    came back empty, and a unit of EMPTY_UNIT tokens or more counts from EMPTY_END_REPEATS copies (pure)."""
    tail = text[-TAIL_CHARS:]
    codes, matches = _tokens(tail, TAIL_TOKENS)
    found = _loop_to_the_end(tail, codes, matches, range(1, min(MAX_PERIOD, len(codes) // 2) + 1), answer_empty)
    if found is None and (len(tail) < len(text) or len(codes) == TAIL_TOKENS):
        codes, matches = _tokens(text)
        found = _loop_to_the_end(text, codes, matches, _periods_to_the_end(codes), answer_empty)
    return found


def _loop_to_the_end(text: str, codes: np.ndarray, matches: list[re.Match], periods,
                     answer_empty: bool = False) -> Loop | None:
    n = len(codes)
    words = _words(matches)
    best: Loop | None = None
    for period in periods:
        same = codes[period:] == codes[:-period]
        if not same[-1] and not (len(same) > 1 and same[-2]):
            continue  # checked before bridging: a bridge never reaches the last MIN_FLANK tokens
        same = _bridged(same, words, period)
        end = len(same) if same[-1] else len(same) - 1
        misses = np.flatnonzero(~same[:end])
        length = end - (int(misses[-1]) + 1 if len(misses) else 0) + period
        if length < LOOP_MIN_TOKENS or (best is not None and length <= best.length):
            continue
        start = n - length - (0 if same[-1] else 1)
        unit = matches[start : start + period]
        letter = any(ch.isalpha() for m in unit for ch in m.group(0))
        if length >= _end_repeats(period, letter, answer_empty) * period:
            best = Loop(period=period, start=start, length=length, total=n,
                        unit=text[unit[0].start() : unit[-1].end()])
    return best


def _end_repeats(period: int, letter: bool, answer_empty: bool = False) -> int:
    """Copies a unit needs to count as a loop to the end of a chain: a unit without a letter LETTERLESS_REPEATS, a
    paragraph (LONG_UNIT tokens or more) LONG_END_REPEATS, behind an empty answer two short sentences (EMPTY_UNIT)
    EMPTY_END_REPEATS, any other LOOP_REPEATS."""
    if not letter:
        return LETTERLESS_REPEATS
    if period >= LONG_UNIT or (answer_empty and period >= EMPTY_UNIT):
        return LONG_END_REPEATS if period >= LONG_UNIT else EMPTY_END_REPEATS
    return LOOP_REPEATS


def loops_to_the_end(text: str, answer_empty: bool = False) -> bool:
    """A chain (thinking and answer) that ends inside a loop (`tail_loop`). Beside finish_reason "length" this tells
    "cut off while looping" from "cut off while still reasoning" (the quality phase's secondary endpoint; it runs on
    every quality answer). `answer_empty`: the reasoning behind an empty answer, which counts a shorter cycle."""
    return tail_loop(text, answer_empty) is not None
