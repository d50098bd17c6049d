"""A cell's folder across runs: which settings measured what it holds (cells/<id>/settings.json), and, before a cell
runs again, setting aside a folder that other settings left, so nothing of it is mixed into the new measurement.

What a folder holds is only valid for the settings that produced it: its server.log (crash classification, resolved
settings and warnings are read from the whole log), the lm-eval request cache under quality/<task>/ (keyed on the
request text only: a re-run cell would get the previous configuration's answers), probes.jsonl and
distribution.jsonl. A cell re-run under the same settings (an interrupted cell on `--resume`) keeps its folder, whose
request cache then resumes its tasks; its server.log is started afresh at launch (serving/server.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from evalharness.matrix.schema import Cell
from evalharness.records.io import atomic_write_text

MARKER = "settings.json"


def mark(cell_dir: Path, cell: Cell) -> None:
    """Record, before anything is written in it, which settings the folder's contents belong to."""
    atomic_write_text(cell_dir / MARKER, json.dumps({"cell": cell.id, "settings_hash": cell.settings_hash}) + "\n")


def folder_settings(cell_dir: Path, recorded: str | None) -> str | None:
    """The settings hash a cell folder was measured with: its marker's, else the one results.json recorded for the
    cell (folders from before the marker existed), else None (unknown)."""
    try:
        value = json.loads((cell_dir / MARKER).read_text(encoding="utf-8")).get("settings_hash")
        return value if isinstance(value, str) else recorded
    except (OSError, ValueError, AttributeError):
        return recorded


def set_aside_stale(cells_dir: Path, cell: Cell, recorded: str | None) -> str | None:
    """Before `cell` runs: when its folder holds what other (or unknown) settings measured, rename it to
    `<id>.stale-<old hash>` (`-2`, `-3`, ... when that name is taken) so the cell starts from an empty folder.
    Returns a note saying so, or None when there was nothing to set aside."""
    folder = cells_dir / cell.id
    if not folder.is_dir():
        return None
    old = folder_settings(folder, recorded)
    if old == cell.settings_hash:
        return None
    name = f"{cell.id}.stale-{old or 'unknown'}"
    target, n = cells_dir / name, 2
    while target.exists():
        target, n = cells_dir / f"{name}-{n}", n + 1
    folder.rename(target)
    return (f"cells/{cell.id} held what {'other' if old else 'unknown'} settings measured ({old or 'no record'}; "
            f"now {cell.settings_hash}): kept aside as cells/{target.name}, and the cell runs from an empty folder")
