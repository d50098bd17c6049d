"""The live progress line: one per cell and phase with elapsed time on a terminal; plain start/end lines otherwise."""

from __future__ import annotations

import sys
import time

from rich.console import Console
from rich.live import Live
from rich.text import Text


class Progress:
    """Call `cell` when a cell starts, `phase` as it moves on, `finished` when it is done; `close` at the end."""

    def __init__(self, total: int, console: Console | None = None):
        self.console = console or Console(file=sys.stderr)
        self.total = total
        self.index = 0
        self.cell_id = ""
        self.phase_name = ""
        self.cell_started = time.monotonic()
        self.phase_started = time.monotonic()
        self.live: Live | None = None
        if self.console.is_terminal:
            self.live = Live(self, console=self.console, refresh_per_second=4, transient=True)
            self.live.start()

    def __rich__(self) -> Text:
        now = time.monotonic()
        return Text.assemble(
            (f"[{self.index}/{self.total}] ", "bold"),
            (self.cell_id, "cyan"),
            f"  {self.phase_name} {now - self.phase_started:5.1f}s",
            (f"  (cell {now - self.cell_started:.0f}s)", "dim"),
        )

    def cell(self, index: int, cell_id: str) -> None:
        self.index, self.cell_id = index, cell_id
        self.cell_started = time.monotonic()
        self.phase("launch")
        if self.live is None:  # no live line off a terminal: one plain line per cell start and end (CI logs)
            self.console.print(f"[{index}/{self.total}] {cell_id}: starting", highlight=False, markup=False)

    def phase(self, name: str) -> None:
        self.phase_name = name
        self.phase_started = time.monotonic()
        if self.live is None and name != "launch":  # off a terminal, each phase is a line of the log
            self.console.print(f"[{self.index}/{self.total}] {self.cell_id}: {name} "
                               f"(cell {self.phase_started - self.cell_started:.0f}s)", highlight=False, markup=False)

    def finished(self, cell_id: str, status: str, detail: str) -> None:
        elapsed = time.monotonic() - self.cell_started
        style = {"ok": "green", "crashed": "red", "garbage": "magenta", "timeout": "yellow"}.get(status, "red")
        line = Text.assemble(f"[{self.index}/{self.total}] {cell_id}: ", (status, f"bold {style}"), f" in {elapsed:.0f}s")
        if detail:
            line.append(f"  {detail}", style="dim")
        self.console.print(line, highlight=False, soft_wrap=True)

    def message(self, text: str) -> None:
        self.console.print(text, highlight=False, soft_wrap=True)

    def close(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
