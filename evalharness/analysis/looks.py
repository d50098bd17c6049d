"""One cell's quality looks while its quality phase runs: which repeats it looks after, how many each task runs, and
after each look which tasks stop (settled equivalent or worse against the reference, or stopped because the cell
is worse on another task). The runner hands `LookPlan.settle` to the quality phase as its `at_look`; the decisions
are analysis/sequential.py's, the evidence analysis/drift.py's (issue 59: adaptive stopping is not the runner's).
Reads records only; imports nothing of the runner or the phases."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalharness.analysis.drift import task_evidence
from evalharness.analysis.equivalence import margin_for
from evalharness.analysis.sequential import decide_look, quality_levels
from evalharness.matrix.quality import QualitySection, default_looks
from evalharness.records.measures import TaskScore


@dataclass
class LookPlan:
    looks: dict[str, list[int]]  # task -> the repeats after which it looks (the last one its planned repeats)
    equivalence_only: dict[str, list[int]]  # task -> the looks at which only the equivalence test may stop it
    planned: dict[str, int]  # task -> the repeats it runs unless it stops (lowered when the cell is worse)
    by_documents: set[str]  # the tasks a screened cell answers a share of the documents of, once
    screened: str | None  # why the cell runs its first look only (the speed rule), with the documents note
    reference_scores: dict[str, TaskScore]  # what each task is judged against at a look
    alpha: float
    gate: dict[str, Any]  # the matrix's gate section (each task's margin)
    family_size: int  # every cell x task of the matrix: a stopping look tests at its level / the family
    run_dir: Path  # where the scores' samples are

    def settle(self, done: int, running: dict[str, TaskScore]) -> set[str]:
        """After `done` repeats: the tasks that stop now, each score's `stopped` saying why."""
        settled = set()
        for task, score in running.items():
            score.looks, score.equivalence_only = self.looks[task], self.equivalence_only[task]
            if done not in self.looks[task] or done >= self.planned[task] or task not in self.reference_scores:
                continue
            _, evidence = task_evidence(task, self.reference_scores[task], score, self.run_dir)
            if evidence is None:
                continue
            looks = self.looks[task]
            level = quality_levels(self.alpha, looks, self.family_size, self.equivalence_only[task])[looks.index(done)]
            decision = decide_look(evidence, margin_for(task, self.gate), level, self.family_size)
            if decision.stop is not None:
                spent_here = level.worse if decision.stop == "worse" else level.equivalent
                own = ", the equivalence test's own look" if done in self.equivalence_only[task] else ""
                score.stopped = (f"{decision.stop} at look {looks.index(done) + 1} of {len(looks)} "
                                 f"({done} of {self.planned[task]} repeats{own}, alpha spent {spent_here:.2g})")
                settled.add(task)
        worse = [t for t in settled if running[t].stopped.startswith("worse")]
        if worse:  # the cell is worse whatever its other tasks say: each stops at its own next look
            for task, score in running.items():
                if task not in settled and done < self.planned[task]:
                    self.planned[task] = next(look for look in self.looks[task] if look >= done)
                    score.stopped = (f"stopped at {self.planned[task]} repeats: the cell is worse on "
                                     f"{', '.join(sorted(worse))}")
                    if self.planned[task] == done:
                        settled.add(task)
        return settled

    def close(self, scores: list[TaskScore]) -> None:
        """Every finished score names its looks, and a screened cell's unstopped ones say they were screened."""
        for score in scores:
            score.looks, score.equivalence_only = self.looks[score.task], self.equivalence_only[score.task]
            if self.screened and not score.stopped:
                score.stopped = "screened: " + self.screened.split(":")[0]


def plan_looks(quality: QualitySection, is_reference: bool, screened: str | None, *,
               reference_scores: dict[str, TaskScore], alpha: float, gate: dict[str, Any], family_size: int,
               run_dir: Path) -> LookPlan:
    """The looks of a cell's quality phase (`quality`: the matrix's section). The reference never looks (it runs
    every repeat for every cell); a cell looks where the matrix says, the looks ending at its planned repeats
    (validated: matrix/quality.py). A screened cell (decided from throughput, not from the quality data) runs a fixed
    design of its first look, of both tests (an equivalence-only look before it would leave the worse test no look);
    a task that runs once has one look of repeats, so screened it answers a share of its documents instead."""
    looks = {task: default_looks(quality.repeats_for(task, reference=True)) if is_reference
             else quality.looks_for(task) for task in quality.tasks}
    equivalence_only = {task: [] if is_reference else quality.equivalence_only_for(task) for task in quality.tasks}
    by_documents = {task for task, v in looks.items() if v == [1]} if screened else set()
    if screened:
        looks = {task: [look for look in v if look not in equivalence_only[task]][:1] for task, v in looks.items()}
        equivalence_only = {task: [] for task in quality.tasks}
        if by_documents:
            screened += (f"; a task it runs once answered {quality.screen_documents:.0%} of its documents "
                         "(quality.screen_documents)")
    planned = {task: looks[task][-1] if screened else quality.repeats_for(task, reference=is_reference)
               for task in quality.tasks}
    return LookPlan(looks, equivalence_only, planned, by_documents, screened, reference_scores, alpha, gate,
                    family_size, run_dir)
