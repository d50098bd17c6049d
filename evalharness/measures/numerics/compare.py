"""The numerics check of a cell against the reference (issue 26): both directions of the per-token KL divergence
and the coarse top-k figures, computed from the two cells' files by analysis/numerics.py's estimators. Its records
hold no figures (how each side asked), so `compare` has nothing to add; `compare_folders` is the comparison, which
analysis/drift.py asks of every measure that has one (measures/comparisons.py `folder_changes`)."""

from __future__ import annotations

from pathlib import Path

from evalharness.analysis.numerics import compare_distributions
from evalharness.measures.numerics.spec import NumericsRecord
from evalharness.records.cellfiles import load_scored
from evalharness.records.drift import DistributionDrift


def compare(reference: NumericsRecord, cell: NumericsRecord, alpha: float) -> None:
    """Nothing from the records alone: the figures are the files' (compare_folders)."""
    return None


def compare_folders(ref_folder: Path, cell_folder: Path, same_run: bool = True) -> DistributionDrift | None:
    """Both directions and the coarse top-k figures from the two cells' folders; None when the cell never ran the
    check (it crashed, or served garbage and stopped at its probes, or the check is off): nothing to report, not an
    unavailable figure. Across two runs (`compare`) only the forward direction means anything: a cell's
    reverse_scored.jsonl holds its own run's reference's scores."""
    ref_echo = load_scored(ref_folder / "distribution.jsonl")
    cell_echo = load_scored(cell_folder / "distribution.jsonl")
    if not cell_echo:
        return None
    out = compare_distributions(ref_echo, cell_echo, load_scored(cell_folder / "own_samples.jsonl"),
                                load_scored(cell_folder / "reverse_scored.jsonl"),
                                load_scored(ref_folder / "contexts.jsonl"))
    if not same_run:
        for figures in (out, *out.by_bucket.values()):
            figures.reverse = None
    return out
