"""Faults injected between the harness and the real engine (tests/faults/fault_engine.py), one cell per fault, in one
matrix run: what the user sees for each, what is kept, and that nothing is left running.

Every cell's server is the fault proxy in front of the session's shared engine (`--upstream`): the harness launches,
probes, measures and tears down a real process per cell, and the engine answering is the real one, without an engine
start per cell. Faults fire by count or at the proxy's own seeded random, never by racing a clock; the one timeout
under test (requests.request_s) is derived from the calibration (conftest.py: the slowest 64-token probe answer
measured on this machine at the start of the session): four times it, at least REQUEST_FLOOR_S, since every request
here asks 16 tokens (FaultTimes).

Covered here: the engine dying during probes and during throughput; intermittent 500/503s and resets that retries
absorb (results kept); a phase whose requests mostly fail (cell marked error, what it measured kept); an engine that
is up but stops answering (request timeouts, cell stopped early as timed out); throughput streams stalled mid-body
and cut short (counted by kind, never passed off as tokens); model text made of Markdown, HTML and @-mentions
(rendered inert); a secret in the environment (masked everywhere). docs/reliability.md lists every fault and its test.
"""

import json
import socket
import sys
from dataclasses import dataclass

import pytest

from tests.integration.conftest import (BASE_ENV, ENGINE_MODULE, FAULT_ENGINE, REQUEST_FLOOR_S, SERVED_NAME,
                                        SHORT_CONTEXTS, engine_processes, run_harness)

pytestmark = [pytest.mark.engine, pytest.mark.timeout(3600)]

SECRET = "hunter2-do-not-print"
HOSTILE = "@channel <script>alert(1)</script> | col | ![x](http://evil.example/x.png) `tick` **bold**"
CHAT = "/v1/chat/completions"
COMPLETIONS = "/v1/completions"
STREAMED = {"path": COMPLETIONS, "body": {"stream": True}}

# two retries: the flaky cell's rules fire at most twice on one request (once each), so a third try always gets
# through. Odds per request were not enough: the proxy draws from one seeded sequence, and seed 7 puts five failures
# among its first seven chat requests, so how many one probe took depended on how the threads interleaved; with
# three and then four retries, one probe took them all (CI, 2026-12-07, twice). Fewer retries also shorten the
# lossy cell, whose failing probes wait out every backoff
RETRIES = 2

FAULTS = {
    "none": [],
    # every probe, distribution and quality request may get a 500, a 503 or a reset, each rule at most once on one
    # request body (per_request): retries absorb them wherever the seeded draws fall (see the matrix's retries)
    "flaky": [
        {"match": {"path": CHAT, "probability": 0.12, "per_request": 1}, "action": "status", "code": 503},
        {"match": {"path": CHAT, "probability": 0.08, "per_request": 1}, "action": "reset"},
        {"match": {"path": COMPLETIONS, "body": {"stream": None}, "probability": 0.08, "per_request": 1},
         "action": "status", "code": 500},
        {"match": {"path": COMPLETIONS, "body": {"stream": None}, "probability": 0.05, "per_request": 1},
         "action": "reset"},
    ],
    # after four answers, every probe request gets a 503: far above the 5% the matrix allows
    "lossy": [{"match": {"path": CHAT, "skip": 4}, "action": "status", "code": 503}],
    "die-probes": [{"match": {"path": CHAT, "skip": 5}, "action": "kill"}],
    "die-throughput": [{"match": {**STREAMED, "skip": 2}, "action": "kill"}],
    # up and healthy, but after two answers no request gets one
    "stall": [{"match": {"path": CHAT, "skip": 2}, "action": "stall", "seconds": 3600}],
    # the first streamed request hangs in mid-body, the rest are cut short
    "cut": [{"match": {**STREAMED, "times": 1}, "action": "stall_mid", "after_bytes": 600, "seconds": 3600},
            {"match": STREAMED, "action": "cut", "after_bytes": 600}],
    "hostile": [{"match": {"path": CHAT}, "action": "alter", "text": HOSTILE}],
    # healthy answers, but every throughput stream waits five seconds before its first byte: slower than the
    # reference beyond doubt, so it is screened (its quality answers a share of the documents). Two seconds were
    # not enough on a machine without AVX-512 (CI, 2026-12-02: 0.82x the reference, throughput drifting between
    # cells); five made it 0.41x and 0.33x in two runs there
    "slow": [{"match": STREAMED, "action": "stall", "seconds": 5}],
}


# the stalled and cut cells wait out request_s, two waves of it and one (about a third of the module's time at the
# session-wide factor of ten): the calibration's answers are 64 tokens, four at a time, and this matrix asks 16, so
# four times the slowest of them still leaves a healthy request a dozen times its time, and the slow cell's 5 s
# stall (about 6 s a request) three times
FAULT_REQUEST_FACTOR = 4


@dataclass(frozen=True)
class FaultTimes:
    slowest_probe_s: float  # the session's calibration (64-token probes, four at a time)

    @property
    def request_s(self) -> float:
        return round(max(FAULT_REQUEST_FACTOR * self.slowest_probe_s, REQUEST_FLOOR_S), 1)


def fault_matrix(engine: dict[str, str], shared, request_s: float) -> dict:
    """Every cell a fault proxy in front of the shared engine, whose flags the matrix repeats (the proxy logs them)."""
    command = [sys.executable, str(FAULT_ENGINE), "--upstream", shared.root_url, "--", engine["python"],
               *ENGINE_MODULE]
    return {
        "name": "faults",
        "engine": "vllm",
        "model": engine["model"],
        "served_model_name": SERVED_NAME,
        "command": command,
        "args": shared.args,
        "env": {**BASE_ENV, "EH_API_TOKEN": SECRET},
        "axes": {"fault": {name: {"env": {"EH_FAULTS": json.dumps({"seed": 7, "rules": rules})}}
                           for name, rules in FAULTS.items()}},
        "reference": {"fault": "none"},
        # startup_s and teardown_grace_s are deadlines here (the proxy starts in about a second), not under test
        "timeouts": {"startup_s": 300, "teardown_grace_s": 20, "request_s": request_s},
        "requests": {"retries": RETRIES, "max_error_rate": 0.05, "hung_after": 3},
        # sixteen-token probes and streams: what each fault does shows in the first bytes (the cut and the mid-body
        # stall act at 600 bytes, the hostile text replaces the answer whole), and nine cells' 64-token answers cost
        # about two minutes of the suite (issue 59: its time)
        "probes": {"max_tokens": 16},
        "quality": {"tasks": ["eh_choice"], "limit": 12, "subset": "first"},
        # the numerics check runs in every cell (its requests take the flaky cell's faults too), on six short
        # contexts: its own figures are tested in test_engine_numerics.py
        "distribution": {"prompts": str(SHORT_CONTEXTS), "max_tokens": 16},
        # two repeats: measured once on each side, no noise is known and the speed rule decides nothing (issue 43),
        # so the slow cell would never be screened
        # the proxies answer from the session's engine, which is not the harness's child: its work is not foreign
        "throughput": {"watch_host": False,
                       "scenarios": [{"name": "c2", "concurrency": 2, "requests": 6, "input_len": 32,
                                      "output_len": 16, "warmup_requests": 0, "repeats": 2}]},
    }


@pytest.fixture(scope="module")
def fault_run(engine, shared_engine, calibration, tmp_path_factory):
    folder = tmp_path_factory.mktemp("faults")
    matrix = folder / "faults.yaml"
    times = FaultTimes(calibration.slowest_probe_s)
    matrix.write_text(json.dumps(fault_matrix(engine, shared_engine, times.request_s), indent=1))  # JSON is YAML
    out = folder / "out"
    proc = run_harness("run", "--matrix", str(matrix), "--out", str(out), timeout=3000)
    results = json.loads((out / "results.json").read_text())
    reference = cell(results["cells"], "none")
    # the faulty cells are judged against this one: if it is not ok, nothing below means anything
    assert reference["status"] == "ok" and reference["phase"] == "done", (
        f"the fault matrix's reference cell (no fault) ended {reference['status']} at {reference['phase']}: "
        f"{reference['reason']}. Its request timeout was {times.request_s}s, {FAULT_REQUEST_FACTOR}x the "
        f"slowest probe answer measured at the start of the session ({calibration.slowest_probe_s}s): the machine "
        f"got that much slower during the run, or the engine itself is unwell (see {out}/cells/fault-none/server.log "
        f"and the shared engine's log {shared_engine.log})")
    return proc, out, results["cells"], results, times


def cell(cells, name):
    return cells[f"fault-{name}"]


def test_the_run_finishes_every_cell_and_leaves_nothing(fault_run):
    proc, out, cells, results, _ = fault_run
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert results["complete"] is True and len(cells) == len(FAULTS)
    assert engine_processes() == []
    assert not list(out.glob("cells/*/server.pid")), "a pid file outlived its server"
    for c in cells.values():
        assert c["teardown"]["leftover"] == [], c["id"]
    # and the record loads back: the cell whose engine died in its scenario has no speed ratio (it measured 0 tok/s),
    # which was saved as null into a field that refused it on load, so `report` and `--resume` failed on this run
    again = run_harness("report", str(out), timeout=300)
    assert again.returncode == 0 and "nanx" not in (out / "report.md").read_text(), again.stderr[-2000:]


def test_intermittent_errors_are_retried_counted_and_the_results_kept(fault_run):
    _, out, cells, _, _ = fault_run
    flaky, reference = cell(cells, "flaky"), cell(cells, "none")
    assert flaky["status"] == "ok" and flaky["phase"] == "done", flaky["reason"]
    retried = sum(t["retried"] for t in flaky["requests"].values())
    kinds = {k for t in flaky["requests"].values() for k in t["kinds"]}
    assert retried > 0 and {"http_503", "reset"} & kinds, flaky["requests"]
    assert all(t["failed"] / t["requests"] <= 0.05 for t in flaky["requests"].values())
    # retried answers are the same answers: probes and quality match the untouched reference
    assert flaky["probes"]["flagged"] == reference["probes"]["flagged"]
    assert flaky["throughput"][0]["completed"] == 12  # two repeats of six
    # measured at about the reference's speed, it may or may not be screened (then it answers a share of
    # the documents): either way each answer it gave is the untouched reference's answer to that document
    [mine], [theirs] = flaky["quality"], reference["quality"]
    assert theirs["n"] == 12 and mine["n"] == (3 if flaky["screened"] else 12)
    assert answers(out, mine).items() <= answers(out, theirs).items()


def answers(out, score) -> dict:
    rows = [json.loads(line) for line in (out / score["samples"]).read_text().splitlines()]
    return {(r["doc_id"], r["doc_hash"]): r["metrics"] for r in rows}


def test_a_cell_slower_than_the_reference_is_screened_to_a_share_of_its_documents(fault_run):
    _, out, cells, _, _ = fault_run
    slow, reference = cell(cells, "slow"), cell(cells, "none")
    assert slow["status"] == "ok", slow["reason"]
    assert slow["throughput"][0]["output_tok_s"] < 0.8 * reference["throughput"][0]["output_tok_s"]
    assert "not faster than the reference" in slow["screened"] and "quality.screen_documents" in slow["screened"]
    [mine], [theirs] = slow["quality"], reference["quality"]
    assert mine["n"] == 3 and mine["subset"]["fraction"] == 0.25
    assert answers(out, mine).items() <= answers(out, theirs).items()  # the same documents, answered alike
    assert "screened: 25% of them" in (out / "report.md").read_text()


def test_a_phase_that_mostly_fails_marks_the_cell_error_and_keeps_what_it_measured(fault_run):
    _, out, cells, _, _ = fault_run
    lossy = cell(cells, "lossy")
    assert lossy["status"] == "error" and lossy["phase"] == "probes"
    tally = lossy["requests"]["probes"]
    assert tally["failed"] == tally["requests"] - 4 and tally["retried"] == RETRIES * tally["failed"]  # each, all
    assert "requests.max_error_rate" in lossy["reason"] and "http_503" in lossy["reason"]
    assert lossy["probes"]["total"] == 4  # the answers that came back were judged and kept
    assert len((out / "cells" / "fault-lossy" / "probes.jsonl").read_text().splitlines()) == 12


@pytest.mark.parametrize("name,phase", [("die-probes", "probes"), ("die-throughput", "throughput")])
def test_the_engine_dying_mid_phase_is_a_crash_in_that_phase(fault_run, name, phase):
    _, _, cells, _, _ = fault_run
    died = cell(cells, name)
    assert died["status"] == "crashed" and died["phase"] == phase, died["reason"]
    assert f"died during {phase}" in died["reason"]
    if phase == "throughput":  # everything measured before the death is kept (quality comes after throughput)
        assert not died["quality"] and died["probes"]["total"] == 12 and died["throughput"]


def test_an_engine_that_stops_answering_is_a_timeout_found_early(fault_run):
    _, _, cells, _, times = fault_run
    stall = cell(cells, "stall")
    assert stall["status"] == "timeout" and stall["phase"] == "probes"
    assert "stopped answering" in stall["reason"] and stall["requests"]["probes"]["hung"] is True
    # ten probes stall, four at a time: waiting for each would take three waves of request timeouts (3 x request_s);
    # after three timeouts in a row the requests not yet sent fail at once, and only those already in flight (two
    # waves) run out their timeout
    assert stall["probes"]["seconds"] < 2.5 * times.request_s, (stall["probes"]["seconds"], times)


def test_stalled_and_cut_streams_are_errors_by_kind_never_tokens(fault_run):
    _, _, cells, _, _ = fault_run
    cut = cell(cells, "cut")
    assert cut["status"] == "error" and cut["phase"] == "throughput"
    scenario = cut["throughput"][0]
    assert scenario["completed"] == 0 and scenario["output_tokens"] == 0
    assert scenario["errors"].get("timeout") == 1  # the first stream hangs, every other one of both repeats is cut
    assert sum(scenario["errors"].values()) == 12 and set(scenario["errors"]) - {"timeout"} <= {"connection_lost",
                                                                                                 "truncated"}
    assert "throughput c2" in cut["requests"]


def test_hostile_model_text_is_inert_in_every_rendering(fault_run):
    _, out, cells, _, _ = fault_run
    hostile = cell(cells, "hostile")
    assert hostile["status"] == "garbage"  # the same fluent text for every prompt
    assert "same_answer" in json.dumps(hostile["probes"]["offending"])
    assert HOSTILE in (out / "cells" / "fault-hostile" / "probes.jsonl").read_text()  # kept verbatim as data
    assert "@\u200bchannel" in (out / "report.md").read_text()  # the report shows it, defused
    for name in ("report.md", "summary.md"):
        text = (out / name).read_text()
        assert "@channel" not in text, name  # a mention pings nobody, in code blocks too
        prose = outside_code_blocks(text)  # inside a fenced block, Markdown and HTML are shown, not rendered
        assert "<script>" not in prose and "![x](" not in prose and "**bold**" not in prose, name


def outside_code_blocks(markdown: str) -> str:
    """The text of a Markdown document without its fenced code blocks (a fence closes only with one as long)."""
    kept, fence = [], None
    for line in markdown.splitlines():
        stripped = line.strip()
        if fence is None and stripped.startswith("```"):
            fence = stripped[: len(stripped) - len(stripped.lstrip("`"))]
        elif fence is not None and stripped == fence:
            fence = None
        elif fence is None:
            kept.append(line)
    assert fence is None, "a code block is never closed"
    return "\n".join(kept)


def test_secrets_never_reach_a_file(fault_run):
    _, out, _, _, _ = fault_run
    leaks = [str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()
             and SECRET in p.read_text(errors="replace")]
    assert leaks == []


def test_a_taken_port_is_reported_before_anything_is_launched(engine, shared_engine, tmp_path):
    matrix = fault_matrix(engine, shared_engine, request_s=300)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        matrix.update(port=port, axes={"fault": {"none": None}}, quality=None, throughput=None)
        (tmp_path / "m.yaml").write_text(json.dumps(matrix))
        proc = run_harness("run", "--matrix", str(tmp_path / "m.yaml"), "--out", str(tmp_path / "out"), timeout=120)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "out" / "results.json").read_text())["cells"]["fault-none"]
    assert result["status"] == "error" and result["phase"] == "launch"
    assert f"port {port} on 127.0.0.1 is not free" in result["reason"] and "nothing was launched" in result["reason"]
    assert not (tmp_path / "out" / "cells" / "fault-none" / "server.log").exists()
