"""Shared set-up for tests against the real embedded engine (vLLM CPU build serving SmolLM2-135M-Instruct).

These tests never skip: if the engine or the model is missing they fail and say how to set them up.

No test outcome may depend on how fast the machine is. Where a timeout is the thing under test, it is derived from
`calibration`: the slowest answer of the probe set (the harness's probe load: twelve chat prompts, 64 tokens, four at
a time) measured on the real engine at the start of the session, after one warm-up pass, times a stated factor.
Safety limits (pytest timeouts, waits for a process to appear) are generous deadlines scaled the same way, never
outcomes.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import httpx
import psutil
import pytest

from evalharness.serving.processes import MARKER_ENV

REPO = Path(__file__).resolve().parents[2]
ENGINE_PYTHON = REPO / ".engine" / "venv" / "bin" / "python"
MODEL = REPO / ".engine" / "models" / "SmolLM2-135M-Instruct"
HARNESS = [sys.executable, "-m", "evalharness"]
FAULT_ENGINE = REPO / "tests" / "faults" / "fault_engine.py"
# six of the shipped distribution prompts: the numerics check runs in every test cell, at a tenth of its default cost
SHORT_CONTEXTS = REPO / "tests" / "data" / "distribution-short.jsonl"
ENGINE_MODULE = ["-m", "vllm.entrypoints.openai.api_server"]
SERVED_NAME = "smollm2"
# the flags every test cell shares; the session engine is launched with these and float32
BASE_ARGS = {"--max-model-len": 1024, "--enforce-eager": True, "--enable-tokenizer-info-endpoint": True}
# VLLM_ENABLE_V1_MULTIPROCESSING=0: the engine core drives the model itself instead of through a worker process of
# its own: two processes, not three, and 8 s less per start here (29.7 s -> 21.5 s to /health, quiet machine,
# 2026-12-01; test_engine_run's dozen starts took 559 s with three processes, 291 s with two). The two-process tree
# still has a child to leave behind (the API server's VLLM::EngineCore), which test_engine_run's SIGKILL-and-resume
# checks; the three-process tree's teardown (SIGINT and SIGTERM while it starts, a startup timeout) is
# test_engine_interrupt's subject (FULL_TREE_ENV).
#
# VLLM_CACHE_ROOT: one cache for the whole session instead of the harness's default, one per run folder. In an empty
# cache vLLM inspects the model class in a subprocess of its own before anything else (model registry, "Resolved
# architecture" 17 s after start instead of at once on a machine without AVX-512, 2026-12-02), and keeps the answer
# there (modelinfos/): every test run's first start paid it, about twenty starts a session. With --enforce-eager
# nothing else is cached. The default, per run folder, is what test_engines.py checks.
VLLM_TEST_CACHE = tempfile.mkdtemp(prefix="evalharness-tests-vllm-cache-")
atexit.register(shutil.rmtree, VLLM_TEST_CACHE, ignore_errors=True)
FULL_TREE_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_CACHE_ROOT": VLLM_TEST_CACHE}
BASE_ENV = {**FULL_TREE_ENV, "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
# A healthy request may take this many times the slowest calibration answer before a test calls it a timeout: room
# for the machine getting twice as slow mid-run (the other core busy) and for batching with other cells' requests.
REQUEST_FACTOR = 10
# and never less than this: a machine fast enough to answer every probe in a second still meets a slow first batch
REQUEST_FLOOR_S = 20.0
# pids of engines the test session itself keeps running (the shared engine): never counted as left behind
_SESSION_ENGINES: list[int] = []


@pytest.fixture(scope="session")
def engine() -> dict[str, str]:
    missing = [str(p) for p in (ENGINE_PYTHON, MODEL / "config.json") if not p.exists()]
    if missing:
        pytest.fail(f"the embedded engine is not set up ({', '.join(missing)} missing): run scripts/setup.sh")
    return {"python": str(ENGINE_PYTHON), "model": str(MODEL)}


def matrix_yaml(engine: dict[str, str], cells: dict[str, str], startup_s: float = 600, extra: str = "",
                command: list[str] | None = None, env: dict[str, str] | None = None) -> str:
    """A matrix on the embedded engine with one axis `cell`, whose values are given as YAML flow mappings; `env` the
    matrix's environment (default BASE_ENV)."""
    values = "\n".join(f"    {name}: {body}" for name, body in cells.items())
    if "distribution:" not in extra:  # the numerics check on six short contexts: its own figures are tested in
        extra += f"distribution: {{prompts: {json.dumps(str(SHORT_CONTEXTS))}, max_tokens: 32}}\n"  # test_engine_numerics
    command = command or [engine["python"], *ENGINE_MODULE]
    return f"""\
name: integration
engine: vllm
model: {engine['model']}
served_model_name: {SERVED_NAME}
command: {json.dumps(command)}
args: {json.dumps(BASE_ARGS)}
env: {json.dumps(BASE_ENV if env is None else env)}
axes:
  cell:
{values}
timeouts: {{startup_s: {startup_s}, teardown_grace_s: 20}}
{extra}"""


def _session_engine_pids() -> set[int]:
    pids = set()
    for root in _SESSION_ENGINES:
        try:
            parent = psutil.Process(root)
            pids |= {root, *(p.pid for p in parent.children(recursive=True))}
        except psutil.NoSuchProcess:
            continue
    return pids


# Every process this test session starts inherits this tag, so that an engine someone else runs on the same machine
# (another checkout's tests, a user's own server) is never mistaken for one that this session left behind.
SESSION_TAG = "EH_TEST_SESSION"
os.environ[SESSION_TAG] = f"{os.getpid()}-{time.time_ns()}"
_SESSION_START = time.time()


def _from_this_session(proc: psutil.Process) -> bool:
    """Started by this test session: a descendant of this process, or carrying its tag (children that outlived their
    parents keep their environment), or, where a renamed worker's environment can no longer be read (setproctitle
    overwrites it, see serving/processes.py), an orphan created since the session began: counted, to be safe."""
    if any(parent.pid == os.getpid() for parent in proc.parents()):
        return True
    try:
        env = proc.environ()
    except (psutil.AccessDenied, OSError):
        env = {}
    if SESSION_TAG in env:
        return env[SESSION_TAG] == os.environ[SESSION_TAG]
    readable = "PATH" in env or MARKER_ENV in env
    return not readable and proc.ppid() == 1 and proc.create_time() >= _SESSION_START


def engine_processes() -> list[psutil.Process]:
    """Every live engine process this test session started and has not stopped: launched by an evalharness server
    (the marker variable; vLLM's renamed workers can hide it, see serving/processes.py), renamed VLLM::*, or serving
    the test model; the session's own shared engine excepted."""
    found = []
    ours = _session_engine_pids()
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.status() == psutil.STATUS_ZOMBIE or proc.pid in ours:
                continue
            if ((proc.info["name"] or "").startswith("VLLM::") or MARKER_ENV in proc.environ()
                    or str(MODEL) in " ".join(proc.cmdline())) and _from_this_session(proc):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def run_harness(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HARNESS, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# the shared engine serves vLLM's dev endpoints, /reset_prefix_cache among them, as the harness launches vLLM for a
# matrix whose prefix-cache check is on (serving/engines/vllm.py): a cell it serves can have its cache emptied
SHARED_ENV = {"VLLM_SERVER_DEV_MODE": "1"}


@dataclass(frozen=True)
class SharedEngine:
    """The real engine, float32 with BASE_ARGS, started once per session for tests that only send it requests."""
    root_url: str
    args: dict
    log: Path


@pytest.fixture(scope="session")
def shared_engine(engine, tmp_path_factory) -> SharedEngine:
    folder = tmp_path_factory.mktemp("shared-engine")
    port, args = free_port(), {**BASE_ARGS, "--dtype": "float32"}
    argv = [engine["python"], *ENGINE_MODULE, "--model", engine["model"], "--served-model-name", SERVED_NAME,
            "--host", "127.0.0.1", "--port", str(port)]
    for flag, value in args.items():
        argv += [flag] if value is True else [flag, str(value)]
    log = folder / "server.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, **BASE_ENV, "VLLM_NO_USAGE_STATS": "1", **SHARED_ENV})
    _SESSION_ENGINES.append(proc.pid)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 900  # a deadline for a broken set-up, not a measurement
        while not _healthy(root):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the shared engine did not start (exit {proc.poll()}); its log:\n"
                            f"{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)
        yield SharedEngine(root, args, log)
    finally:
        _stop(proc)
        _SESSION_ENGINES.remove(proc.pid)


def behind_proxy(engine: dict[str, str]) -> list[str]:
    """A matrix command that starts each cell's engine behind the fault proxy with no faults (tests/faults/): the
    harness sees the engine itself, and a cell whose env names the session's engine (served_by) starts none."""
    return [sys.executable, str(FAULT_ENGINE), "--", engine["python"], *ENGINE_MODULE]


def served_by(shared: SharedEngine) -> str:
    """A cell (YAML flow mapping) with the shared engine's settings, served by it through the proxy of behind_proxy:
    a cell the test only needs answers and measurements from, without an engine start (40-60 s each on a machine
    without AVX-512, 2026-12-02)."""
    own = {flag: value for flag, value in shared.args.items() if BASE_ARGS.get(flag) != value}  # the matrix has the rest
    return json.dumps({"args": own, "env": {"EH_UPSTREAM": shared.root_url}})  # JSON is YAML


def _healthy(root: str) -> bool:
    try:
        return httpx.get(f"{root}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the engine's process group, then SIGKILL whatever is left of it and its descendants after a grace."""
    try:
        family = [psutil.Process(proc.pid)]
        family += family[0].children(recursive=True)
    except psutil.NoSuchProcess:
        family = []
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    _, alive = psutil.wait_procs(family, timeout=30)
    for leftover in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            leftover.kill()
    psutil.wait_procs(alive, timeout=30)
    proc.poll()


@dataclass(frozen=True)
class Calibration:
    """How fast this machine answers, measured on the real engine at the start of the session."""
    slowest_probe_s: float  # the slowest answer of the probe set, asked as the harness asks it

    @property
    def request_s(self) -> float:
        """A request timeout no healthy request reaches on this machine (REQUEST_FACTOR x the slowest answer)."""
        return round(max(REQUEST_FACTOR * self.slowest_probe_s, REQUEST_FLOOR_S), 1)


@pytest.fixture(scope="session")
def calibration(shared_engine) -> Calibration:
    probes = [json.loads(line) for line in (REPO / "tasks" / "probes" / "default.jsonl").read_text().splitlines()
              if line.strip()]

    def ask(probe: dict) -> float:
        started = time.monotonic()
        reply = httpx.post(f"{shared_engine.root_url}/v1/chat/completions", timeout=600, json={
            "model": SERVED_NAME, "messages": probe["messages"], "max_tokens": probe.get("max_tokens") or 64,
            "temperature": 0.0})
        reply.raise_for_status()
        return time.monotonic() - started

    with ThreadPoolExecutor(4) as pool:  # the probe phase's default concurrency
        list(pool.map(ask, probes))  # a first pass warms the engine up: its first answers are several times slower
        seconds = list(pool.map(ask, probes))
    measured = Calibration(slowest_probe_s=round(max(seconds), 2))
    print(f"calibration: slowest probe answer {measured.slowest_probe_s}s -> request timeout {measured.request_s}s")
    return measured


# A machine where SGLang 0.5.23 should install never passes with its real-SGLang tests skipped: a failed set-up (its
# reason in .engine/sglang/unavailable) or a skip of any other kind fails the session (scripts/sglang_expected.py
# decides from the platform; scripts/test.sh says it in its first line). Where it should not install, they are skipped
# with their reason, as before.
_SGLANG_SKIPPED: list[tuple[str, str]] = []
_SGLANG_FAILURE: list[str] = []


def _real_sglang_skip(item: pytest.Item, report: pytest.TestReport) -> str | None:
    """The skip message of a real-SGLang test (in a module that uses require_sglang, or skipped by it), else None."""
    if not report.skipped or hasattr(report, "wasxfail"):
        return None
    longrepr = report.longrepr
    message = str(longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr)
    uses_sglang = callable(getattr(getattr(item, "module", None), "require_sglang", None))
    return message if uses_sglang or "real SGLang unavailable" in message else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    message = _real_sglang_skip(item, report)
    if message is not None:
        _SGLANG_SKIPPED.append((item.nodeid, message))
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    from scripts import sglang_expected

    if not _SGLANG_SKIPPED:
        return
    failure = sglang_expected.skipped_tests(_SGLANG_SKIPPED, sglang_expected.not_expected(sglang_expected.gather()))
    if failure is not None:
        _SGLANG_FAILURE.append(failure)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter) -> None:
    for failure in _SGLANG_FAILURE:
        terminalreporter.section("real SGLang expected", sep="=", red=True, bold=True)
        terminalreporter.line(failure, red=True)
