"""One engine server's life: launch in its own session, whole log capture, readiness, and a teardown that
leaves nothing.

Engines spawn children (vLLM's EngineCore and workers, SGLang's scheduler and detokenizer) and some of them leave the
process group or outlive their parent (sglang#23627: a scheduler holding 100 GB of GPU memory after the launcher died).
So teardown does three things: SIGTERM (to the group, or to the launcher alone: the engine's `terminate`), then SIGKILL
to the process group once the grace period is over; then SIGKILL to every straggler of the family,
which is every process created since the launch that was seen as a descendant while the server ran (a watcher thread
looks every second), or is still in the server's session or process group, or descends from one of those, or carries
this server's marker in its environment (processes.py). Then it checks that none is left and says so.

A harness that is itself killed with SIGKILL cannot tear anything down. For that case every launch leaves a pid file
(pid, start time, marker) beside its log while the server lives; `sweep_orphans` finds the ones a dead harness left
and kills what they name, so the next `run --resume` starts clean.

Must not import phases, analysis, render or the runner.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil

from evalharness.records.run import TeardownRecord
from evalharness.serving.processes import MARKER_ENV, alive, scan

POLL_INTERVAL_S = 0.2  # readiness is polled five times a second
# one readiness request may take this long: SGLang's /health_generate runs a one-token generation and sleeps 1 s
# before its first check (1-4 s on a 2-core CPU); SGLang's own launcher polls with 5 s (srt/entrypoints/http_server.py:
# _wait_and_warmup uses timeout=5 on its /model_info and warm-up requests)
POLL_REQUEST_TIMEOUT_S = 5.0


@dataclass
class Readiness:
    """How waiting for the server ended: ready, exited (with its return code), or timed out."""

    outcome: str  # "ready" | "exited" | "timeout"
    seconds: float
    returncode: int | None = None
    # another process answered on our port while ours had not bound it (its health said 200): never taken for ready
    foreign_listener: int | None = None


class LaunchError(Exception):
    """The server could not be started at all (missing binary, unreadable log folder)."""


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
        self._stopped: TeardownRecord | None = None

    @property
    def pid(self) -> int | None:
        return self.popen.pid if self.popen else None

    def start(self) -> None:
        env = {**os.environ, **self.extra_env, MARKER_ENV: self.marker}
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        # a fresh log for every launch: crash classes, resolved settings and warnings are read from the whole file,
        # so an earlier launch's lines (another configuration's "unrecognized arguments") must never be in it
        log = open(self.log_path, "wb")
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
            family = {pid: p for pid, p in self._seen.items() if alive(p)}
        joined, candidates = scan(lambda proc: proc.pid not in family and (
            os.getsid(proc.pid) == leader or os.getpgid(proc.pid) == leader
            or proc.environ().get(MARKER_ENV) == self.marker), since=self._launched_wall)
        family.update(joined)
        parents = {pid: proc.info["ppid"] for pid, proc in candidates.items()}
        for pid, proc in candidates.items():
            ancestor, hops = parents.get(pid), 0
            while ancestor and ancestor not in family and hops < 64:
                ancestor, hops = parents.get(ancestor), hops + 1
            if ancestor in family and alive(proc):
                family[pid] = proc
        return {pid: p for pid, p in family.items() if alive(p)}

    def poll(self) -> int | None:
        """The launcher's return code if it has exited, else None."""
        return self.popen.poll() if self.popen else None

    def wait_ready(self, timeout_s: float, should_stop=lambda: False) -> Readiness:
        """Poll the health URL five times a second until it answers 200 from a process we launched, the launcher
        exits, or time runs out. A 200 from a listener that is not of our family (another server took the port, or
        still holds it) is not readiness: it is remembered in `foreign_listener` and polling goes on."""
        assert self.popen is not None and self.started_at is not None
        foreign = None
        with httpx.Client(timeout=httpx.Timeout(POLL_REQUEST_TIMEOUT_S, connect=1.0)) as client:
            while True:
                elapsed = time.monotonic() - self.started_at
                code = self.popen.poll()
                if code is not None:
                    return Readiness("exited", elapsed, code, foreign_listener=foreign)
                if elapsed > timeout_s:
                    return Readiness("timeout", elapsed, foreign_listener=foreign)
                self._remember_descendants()
                try:
                    if client.get(self.health_url).status_code == 200:
                        owner = self._listener_owner()
                        if owner is None:
                            return Readiness("ready", time.monotonic() - self.started_at)
                        foreign = owner
                except httpx.HTTPError:
                    pass
                time.sleep(POLL_INTERVAL_S)

    def _listener_owner(self) -> int | None:
        """None when the health URL's port is listened on by a process of this server's family (or the owner cannot
        be told); else the pid of the foreign process that listens there."""
        port = urlsplit(self.health_url).port
        try:
            listeners = {c.pid for c in psutil.net_connections(kind="tcp")
                         if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid}
        except (psutil.AccessDenied, OSError):
            return None
        if not listeners:
            return None  # a proxy or another network namespace: nothing to compare with
        self._remember_descendants()
        with self._seen_lock:
            ours = set(self._seen)
        return None if listeners & ours else min(listeners)

    def stop(self, grace_s: float = 30.0, terminate: str = "group") -> TeardownRecord:
        """SIGTERM, SIGKILL the group after `grace_s`, then kill every straggler; report what (if anything) is left.

        terminate="group": SIGTERM to the whole process group, then wait for the launcher and every process seen.
        terminate="launcher": SIGTERM to the launcher alone and wait for it to exit (it shuts its own children down:
        SGLang drains, asks its schedulers to release GPU memory and waits 15 s for them), as SGLang's own tests do
        (sglang/test/test_utils.py: terminate_and_kill_process_tree); whatever is left is then killed."""
        if self._stopped is not None:
            return self._stopped
        begin = time.monotonic()
        teardown = TeardownRecord(seconds=0.0, sigterm_to=terminate)
        if self.popen is None:
            self._stopped = teardown
            return teardown
        self._watching.clear()
        self._remember_descendants()
        pgid = self.popen.pid  # start_new_session made the launcher the group leader
        if terminate == "launcher":
            if self.popen.poll() is None:
                self.popen.send_signal(signal.SIGTERM)
                teardown.signals.append("SIGTERM")
        elif self._signal_group(pgid, signal.SIGTERM):
            teardown.signals.append("SIGTERM")
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and (self.popen.poll() is None or
                                               (terminate == "group" and self._family_alive())):
            time.sleep(0.1)
        teardown.launcher_exited_s = round(time.monotonic() - begin, 2) if self.popen.poll() is not None else None
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
            return any(alive(p) for p in self._seen.values())

    @staticmethod
    def _signal_group(pgid: int, sig: signal.Signals) -> bool:
        try:
            os.killpg(pgid, sig)
            return True
        except (ProcessLookupError, PermissionError):
            return False


def wait_external(url: str, timeout_s: float) -> tuple[bool, float]:
    """(ready, seconds waited) for an endpoint the harness did not launch: its health URL polled until
    it answers 200."""
    begin = time.monotonic()
    with httpx.Client(timeout=2.0) as client:
        while time.monotonic() - begin < timeout_s:
            try:
                if client.get(url).status_code == 200:
                    return True, time.monotonic() - begin
            except httpx.HTTPError:
                pass
            time.sleep(0.25)
    return False, time.monotonic() - begin
