"""The measuring phases of one cell as the runner drives them: probes, quality, throughput (with the engine's own
acceptance and log figures around the measured requests), and the judgement of each phase's requests. Each phase
writes what it measured on the CellRun (cellstate.py) and raises CellStopped when it has judged the cell."""

from __future__ import annotations

import time
from pathlib import Path
from collections.abc import Callable
from typing import Any

import httpx

from evalharness.analysis.equivalence import DEFAULT_ALPHA
from evalharness.analysis.goodput import targets_of
from evalharness.analysis.operating import operating_point, verdict_between
from evalharness.analysis.speed import FLOOR
from evalharness.analysis.looks import plan_looks
from evalharness.analysis.sequential import screened
from evalharness.matrix.schema import Matrix, Scenario
from evalharness.measures.tasks import worker_spec
from evalharness.phases.probes import (DEFAULT_PROBES, ask_all, judge_outputs, load_probes, reasoning_budget, reasons,
                                      thought)
from evalharness.phases.quality import SHIPPED_TASKS, TaskSetup, run_quality
from evalharness.phases.retries import ServerDied, judge_tally
from evalharness.phases.throughput.client import LoadClient
from evalharness.phases.throughput.prompts import load_source
from evalharness.runner.lengthfiles import ensure_length_files, extra_include_paths, length_files
from evalharness.phases.throughput.stats import acceptance_crosscheck
from evalharness.records.cellfiles import load_probe_outputs, save_probe_outputs
from evalharness.records.measures import RequestTally, ScenarioResult, TaskScore
from evalharness.records.run import CellResult
from evalharness.runner.cellstate import CellRun, CellStopped
from evalharness.runner.progress import Progress
from evalharness.runner.speedloop import measure_scenario, measure_sweep
from evalharness.serving.engines import Engine


def throughput_phase(matrix: Matrix, engine: Engine, state: CellRun, progress: Progress, alive,
                     reference: CellResult | None = None, is_reference: bool = False) -> None:
    """Every scenario, each repeated until the speed rule decides it against the reference's figures
    (runner/speedloop.py); `reference`: the reference's finished record (None: every planned repeat runs)."""
    assert matrix.throughput is not None
    state.phase = "throughput"
    for scenario in matrix.throughput.scenarios:
        measure_one(matrix, engine, state, progress, alive, scenario, reference, is_reference)
    if matrix.throughput.sweep is not None:
        measure_sweep(matrix.throughput.sweep, matrix.report.operating_point,
                      lambda step: measure_one(matrix, engine, state, progress, alive, step, reference, is_reference))


def measure_one(matrix: Matrix, engine: Engine, state: CellRun, progress: Progress, alive, scenario: Scenario,
                reference: CellResult | None, is_reference: bool) -> ScenarioResult:
    """One scenario (or sweep step) in full: its repeats, the engine's counters around them, its requests judged."""
    assert matrix.throughput is not None
    plan = state.plan
    state.enter(f"throughput:{scenario.name}", progress)
    if scenario.prompts.startswith("length:"):
        ensure_length_files(matrix, state.run_dir)  # a Ray node's run folder may lack them
    client = LoadClient(plan.base_url, plan.served_model_name, api=scenario.api,
                        timeout_s=matrix.timeouts.request_s, ignore_eos=scenario.ignore_eos,
                        tokenize_url=f"{plan.root_url}/tokenize", hung_after=matrix.requests.hung_after,
                        prompts=load_source(scenario.prompts, length_files(matrix, state.run_dir)),
                        extra_body=engine.load_request_extras)
    before: dict[str, Any] = {}
    log_from = [0]

    def read_counters() -> None:
        # after the warm-up: the engine's before/after delta (and SGLang's flush) covers the measured requests only
        with httpx.Client(timeout=10.0) as http:
            before.update(engine.before_load(http, plan))
        log_from[0] = log_size(state.log_path)  # the engine's own log lines of the measured requests start here

    theirs = next((s for s in (reference.throughput if reference else []) if s.name == scenario.name), None)
    result = measure_scenario(client, scenario, state.cell_dir, after_warmup=read_counters, reference=theirs,
                              is_reference=is_reference,
                              watch_host=engine.launches and matrix.throughput.watch_host,
                              targets=targets_of(matrix.model_dump(mode="json")))
    state.throughput.append(result)
    if not alive():
        raise ServerDied(f"the server exited during throughput scenario {scenario.name}")
    with httpx.Client(timeout=10.0) as http:
        result.engine = engine.after_load(http, plan, before)
    result.engine.update(acceptance_crosscheck(result.engine, result.request_spec, result.completed))
    result.engine.update(server_vs_client(engine.scenario_log_summary(read_log_from(state.log_path, log_from[0])),
                                          result.output_tok_s, decode_share(result)))
    failed = sum(result.errors.values())
    judge_requests(matrix, state, f"throughput {scenario.name}", RequestTally(
        requests=result.requests, failed=failed, kinds=dict(result.errors), hung=client.hung), alive)
    return result


def log_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def read_log_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", errors="replace")
    except OSError:
        return ""


# server- and client-side decode throughput further apart than this are flagged. The server's figure is per 40
# decode steps and the client's a whole scenario's, with its ramp-up and ramp-down: 5% flagged healthy stand-in cells
DISAGREE_FRACTION = 0.10


def decode_share(result: ScenarioResult) -> float | None:
    """The share of a single-stream request's time spent decoding (after its first token): the client's output tok/s
    over the whole request includes prefill, which SGLang's "gen throughput" leaves out (pure). None with several
    streams, where one request's prefill overlaps the others' decoding and no such share applies."""
    e2e, ttft = result.e2e_s.p50, result.ttft_s.p50
    if result.concurrency != 1 or not e2e or ttft is None or ttft >= e2e:
        return None
    return (e2e - ttft) / e2e


def server_vs_client(summary: dict[str, Any], client_tok_s: float, share: float | None = None) -> dict[str, Any]:
    """The engine's own throughput lines over a scenario next to the client's figure (pure): flagged when the server's
    median generation throughput and the client's output tokens/s, counted over decode time only (divided by the
    decode `share` of a request's time, where known), differ by more than DISAGREE_FRACTION."""
    server = summary.get("server_gen_tok_s_median")
    if not server or not client_tok_s:
        return summary
    ratio = server / (client_tok_s / share if share else client_tok_s)
    return {**summary, "server_client_ratio": round(ratio, 3),
            "throughput_disagreement": abs(ratio - 1) > DISAGREE_FRACTION}


DYING_GRACE_S = 5.0  # an engine whose requests all fail is often on its way out: its exit takes a moment to show


def judge_requests(matrix: Matrix, state: CellRun, phase: str, tally: RequestTally, alive) -> None:
    """Record a phase's requests; when too many failed, mark the cell and stop it (what it measured is kept). A
    server that exits within a few seconds of such a phase died in it: that is a crash, not request errors."""
    state.requests[phase] = tally
    verdict = judge_tally(phase, tally, matrix.requests.max_error_rate)
    if verdict is None:
        return
    deadline = time.monotonic() + DYING_GRACE_S
    while time.monotonic() < deadline:
        if not alive():
            raise ServerDied(f"the server exited during {phase}")
        time.sleep(0.2)
    state.status, state.reason = verdict
    raise CellStopped(phase)


def probe_phase(matrix: Matrix, state: CellRun, progress: Progress, reference_id: str, alive) -> None:
    state.enter("probes", progress)
    state.phase = "probes"
    probe_set = load_probes(Path(matrix.probes.prompts) if matrix.probes.prompts else DEFAULT_PROBES)
    begin = time.monotonic()
    reasoning = reasons(state.plan.argv)

    def ask(budget: int):
        return ask_all(state.plan.base_url, state.plan.served_model_name, probe_set, budget,
                       matrix.timeouts.request_s, matrix.probes.concurrency, retries=matrix.requests.retries,
                       hung_after=matrix.requests.hung_after, chat_template_kwargs=matrix.probes.chat_template_kwargs)

    plain = matrix.probes.max_tokens
    larger = reasoning_budget(state.plan.argv, plain, matrix.probes.reasoning_max_tokens)
    budget = larger if reasoning else plain
    outputs, tally = ask(budget)
    if not reasoning and thought(outputs):
        reasoning = True
        if larger > plain:  # thinking without a parser in the args: asked again, with room for a loop to show
            again, again_tally = ask(larger)
            if again_tally.failed <= tally.failed:  # else the first answers stand, at the budget they had
                outputs, tally, budget = again, again_tally, larger
    if not alive():
        raise ServerDied("the server exited during the probes")
    save_probe_outputs(state.cell_dir / "probes.jsonl", outputs)
    reference = {} if state.cell.id == reference_id else load_probe_outputs(
        state.run_dir / "cells" / reference_id / "probes.jsonl")
    summary = judge_outputs(outputs, probe_set, reference, matrix.probes.garbage_min_share,
                            matrix.probes.garbage_min_excess, time.monotonic() - begin)
    summary.max_tokens = budget
    summary.reasoning = reasoning
    state.probes = summary
    judge_requests(matrix, state, "probes", tally, alive)
    if summary.total == 0:
        raise RuntimeError(f"every probe request failed: {outputs[0].error}")
    if summary.garbage:
        state.status, state.reason = "garbage", summary.reason


def screening(matrix: Matrix, state: CellRun, reference: CellResult | None) -> str | None:
    """Why this cell's quality runs its first look only (the speed rule says it is credibly not faster than the
    reference by the floor: never worth shipping for its speed), or None. An undecided cell is never screened."""
    quality = matrix.quality
    if quality is None or quality.full_quality or reference is None:
        return None
    point = operating_point(matrix.model_dump(mode="json"))
    verdict = verdict_between(state.throughput, reference.throughput, point)
    if verdict is None or not screened(verdict.not_faster, quality.full_quality):
        return None
    bound = "" if verdict.high is None else f": its upper bound {verdict.high:.2f} is below 1 + the {FLOOR:.0%} floor"
    return (f"not faster than the reference {point.words()} ({verdict.text()}{bound}): it can never be worth "
            "shipping, so quality ran its first look only (quality.full_quality: true runs it all)")


def quality_settings(matrix: Matrix, state: CellRun) -> tuple[TaskSetup, Callable[[str], dict[str, Any]]]:
    """What every lm-eval run of this cell shares (the quality section's settings), and a task's own: its
    generation settings, its local data, and for a task of a measure's own kind (calls) the worker that answers it."""
    quality = matrix.quality
    assert quality is not None
    if matrix.length.task_names():
        ensure_length_files(matrix, state.run_dir)  # a Ray node's run folder may lack them
    include_path = quality.include_path or (str(SHIPPED_TASKS) if not quality.include_defaults else None)
    setup = TaskSetup(base_url=state.plan.base_url, model=state.plan.served_model_name, include_path=include_path,
                      include_defaults=quality.include_defaults, api=quality.api, tokenizer=quality.tokenizer,
                      request_timeout_s=matrix.timeouts.request_s, task_timeout_s=quality.task_timeout_s,
                      retries=quality.retries, seed=quality.seed,
                      extra_include_paths=tuple(extra_include_paths(matrix, state.run_dir)))

    def per_task(task: str) -> dict[str, Any]:
        return {**quality.settings_for(task), "data": quality.data[task].model_dump() if task in quality.data else None,
                **worker_spec(task, include_path)}

    return setup, per_task


def task_answerer(matrix: Matrix, state: CellRun, alive) -> Callable[[list[str], str, int, int], list[TaskScore]]:
    """Served.answer_tasks for a measure's phase: tasks answered with the quality section's settings under a
    sub-folder of the cell's, `documents` of each (a seeded subset, the same in every cell), one repeat at the
    quality seed. The settings are built on its first call: most measures never ask."""

    def answer(tasks: list[str], folder: str, concurrency: int, documents: int) -> list[TaskScore]:
        setup, per_task = quality_settings(matrix, state)
        done: list[TaskScore] = []
        run_quality(tasks, setup, state.cell_dir / folder, state.run_dir, alive, concurrency=concurrency,
                    limit=documents, done=done, per_task=lambda task: {**per_task(task), "limit": documents})
        return done

    return answer


def quality_phase(matrix: Matrix, state: CellRun, progress: Progress, alive, reference_id: str | None = None,
                  reference: CellResult | None = None, family_size: int = 1) -> None:
    """The quality tasks, repeat by repeat. A cell other than the reference looks after the repeats
    `quality.looks` names and stops each task as soon as it is settled against the reference (analysis/sequential.py);
    a cell not faster than the reference beyond the noise runs its first look only (screening)."""
    quality = matrix.quality
    assert quality is not None
    state.enter("quality", progress)
    state.phase = "quality"
    is_reference = state.cell.id == reference_id
    against = None if is_reference else reference
    plan = plan_looks(quality, is_reference, screening(matrix, state, against),
                      reference_scores={t.task: t for t in (against.quality if against else [])},
                      alpha=float((matrix.gate.alpha if matrix.gate and matrix.gate.alpha else None) or DEFAULT_ALPHA),
                      gate=matrix.gate.model_dump() if matrix.gate else {}, family_size=family_size,
                      run_dir=state.run_dir)
    state.screened = plan.screened

    setup, per_task = quality_settings(matrix, state)
    run_quality(
        quality.tasks, setup, state.cell_dir, state.run_dir, alive, concurrency=quality.concurrency,
        limit=quality.limit, done=state.quality,
        per_task=lambda task: {**per_task(task),
                               **({"fraction": quality.screen_documents} if task in plan.by_documents else {})},
        repeats=lambda task: plan.planned[task], at_look=None if against is None else plan.settle,
    )
    plan.close(state.quality)
    failed = [t.task for t in state.quality if t.error]
    if failed and state.status == "ok":
        if len(failed) == len(state.quality):
            state.status = "error"
        state.reason = f"quality tasks failed after retries: {', '.join(failed)}"
