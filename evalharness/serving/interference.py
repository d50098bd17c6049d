"""What else ran on the host while a throughput repeat was measured: CPU time of processes outside the harness's
own process tree (the harness is the ancestor of the engine it launched, its client processes and lm-eval workers),
CPU steal where the kernel reports it, the load average, and on a GPU host the other processes holding a GPU
(nvidia-smi). A window is opened before a repeat and closed after it; `judge` turns its figures into a reason when
they cross a limit (pure).

The figures come from two readings of the whole machine's CPU time (psutil.cpu_times) and of the harness's tree
(psutil, with the reaped children's time the kernel adds to their parent), not from a sampling thread: a busy
neighbour's CPU seconds are counted whatever their timing, and the harness's own figure costs nothing between the
readings. Must not import phases, runner or analysis.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

import psutil

# a repeat is disturbed when processes outside the harness kept this many cores busy on average (a fifth of a core,
# or a tenth of a large machine's), when the hypervisor stole this share of the CPU time, or when another process
# held a GPU. Measured on the 2-core machine, the float32 CPU engine single-stream (2026-12-03): quiet repeats saw
# 0.007-0.053 foreign cores; a repeat beside 0.33 foreign cores ran at 13.1 tok/s against a median of 21.9.
FOREIGN_CORES_MIN = 0.2
FOREIGN_SHARE = 0.10
STEAL_SHARE = 0.10


def _tree_cpu(root: psutil.Process) -> tuple[float, set[int]]:
    """CPU seconds of a process and its live descendants, and of the descendants already reaped (the kernel adds
    a waited-for child's time to its parent's children_* figures)."""
    total, pids = 0.0, set()
    try:
        members = [root, *root.children(recursive=True)]
    except psutil.Error:
        members = [root]
    for proc in members:
        try:
            t = proc.cpu_times()
            total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
            pids.add(proc.pid)
        except psutil.Error:
            continue
    return total, pids


def _gpu_processes() -> list[tuple[int, int]] | None:
    """(pid, MiB) of every process holding memory on a GPU, from nvidia-smi; None without it."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    found = []
    for line in out.stdout.splitlines():
        try:
            pid, mib = (int(float(v)) for v in line.split(","))
            found.append((pid, mib))
        except ValueError:
            continue
    return found


@dataclass
class HostWindow:
    """Open before a repeat (`open_window`), `close()` after it: the figures of what ran beside the harness."""

    began: float
    machine: Any
    own: float
    root: psutil.Process
    gpu_at_start: list[tuple[int, int]] | None = None
    figures: dict[str, Any] = field(default_factory=dict)

    def close(self) -> dict[str, Any]:
        wall = max(1e-6, time.monotonic() - self.began)
        machine = psutil.cpu_times()
        own, pids = _tree_cpu(self.root)
        cores = psutil.cpu_count() or 1
        busy = _busy(machine) - _busy(self.machine)
        foreign = max(0.0, busy - (own - self.own)) / wall
        figures: dict[str, Any] = {"foreign_cores": round(foreign, 3), "cores": cores,
                                   "load_1m": round(os.getloadavg()[0], 2)}
        steal = getattr(machine, "steal", None)
        if steal is not None:
            figures["steal_share"] = round(max(0.0, steal - getattr(self.machine, "steal", 0.0)) / (wall * cores), 4)
        gpu = _gpu_processes()
        if gpu is not None:
            seen = {pid: mib for pid, mib in (self.gpu_at_start or []) + gpu}
            figures["gpu_others"] = [{"pid": pid, "mib": mib} for pid, mib in sorted(seen.items()) if pid not in pids]
        self.figures = figures
        return figures


def _busy(t: Any) -> float:
    """CPU seconds the machine spent doing something (not idle, not waiting for I/O, not stolen)."""
    return sum(t) - t.idle - getattr(t, "iowait", 0.0) - getattr(t, "steal", 0.0) - getattr(t, "guest", 0.0) \
        - getattr(t, "guest_nice", 0.0)


def open_window(root_pid: int | None = None) -> HostWindow:
    """Start watching the host: `root_pid` is the harness's own process (default: this one)."""
    root = psutil.Process(root_pid or os.getpid())
    own, _ = _tree_cpu(root)
    return HostWindow(began=time.monotonic(), machine=psutil.cpu_times(), own=own, root=root,
                      gpu_at_start=_gpu_processes())


def judge(figures: dict[str, Any]) -> str:
    """Why a repeat with these host figures is disturbed, in words; '' when nothing crossed its limit (pure)."""
    reasons = []
    foreign, cores = figures.get("foreign_cores"), figures.get("cores") or 1
    if foreign is not None and foreign >= max(FOREIGN_CORES_MIN, FOREIGN_SHARE * cores):
        reasons.append(f"other processes kept {foreign:.2f} of {cores} cores busy (load {figures.get('load_1m', '?')})")
    steal = figures.get("steal_share")
    if steal is not None and steal >= STEAL_SHARE:
        reasons.append(f"the hypervisor stole {steal:.0%} of the CPU time")
    others = figures.get("gpu_others") or []
    if others:
        held = ", ".join(f"pid {o['pid']} ({o['mib']} MiB)" for o in others[:4])
        reasons.append(f"{len(others)} other process{'es' if len(others) > 1 else ''} on a GPU: {held}")
    return "; ".join(reasons)
