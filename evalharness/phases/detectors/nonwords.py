"""Words that are not words: text printed backwards, English words glued together without a space, and answers that
say nothing but function words. Measured with the same tables as language.py (bigram profiles, an English word list).

- reversed_text: a broken chat template that reverses its input makes a model echo the prompt backwards
  ('.gnirts a sesrever taht noitcunf a etirW'). Reversing each word of such a line raises both its share of English
  words and its letter plausibility; for written text (any language with a profile) reversing lowers both.
  On the train split of tests/data/detector_corpus.jsonl the gain (share gain + nats per letter gain) is 0.72 to 1.95
  on reversed lines and at most 0.27 on healthy ones (Esperanto): the threshold is 0.5.
- glued_words: a vocabulary read through the wrong ids, or a detokenizer that drops spaces, glues word pieces together
  ('spasmssequences', 'holesreally', 'fibredirect'). Technical English glues words too ('filename', 'timestamp'), so
  this is a soft finding that needs a second one.
- no_content: three or more words, every one a function word ('. the. the The-'): the answer says nothing. Soft, since
  'No, it is not.' is an answer; beside never_stops (a short answer asked for, max_tokens hit) it marks the sample.
"""

from __future__ import annotations

from evalharness.phases.detectors.base import WORD, Finding, Sample, clip
from evalharness.phases.detectors.language import FUNCTION_WORDS, english_share, is_english, plausibility, prose_words

REVERSED_MIN_WORDS = 4  # words of three letters or more on one line
REVERSED_GAIN = 0.5  # English-word share gain + letter plausibility gain (nats per letter) from reading backwards
REVERSAL_ASKED = ("revers", "backward", "mirror", "spell", "rückwärts", "à l'envers", "al revés")


def reversed_text(sample: Sample) -> Finding | None:
    """A line that reads as language only when each word is read backwards. Where the reference cell's answer reads
    backwards too, this is what was asked for; where the prompt asks for reversed or spelled-out text, it may be."""
    for line in sample.output.splitlines():
        words = [w for w in prose_words(line) if len(w) >= 3]
        if len(words) < REVERSED_MIN_WORDS:
            continue
        backwards = [w[::-1] for w in words]
        gain = (english_share(backwards) - english_share(words)) + (plausibility(backwards)[0] - plausibility(words)[0])
        if gain < REVERSED_GAIN:
            continue
        if sample.reference_output and reversed_text(Sample(output=sample.reference_output)):
            return None
        # 'write this backwards' licenses a reversed answer, but a broken template echoes such prompts backwards too
        asked = any(key in (sample.prompt or "").lower() for key in REVERSAL_ASKED)
        return Finding(detector="reversed_text", strength="soft" if asked else "hard",
                       evidence=f"reads as language backwards (gain {gain:.2f}): {clip(line.strip(), 60)!r}")
    return None


GLUED_MIN_LETTERS = 8
GLUED_PART = 4  # both glued words have at least this many letters
GLUED_MIN_WORDS, GLUED_MIN_SHARE = 2, 0.1


def glued_pair(word: str) -> tuple[str, str] | None:
    """(first, second) when a non-word starts with an English word and continues with another: 'holesreally' ->
    ('holes', 'really'). None for English words and for words no split explains (pure)."""
    if len(word) < GLUED_MIN_LETTERS or is_english(word):
        return None
    for cut in range(len(word) - GLUED_PART, GLUED_PART - 1, -1):  # the longest first word first
        if not is_english(word[:cut]):
            continue
        for end in range(len(word), cut + GLUED_PART - 1, -1):
            if is_english(word[cut:end]):
                return word[:cut], word[cut:end]
    return None


def glued_words(sample: Sample) -> Finding | None:
    """Two or more distinct non-words (a tenth of the words at least) made of English words glued together."""
    words = prose_words(sample.output)
    glued = [w for w in words if glued_pair(w)]
    distinct = sorted(set(glued))
    if len(distinct) >= GLUED_MIN_WORDS and len(glued) >= GLUED_MIN_SHARE * len(words):
        shown = ", ".join("+".join(glued_pair(w) or (w,)) for w in distinct[:4])
        return Finding(detector="glued_words", strength="soft",
                       evidence=f"{len(glued)} of {len(words)} words are words glued together: {clip(shown, 60)}")
    return None


NO_CONTENT_MIN_WORDS = 3


def no_content(sample: Sample) -> Finding | None:
    """Three or more words and every one of them a function word: no name, number or content word."""
    words = [w.lower() for w in WORD.findall(sample.output)]
    if len(words) >= NO_CONTENT_MIN_WORDS and all(w in FUNCTION_WORDS for w in words):
        return Finding(detector="no_content", strength="soft",
                       evidence=f"only function words: {clip(' '.join(sample.output.split()), 60)!r}")
    return None
