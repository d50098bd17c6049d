"""Issue 43 on the real engine: a throughput scenario measured repeat by repeat against the session's float32 engine
(real HTTP, the harness's own client and host window), with real processes outside the harness's tree burning both
cores during the first repeat: it is seen, recorded with what disturbed it, measured again and set aside."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from evalharness.analysis.speed import scenario_verdict
from evalharness.matrix.schema import Scenario
from evalharness.phases.throughput.client import LoadClient
from evalharness.phases.throughput.prompts import load_source
from evalharness.runner import speedloop
from evalharness.serving.interference import STEAL_SHARE
from tests.integration.conftest import SERVED_NAME

pytestmark = [pytest.mark.engine, pytest.mark.timeout(600)]

# two CPU burners, detached from this process (a grandchild in its own session, left to init): the harness's host
# window must count them as someone else's work
BURNER = """
import os, sys, time
if os.fork():
    sys.exit(0)
os.setsid()
os.fork()
with open(sys.argv[1], "a") as f:
    f.write(f"{os.getpid()}\\n")
end = time.time() + 120
while time.time() < end:
    pass
"""


def _burn(pid_file) -> list[int]:
    subprocess.run([sys.executable, "-c", BURNER, str(pid_file)], check=True)
    for _ in range(200):
        pids = [int(p) for p in pid_file.read_text().split()] if pid_file.exists() else []
        if len(pids) == 2:
            break
        time.sleep(0.05)
    else:
        raise AssertionError("the burners did not start")
    # spinning before the repeat starts: once (2026-12-05, a fresh-clone CI run) the first repeat's window saw 0.08
    # foreign cores, the burners not yet running through it
    import psutil

    for _ in range(100):
        if all(psutil.Process(pid).cpu_times().user > 0.3 for pid in pids):
            return pids
        time.sleep(0.05)
    raise AssertionError("the burners started but do not spin")


def _stop(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _settle(limit_s: float = 45.0) -> None:
    """Wait until the hypervisor steals under half the harness's limit again (STEAL_SHARE), two seconds in a row, or
    `limit_s`: on a VM with a CPU quota two burners spinning both cores are followed by steal (33-41% through the
    next repeats in a fresh-clone CI run and again alone, 2026-12-07), which the harness rightly calls disturbed."""
    import psutil

    calm, deadline = 0, time.monotonic() + limit_s
    before = psutil.cpu_times()
    while calm < 2 and time.monotonic() < deadline:
        time.sleep(1.0)
        after = psutil.cpu_times()
        total = sum(after) - sum(before)
        share = (getattr(after, "steal", 0.0) - getattr(before, "steal", 0.0)) / total if total > 0 else 0.0
        calm = calm + 1 if share < STEAL_SHARE / 2 else 0
        before = after


def test_a_busy_host_is_seen_set_aside_and_measured_again(shared_engine, tmp_path, monkeypatch):
    scenario = Scenario(name="single", concurrency=1, requests=2, output_len=32, api="chat", prompts="natural",
                        repeats=3)
    client = LoadClient(f"{shared_engine.root_url}/v1", SERVED_NAME, api="chat", timeout_s=120,
                        prompts=load_source("natural"))
    for attempt in range(3):  # a quiet reference first: where something else ran on this host meanwhile, again
        _settle()
        quiet = speedloop.measure_scenario(client, scenario, tmp_path / f"quiet-{attempt}", after_warmup=lambda: None,
                                           reference=None, is_reference=True, watch_host=True)
        if not any(f.disturbed for f in quiet.repeat_figures):
            break
    assert [f.disturbed for f in quiet.repeat_figures] == [""] * 3, [f.host for f in quiet.repeat_figures]
    assert all(f.host["foreign_cores"] < 0.2 for f in quiet.repeat_figures)

    real = speedloop.measure_repeat
    # the burners run through the first repeat only; where the scheduler kept them off it (twice in 2026-12-05's
    # runs the window saw 0.03 foreign cores though both burners had spun), burn and measure again, in a new folder
    for attempt in range(3):
        _settle()
        burners = _burn(tmp_path / f"burners-{attempt}")

        def first_repeat_busy(*args, burners=burners, **kwargs):
            try:
                return real(*args, **kwargs)
            finally:
                _stop(burners)
                _settle()  # the repeats measured again must not meet the hypervisor's throttling instead

        monkeypatch.setattr(speedloop, "measure_repeat", first_repeat_busy)
        try:
            busy = speedloop.measure_scenario(client, scenario, tmp_path / f"busy-{attempt}",
                                              after_warmup=lambda: None, reference=quiet, is_reference=False,
                                              watch_host=True)
        finally:
            _stop(burners)
            monkeypatch.setattr(speedloop, "measure_repeat", real)
        first = busy.repeat_figures[0]
        # and where the repeats after the burners were disturbed by something else (the hypervisor stole 33% and 37%
        # of the CPU time from both in a fresh-clone CI run, 2026-12-07: every repeat disturbed, so all were kept)
        if first.host["foreign_cores"] > 0.5 and not any(f.disturbed for f in busy.repeat_figures[1:]):
            break
    # two burners on two cores beside the engine got 0.85 of them in CI (2026-12-03): far above the 0.2 limit
    assert "other processes kept" in first.disturbed and first.host["foreign_cores"] > 0.5, first.host
    assert len(busy.repeat_figures) == 4 and [bool(f.disturbed) for f in busy.repeat_figures[1:]] == [False] * 3
    clean = [f.tok_s for f in busy.repeat_figures[1:]]
    assert busy.output_tok_s == pytest.approx(sum(clean) / 3, rel=1e-6)  # the disturbed repeat is not in the mean
    verdict = scenario_verdict(busy, quiet)
    assert verdict.set_aside == (1, 0) and verdict.kept == (3, 3)
    # what a re-run of the cell on --resume finds: every repeat, the disturbed one with its reason
    again = speedloop.load_repeats(tmp_path / f"busy-{attempt}", scenario)
    assert [f.disturbed == b.disturbed for (f, _), b in zip(again, busy.repeat_figures)] == [True] * 4
