"""`python -m evalharness.runner.nodeguard OWNER_PID OWNER_START FOLDER`: started by a cell's Ray task in a session of
its own, it waits for that task's worker process to exit. A worker that ends normally stops the guard first (SIGTERM);
a worker that is killed outright (its node lost, a forced cancel) cannot tear its server down, so the guard does: it
kills the servers that the pid files under FOLDER name (serving/processes.py `sweep_orphans`, by pid, start time and
marker) and removes FOLDER.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import psutil

from evalharness.serving.processes import sweep_orphans

POLL_S = 0.5


def owner_running(pid: int, started: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - started) < 1 and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def main(argv: list[str]) -> int:
    pid, started, folder = int(argv[0]), float(argv[1]), Path(argv[2])
    while owner_running(pid, started):
        time.sleep(POLL_S)
    for found in sweep_orphans(sorted(folder.glob("run/cells/*/server.pid"))):
        print(f"evalharness node guard: {found}", file=sys.stderr)
    shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
