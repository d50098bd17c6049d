"""Detectors of text that is not language: byte-level BPE markers printed as text, letter salad (no real words and
implausible letter sequences), and words glued together from several writing systems.

The measures read two small tables built by scripts/make_detector_tables.py from permissive offline sources
(data/NOTICE): character bigram log-probabilities per language for the Latin, Cyrillic and Greek scripts (langdetect's
Wikipedia profiles), and an English word list (SCOWL). Thresholds are chosen on the train split of the corpus and
documented in docs/quality.md.
"""

from __future__ import annotations

import gzip
import json
import re
import unicodedata
from functools import lru_cache
from pathlib import Path

from evalharness.phases.detectors.base import (LETTERS, Finding, Sample, clip, is_code_line, prose, script_of,
                                                scripts)

DATA = Path(__file__).resolve().parent / "data"

# GPT-2's byte-to-unicode map prints the bytes that are not printable as U+0100..U+0143: space is Ġ, newline Ċ, tab ĉ.
# Ġ and Ċ are also Maltese capitals and ĉ is Esperanto, but only at the start of a word followed by a letter; glued
# to the previous character, doubled, or standing alone they are markers of a broken detokenizer or vocabulary.
SPACE_MARKERS = "\u0120\u010a\u0109"  # Ġ Ċ ĉ
MARKER = re.compile(r"(?<=[^\s\-'’(\[\"“«])[\u0120\u010a]|[\u0120\u010a\u0109](?=[\u0120\u010a\u0109\s\W]|$)")
# a UTF-8 lead byte printed as Latin-1 followed by a continuation byte printed as a marker: 'âĢĻ' is the byte-level
# form of '’', 'ÃĤ' of 'Â'
MOJIBAKE = re.compile(r"[\u00c2-\u00ef][\u0122-\u0142]")
BPE_MIN_MARKERS = 2


def bpe_markers(sample: Sample) -> Finding | None:
    """Byte-level BPE markers (Ġ Ċ ĉ, and 'âĢ'-style byte pairs) in the text where spaces, newlines or punctuation
    should be: 'ĠTheĠcapitalĠofĠFrance', 'ĊĊ', 'ItâĢĻs'. One marker in a very short answer is enough."""
    text = sample.output
    markers = len(MARKER.findall(text)) + len(MOJIBAKE.findall(text))
    chunks = text.split()
    if chunks and chunks[0][0] in "\u0120\u010a" and (not chunks[0][1:2].islower() or len(chunks) <= 2):
        markers += 1  # 'Ġ4', 'ĠThe', a one-word 'Ġvalley': a Maltese word in a sentence starts Ġ + lowercase
    initial = sum(chunk[0] in "\u0120\u010a" for chunk in chunks)
    if initial >= 3 and initial >= 0.3 * len(chunks):
        markers += initial  # 'The Ġcat Ġsat Ġon': a marker before every word is no Maltese capital
    visible = len("".join(text.split()))
    glued = len(re.findall(r"(?<=[^\s\-'’(\[\"“«])[\u0120\u010a]", text))
    if markers >= BPE_MIN_MARKERS or glued or (markers and visible <= 4 * markers + 4):
        return Finding(detector="bpe_markers", strength="hard",
                       evidence=f"{markers} byte-level BPE markers in {clip(text.strip(), 60)!r}")
    return None


@lru_cache(maxsize=1)
def _bigrams() -> dict[str, dict[str, float]]:
    with gzip.open(DATA / "bigrams.json.gz", "rt", encoding="utf-8") as f:
        return json.load(f)


@lru_cache(maxsize=1)
def _english() -> frozenset[str]:
    with gzip.open(DATA / "english_words.txt.gz", "rt", encoding="utf-8") as f:
        return frozenset(f.read().split())


SPECIAL = str.maketrans({"ł": "l", "ø": "o", "ß": "ss", "æ": "ae", "đ": "d", "ħ": "h", "ı": "i", "œ": "oe",
                         "þ": "th", "ð": "d", "ŀ": "l", "ŧ": "t"})


def fold(word: str) -> str:
    """Lowercase without diacritics, as the tables are built: pruned profiles miss rare accented pairs, and a language
    without a profile (Maltese, Esperanto) still writes plausible folded pairs. Keyboard mash has no accents to lose."""
    word = unicodedata.normalize("NFKD", word.lower().translate(SPECIAL))
    return "".join(ch for ch in word if not unicodedata.combining(ch))


UNSEEN = -9.0  # log-probability of a bigram a language's profile never saw


MAX_WORDS = 400  # enough to judge; keeps a 10,000-word answer fast
IDENTIFIER = re.compile(r"[_\d@(]|://|\w\.\w")  # snake_case, digits, e-mail, calls, URLs, dotted names


LATEX = re.compile(r"\$\$.*?\$\$|\$[^$\n]*\$|\\\(.*?\\\)|\\\[.*?\\\]|\\[A-Za-z]+|\\.|[_^]\{[^}]*\}", re.S)


EMBEDDED_SHARE = 0.3  # CJK letters at least this share of a text's letters: its Latin words are embedded terms


def prose_words(text: str, min_len: int = 2, fold_case: bool = True) -> list[str]:
    """Words of prose in the scripts the tables cover; identifiers (camelCase, snake_case, ALLCAPS, words with digits),
    URLs and inline code are left out, since they are not meant to be dictionary words. In a text written mostly in
    CJK, the Latin words are terms it mentions ('button center等 event tick' in a Chinese account of a Zig file), not
    prose: none are returned (DeepSeek-R1's Chinese reasoning about code was marked letter and word salad, 6 of 24
    healthy chains, before this)."""
    letters = scripts(text)
    if letters and letters["CJK"] >= EMBEDDED_SHARE * sum(letters.values()):
        return []
    text = "\n".join(line for line in prose(text).splitlines() if not is_code_line(line))
    text = re.sub(r"`[^`]*`", " ", text)
    text = LATEX.sub(" ", text)  # maths: '$ab = ba$', '\\frac{x}{y}': short variable names are not reversed words
    chunks = [c for c in text.split()[:MAX_WORDS] if not IDENTIFIER.search(c)]
    out = []
    for word in LETTERS.findall(" ".join(chunks)):
        if len(word) < min_len or (word[1:] != word[1:].lower()):
            continue  # ALLCAPS, camelCase
        if script_of(word[0]) in ("LATIN", "CYRILLIC", "GREEK"):
            out.append(fold(word) if fold_case else word)
    return out


def fit(words: list[str], lang: str) -> float:
    """The mean log P(next letter | letter) of the words under one language's bigrams."""
    table = _bigrams()[lang]
    total, count = 0.0, 0
    for word in words:
        padded = f" {word} "
        for a, b in zip(padded, padded[1:]):
            total += table.get(a + b, UNSEEN)
            count += 1
    return total / count if count else 0.0


def plausibility(words: list[str]) -> tuple[float, str]:
    """The mean log P(next letter | letter) of the words under the language whose bigrams fit them best."""
    if not words:
        return -99.0, ""
    return max(((fit(words, lang), lang) for lang in _bigrams()), key=lambda scored: scored[0])  # first best on ties


def is_english(word: str) -> bool:
    """An English word, or an English word plus a common suffix (folded, as `fold` writes it)."""
    english = _english()
    return word in english or any(word.endswith(s) and word[: -len(s)] in english
                                  for s in ("s", "es", "ed", "ing", "ly"))


def english_share(words: list[str]) -> float:
    """The share of words that are English words (or an English word plus a common suffix)."""
    return sum(map(is_english, words)) / max(1, len(words))


SALAD_MIN_WORDS = 6
SALAD_PLAUSIBILITY = -4.2  # below: letter sequences no covered language writes
SALAD_ENGLISH_SHARE = 0.4  # below, when the letters fit English about as well as any language: English-like non-words
SALAD_ENGLISH_MARGIN = 0.0  # "about as well": English's fit within this many nats per letter of the best


def letter_salad(sample: Sample) -> Finding | None:
    """Keyboard mash or token salad: words whose letter sequences no language in the tables writes, or, in text whose
    letters look English, mostly non-words."""
    words = prose_words(sample.output)
    if len(words) < SALAD_MIN_WORDS:
        return None
    # words the prompt or the reference cell's answer use too are names and terms the user or the reference brought up
    context = frozenset(prose_words(sample.prompt or "") + prose_words(sample.reference_output or ""))
    words_out = [w for w in words if w not in context] if context else words
    if len(words_out) < SALAD_MIN_WORDS:
        return None  # what is left beyond the context's own words is too little to judge
    words = words_out
    score, lang = plausibility(words)
    if score < SALAD_PLAUSIBILITY:
        return Finding(detector="letter_salad", strength="hard",
                       evidence=f"letter bigrams at {score:.2f} nats per letter (best fit {lang}): "
                                f"{clip(' '.join(words), 60)!r}")
    if fit(words, "en") >= score - SALAD_ENGLISH_MARGIN:
        share = english_share(words)
        if share < SALAD_ENGLISH_SHARE:
            return Finding(detector="letter_salad", strength="hard",
                           evidence=f"{share:.0%} of {len(words)} words are English words: "
                                    f"{clip(' '.join(words), 60)!r}")
    return None


# English's commonest words (articles, pronouns, prepositions, auxiliaries): every English sentence is a quarter to a
# half made of them; a sequence of sampled-at-random tokens or a vocabulary read through the wrong ids almost never is.
FUNCTION_WORDS = frozenset(
    "a an the of and or but if to in on at by for with from into about as than then so not no nor is are was were be "
    "been being am do does did has have had will would can could shall should may might must i me my you your he him "
    "his she her it its we us our they them their this that these those there here what which who whom when where why "
    "how all some any each more most other such only also just very too up out over after before while because".split())
SALAD_MIN_TOKENS = 8
SALAD_SHORT_TOKENS = 5  # from here to SALAD_MIN_TOKENS, no function word at all is a soft finding
# structure whose words carry no syntax: HTML tags, list bullets and numbers, 'Key: value' lines, reST directives
TAG = re.compile(r"</?[A-Za-z][^>]*>")
LIST_ITEM = re.compile(r"^\s*([-*+•]|\d+[.)])\s+.*$")
KEY_VALUE = re.compile(r"^\s*[A-Z][\w -]{0,30}:\s+\S")
SALAD_FUNCTION_SHARE = 0.15  # below: English words without English syntax
SALAD_DIVERSITY = 0.6  # distinct / all tokens at least
SALAD_VOCABULARY_SHARE = 0.5  # the words are English words (else the text is in another language)


def word_salad(sample: Sample) -> Finding | None:
    """Real words in no sentence: 'Kennâodille Elsater tutorialsoresis lifestyle languages clamp weaning around reefs
    desktop freely ...', what a model sampled at a far too high temperature, or a vocabulary read through the wrong ids,
    prints. Measured as the share of English function words among the tokens of English-vocabulary prose."""
    # proper nouns are no syntax: a list of names has few function words too ('Leonardo da Vinci, Vincent van Gogh')
    sentences = "\n".join(LIST_ITEM.sub("", TAG.sub(" ", line)) for line in sample.output.splitlines()
                          if not (KEY_VALUE.match(line) or line.lstrip().startswith(".. ")))
    all_words = prose_words(sentences, min_len=1, fold_case=False)
    raw = [w for w in all_words if w.islower() or w.lower() in FUNCTION_WORDS]
    if len(raw) < SALAD_MIN_TOKENS:
        # a few words with no syntax at all is a terse answer or a short list, unless something else is wrong too
        tokens = [fold(w) for w in all_words]
        if SALAD_SHORT_TOKENS <= len(tokens) and not any(t in FUNCTION_WORDS for t in tokens) and _english_like(tokens):
            return Finding(detector="word_salad", strength="soft",
                           evidence=f"{len(tokens)} words, no function word: {clip(' '.join(tokens), 60)!r}")
        return None
    tokens = [fold(w) for w in raw]
    if not _english_like(tokens):
        return None
    share = sum(t in FUNCTION_WORDS for t in tokens) / len(tokens)
    diverse = len(set(tokens)) / len(tokens)  # sampled tokens rarely recur; lists, markup and code repeat their names
    if share < SALAD_FUNCTION_SHARE:
        # repeated names are what lists and markup do, and what salad that loops on itself does: soft
        strength = "hard" if diverse >= SALAD_DIVERSITY else "soft"
        return Finding(detector="word_salad", strength=strength,
                       evidence=f"{share:.0%} of {len(tokens)} words are function words: "
                                f"{clip(' '.join(tokens), 60)!r}")
    return None


def _english_like(tokens: list[str]) -> bool:
    """The words are English vocabulary (else the text is in another language and has its own function words)."""
    words = [t for t in tokens if len(t) >= 2]
    return english_share(words) >= SALAD_VOCABULARY_SHARE or plausibility(words)[1] == "en"


# Scripts that write without spaces, or glue particles to Latin words ("Python을", "使用Python"): Latin next to them
# inside one chunk is ordinary.
UNSPACED = {"CJK", "HANGUL", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN"}
MIXED_MIN_WORDS = 2


def _script_runs(chunk: str) -> list[str]:
    runs: list[tuple[str, int]] = []
    for ch in chunk:
        script = script_of(ch)
        if script is None:
            if runs and unicodedata.category(ch) in ("Mn", "Mc"):
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)  # a vowel sign belongs to its letter's run
            continue
        if runs and runs[-1][0] == script:
            runs[-1] = (script, runs[-1][1] + 1)
        else:
            runs.append((script, 1))
    return [s for s, n in runs if n >= 2]


def mixed_script_words(sample: Sample) -> Finding | None:
    """Words made of pieces of several writing systems: 'ingпредationして', 'ownedशकedness'. A letter from another
    script in a word ('Δx', '5μm') is notation; runs of two letters or more from two scripts that both use spaces, or
    from three scripts, are token salad."""
    mixed, loose = [], []
    chunks = sample.output.split()
    for chunk in chunks:
        distinct = set(_script_runs(chunk))
        if len(distinct) >= 3 or (len(distinct) == 2 and not distinct & UNSPACED):
            mixed.append(chunk)
        elif len(distinct) == 2:
            loose.append(chunk)
    # Latin glued to CJK, Hangul or Thai is ordinary in those languages' text, but not in a text of three scripts
    if len(set(scripts(sample.output))) >= 3 and len(mixed) + len(loose) >= MIXED_MIN_WORDS + 1:
        mixed += loose
    if len(mixed) >= MIXED_MIN_WORDS or (mixed and len(chunks) <= 3):
        return Finding(detector="mixed_script_words", strength="hard",
                       evidence=f"{len(mixed)} words mix writing systems: {clip(' '.join(mixed[:4]), 60)!r}")
    return None
