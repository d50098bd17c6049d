"""Where a run came from, for its metadata: timestamps, git revision, machine (processor model and the instruction-set
flags that change numerics, GPU model and driver) and package versions.

The processor matters to what a run measures, not only to its speed: on a CPU without native bf16 (no avx512_bf16 or
amx_bf16) a bfloat16 cell ran the demo's quality tasks 3 to 5 times slower than float32 and drifted differently from
the same matrix on another processor. So a run records which processor or GPU it was measured on, the report says it,
and the gate warns when a baseline came from another kind of machine (analysis/gate.py).
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def git_revision(start: Path) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=start, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=start, capture_output=True,
                           text=True, timeout=5, check=False).stdout.strip()
    return out.stdout.strip() + ("+dirty" if dirty else "")


# instruction-set flags that decide how a CPU engine computes (native bf16/fp16, vector width, int8 dot products):
# x86 from /proc/cpuinfo "flags", Arm from its "Features"
NUMERIC_FLAGS = ("avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512_fp16", "avx512_vnni", "amx_tile",
                 "amx_bf16", "amx_int8", "asimd", "sve", "sve2", "bf16", "i8mm")


def cpu_info(cpuinfo: str) -> dict[str, Any]:
    """The processor model and its numerics-relevant flags, from the text of /proc/cpuinfo (pure)."""
    model, flags = None, set()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if model is None and key in ("model name", "cpu model", "processor") and not value.strip().isdigit():
            model = value.strip() or None
        elif not flags and key in ("flags", "features"):
            flags = set(value.split())
    return {"cpu_model": model, "cpu_flags": [f for f in NUMERIC_FLAGS if f in flags]}


def gpu_info(nvidia_smi_csv: str) -> list[dict[str, Any]]:
    """GPUs from `nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader,nounits` (pure)."""
    gpus = []
    for line in nvidia_smi_csv.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0]:
            memory = parts[2] if len(parts) > 2 else ""
            gpus.append({"name": parts[0], "driver": parts[1],
                         "memory_mib": int(float(memory)) if memory.replace(".", "", 1).isdigit() else None})
    return gpus


def _read_gpus() -> list[dict[str, Any]]:
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total",
                              "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return gpu_info(out.stdout) if out.returncode == 0 else []


def machine_info() -> dict[str, Any]:
    import psutil

    try:
        cpu = cpu_info(Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace"))
    except OSError:  # not Linux
        cpu = {"cpu_model": None, "cpu_flags": []}
    return {
        "hostname": socket.gethostname(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "cpu_model": cpu["cpu_model"] or platform.processor() or None,
        "cpu_flags": cpu["cpu_flags"],
        "gpus": _read_gpus(),
    }


def machine_kind(machine: dict[str, Any]) -> str:
    """What kind of machine measured a run, in words (pure): the GPUs with their driver where there are any, else
    the processor model with its numerics-relevant flags; 'unknown' for records from before it was recorded."""
    gpus = machine.get("gpus") or []
    if gpus:
        counts: dict[str, int] = {}
        for gpu in gpus:
            label = f"{gpu.get('name')} (driver {gpu.get('driver')})"
            counts[label] = counts.get(label, 0) + 1
        return ", ".join(f"{n} x {label}" for label, n in sorted(counts.items()))
    model = machine.get("cpu_model")
    if not model:
        return "unknown"
    flags = machine.get("cpu_flags") or []
    return f"{model} ({' '.join(flags) if flags else 'none of the recorded numeric flags'})"


def harness_versions() -> dict[str, str | None]:
    return {"harness": _version("evalharness"), "lm_eval": _version("lm-eval") or _version("lm_eval")}


def cell_kind(run: Any, cell: Any) -> str:
    """The kind of machine a finished cell was measured on: its Ray node's, else the run's."""
    return machine_kind(cell.node if cell.node else run.meta.machine)


def kinds(run: Any) -> dict[str, list[str]]:
    """Kind of machine -> the finished cells measured on it, in the run's cell order."""
    out: dict[str, list[str]] = {}
    for cid in run.cell_order:
        if cid in run.cells:
            out.setdefault(cell_kind(run, run.cells[cid]), []).append(cid)
    return out
