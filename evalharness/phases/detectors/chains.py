"""Garbage that keeps the shape of a reasoning chain (issue 60, 5): what users of reasoning models found passing every
other detector in 2026, each a pure function over one output like the rest of the package's detectors.

- `reasoning_salad`: word salad in the shape of thinking, discourse markers ("Hmm", "Wait", "Let's") between
  fragments with no syntax. word_salad judges the text's function words as a whole, and the markers and the odd
  fluent clause lift that share over its line; here each fragment between markers and sentence ends is judged on its
  own, and the chain is salad where most fragments long enough to have syntax have none.
- `foreign_fragment`: a run of words in a script neither the rest of the text nor the prompt uses, dropped into
  fluent text (a Chinese or Cyrillic phrase in the middle of English thinking). Latin is never foreign (technical
  terms and names are Latin in every language's text), nor is anything quoted or in brackets, nor any script where
  the prompt names a language.
- `template_token`: a chat template's special token in the text (`<|im_start|>`, `<|eot_id|>`, `<｜end▁of▁sentence｜>`,
  `[INST]`, a second `<think>`): hard where a new turn follows it (a role name) or the text starts again after it
  (its next words already said before it), soft alone. A token at the very end is a leaked stop token, not judged
  here; code and inline code are not read.
- The fourth shape, a short cycle of sentences behind which the answer is empty, is loops.py's (`answer_empty`).

Precision: on the detector corpus (tests/data/detector_corpus*.jsonl, 794 labelled outputs, 211 healthy) none of
these marks a healthy output (tests/unit/phases/detectors/test_detector_chains.py). Imports only phases/detectors.
"""

from __future__ import annotations

import re

from evalharness.phases.detectors.base import Finding, Sample, clip, script_of, scripts
from evalharness.phases.detectors.classic import LANGUAGE_WORDS
from evalharness.phases.detectors.language import FUNCTION_WORDS, LIST_ITEM, TAG, english_share, fold

CODE = re.compile(r"```.*?(```|$)|`[^`\n]*`", re.S)  # fenced and inline code: a template token there is quoted

# --- reasoning_salad --------------------------------------------------------------------------------------------
MARKERS = re.compile(r"\b(?:hmm+|hm+|wait|let'?s|let me|okay|ok|alternatively|actually|oh)\b"
                     r"[\s,.!?:;…-]*", re.I)
SENTENCE_END = re.compile(r"[.!?;…\n]+")
FRAGMENT_WORDS = 5  # a fragment shorter than this may lack syntax and be healthy ("Wait, 12 squared.")
FRAGMENT_FUNCTION_SHARE = 0.12  # below: English words without English syntax (word_salad's line is 0.15 over a text)
SALAD_FRAGMENTS = 4  # fragments without syntax, at least
SALAD_FRAGMENT_SHARE = 0.5  # of the fragments long enough to judge
SALAD_MARKERS = 3  # discourse markers at least: the shape of thinking


def _fragments(text: str) -> tuple[list[list[str]], int]:
    """The text's fragments between sentence ends and discourse markers (markers dropped), each as its lower-case
    words of letters only, and how many markers there were."""
    kept = "\n".join(LIST_ITEM.sub("", TAG.sub(" ", line)) for line in CODE.sub(" ", text).splitlines())
    markers = len(MARKERS.findall(kept))
    fragments = []
    for sentence in SENTENCE_END.split(kept):
        for piece in MARKERS.split(sentence):
            words = [w for w in re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", piece) if w.islower() or
                     w.lower() in FUNCTION_WORDS]
            if words:
                fragments.append([fold(w) for w in words])
    return fragments, markers


def reasoning_salad(sample: Sample) -> Finding | None:
    """Discourse markers between fragments with no syntax (see the module docstring)."""
    fragments, markers = _fragments(sample.output)
    if markers < SALAD_MARKERS:
        return None
    judged = [f for f in fragments if len(f) >= FRAGMENT_WORDS]
    if not judged or english_share([w for f in judged for w in f if len(w) >= 2]) < 0.5:
        return None  # not English words: another language has its own function words
    salad = [f for f in judged if sum(w in FUNCTION_WORDS for w in f) / len(f) < FRAGMENT_FUNCTION_SHARE]
    if len(salad) < SALAD_FRAGMENTS or len(salad) / len(judged) < SALAD_FRAGMENT_SHARE:
        return None
    example = " ".join(salad[0])
    return Finding(detector="reasoning_salad", strength="hard",
                   evidence=f"{len(salad)} of {len(judged)} fragments between {markers} discourse markers have no "
                            f"syntax: {clip(example, 60)!r}")


# --- foreign_fragment -------------------------------------------------------------------------------------------
QUOTED = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|«[^»\n]*»|「[^」\n]*」|『[^』\n]*』|\([^)\n]*\)|（[^）\n]*）|\[[^\]\n]*\]"
                    r"|'[^'\n]{1,80}'")
UNSPACED = {"CJK", "HANGUL", "THAI", "LAO", "KHMER", "MYANMAR", "TIBETAN"}
FOREIGN_WORDS = 3  # consecutive words of a spaced script
FOREIGN_LETTERS = 4  # letters of an unspaced one (a Chinese phrase is four characters or more)
FOREIGN_CONTEXT = 30  # letters of the text's own script on each side: dropped into fluent text
FOREIGN_DOMINANCE = 0.8  # the text's own script holds at least this share of its letters


def _chunk_script(chunk: str) -> str | None:
    """The one script of a chunk's letters; None for no letters, one letter (a Greek letter is notation), or
    several scripts (a word glued to another script's is code-switching, mixed_script_words' to judge: QwQ-32B's
    healthy "per生长周期" in English thinking)."""
    counts = scripts(chunk)
    if len(counts) != 1:
        return None
    script, n = counts.most_common(1)[0]
    return script if n >= 2 or script in UNSPACED else None


def foreign_fragment(sample: Sample) -> Finding | None:
    """A run of words in a script foreign to the text and the prompt, inside the text (see the module docstring)."""
    if sample.prompt and LANGUAGE_WORDS.search(sample.prompt):
        return None
    text = QUOTED.sub(" ", CODE.sub(" ", sample.output))
    letters = scripts(text)
    total = sum(letters.values())
    if total < 2 * FOREIGN_CONTEXT:
        return None
    own, n_own = letters.most_common(1)[0]
    if n_own / total < FOREIGN_DOMINANCE:
        return None
    asked = set(scripts(sample.prompt or ""))
    chunks = [(c, _chunk_script(c)) for c in text.split()]
    i = 0
    while i < len(chunks):
        script = chunks[i][1]
        if script is None or script in (own, "LATIN", "OTHER") or script in asked:
            i += 1
            continue
        j = i
        while j < len(chunks) and chunks[j][1] in (script, None):
            j += 1
        run = [c for c, s in chunks[i:j] if s == script]
        size = sum(1 for c in run for ch in c if script_of(ch) == script)
        before = sum(1 for c, _ in chunks[:i] for ch in c if script_of(ch) == own)
        after = sum(1 for c, _ in chunks[j:] for ch in c if script_of(ch) == own)
        big = size >= FOREIGN_LETTERS if script in UNSPACED else len(run) >= FOREIGN_WORDS
        if big and before >= FOREIGN_CONTEXT and after >= FOREIGN_CONTEXT:
            return Finding(detector="foreign_fragment", strength="hard",
                           evidence=f"{script} inside {own} text the prompt does not ask for: "
                                    f"{clip(' '.join(run), 50)!r}")
        i = j
    return None


# --- template_token ---------------------------------------------------------------------------------------------
SPECIAL = re.compile(r"<\|([\w▁.\- ]{1,40})\|>|<｜([^｜<>\n]{1,40})｜>|(\[/?INST\])|<((?:start|end)_of_turn)>|(</?think>)")
# the tokens that end a turn or the text, or begin one: text after them is a new turn or an engine that did not stop.
# A model's own section markers (Sky-T1's <|begin_of_thought|>, <|end_of_solution|>) are its format, not these
TURN_TOKENS = {"im_start", "im_end", "im_sep", "endoftext", "end_of_text", "eot_id", "eot", "eom_id",
               "start_header_id", "end_header_id", "begin_of_text", "user", "assistant", "system", "end", "eos", "bos",
               "end_of_sentence", "begin_of_sentence", "start_of_turn", "end_of_turn", "[inst]", "[/inst]"}
ROLE = re.compile(r"\s*(?:<\|[\w ]{1,20}\|>\s*)*(assistant|user|system|model)\b", re.I)
RESTART_WORDS = 8  # the words after the token, said before it: the text starts again


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def template_token(sample: Sample) -> Finding | None:
    """A chat template's special token inside the text (see the module docstring)."""
    text = CODE.sub(lambda m: " " * len(m.group(0)), sample.output)
    for match in SPECIAL.finditer(text):
        token, before, after = match.group(0), text[: match.start()], text[match.end():]
        name = next(g for g in match.groups() if g).strip().lower().replace("▁", "_")
        if not match.group(5) and name not in TURN_TOKENS:
            continue
        if len(_words(after)) < 2:
            continue  # at the end: a stop token printed, the text itself whole
        if token == "</think>" and "</think>" not in before:
            continue  # the end of thinking where no parser took it off: ordinary (a second one is not)
        if token == "<think>" and len(before.strip()) < 20:
            continue  # thinking opened at the start
        if ROLE.match(after):
            return Finding(detector="template_token", strength="hard",
                           evidence=f"{token} mid-text, then a new turn: {clip(after.strip(), 50)!r}")
        said, following = _words(before), _words(after)[:RESTART_WORDS]
        if len(following) == RESTART_WORDS and any(said[k : k + RESTART_WORDS] == following
                                                   for k in range(len(said) - RESTART_WORDS + 1)):
            return Finding(detector="template_token", strength="hard",
                           evidence=f"{token} mid-text, then the text starts again: {clip(' '.join(following), 50)!r}")
        return Finding(detector="template_token", strength="soft", evidence=f"{token} mid-text")
    return None
