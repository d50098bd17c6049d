"""A private Ray cluster on this machine for the tests: a head node without GPUs and N worker nodes of one logical
GPU each, every node a `ray start --block` process of the harness's Python, all under a temp dir of the test's own
(RAY_TMPDIR, so the address file `ray.init("auto")` reads is not the machine's /tmp/ray), on free ports.

`stop()` ends what it started and nothing else: each node's `ray start --block` process, then every process that was
seen descending from one of them (raylet, GCS, workers) or that names the cluster's temp dir on its command line, by
pid. It never runs `ray stop`, which kills every Ray process of the user on the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

RAY = str(Path(sys.executable).with_name("ray"))


def _free_port(taken: set[int]) -> int:
    """A port free now and not already handed out from `taken` (which it joins).

    Each port is only chosen here, bound later by Ray: the kernel hands a port out again as soon as the socket that
    found it is closed, so without the set two components of one node could get the same one, and `ray start`
    refuses the node ("metrics_export is trying to use a port number N that is used by other components", CI of
    2026-12-01).
    """
    while True:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        if port not in taken:
            taken.add(port)
            return port


@dataclass
class RayNode:
    name: str
    proc: subprocess.Popen
    log: Path
    seen: dict[int, psutil.Process] = field(default_factory=dict)

    def remember(self) -> None:
        with contextlib.suppress(psutil.NoSuchProcess):
            for child in psutil.Process(self.proc.pid).children(recursive=True):
                self.seen.setdefault(child.pid, child)

    def raylet(self) -> psutil.Process | None:
        self.remember()
        for proc in self.seen.values():
            with contextlib.suppress(psutil.NoSuchProcess):
                if proc.is_running() and "raylet" in proc.name():
                    return proc
        return None


class PrivateRayCluster:
    def __init__(self, root: Path, env: dict[str, str] | None = None):
        self.root = root
        self.tmp = root / "ray"  # short: Ray's socket paths must stay under 107 bytes
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, **(env or {}), "RAY_TMPDIR": str(self.tmp), "RAY_USAGE_STATS_ENABLED": "0"}
        self.env.pop("RAY_ADDRESS", None)
        self._ports: set[int] = set()  # every port handed to this cluster's nodes, so none is handed out twice
        self.port = _free_port(self._ports)
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: list[RayNode] = []

    def _port(self) -> str:
        return str(_free_port(self._ports))

    def _start(self, name: str, args: list[str]) -> RayNode:
        log = self.root / f"{name}.log"
        with open(log, "wb") as sink:
            proc = subprocess.Popen([RAY, "start", "--block", "--disable-usage-stats",
                                     "--node-ip-address", "127.0.0.1", "--min-worker-port", "0",
                                     "--max-worker-port", "0", "--dashboard-agent-listen-port", self._port(),
                                     "--dashboard-agent-grpc-port", self._port(),
                                     "--node-manager-port", self._port(),
                                     "--object-manager-port", self._port(),
                                     "--metrics-export-port", self._port(),
                                     "--runtime-env-agent-port", self._port(), *args],
                                    stdout=sink, stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        node = RayNode(name, proc, log)
        self.nodes.append(node)
        return node

    def start(self, gpu_nodes: int = 2, timeout_s: float = 300) -> "PrivateRayCluster":
        try:
            self._start_nodes(gpu_nodes, timeout_s)
        except BaseException:
            self.stop()
            raise
        return self

    def _start_nodes(self, gpu_nodes: int, timeout_s: float) -> None:
        self._start("head", ["--head", "--port", str(self.port), "--num-cpus", "1", "--num-gpus", "0",
                             "--include-dashboard=false", "--temp-dir", str(self.tmp)])
        self._wait_nodes(1, timeout_s)
        for i in range(gpu_nodes):  # one at a time: nodes of one session dir pick their socket names racily
            # one log monitor per machine: each would forward every worker's lines of the shared session folder
            self._start(f"gpu{i}", ["--address", self.address, "--num-cpus", "1", "--num-gpus", "1",
                                    "--include-log-monitor=false"])
            self._wait_nodes(2 + i, timeout_s)

    def alive_nodes(self) -> int:
        """Alive nodes as the GCS counts them (0 while it does not answer yet)."""
        try:
            out = subprocess.run([sys.executable, "-c", "import ray,sys; ray.init(address=sys.argv[1], "
                                  "logging_level='ERROR', log_to_driver=False); "
                                  "print(sum(n['Alive'] for n in ray.nodes()))", self.address],
                                 env=self.env, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            return 0
        return int(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 and out.stdout.strip() else 0

    def _wait_nodes(self, count: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s  # a deadline for a broken set-up, not a measurement
        while time.monotonic() < deadline:
            for node in self.nodes:
                node.remember()
                if node.proc.poll() is not None:
                    raise RuntimeError(f"ray node {node.name} exited: {node.log.read_text(errors='replace')[-2000:]}")
            if self.alive_nodes() >= count:
                return
            time.sleep(1)
        raise RuntimeError(f"the private Ray cluster did not reach {count} nodes in {timeout_s:.0f}s")

    def kill_node(self, node: RayNode, spare: set[int] = frozenset()) -> None:
        """The node is lost: its Ray processes (`ray start`, raylet, workers) SIGKILLed at once, no graceful shutdown;
        the pids in `spare` (what a cell started: its engine, the node guard) are left to fend for themselves."""
        node.remember()
        for proc in [psutil.Process(node.proc.pid), *node.seen.values()]:
            if proc.pid not in spare:
                with contextlib.suppress(psutil.NoSuchProcess):
                    proc.kill()
        node.proc.wait(timeout=30)

    def stop(self) -> None:
        for node in self.nodes:
            node.remember()
        for node in reversed(self.nodes):
            with contextlib.suppress(ProcessLookupError):
                node.proc.send_signal(signal.SIGTERM)  # `ray start --block` stops its node's processes
        for node in self.nodes:
            with contextlib.suppress(subprocess.TimeoutExpired):
                node.proc.wait(timeout=30)
        leftovers = [p for node in self.nodes for p in node.seen.values()]
        for proc in psutil.process_iter(["cmdline"]):
            with contextlib.suppress(psutil.Error):
                if str(self.tmp) in " ".join(proc.info["cmdline"] or []):
                    leftovers.append(proc)
        for proc in leftovers:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(leftovers, timeout=30)
        for node in self.nodes:
            with contextlib.suppress(ProcessLookupError):
                node.proc.kill()
            node.proc.wait(timeout=30)
