"""One engine server's life: launch in its own session, whole log capture, readiness, and a teardown that leaves nothing.

Engines spawn children (vLLM's EngineCore and workers, SGLang's scheduler and detokenizer) and some of them leave the
process group or outlive their parent (sglang#23627: a scheduler holding 100 GB of GPU memory after the launcher died).
So teardown does three things: SIGTERM then SIGKILL to the process group; then SIGKILL to every straggler of the family,
which is every process created since the launch that was seen as a descendant while the server ran (a watcher thread
looks every second), or is still in the server's session or process group, or descends from one of those, or carries
this server's marker in its environment (inherited even by children that detached before anyone saw them; not
reliable alone, because setproctitle, which vLLM and SGLang use to rename workers, can clobber /proc/PID/environ).
Then it checks that none is left and says so.

A harness that is itself killed with SIGKILL cannot tear anything down. For that case every launch leaves a pid file
(pid, start time, marker) beside its log while the server lives; `sweep_orphans` finds the ones a dead harness left
and kills what they name, so the next `run --resume` starts clean.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

MARKER_ENV = "EVALHARNESS_SERVER_ID"
POLL_INTERVAL_S = 0.2  # readiness is polled five times a second


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


def gpu_memory_released(before: list[int] | None, wait_s: float = 20.0, slack_mib: int = 1024) -> list[int] | None:
    """After teardown: GPU memory per device once it is back within `slack_mib` of `before` (or `wait_s` passed).
    A scheduler that outlived its launcher holds ~100 GB (sglang#23627): this is where it shows."""
    if before is None:
        return None
    deadline = time.monotonic() + wait_s
    while True:
        after = gpu_memory_used_mib()
        if after is None or all(a <= b + slack_mib for a, b in zip(after, before)) or time.monotonic() > deadline:
            return after
        time.sleep(1.0)


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


@dataclass
class Readiness:
    """How waiting for the server ended: ready, exited (with its return code), or timed out."""

    outcome: str  # "ready" | "exited" | "timeout"
    seconds: float
    returncode: int | None = None


@dataclass
class Teardown:
    seconds: float
    signals: list[str] = field(default_factory=list)
    killed_stragglers: list[int] = field(default_factory=list)
    leftover: list[int] = field(default_factory=list)


class LaunchError(Exception):
    """The server could not be started at all (missing binary, unreadable log folder)."""


def _alive(proc: psutil.Process) -> bool:
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def processes_with_marker(marker: str) -> list[psutil.Process]:
    """Every live process whose environment carries `EVALHARNESS_SERVER_ID=<marker>`."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.pid == os.getpid():
                continue
            if proc.environ().get(MARKER_ENV) == marker and _alive(proc):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
            continue
    return found


class ServerProcess:
    """A launched engine server. Use `start`, `wait_ready`, then always `stop` (it is safe to call twice)."""

    def __init__(self, argv: list[str], env: dict[str, str], log_path: Path, health_url: str, cwd: Path | None = None,
                 pid_file: Path | None = None):
        self.argv = argv
        self.extra_env = env
        self.log_path = log_path
        self.health_url = health_url
        self.cwd = cwd
        self.pid_file = pid_file
        self.marker = uuid.uuid4().hex
        self.popen: subprocess.Popen[bytes] | None = None
        self.started_at: float | None = None
        self._seen: dict[int, psutil.Process] = {}
        self._seen_lock = threading.Lock()
        self._watching = threading.Event()
        self._launched_wall = 0.0
        self._stopped: Teardown | None = None

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def start(self) -> None:
        env = {**os.environ, **self.extra_env, MARKER_ENV: self.marker}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")
        try:
            self.popen = subprocess.Popen(
                self.argv,
                env=env,
                cwd=self.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own session and process group: our Ctrl-C never reaches it unmanaged
            )
        except OSError as exc:  # FileNotFoundError for a missing engine binary, PermissionError, ...
            raise LaunchError(f"cannot start {self.argv[0]!r}: {exc.strerror or exc}") from exc
        finally:
            log.close()  # the child holds its own descriptor
        self.started_at = time.monotonic()
        self._remember_descendants()
        if self.pid_file is not None:
            self.pid_file.write_text(json.dumps({"pid": self.popen.pid, "create_time": self._launched_wall,
                                                 "marker": self.marker, "argv0": self.argv[0]}))
        self._watching.set()
        threading.Thread(target=self._watch, name=f"watch-{self.popen.pid}", daemon=True).start()

    def _watch(self) -> None:
        # Children come and go during every phase (quality and load can last an hour): keep the list current.
        while self._watching.is_set():
            self._remember_descendants()
            time.sleep(1.0)

    def _remember_descendants(self) -> None:
        if not self.popen:
            return
        try:
            root = psutil.Process(self.popen.pid)
            if not self._launched_wall:
                self._launched_wall = root.create_time()
            family = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        with self._seen_lock:
            for proc in family:
                self._seen.setdefault(proc.pid, proc)

    def _stragglers(self) -> dict[int, psutil.Process]:
        """Live members of this server's family (see the module docstring), the harness itself excluded."""
        assert self.popen is not None
        leader = self.popen.pid
        with self._seen_lock:
            family = {pid: p for pid, p in self._seen.items() if _alive(p)}
        parents: dict[int, int] = {}
        candidates: dict[int, psutil.Process] = {}
        for proc in psutil.process_iter(["ppid"]):
            if proc.pid == os.getpid():
                continue
            try:
                # pids are reused: a process older than the launch is never ours
                if self._launched_wall and proc.create_time() < self._launched_wall - 1:
                    continue
                parents[proc.pid] = proc.info["ppid"]
                candidates[proc.pid] = proc
                if proc.pid in family:
                    continue
                if os.getsid(proc.pid) == leader or os.getpgid(proc.pid) == leader:
                    family[proc.pid] = proc
                elif proc.environ().get(MARKER_ENV) == self.marker:
                    family[proc.pid] = proc
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ProcessLookupError, OSError):
                continue
        for pid, proc in candidates.items():
            ancestor, hops = parents.get(pid), 0
            while ancestor and ancestor not in family and hops < 64:
                ancestor, hops = parents.get(ancestor), hops + 1
            if ancestor in family and _alive(proc):
                family[pid] = proc
        return {pid: p for pid, p in family.items() if _alive(p)}

    def poll(self) -> int | None:
        """The launcher's return code if it has exited, else None."""
        return self.popen.poll() if self.popen else None

    def wait_ready(self, timeout_s: float, should_stop=lambda: False) -> Readiness:
        """Poll the health URL five times a second until it answers 200, the launcher exits, or time runs out."""
        assert self.popen is not None and self.started_at is not None
        with httpx.Client(timeout=httpx.Timeout(2.0, connect=1.0)) as client:
            while True:
                elapsed = time.monotonic() - self.started_at
                code = self.popen.poll()
                if code is not None:
                    return Readiness("exited", elapsed, code)
                if elapsed > timeout_s:
                    return Readiness("timeout", elapsed)
                self._remember_descendants()
                try:
                    if client.get(self.health_url).status_code == 200:
                        return Readiness("ready", time.monotonic() - self.started_at)
                except httpx.HTTPError:
                    pass
                time.sleep(POLL_INTERVAL_S)

    def stop(self, grace_s: float = 30.0) -> Teardown:
        """SIGTERM the group, SIGKILL it after `grace_s`, then kill every straggler; report what (if anything) is left."""
        if self._stopped is not None:
            return self._stopped
        begin = time.monotonic()
        teardown = Teardown(seconds=0.0)
        if self.popen is None:
            self._stopped = teardown
            return teardown
        self._watching.clear()
        self._remember_descendants()
        pgid = self.popen.pid  # start_new_session made the launcher the group leader
        if self._signal_group(pgid, signal.SIGTERM):
            teardown.signals.append("SIGTERM")
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and (self.popen.poll() is None or self._family_alive()):
            time.sleep(0.1)
        if self.popen.poll() is None or self._family_alive():
            if self._signal_group(pgid, signal.SIGKILL):
                teardown.signals.append("SIGKILL")
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        stragglers = self._stragglers()
        for proc in stragglers.values():
            try:
                proc.kill()
                teardown.killed_stragglers.append(proc.pid)
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(list(stragglers.values()), timeout=10)
        teardown.leftover = sorted(self._stragglers())
        if self.pid_file is not None and not teardown.leftover:
            self.pid_file.unlink(missing_ok=True)
        teardown.seconds = time.monotonic() - begin
        self._stopped = teardown
        return teardown

    def _family_alive(self) -> bool:
        with self._seen_lock:
            return any(_alive(p) for p in self._seen.values())

    @staticmethod
    def _signal_group(pgid: int, sig: signal.Signals) -> bool:
        try:
            os.killpg(pgid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False


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
        family: list[psutil.Process] = []
        for proc in psutil.process_iter(["pid"]):
            try:
                if proc.pid == os.getpid() or proc.create_time() < created - 1:
                    continue
                if (proc.pid == pid and abs(proc.create_time() - created) < 1) or os.getsid(proc.pid) == pid \
                        or proc.environ().get(MARKER_ENV) == marker:
                    family.append(proc)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, ProcessLookupError, OSError):
                continue
        family = [p for p in family if _alive(p)]
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
