"""The run's second stage (issue 61): after every cell is explored, the finalists exploration ranked
(analysis/confirmation.py) are tried in order; a try launches the reference and the finalist again, interleaved
(reference, finalist, reference, finalist, ...), each launch measuring only the operating point's scenario
(`confirm.speed_repeats` repeats) and the confirmed tasks on seeds exploration did not use; the next finalist is tried
only when one is not confirmed. Every finished launch is saved before the next starts, so `--resume` never repeats
one. Owns the launches' matrix and cells; the decision is analysis/confirm.py's.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

from evalharness.analysis.confirm import confirm_tasks, finalists, try_level
from evalharness.analysis.confirmation import explored_candidates, operating_step, refresh_confirmation
from evalharness.analysis.decision import decide
from evalharness.analysis.equivalence import DEFAULT_ALPHA
from evalharness.matrix.schema import Cell, Matrix
from evalharness.measures.specs import SPECS
from evalharness.records.confirm import launch_id
from evalharness.records.run import CellResult, ConfirmationRecord, ConfirmTry, RunResult
from evalharness.runner.cell import run_cell
from evalharness.runner.progress import Progress
from evalharness.runner.signals import INTERRUPT
from evalharness.serving.engines import ENGINES

# a launch's seeds start here (times the try, plus a thousand times the launch) past the matrix's own seed:
# exploration's repeats use seed .. seed + 999 (quality.repeats is at most 1000), so no answer is drawn twice
SEED_STRIDE = 10_000


def side_repeats(matrix: Matrix, task: str, role: str) -> int:
    """The answers to each document of `task` that the side `role` ('reference' or 'finalist') gives over a try's
    launches: the task's own confirmation repeats, else the section's."""
    confirm = matrix.confirm
    assert confirm is not None
    return confirm.task_repeats.get(task) or (
        (confirm.reference_repeats or confirm.repeats) if role == "reference" else confirm.repeats)


def launch_share(matrix: Matrix, task: str, role: str) -> int:
    """The answers to each document of `task` one launch of `role` gives: the side's repeats spread over its
    launches (one where the side answers each document once: its documents are spread instead, document_slice)."""
    confirm = matrix.confirm
    assert confirm is not None
    return math.ceil(side_repeats(matrix, task, role) / confirm.launches)


def document_slice(documents: int, launches: int, launch: int) -> tuple[int, int]:
    """(offset, count) of the documents launch `launch` (1-based) answers where a side answers each of `documents`
    once over `launches` launches: consecutive slices in the seeded order, as even as they divide. Greedy answers
    repeat, so a second answer to a document adds nothing a new document would not: one answer each, spread over
    the launches, costs a launch a third of the answers at three launches (the demo's four tasks: 96 documents in
    three launches of 32 instead of 96 in each)."""
    base, extra = divmod(documents, launches)
    offset = (launch - 1) * base + min(launch - 1, extra)
    return offset, base + (1 if launch - 1 < extra else 0)


def launch_matrix(matrix: Matrix, scenario: str | None, tasks: list[str], role: str, attempt: int,
                  launch: int) -> Matrix:
    """What one confirmation launch measures: the operating point's scenario at `confirm.speed_repeats` fixed
    repeats and the confirmed tasks at the side's share of answers a document (launch_share) on seeds of its own and
    on documents exploration did not answer (`confirm.documents`, past exploration's in the seeded order; a side
    answering each document once takes its slice of them, document_slice); no
    probes, numerics check, batching, length or measures' phases (exploration measured them), no second stage."""
    confirm = matrix.confirm
    assert confirm is not None
    data = matrix.model_dump(mode="json")
    data["confirm"] = None
    for section in ("probes", "length", *(spec.key for spec in SPECS)):
        data[section]["enabled"] = False
    data["report"].update(operating_point=None, throughput_scenario=None)
    steps = {s.name: s for s in matrix.throughput.all_scenarios()} if matrix.throughput else {}
    if scenario in steps:
        chosen = steps[scenario].model_dump(mode="json")
        chosen["repeats"] = confirm.speed_repeats
        data["throughput"] = {"scenarios": [chosen], "watch_host": matrix.throughput.watch_host}
    else:
        data["throughput"] = None
    if matrix.quality is not None and tasks:
        quality = data["quality"]
        quality.update(tasks=tasks, full_quality=True, budget_hours=None,
                       seed=matrix.quality.seed + SEED_STRIDE * attempt + 1_000 * launch)
        for task in tasks:  # the launch's share, not the task's exploration size
            share = launch_share(matrix, task, role)
            own = quality["task_settings"].setdefault(task, {})
            own.update(repeats=share, reference_repeats=share)
            explored = matrix.quality.settings_for(task)["limit"]  # documents exploration answered (None: all)
            documents = confirm.documents_for(task) or explored
            skip = explored or 0  # past exploration's documents in one seeded order (none past "all")
            if side_repeats(matrix, task, role) == 1 and documents and documents >= confirm.launches > 1:
                offset, count = document_slice(documents, confirm.launches, launch)  # each document once a side
                own.update(skip=skip + offset, limit=count)
            elif documents:  # every launch of a try answers the same documents
                own.update(limit=documents, **({"skip": skip} if skip else {}))
        quality["task_settings"] = {t: v for t, v in quality["task_settings"].items() if t in tasks}
        quality["data"] = {t: v for t, v in quality["data"].items() if t in tasks}
    else:
        data["quality"] = None
    return Matrix.model_validate(data)


def launch_cell(base: Cell, attempt: int, launch: int) -> Cell:
    """A confirmation launch of a cell: its own settings under its own id and folder."""
    return base.model_copy(update={"id": launch_id(base.id, attempt, launch)})


def start_record(run: RunResult, tries: int) -> ConfirmationRecord:
    """What exploration hands to confirmation: every candidate's speed-up and why it is out, and the finalists in
    order."""
    candidates = explored_candidates(run)
    return ConfirmationRecord(explored={e.cell: round(e.ratio, 4) for e in candidates if math.isfinite(e.ratio)},
                              ruled_out={e.cell: e.ruled_out for e in candidates if e.ruled_out},
                              order=[e.cell for e in finalists(candidates, tries)])


Launch = Callable[[Matrix, Cell], CellResult]  # one confirmation launch, served and measured, its record back


def run_confirmation(matrix: Matrix, run: RunResult, reference: Cell, cells: dict[str, Cell], out_dir: Path,
                     progress: Progress, save: Callable[[], None], gpu_baseline: list[int] | None,
                     launch: Launch | None = None) -> None:
    """The second stage, resumed where `run.confirmation` left it. `save` writes results.json (and the report);
    `launch` serves one launch (default: here, runner/cell.py; a Ray run pins every launch to one node)."""
    if launch is None:
        def launch(launch_matrix: Matrix, cell: Cell) -> CellResult:
            return run_cell(launch_matrix, cell, ENGINES[cell.engine], out_dir, progress, reference.id, gpu_baseline)

    confirm = matrix.confirm
    if confirm is None or not confirm.enabled or run.confirmation is not None and run.confirmation.complete:
        return
    if run.confirmation is None:
        with INTERRUPT.deferred():
            run.confirmation = start_record(run, confirm.tries)
            save()
    record = run.confirmation
    if not record.order:
        progress.message("confirmation: no finalist (every cell ruled out or not estimated faster than the floor)")
    alpha = float((matrix.gate.alpha if matrix.gate and matrix.gate.alpha else None) or DEFAULT_ALPHA)
    scenario = operating_step(run)
    tasks = confirm_tasks(run.meta.matrix)
    for attempt, finalist in enumerate(record.order, 1):
        if attempt > len(record.tries):
            record.tries.append(ConfirmTry(
                finalist=finalist, level=try_level(alpha, confirm.tries), scenario=scenario,
                reference_launches=[launch_id(reference.id, attempt, k) for k in range(1, confirm.launches + 1)],
                finalist_launches=[launch_id(finalist, attempt, k) for k in range(1, confirm.launches + 1)]))
        this = record.tries[attempt - 1]
        progress.total = 2 * confirm.launches  # "[n/total]" counts the try's launches, no longer the matrix's cells
        for k in range(1, confirm.launches + 1):
            for side, (role, base) in enumerate((("reference", reference), ("finalist", cells[finalist]))):
                cell = launch_cell(base, attempt, k)
                if cell.id in record.launches:
                    continue
                progress.message(f"confirmation, try {attempt} ({finalist}): {role} launch {k} of "
                                 f"{confirm.launches}")
                progress.cell(2 * (k - 1) + side + 1, cell.id)
                result = launch(launch_matrix(matrix, this.scenario, tasks, role, attempt, k), cell)
                with INTERRUPT.deferred():
                    record.launches[cell.id] = result
                    save()
                    progress.finished(cell.id, result.status, result.reason or "")
                INTERRUPT.raise_pending()
        with INTERRUPT.deferred():
            refresh_confirmation(run, out_dir)
            run.decision = decide(run)
            save()
        verdict = this.verdict
        if verdict is not None:
            progress.message(f"confirmation, try {attempt}: {finalist} "
                             + ("confirmed" if verdict.confirmed else f"not confirmed: {verdict.why_not}"))
            if verdict.confirmed:
                break
    with INTERRUPT.deferred():
        record.complete = True
        run.decision = decide(run)  # no longer pending: what the tries confirmed, or nothing
        save()
