"""The live progress line: one per cell and phase with elapsed time and what is left on a terminal; plain start,
phase and end lines otherwise (CI logs). No line wraps: the live line is cut to the terminal's width, plain lines
are printed whole however wide the console thinks it is (rich wraps at 80 columns off a terminal)."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.text import Text


class Progress:
    """Call `cell` when a cell starts, `phase` as it moves on, `finished` when it is done, `estimate` with what each
    cell still to run is expected to take (analysis/timing.py); `close` at the end."""

    def __init__(self, total: int, console: Console | None = None):
        self.console = console or Console(file=sys.stderr)
        self.total = total
        self.index = 0
        self.cell_id = ""
        self.phase_name = ""
        self.cell_started = time.monotonic()
        self.phase_started = time.monotonic()
        self.per_cell_s: float | None = None  # what a cell still to run is expected to take (analysis/timing.py)
        self.pending = 0  # cells not finished, this one included
        self.live: Live | None = None
        if self.console.is_terminal:
            self.live = Live(self, console=self.console, refresh_per_second=4, transient=True)
            self.live.start()

    def __rich__(self) -> Text:
        now = time.monotonic()
        left = None if not self.per_cell_s else \
            max(0, self.pending - 1) * self.per_cell_s + max(0.0, self.per_cell_s - (now - self.cell_started))
        return Text.assemble(
            (f"[{self.index}/{self.total}] ", "bold"),
            (self.cell_id, "cyan"),
            f"  {self.phase_name} {now - self.phase_started:5.1f}s",
            (f"  (cell {now - self.cell_started:.0f}s)", "dim"),
            (f"  about {left / 60:.0f} min left" if left is not None else "", "dim"),
            no_wrap=True, overflow="ellipsis")

    def _plain(self, text: str) -> None:
        self.console.print(text, highlight=False, markup=False, soft_wrap=True)

    def cell(self, index: int, cell_id: str) -> None:
        self.index, self.cell_id = index, cell_id
        self.cell_started = time.monotonic()
        self.phase("launch")
        if self.live is None:  # no live line off a terminal: one plain line per cell start and end (CI logs)
            self._plain(f"[{index}/{self.total}] {cell_id}: starting")

    def phase(self, name: str) -> None:
        self.phase_name = name
        self.phase_started = time.monotonic()
        if self.live is None and name != "launch":  # off a terminal, each phase is a line of the log
            self._plain(f"[{self.index}/{self.total}] {self.cell_id}: {name} "
                        f"(cell {self.phase_started - self.cell_started:.0f}s)")

    def estimate(self, per_cell_s: float | None, pending: int) -> None:
        """Each cell still to run (`pending`, the next one included) is expected to take `per_cell_s`."""
        self.per_cell_s, self.pending = per_cell_s, pending

    def finished(self, cell_id: str, status: str, detail: str) -> None:
        elapsed = time.monotonic() - self.cell_started
        style = {"ok": "green", "crashed": "red", "garbage": "magenta", "timeout": "yellow"}.get(status, "red")
        line = Text.assemble(f"[{self.index}/{self.total}] {cell_id}: ", (status, f"bold {style}"),
                             f" in {elapsed:.0f}s")
        if detail:
            line.append(f"  {detail}", style="dim")
        self.console.print(line, highlight=False, soft_wrap=True)

    def message(self, text: str) -> None:
        self.console.print(text, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
