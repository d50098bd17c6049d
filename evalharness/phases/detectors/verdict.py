"""The per-sample verdict over all detectors, the same answer to many prompts, and the cell's verdict against the
reference cell's."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from evalharness.phases.detectors.base import Finding, Sample, SampleVerdict, clip
from evalharness.phases.detectors.chains import foreign_fragment, reasoning_salad, template_token
from evalharness.phases.detectors.classic import (bad_characters, disjoint_from_reference, empty_output, never_stops,
                                                  script_mismatch, symbol_soup, torn_separators)
from evalharness.phases.detectors.loops import loop_repeat
from evalharness.phases.detectors.language import bpe_markers, letter_salad, mixed_script_words, word_salad
from evalharness.phases.detectors.nonwords import glued_words, no_content, reversed_text
from evalharness.phases.detectors.repetition import (char_run, glued_repeat, low_compression, phrase_repeat,
                                                     word_repeat)

DETECTORS: tuple[Callable[[Sample], Finding | None], ...] = (
    empty_output, char_run, word_repeat, glued_repeat, symbol_soup, torn_separators, bad_characters, bpe_markers,
    script_mismatch, mixed_script_words, letter_salad, word_salad, reversed_text, glued_words, no_content,
    loop_repeat, phrase_repeat, low_compression, never_stops, disjoint_from_reference, reasoning_salad,
    foreign_fragment, template_token,
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
            evidence = f"the same answer to {len(indices)} of {len(outputs)} different prompts: {clip(normal, 60)!r}"
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
        reason = (f"{flagged}/{total} probe outputs marked as garbage (reference: "
                  f"{sum(reference_flags)}/{len(reference_flags)})")
    else:
        garbage = share >= min_share
        reason = f"{flagged}/{total} probe outputs marked as garbage"
    return CellVerdict(garbage, flagged, total, reason)
