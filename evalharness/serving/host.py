"""The machine a server runs on: free ports, who holds a port, and GPU memory before launch and after teardown."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import psutil


def gpu_memory_used_mib() -> list[int] | None:
    """Memory used per GPU from nvidia-smi, or None on a machine without it (the CPU engine, CI)."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20, check=False)
        return [int(float(v)) for v in out.stdout.split()] if out.returncode == 0 else None
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None


SLACK_MIB = 1024  # memory within this much of a reference level counts as "back"


def gpu_memory_released(before: list[int] | None, wait_s: float = 60.0, slack_mib: int = SLACK_MIB,
                        poll_s: float = 0.5) -> list[int] | None:
    """After teardown: GPU memory per device once it is back within `slack_mib` of `before` (or `wait_s` passed).
    A killed process's memory is freed by the driver later, sometimes minutes later (sglang/test/test_utils.py:
    terminate_and_kill_process_tree); a scheduler that outlived its launcher holds ~100 GB (sglang#23627)."""
    if before is None:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        after = gpu_memory_used_mib()
        if after is None or not gpu_memory_held(after, before, slack_mib) or time.monotonic() > deadline:
            return after
        time.sleep(poll_s)


def gpu_memory_held(now: list[int] | None, reference: list[int] | None, slack_mib: int = SLACK_MIB) -> list[int]:
    """MiB more than `reference` per GPU, when any GPU is more than `slack_mib` above it; [] otherwise (pure)."""
    if not now or not reference:
        return []
    extra = [n - r for n, r in zip(now, reference)]
    return extra if any(e > slack_mib for e in extra) else []


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now (the engine binds it a moment later; a race is reported as port_in_use)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def port_in_use(host: str, port: int) -> str | None:
    """None when `port` can be bound on `host`; else who holds it, in words (best effort: the owner may be hidden)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port in TIME_WAIT is free for a server
        try:
            sock.bind((host, port))
            return None
        except OSError as exc:
            reason = exc.strerror or str(exc)
    try:
        for conn in psutil.net_connections(kind="inet"):
            if conn.laddr and conn.laddr.port == port and conn.status == psutil.CONN_LISTEN and conn.pid:
                return f"{reason}: held by pid {conn.pid} ({psutil.Process(conn.pid).name()})"
    except (psutil.Error, OSError):
        pass
    return reason
