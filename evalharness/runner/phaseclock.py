"""Wall time per phase of one cell (issue 14.4): startup (the launch included), resolve, probes, distribution,
quality per task, throughput per scenario, teardown. Saved as CellResult.phase_seconds, in the order they ran; the
report adds what the phases do not cover (the harness's own work between them) and the share outside the engine's."""

from __future__ import annotations

import time

from evalharness.records.measures import TaskScore


class PhaseClock:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._running: tuple[str, float] | None = None

    def enter(self, name: str | None) -> None:
        """Stop the running phase's clock and start `name`'s (None: stop only). A phase entered twice adds up."""
        now = time.monotonic()
        if self._running is not None:
            running, since = self._running
            self.seconds[running] = round(self.seconds.get(running, 0.0) + now - since, 3)
        self._running = (name, now) if name else None

    def times(self, quality: list[TaskScore]) -> dict[str, float]:
        """Per phase, the quality phase split by task (each task's own seconds, lm-eval's process start included;
        what is left, if anything, stays under 'quality')."""
        out: dict[str, float] = {}
        for name, seconds in self.seconds.items():
            if name == "quality" and quality:
                tasks = {f"quality:{t.task}": t.seconds for t in quality}
                out.update(tasks)
                rest = seconds - sum(tasks.values())
                if rest > 0.05:
                    out["quality"] = round(rest, 3)
            else:
                out[name] = seconds
        return out
