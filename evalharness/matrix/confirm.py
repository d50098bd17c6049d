"""The matrix's `confirm` section: the sizes of the run's second stage (issue 61). Exploration is every cell as the
rest of the matrix says (its quality section is exploration's sample); confirmation launches the finalist again
against the reference launched again, interleaved, and its claim rests on confirmation's data alone, so choosing the
fastest of many does not inflate it (analysis/confirm.py owns the rule, docs/deciding.md says it in words). Pure
schema; imports only matrix/base.py.
"""

from __future__ import annotations

from pydantic import Field

from evalharness.matrix.base import _Strict, unknown_name


class ConfirmSection(_Strict):
    """Sizes of the confirmation stage: how many launches, finalists, answers and repeats it spends."""

    enabled: bool = Field(True, description="confirm the finalist after exploring every cell; off: the report "
                          "ranks exploration's cells and certifies nothing beyond them")
    launches: int = Field(3, ge=1, le=8, description="launches of the finalist in one try, each interleaved with a "
                          "launch of the reference (reference, finalist, reference, finalist, ...); launches are the "
                          "speed claim's unit, so more than one launch a side is what lets the claim count "
                          "launch-to-launch variation (3: benchmarks/two_stage.py's power goal at launches 3% apart "
                          "and repeats spreading 8%)")
    tries: int = Field(1, ge=1, le=4, description="finalists tried in exploration's order when one is not confirmed; "
                       "each try tests at alpha / tries (Bonferroni), so the chance of confirming a bad cell stays "
                       "at most alpha over all tries")
    repeats: int = Field(4, ge=1, description="answers to each document of each confirmed task by the finalist, "
                         "spread over its launches, on seeds exploration did not use; 1 (the right choice for greedy "
                         "tasks, whose second answer repeats the first): each launch answers its own slice of the "
                         "documents, each document once")
    reference_repeats: int | None = Field(None, ge=1, description="the same for the reference's confirmation "
                                          "launches; default: repeats")
    task_repeats: dict[str, int] = Field(default_factory=dict, description="a task's own confirmation repeats, "
                                         "finalist and reference alike, over `repeats` (a task whose answers vary "
                                         "more, or whose margin is tighter, needs more: `evalharness plan` says how "
                                         "many each task's margin needs)")
    documents: int | None = Field(None, ge=1, description="documents of each confirmed task (per subtask of a group) "
                                  "that confirmation answers, drawn from those exploration did not answer (the same "
                                  "seeded order, past exploration's; back to exploration's only where a task has too "
                                  "few); default: as many as exploration answered. More documents, like more "
                                  "repeats, narrow the claim; only documents do where answers are greedy")
    task_documents: dict[str, int] = Field(default_factory=dict, description="a task's own confirmation documents, "
                                           "over `documents`")
    tasks: list[str] | None = Field(None, description="the tasks the claim covers (default: the quality section's own "
                                    "tasks; a length bucket's task counts only where listed here, else the claim "
                                    "names the lengths it holds at)")
    speed_repeats: int = Field(4, ge=2, description="repeats of the operating point's throughput scenario per launch")

    def check(self, quality_tasks: list[str], measures_speed: bool) -> None:
        """Against the matrix it belongs to: it has something to confirm, and names only its quality tasks."""
        if not quality_tasks and not measures_speed:
            raise ValueError("confirm: the second stage confirms speed and answers; the matrix measures neither "
                             "(no quality or throughput section)")
        for key, names in (("tasks", self.tasks or []), ("task_repeats", list(self.task_repeats)),
                           ("task_documents", list(self.task_documents))):
            for task in names:
                if task not in quality_tasks:
                    raise ValueError(f"confirm.{key}: {unknown_name('task', task, quality_tasks)}")
        if any(n < 1 for n in self.task_repeats.values()):
            raise ValueError("confirm.task_repeats: each task's repeats must be at least 1")
        if any(n < 1 for n in self.task_documents.values()):
            raise ValueError("confirm.task_documents: each task's documents must be at least 1")

    def documents_for(self, task: str) -> int | None:
        """The documents confirmation answers on `task` (per subtask); None: as many as exploration's."""
        return self.task_documents.get(task, self.documents)
