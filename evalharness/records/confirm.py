"""The names of a run's second stage (issue 61): a confirmation launch's id and folder. Its record (which cells
exploration handed to confirmation, each try's launches and their results) is records/run.py's ConfirmationRecord,
beside the CellResult it holds; the decision is recomputed from it (analysis/confirmation.py), never stored. Imports
nothing.
"""

from __future__ import annotations

CONFIRM_SUFFIX = ".confirm"


def launch_id(cell: str, attempt: int, launch: int) -> str:
    """The id (and folder) of one confirmation launch: '<cell>.confirm-<try>-<launch>'."""
    return f"{cell}{CONFIRM_SUFFIX}-{attempt}-{launch}"
