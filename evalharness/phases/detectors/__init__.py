"""Garbage detectors: small pure functions over one model output, each returning its evidence or None, and the
per-sample and per-cell verdicts built from them. Imports only phases (itself) and nothing outside the package.

Precision matters as much as recall: code, tables, lists, matrices, long numbers, poetry with refrains, laughter,
non-English answers and terse answers are not garbage. So detectors come in two strengths. A *hard* finding alone marks
a sample (a run of "!!!!!!!!", symbol soup, replacement characters, byte-level BPE markers, letter salad, an empty
answer, one token or one unit repeated without end). *Soft* findings (a repeated phrase, very low compression ratio,
never stopping, sharing no word with the reference's answer) are things healthy small models do too, so a sample needs
two of them. The cell's verdict then compares its share of marked samples with the reference cell's, because a 135M
model loops on some prompts in every configuration.

Modules: base (sample, finding, text structure), repetition, loops (a unit of any length repeated back to back),
language (BPE markers, letter salad, mixed scripts), nonwords (reversed text, glued words, no content), classic
(symbols, characters, empty, never stops, script mismatch, reference), chains (garbage in the shape of a
reasoning chain: salad between discourse markers, a foreign fragment, a template token), verdict (judge,
same_answer, cells).
"""

from evalharness.phases.detectors.base import Finding, Sample, SampleVerdict
from evalharness.phases.detectors.verdict import DETECTORS, CellVerdict, cell_verdict, judge, same_answer

__all__ = ["DETECTORS", "CellVerdict", "Finding", "Sample", "SampleVerdict", "cell_verdict", "judge", "same_answer"]
