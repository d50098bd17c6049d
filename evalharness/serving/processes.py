"""Finding an engine's processes: one scan of the process table, used by teardown (stragglers), by the orphan sweep
after a harness was killed, and by tests (the marker variable).

Every server's processes carry MARKER_ENV=<its marker> in their environment: inherited even by children that detached
before anyone saw them, but not reliable alone, because setproctitle (vLLM and SGLang rename workers with it) can
clobber /proc/PID/environ. So a scan also matches by session, process group and descent.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

import psutil

MARKER_ENV = "EVALHARNESS_SERVER_ID"
_GONE = (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ProcessLookupError, OSError)


def alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def scan(match: Callable[[psutil.Process], bool],
         since: float = 0.0) -> tuple[dict[int, psutil.Process], dict[int, psutil.Process]]:
    """One pass over the process table, the harness itself excluded: (the live processes `match` accepts, every
    process seen, with its parent pid in `.info["ppid"]`). Only processes created after `since` (a wall-clock time)
    are looked at: pids are reused, and a process older than the launch is never ours. A process that exits or hides
    its details during the scan is skipped."""
    matched: dict[int, psutil.Process] = {}
    seen: dict[int, psutil.Process] = {}
    for proc in psutil.process_iter(["ppid"]):
        if proc.pid == os.getpid():
            continue
        try:
            if since and proc.create_time() < since - 1:
                continue
            seen[proc.pid] = proc
            if match(proc):
                matched[proc.pid] = proc
        except _GONE:
            continue
    return {pid: p for pid, p in matched.items() if alive(p)}, seen


def processes_with_marker(marker: str) -> list[psutil.Process]:
    """Every live process whose environment carries `EVALHARNESS_SERVER_ID=<marker>`."""
    return list(scan(lambda proc: proc.environ().get(MARKER_ENV) == marker)[0].values())


def sweep_orphans(pid_files: list[Path]) -> list[str]:
    """Kill the servers named by pid files that a killed harness left behind; returns what was found, in words.
    A pid is trusted only with the start time it was recorded with (pids are reused)."""
    found = []
    for pid_file in pid_files:
        try:
            record = json.loads(pid_file.read_text())
            pid, created, marker = int(record["pid"]), float(record["create_time"]), str(record["marker"])
        except (OSError, ValueError, KeyError, TypeError):
            pid_file.unlink(missing_ok=True)
            continue
        family = list(scan(lambda proc: (proc.pid == pid and abs(proc.create_time() - created) < 1)
                           or os.getsid(proc.pid) == pid or proc.environ().get(MARKER_ENV) == marker,
                           since=created)[0].values())
        for proc in family:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(family, timeout=10)
        if family:
            found.append(f"{pid_file.parent.name}: killed {len(family)} engine processes left running by an earlier "
                         f"harness (pids {sorted(p.pid for p in family)})")
        pid_file.unlink(missing_ok=True)
    return found
