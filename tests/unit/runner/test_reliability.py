"""Reliability pieces that need no engine: request retries and tallies, the cell verdict from them, the orphan sweep
after a harness was SIGKILLed, port checks, and what `run` refuses before launching anything. The same faults
against the real engine are in tests/integration/test_engine_faults.py."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from evalharness.cli import main
from evalharness.phases.openai_api import Endpoint
from evalharness.phases.retries import RequestFailed, judge_tally
from evalharness.records.measures import RequestTally
from evalharness.serving.host import port_in_use
from evalharness.serving.processes import sweep_orphans
from evalharness.serving.server import ServerProcess


CHAT_ANSWER = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
               "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}


def _endpoint(answers, retries=2, hung_after=3):
    """An Endpoint (the openai client, retries off, under the harness's RequestSender) whose transport replays
    `answers` (status codes, or httpx exceptions to raise), recording each call. The httpx exceptions reach the
    sender wrapped by openai (APIConnectionError / APITimeoutError with the httpx one as __cause__); the same faults
    from a real socket are in test_openai_api.py."""
    calls = []

    def handler(request):
        calls.append(request)
        answer = answers[min(len(calls), len(answers)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return httpx.Response(answer, json=CHAT_ANSWER if answer == 200 else {"error": {"message": f"{answer}"}})

    client = httpx.Client(transport=httpx.MockTransport(handler))
    return Endpoint("http://x/v1", 5.0, retries=retries, hung_after=hung_after, backoff_s=0.0,
                    http_client=client), calls


def _ask(api):
    return api.chat(model="m", messages=[{"role": "user", "content": "hi"}])


def test_transient_failures_are_retried_and_counted():
    api, calls = _endpoint([503, httpx.ReadError("reset"), 200])
    assert _ask(api).choices[0].message.content == "ok"
    assert len(calls) == 3
    assert api.tally == RequestTally(requests=1, failed=0, retried=2, kinds={"http_503": 1, "reset": 1})


def test_a_request_that_keeps_failing_is_one_failure_after_its_retries():
    api, calls = _endpoint([500])
    with pytest.raises(RequestFailed, match="http_500"):
        _ask(api)
    assert len(calls) == 3 and api.tally.failed == 1 and api.tally.kinds == {"http_500": 3}


def test_client_errors_and_timeouts_are_not_retried():
    api, calls = _endpoint([400])
    with pytest.raises(RequestFailed, match="http_400"):
        _ask(api)
    assert len(calls) == 1
    api, calls = _endpoint([429, 200])  # too many requests: worth another try
    assert _ask(api) and api.tally.kinds == {"http_429": 1} and api.tally.retried == 1
    api, calls = _endpoint([httpx.ReadTimeout("slow")])
    with pytest.raises(RequestFailed, match="timeout"):
        _ask(api)
    assert len(calls) == 1


def test_timeouts_in_a_row_mean_the_engine_stopped_answering_and_the_rest_fail_at_once():
    api, calls = _endpoint([httpx.ReadTimeout("slow")], hung_after=2)
    for _ in range(5):
        with pytest.raises(RequestFailed):
            _ask(api)
    assert len(calls) == 2 and api.tally.hung and api.tally.kinds == {"timeout": 2}
    assert api.tally.failed == 5 and api.tally.requests == 5


@pytest.mark.parametrize("tally,expected", [
    (RequestTally(requests=100, failed=5), None),
    (RequestTally(requests=100, failed=6, kinds={"http_503": 6}), "error"),
    (RequestTally(requests=10, failed=1, hung=True), "timeout"),
    (RequestTally(), None),
])
def test_a_phase_marks_the_cell_only_above_the_threshold(tally, expected):
    verdict = judge_tally("probes", tally, 0.05)
    assert (verdict[0] if verdict else None) == expected


def test_orphans_of_a_killed_harness_are_found_by_their_pid_file_and_killed(tmp_path):
    # a server launched by a harness that then died with SIGKILL: it and its child keep running
    script = "import subprocess, time; subprocess.Popen(['sleep', '300']); time.sleep(300)"
    server = ServerProcess([sys.executable, "-c", script], {}, tmp_path / "server.log", "http://127.0.0.1:1/health",
                           pid_file=tmp_path / "cell" / "server.pid")
    (tmp_path / "cell").mkdir()
    server.start()
    time.sleep(1.0)
    family = [psutil.Process(server.pid), *psutil.Process(server.pid).children(recursive=True)]
    assert len(family) == 2 and (tmp_path / "cell" / "server.pid").exists()
    found = sweep_orphans([tmp_path / "cell" / "server.pid"])
    assert len(found) == 1 and "killed 2 engine processes" in found[0]
    server.popen.wait(5)  # reap our own child so it is gone, not a zombie
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in family)
    assert not (tmp_path / "cell" / "server.pid").exists()


def test_a_pid_file_whose_pid_was_reused_kills_nothing(tmp_path):
    bystander = subprocess.Popen(["sleep", "30"])
    try:
        pid_file = tmp_path / "server.pid"
        # the recorded start time is not this process's: the pid was reused by an unrelated process
        pid_file.write_text(json.dumps({"pid": bystander.pid, "create_time": time.time() + 1000, "marker": "x"}))
        assert sweep_orphans([pid_file]) == [] and bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_port_in_use_is_named():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        held = port_in_use("127.0.0.1", port)
        assert held is not None and "in use" in held and (f"pid {os.getpid()}" in held or "held by" not in held)
    assert port_in_use("127.0.0.1", port) is None


MATRIX = """\
name: t
engine: vllm
model: {model}
command: [{command}]
"""


@pytest.mark.parametrize("model,command,expected", [
    ("/nonexistent/models/m", sys.executable, "model: /nonexistent/models/m does not exist"),
    ("some/hub-id", "/nonexistent/bin/vllm", "the engine launcher '/nonexistent/bin/vllm' is not there"),
    ("some/hub-id", "no-such-engine-binary", "'no-such-engine-binary' is not on PATH"),
])
def test_run_refuses_what_would_fail_every_cell_before_creating_anything(tmp_path, capsys, model, command, expected):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX.format(model=model, command=command))
    code = main(["run", "--matrix", str(matrix), "--out", str(tmp_path / "out")])
    assert code == 2 and expected in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_an_output_folder_that_cannot_be_created_is_a_clear_error(tmp_path, capsys):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX.format(model="some/hub-id", command=sys.executable))
    (tmp_path / "file").write_text("x")
    code = main(["run", "--matrix", str(matrix), "--out", str(tmp_path / "file" / "out")])
    assert code == 2 and "cannot create the output folder" in capsys.readouterr().err


@pytest.mark.parametrize("field,value", [("quality", "{tasks: [../../etc/evil]}"),
                                         ("axes", "{a: {../x: {}}}"),
                                         ("throughput", "{scenarios: [{name: ../x, concurrency: 1}]}")])
def test_names_that_become_paths_cannot_leave_the_run_folder(tmp_path, capsys, field, value):
    matrix = tmp_path / "m.yaml"
    matrix.write_text(MATRIX.format(model="some/hub-id", command=sys.executable) + f"{field}: {value}\n")
    assert main(["validate", "--matrix", str(matrix)]) == 2
    assert "should match pattern" in capsys.readouterr().err


def test_a_signal_during_teardown_waits_until_the_teardown_is_done():
    from evalharness.runner.signals import Interrupted, _Interrupts

    interrupts = _Interrupts()
    with interrupts.installed():
        with interrupts.deferred():
            os.kill(os.getpid(), signal.SIGTERM)  # a second Ctrl-C or a SIGTERM while a server is being torn down
            time.sleep(0.1)
            finished_teardown = True
        assert finished_teardown and interrupts.pending == signal.SIGTERM
        with pytest.raises(Interrupted, match="SIGTERM"):
            interrupts.raise_pending()
        with pytest.raises(Interrupted, match="SIGINT"):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)


def test_no_process_is_started_through_a_shell():
    """Launches are argv lists: a model path or flag value can never be read as shell syntax."""
    import ast

    offenders = []
    for path in sorted((Path(__file__).resolve().parents[3] / "evalharness").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                shell = any(k.arg == "shell" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                            for k in node.keywords)
                if shell or name in ("os.system", "os.popen", "subprocess.getoutput", "subprocess.getstatusoutput"):
                    offenders.append(f"{path.name}:{node.lineno}: {name}")
    assert offenders == []


LEFT = "engine processes left behind after teardown: [4242]"


@pytest.mark.parametrize("status,reason,leftover,held,expected", [
    ("crashed", "out_of_memory: CUDA out of memory", [4242], [], ("crashed", f"out_of_memory: CUDA out of memory; {LEFT}")),
    ("garbage", "12/12 probe outputs marked", [4242], [], ("garbage", f"12/12 probe outputs marked; {LEFT}")),
    ("timeout", "not ready after 900s", [4242], [], ("timeout", f"not ready after 900s; {LEFT}")),
    ("ok", None, [4242], [], ("error", LEFT)),  # what it measured stands, but the next cell ran beside the leftovers
    ("ok", None, [], [], ("ok", None)),
    ("ok", None, [], [80_000], ("ok", "GPU memory not released after teardown: [80000] MiB more per GPU")),
])
def test_leftover_processes_are_recorded_without_replacing_a_more_specific_status(status, reason, leftover, held,
                                                                                    expected):
    """Issue 13.5 (the rule): a crash stays a crash; only an ok cell becomes error, and no reason reads 'error; ...'."""
    from evalharness.runner.teardown import after_teardown

    assert after_teardown(status, reason, leftover, held) == expected


def test_a_crashed_cell_with_leftover_processes_stays_crashed(tmp_path, monkeypatch):
    """Issue 13.5 (through run_cell): an engine that dies at startup and leaves a process behind is still `crashed`,
    with its own reason first and the leftover said after it."""
    from evalharness.matrix.schema import Cell, Matrix
    from evalharness.runner.cell import run_cell
    from evalharness.runner.progress import Progress
    from evalharness.serving.engines import ENGINES

    crash = "import sys; print('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'); sys.exit(1)"
    matrix = Matrix(name="t", engine="vllm", model="m", command=[sys.executable, "-c", crash],
                    timeouts={"startup_s": 30, "teardown_grace_s": 2})
    stop = ServerProcess.stop

    def stop_leaving_one(self, grace_s=30.0, terminate="group"):
        return stop(self, grace_s, terminate).model_copy(update={"leftover": [4242]})

    monkeypatch.setattr(ServerProcess, "stop", stop_leaving_one)
    cell = Cell(id="c", axes={}, args={}, env={}, settings_hash="h", engine="vllm")
    result = run_cell(matrix, cell, ENGINES["vllm"], tmp_path, Progress(total=1), "c")
    assert result.status == "crashed" and result.crash.kind == "out_of_memory"
    assert result.reason.startswith("out_of_memory: ") and result.reason.endswith(LEFT)
    assert result.teardown.leftover == [4242]
