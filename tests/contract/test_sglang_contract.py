"""Contract tests of the harness's SGLang paths, through the stand-in SGLang 0.5.23 (sglang_standin.py: every behaviour
cites the SGLang file it copies) and a fake nvidia-smi (bin/). The harness runs for real: `python -m evalharness run`
on a matrix whose engine is sglang and whose command is the stand-in. The real SGLang runs on this CPU too
(tests/integration/test_sglang_real.py); the stand-in covers what the CPU build cannot show (GPU memory, TP 8, SM120
kernels, NEXTN) and never replaces the real-engine tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalharness.serving.host import free_port
from evalharness.serving.server import ServerProcess

pytestmark = [pytest.mark.timeout(120)]

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
STANDIN = HERE / "sglang_standin.py"


def harness_env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{HERE / 'bin'}{os.pathsep}{os.environ['PATH']}",
            "STANDIN_GPU_FILE": str(tmp_path / "gpu.json"), "PYTHONPATH": str(REPO)}


def run_matrix(tmp_path: Path, axes: str, args: str = "{--max-running-requests: 8}", extra: str = "",
               throughput: bool = True, extra_env: dict[str, str] | None = None,
               distribution: str = "{enabled: false}",
               harness: list[str] | None = None) -> tuple[subprocess.CompletedProcess, dict, Path]:
    """Run the harness (`harness`: its argv before `run`, default the package) on a stand-in matrix."""
    scenarios = ("throughput: {scenarios: [{name: s, concurrency: 2, input_len: 16, output_len: 64, requests: 6, "
                 "warmup_requests: 2}]}") if throughput else ""
    matrix = tmp_path / "m.yaml"
    matrix.write_text(f"""\
name: contract
engine: sglang
model: stand-in/qwen3
served_model_name: standin
command: [{json.dumps(sys.executable)}, {json.dumps(str(STANDIN))}]
args: {args}
axes:
{axes}
timeouts: {{startup_s: 30, teardown_grace_s: 10, gpu_release_s: 1}}
{extra if extra.startswith("probes") else "probes: {enabled: false}"}
distribution: {distribution}
{scenarios}
{"" if extra.startswith("probes") else extra}""")
    out = tmp_path / "out"
    proc = subprocess.run([*(harness or [sys.executable, "-m", "evalharness"]), "run", "--matrix", str(matrix),
                           "--out", str(out)],
                          env={**harness_env(tmp_path), **(extra_env or {})}, capture_output=True, text=True, timeout=110, cwd=REPO)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads((out / "results.json").read_text())["cells"], out


def measured_truth(path: Path, measured: int) -> float:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    last = rows[-measured:]
    return sum(r["tokens"] for r in last) / sum(r["verifies"] for r in last)


def test_a_ready_sglang_cell_reports_memory_versions_acceptance_and_a_launcher_teardown(tmp_path):
    truth = tmp_path / "truth-on.jsonl"
    _, cells, out = run_matrix(tmp_path, f"""\
  nextn:
    "off": {{}}
    "on": {{args: {{--speculative-algorithm: NEXTN, --speculative-num-draft-tokens: 2}},
            env: {{STANDIN_TRUTH: {json.dumps(str(truth))}}}}}""")
    on, off = cells["nextn-on"], cells["nextn-off"]
    assert on["status"] == off["status"] == "ok", (on["reason"], off["reason"])
    assert "--enable-metrics" in on["argv"]  # added for SGLang cells
    # /server_info's internal_states[0].memory_usage and the effective batch ceiling
    facts = on["server"]
    assert facts["memory_gb"] == {"weights": 27.81, "kv_cache": 51.2, "cuda_graph": 2.0, "available_at_startup": 94.12}
    assert facts["token_capacity"] == 812345 and facts["max_running_requests"] == 8
    assert facts["startup_s"]["load_weight"] == 41.5 and facts["startup_s"]["cuda_graph.decode"] == 12.0
    assert facts["versions"]["sglang"] == "0.5.23"
    # acceptance: the counters' delta over exactly the 6 measured requests (not the 2 warm-up ones)
    [scenario] = on["throughput"]
    # and cross-checked with each measured request's own spec_tokens_details (asked for with
    # return_spec_tokens_details): the same figure, so the counters agree
    engine = scenario["engine"]
    assert engine["spec_mean_acceptance_length"] == pytest.approx(measured_truth(truth, 6))
    assert engine["spec_counters_acceptance_length"] == pytest.approx(measured_truth(truth, 6))
    assert engine["spec_acceptance_length_per_request"] == pytest.approx(measured_truth(truth, 6))
    assert engine["spec_requests_with_details"] == 6 and "spec_disagreement" not in engine
    assert engine["spec_source"] == "per-request details (counters agree)"
    assert off["throughput"][0]["engine"].get("spec_mean_acceptance_length") is None
    assert scenario["engine"]["server_decode_lines"] >= 1 and scenario["engine"]["server_cuda_graph"] == "on"
    # the launch command (random port) and startup times are never settings
    assert not any(k.startswith(("launch_command", "startup_time")) for k in on["resolved"])
    # teardown: SIGTERM to the launcher only, it drained and asked its scheduler to release, memory came back
    for cell in (on, off):
        torn = cell["teardown"]
        assert torn["sigterm_to"] == "launcher" and torn["signals"] == ["SIGTERM"] and torn["leftover"] == []
        assert torn["launcher_exited_s"] is not None
        assert torn["gpu_memory_before_mib"] == [1000] and torn["gpu_memory_after_mib"] == [1000]
    log = (out / on["log"]).read_text()
    assert log.index("SIGTERM received") < log.index("released GPU memory")
    report = (out / "report.md").read_text()
    assert "## Server" in report and "27.81" in report and "sglang 0.5.23" in report
    assert "launch\\_command" not in report and "launch_command" not in report


def test_a_refused_flush_gives_no_acceptance_figure_and_says_why(tmp_path):
    _, cells, out = run_matrix(tmp_path, """\
  nextn:
    "on": {args: {--speculative-algorithm: NEXTN}, env: {STANDIN_PHANTOM: "1"}}""")
    [scenario] = cells["nextn-on"]["throughput"]
    assert scenario["engine"]["spec_unavailable"].startswith(
        "/flush_cache answered 400 (Timed out waiting for idle state.)")
    assert "spec_counters_acceptance_length" not in scenario["engine"]
    # the counters give no figure; the measured requests' own details still do, and the report says both
    assert scenario["engine"]["spec_source"] == "per-request details"
    assert "counters: no figure: /flush\\_cache answered 400" in (out / "report.md").read_text()


def test_counters_that_count_other_requests_are_flagged_and_the_requests_own_figure_is_shown(tmp_path):
    truth = tmp_path / "truth.jsonl"
    _, cells, out = run_matrix(tmp_path, f"""\
  nextn:
    "on": {{args: {{--speculative-algorithm: NEXTN}},
            env: {{STANDIN_FOREIGN_TRAFFIC: "1", STANDIN_TRUTH: {json.dumps(str(truth))}}}}}""")
    engine = cells["nextn-on"]["throughput"][0]["engine"]
    assert engine["spec_mean_acceptance_length"] == pytest.approx(measured_truth(truth, 6))
    assert engine["spec_counters_acceptance_length"] < 0.9 * engine["spec_mean_acceptance_length"]
    assert "other requests ran on the server" in engine["spec_disagreement"]
    assert "**counters disagree**" in (out / "report.md").read_text()


def test_server_and_client_throughput_that_disagree_are_flagged(tmp_path):
    _, cells, out = run_matrix(tmp_path, """\
  claim:
    "double": {env: {STANDIN_SERVER_TPUT_FACTOR: "2"}}""")
    engine = cells["claim-double"]["throughput"][0]["engine"]
    assert engine["throughput_disagreement"] is True and 1.4 < engine["server_client_ratio"] < 3.0
    assert "server and client disagree" in (out / "report.md").read_text()


def test_sglang_0_5_23_crash_texts_classify(tmp_path):
    _, cells, _ = run_matrix(tmp_path, """\
  crash:
    flashinfer: {env: {STANDIN_CRASH: flashinfer}}
    oom_kill: {env: {STANDIN_CRASH: oom_kill}}
    port: {env: {STANDIN_CRASH: port}}""", throughput=False)
    kinds = {cid: (c["status"], c["crash"]["kind"]) for cid, c in cells.items()}
    assert kinds == {"crash-flashinfer": ("crashed", "unsupported_kernel"),
                     "crash-oom_kill": ("crashed", "out_of_memory"), "crash-port": ("crashed", "port_in_use")}
    assert "exit code: -9" in cells["crash-oom_kill"]["crash"]["line"]
    # a scheduler crash ends with the launcher SIGKILLed by its own cleanup (0.5.23, seen on the real server)
    assert "(exit code -9 after" in cells["crash-flashinfer"]["reason"]
    assert "(exit code -9 after" in cells["crash-oom_kill"]["reason"]


def test_memory_still_held_refuses_the_next_cell_instead_of_a_false_out_of_memory(tmp_path):
    # the killed scheduler's memory lingers 60 s (the driver's late release), longer than gpu_release_s (1 s)
    _, cells, out = run_matrix(tmp_path, """\
  c:
    a: {env: {STANDIN_IGNORE_SHUTDOWN: "1"}}
    b: {}""", throughput=False, extra_env={"STANDIN_GPU_LINGER_S": "60"})
    first, second = cells["c-a"], cells["c-b"]
    assert "GPU memory not released after teardown: [1500]" in first["reason"]
    assert "Schedulers still alive 15s after ShutdownReq" in (out / first["log"]).read_text()
    assert second["status"] == "error" and second["crash"] is None and second["teardown"] is None
    assert second["reason"].startswith("not launched: GPU memory still held from an earlier server ([1500] MiB")
    assert "schedulers_killed_before_release" in {w["key"] for w in first["warnings"]}


@pytest.mark.parametrize("terminate,held,released", [("launcher", 0, True), ("group", 1500, False)])
def test_teardown_order_launcher_first_lets_the_scheduler_release(tmp_path, monkeypatch, terminate, held, released):
    """The reason for `terminate: launcher`: a group SIGTERM reaches SGLang's scheduler (no SIGTERM handler) before
    the launcher can ask it to release its GPU memory."""
    monkeypatch.setenv("STANDIN_GPU_FILE", str(tmp_path / "gpu.json"))
    port = free_port()
    server = ServerProcess([sys.executable, str(STANDIN), "--model-path", "m", "--host", "127.0.0.1", "--port",
                            str(port)], {}, tmp_path / "server.log", f"http://127.0.0.1:{port}/health_generate")
    server.start()
    assert server.wait_ready(timeout_s=30).outcome == "ready"
    torn = server.stop(grace_s=10, terminate=terminate)
    assert torn.leftover == [] and torn.signals == ["SIGTERM"]
    assert json.loads((tmp_path / "gpu.json").read_text())["held_mib"] == held
    assert ("released GPU memory" in (tmp_path / "server.log").read_text()) is released


def test_an_axis_that_changed_nothing_is_reported(tmp_path):
    """DeepGEMM on/off through SGLANG_ENABLE_JIT_DEEPGEMM on a box where SGLang turns it off by itself: same resolved
    settings, same probe answers; the report says the axis had no effect. NEXTN changes resolved settings: never."""
    _, _, out = run_matrix(tmp_path, """\
  deepgemm:
    "on": {env: {SGLANG_ENABLE_JIT_DEEPGEMM: "1"}}
    "off": {env: {SGLANG_ENABLE_JIT_DEEPGEMM: "0"}}
  nextn:
    "off": {}
    "on": {args: {--speculative-algorithm: NEXTN}}""", throughput=False, extra="probes: {max_tokens: 16}")
    results = json.loads((out / "results.json").read_text())
    pairs = {(n["axis"], tuple(n["cells"])) for n in results["no_effect"]}
    assert pairs == {("deepgemm", ("deepgemm-on.nextn-off", "deepgemm-off.nextn-off")),
                     ("deepgemm", ("deepgemm-on.nextn-on", "deepgemm-off.nextn-on"))}
    report = (out / "report.md").read_text()
    assert "## Axes that changed nothing" in report and "**deepgemm** on vs off" in report


def test_the_numerics_check_reads_sglangs_generate_logprobs_by_id_in_both_directions(tmp_path):
    """SGLang's path is /generate with input_ids, return_logprob, logprob_start_len and top_logprobs_num (its
    completions echo gives text_offset -1 and text keys): the stand-in's small model, served as the reference, as an
    unchanged cell and with its logits perturbed; the reference served again after the cells scores their samples."""
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"id": f"p{i}", "prompt": text}) + "\n" for i, text in
                               enumerate(["The capital of France is", "Q: What is 2 + 3?\nA:", "x" * 2000,
                                          "Once upon a time", "The sun rises in the"])))  # five: an interval
    proc, cells, out = run_matrix(tmp_path, "  cell:\n    ref: {}\n    same: {args: {--max-running-requests: 4}}\n"
                                  "    noisy: {env: {STANDIN_LOGIT_NOISE: 1.5}}", throughput=False,
                                  distribution=f"{{max_tokens: 12, prompts: {json.dumps(str(prompts))}}}")
    contexts = [json.loads(line) for line in (out / "cells" / "cell-ref" / "contexts.jsonl").read_text().splitlines()]
    assert [len(c["token_ids"]) for c in contexts] == [12] * 5 and all(c["error"] is None for c in contexts)
    assert len(contexts[2]["prompt_ids"]) == 512 - 12 - 2  # the long prompt trimmed to the served max_model_len
    same = cells["cell-same"]["drift"]["measures"]["distribution"]
    noisy = cells["cell-noisy"]["drift"]["measures"]["distribution"]
    # the same model: every figure exactly 0, its own samples token for token the reference's (same seeds)
    assert same["forward"]["estimate"] == 0 and same["reverse"]["estimate"] == 0
    assert same["reverse"]["own_samples_identical"] == 5 and same["disjoint_topk"] == 0
    # the perturbed one: both directions well above 0, from its own (different) samples
    assert noisy["forward"]["estimate"] > 0.1 and noisy["forward"]["ci_low"] > 0
    assert noisy["reverse"]["estimate"] > 0.1 and noisy["reverse"]["own_samples_identical"] < 5
    assert noisy["reverse"]["positions"] == 60
    results = json.loads((out / "results.json").read_text())
    assert any("the reference was served again" in note for note in results["notes"]), results["notes"]
    report = (out / "report.md").read_text()
    assert "## Numerics: per-token KL divergence against the reference" in report


def _standin(tmp_path, port, env=None):
    return ServerProcess([sys.executable, str(STANDIN), "--model-path", "m", "--host", "127.0.0.1", "--port",
                          str(port), "--served-model-name", "standin"], env or {}, tmp_path / "server.log",
                         f"http://127.0.0.1:{port}/health_generate")


def test_the_standin_keeps_0_5_23s_tree_log_prefix_flush_status_and_chat_chunks(tmp_path):
    """The differences the real 0.5.23 showed (issue 27): launcher, scheduler and detokenizer in one group; no " TP0"
    at TP 1; 400 (not 422) for a negative flush timeout; a role-only first chat chunk and a separate finish chunk,
    neither carrying usage under continuous_usage_stats."""
    import httpx
    import psutil

    port = free_port()
    server = _standin(tmp_path, port)
    server.start()
    try:
        assert server.wait_ready(timeout_s=30).outcome == "ready"
        children = psutil.Process(server.pid).children(recursive=True)
        roles = sorted(" ".join(p.cmdline()[2:3]) for p in children)
        assert roles == ["--detokenizer", "--scheduler"]
        assert all(os.getpgid(p.pid) == server.pid for p in children)
        root = f"http://127.0.0.1:{port}"
        assert httpx.post(f"{root}/flush_cache", params={"timeout": -1}).status_code == 400
        with httpx.stream("POST", f"{root}/v1/chat/completions", json={
                "model": "standin", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "stream": True,
                "stream_options": {"include_usage": True, "continuous_usage_stats": True}}) as response:
            lines = list(response.iter_lines())
            chunks = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
        assert chunks, (response.status_code, lines)
        with_choices = [c for c in chunks if c["choices"]]  # the usage chunk (include_usage) has choices []
        first, finish = with_choices[0], with_choices[-1]
        assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""} and "usage" not in first
        assert finish["choices"][0]["delta"] == {} and finish["choices"][0]["finish_reason"] == "length"
        assert "usage" not in finish
        assert all(c["choices"][0]["finish_reason"] is None for c in with_choices[:-1])
    finally:
        assert server.stop(grace_s=10, terminate="launcher").leftover == []
    log = (tmp_path / "server.log").read_text()
    assert " TP0]" not in log and "Cache flushed" not in log


def test_sigterm_while_loading_kills_the_standin_launcher_outright(tmp_path):
    """0.5.23 installs its graceful SIGTERM handler at the first request (the warm-up before "fired up"): a SIGTERM
    while the weights load kills the launcher with no drain, and its children die with it."""
    import signal
    import time

    port = free_port()
    server = _standin(tmp_path, port, {"STANDIN_LOAD_FACTOR": "100"})  # 30 s of loading
    server.start()
    time.sleep(2)
    assert server.poll() is None
    os.kill(server.pid, signal.SIGTERM)
    server.popen.wait(timeout=10)
    assert server.poll() == -signal.SIGTERM
    assert server.stop(grace_s=5, terminate="launcher").leftover == []
    assert "Draining requests" not in (tmp_path / "server.log").read_text()


PORT_TAKER = """
import socket, sys, threading, time
import evalharness.runner.cell as cell
from evalharness.cli import main

chosen, holders = [], []
real_free_port = cell.free_port


def free_port(host):
    port = real_free_port(host)
    chosen.append(port)
    if len(chosen) == 1:  # another process takes the first cell's port while the engine is still loading
        def take():
            time.sleep(0.5)
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host, port))
            sock.listen(8)
            holders.append(sock)
        threading.Thread(target=take, daemon=True).start()
    return port


cell.free_port = free_port
sys.exit(main(sys.argv[1:]))
"""


def test_a_port_taken_during_startup_relaunches_the_cell_on_another_port_and_measures_it(tmp_path):
    """The port is chosen free before launch, SGLang binds it only once loaded: here a listener takes it 0.5 s into a
    3 s load, the stand-in fails to bind ([Errno 98]), and the cell is relaunched on a new port, measured, counted
    and shown, instead of lost."""
    # STANDIN_LOAD_FACTOR reaches the stand-in through the harness's environment
    _, cells, out = run_matrix(tmp_path, "  c:\n    a: {}", args="{}", extra_env={"STANDIN_LOAD_FACTOR": "10"},
                               harness=[sys.executable, "-c", PORT_TAKER])
    cell = cells["c-a"]
    assert cell["status"] == "ok", cell["reason"]
    assert cell["throughput"][0]["completed"] == 6
    [note] = cell["port_relaunches"]
    assert "taken by another process" in note and "address already in use" in note.lower()
    lost = (out / "cells" / "c-a" / "server.port-lost-1.log").read_text()
    assert "Errno 98" in lost
    report = (out / "report.md").read_text()
    assert "1 port lost, relaunched" in report and "Ports lost during startup" in report
