"""The calls-modes check of a cell (issue 60, 2): per task, each mode against the mode it differs from by one thing
(streamed against not at one concurrency and under load; under load against alone, streamed and not), paired per
case over the cases answered in both, judged by the changed-answers rule (analysis/changed.py `changed_more`: the
share of answers that are not valid calls credibly higher at the gate's alpha, and by at least 2 points). The cell
is judged against itself: a mode's own other mode is the floor, as the issue asks; the reference's figures for the
same pairs are kept beside it. Reads records only."""

from __future__ import annotations

from evalharness.analysis.changed import changed_more
from evalharness.measures.calls.spec import PAIRS, CallsModesChange, CallsModesRecord, ModeChange, TaskModes


def mode_changes(record: CallsModesRecord, alpha: float) -> list[ModeChange]:
    """Every task's pairs of modes, judged."""
    out = []
    for task in record.tasks:
        for base, mode in PAIRS:
            change = _pair(task, base, mode, alpha)
            if change is not None:
                out.append(change)
    return out


def _pair(task: TaskModes, base: str, mode: str, alpha: float) -> ModeChange | None:
    both = [c for c in task.cases if c.outcomes.get(base) not in (None, "error")
            and c.outcomes.get(mode) not in (None, "error")]
    if not both:
        return None
    before = [c.outcomes[base] != "valid" for c in both]
    after = [c.outcomes[mode] != "valid" for c in both]
    invalid_base, invalid_mode, p_value, flagged = changed_more(before, after, alpha)
    return ModeChange(task=task.task, base=base, mode=mode, cases=len(both), base_valid=1 - invalid_base,
                      mode_valid=1 - invalid_mode, p_value=p_value, flagged=flagged)


def compare(reference: CallsModesRecord, cell: CallsModesRecord, alpha: float) -> CallsModesChange | None:
    """The cell's pairs, judged, and the reference's beside them; None when the cell measured nothing."""
    changes = mode_changes(cell, alpha)
    if not changes:
        return None
    return CallsModesChange(changes=changes, reference=mode_changes(reference, alpha),
                            flagged=any(c.flagged for c in changes))
