"""Every measure's comparison of a cell with the reference (issue 59): analysis/drift.py calls each on the two
sides' records (or, where its figures are its files', on the two cells' folders) and keeps the change by the
measure's key (CellDrift.measures); and of a measure that compares the run's cells as one family (its spec's
`across`), that comparison, kept by its key in RunResult.measures."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from typing import Any, Mapping

from pydantic import BaseModel

from evalharness.measures.catalog import MEASURES, role_module
from evalharness.measures.specs import BY_KEY, MeasureSpec, read
from evalharness.records.io import ResultsError

Compare = Callable[[Any, Any, float], BaseModel | None]
COMPARISONS: tuple[tuple[MeasureSpec, Compare], ...] = tuple(
    (BY_KEY[key], import_module(role_module(key, "compare")).compare) for key in MEASURES)
# measures whose figures are computed from the two cells' folders, not their records (compare.py `compare_folders`)
CompareFolders = Callable[[Path, Path, bool], BaseModel | None]
FOLDER_COMPARISONS: tuple[tuple[MeasureSpec, CompareFolders], ...] = tuple(
    (BY_KEY[key], found) for key in MEASURES
    if (found := getattr(import_module(role_module(key, "compare")), "compare_folders", None)) is not None)
CompareRun = Callable[[Any, Path, Mapping[str, Any] | None], BaseModel | None]
RUN_COMPARISONS: tuple[tuple[MeasureSpec, CompareRun], ...] = tuple(
    (BY_KEY[key], import_module(role_module(key, "compare")).compare_run) for key in MEASURES
    if BY_KEY[key].across is not None)


def changes(reference: Mapping[str, Any], cell: Mapping[str, Any], alpha: float) -> dict[str, dict]:
    """Each measure both sides recorded, compared: key -> the change as results.json keeps it."""
    out = {}
    for spec, compare in COMPARISONS:
        ours, theirs = read(reference, spec.key, spec.record), read(cell, spec.key, spec.record)
        if ours is not None and theirs is not None:
            change = compare(ours, theirs, alpha)
            if change is not None:
                out[spec.key] = change.model_dump(mode="json")
    return out


def folder_changes(ref_folder: Path, cell_folder: Path, same_run: bool) -> dict[str, dict]:
    """Each measure compared from the two cells' folders (`same_run`: the reference is this run's, not another
    run's): key -> the change as results.json keeps it; a measure the cell has no files of is left out."""
    out = {}
    for spec, compare_folders in FOLDER_COMPARISONS:
        change = compare_folders(ref_folder, cell_folder, same_run)
        if change is not None:
            out[spec.key] = change.model_dump(mode="json")
    return out


def flagged(drift_measures: Mapping[str, Any] | None) -> list[tuple[MeasureSpec, BaseModel]]:
    """The measures whose change flags the cell, with their change (for the decision's qualifiers)."""
    found = []
    for spec, _ in COMPARISONS:
        change = read(drift_measures, spec.key, spec.change)
        if change is not None and getattr(change, "flagged", False):
            found.append((spec, change))
    return found


def run_changes(run: Any, out_dir: Path, gate: Mapping[str, Any] | None) -> tuple[dict[str, dict], list[str]]:
    """Each run-wide comparison: key -> what results.json keeps (a measure with nothing to compare is left out),
    and a note for each that could not be made (a damaged sample file must not stop the others)."""
    out: dict[str, dict] = {}
    notes: list[str] = []
    for spec, compare_run in RUN_COMPARISONS:
        try:
            found = compare_run(run, out_dir, gate)
        except (OSError, ValueError, ResultsError) as exc:
            notes.append(f"the {spec.title} check could not be compared across the run: {exc}")
            continue
        if found is not None:
            out[spec.key] = found.model_dump(mode="json")
    return out, notes
