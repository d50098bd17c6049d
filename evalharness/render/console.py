"""What `run` and `report` print at their end, after the verdict box (render/verdict.py verdict_plain): the cells'
status table, one row a cell by its short name (render/names.py): status, minutes, and why a cell did not finish
ok, cut to fit a terminal. Plain text (tabulate's "simple"); untrusted text (a crash's reason quotes the engine's
log) reaches a terminal, so control characters are dropped. Pure; imports records and render only.
"""

from __future__ import annotations

import re

from tabulate import tabulate

from evalharness.records.run import RunResult
from evalharness.render.names import short_names

REASON_WIDTH = 70
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]+")


def _clean(text: str, width: int) -> str:
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def status_table(run: RunResult) -> list[str]:
    """The cells in the run's order: name, status, minutes, reason (not run: "pending"); [] without cells."""
    if not run.cell_order:
        return []
    names = short_names(run)
    rows = []
    for cid in run.cell_order:
        cell = run.cells.get(cid)
        name = names.get(cid, cid) + (" (reference)" if cid == run.reference and names.get(cid) != "reference" else "")
        if cell is None:
            rows.append([_clean(name, 40), "pending", "", ""])
            continue
        rows.append([_clean(name, 40), cell.status, f"{cell.duration_s / 60:.1f}",
                     _clean(cell.reason or "", REASON_WIDTH) if cell.status != "ok" else ""])
    return tabulate(rows, headers=["cell", "status", "min", "why"], tablefmt="simple").splitlines()
