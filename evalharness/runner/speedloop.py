"""A throughput scenario's repeats as the runner drives them: each repeat measured inside a host window
(serving/interference.py) and judged disturbed by the host alone; its streams' stalls (phases/throughput/stats.py
`stream_stalls`) are recorded beside it, the engine's own behaviour, never a reason to set it aside (issue 57); a
disturbed repeat measured again (`remeasure`); after each repeat, whether to stop is asked of analysis/stopping.py
(the speed rule decided against the reference's figures, or the plan's maximum; the reference, shared by every cell,
measures all its repeats), and a load sweep's steps likewise (saturation past the operating point). Every finished
repeat is appended to cells/<id>/throughput/<scenario>.jsonl, so a cell re-run on --resume continues from its last
finished repeat.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Callable

from evalharness.analysis.goodput import Target, requests_for
from evalharness.analysis.operating import goodput_side
from evalharness.analysis.speed import Side, kept_indices, side_of
from evalharness.analysis.stopping import kept_requests, stop_reason, sweep_stop
from evalharness.matrix.schema import OperatingPointSpec, Scenario, SweepSection
from evalharness.phases.throughput.client import LoadClient, combine_repeats, measure_repeat
from evalharness.phases.throughput.sse import RequestRecord
from evalharness.phases.throughput.stats import judge_stalls, request_latencies, stream_stalls, summarize
from evalharness.records.measures import RepeatFigures, ScenarioResult
from evalharness.serving import interference


PAIRED_PROMPTS = 64  # requests whose prompt counts a scenario keeps


def _store(cell_dir: Path, name: str) -> Path:
    return cell_dir / "throughput" / f"{name}.jsonl"


def _definition(scenario: Scenario) -> str:
    """What the stored repeats were measured with: a scenario changed since is measured afresh, never mixed."""
    return hashlib.sha256(scenario.model_dump_json(exclude={"repeats", "remeasure"}).encode()).hexdigest()[:16]


def load_repeats(cell_dir: Path, scenario: Scenario) -> list[tuple[RepeatFigures, list[RequestRecord]]]:
    """The repeats an earlier launch of this cell finished with the same scenario (a torn last line, from a kill
    mid-write, is dropped, and so is everything after it)."""
    path = _store(cell_dir, scenario.name)
    out = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    for line in lines:
        try:
            row = json.loads(line)
            if row.get("scenario") != _definition(scenario):
                continue
            figures = RepeatFigures.model_validate({**row["figures"], "resumed": True})
            records = [RequestRecord(**r) for r in row["records"]]
        except (ValueError, KeyError, TypeError):
            break
        out.append((figures, records))
    return out


def _append(cell_dir: Path, scenario: Scenario, figures: RepeatFigures, records: list[RequestRecord]) -> None:
    path = _store(cell_dir, scenario.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{k: v for k, v in dataclasses.asdict(r).items() if k != "text_parts"} for r in records]
    with open(path, "a", encoding="utf-8") as f:
        row = {"scenario": _definition(scenario), "figures": figures.model_dump(), "records": rows}
        f.write(json.dumps(row) + "\n")


def judge_repeat(scenario: Scenario, records: list[RequestRecord], host: dict | None) -> RepeatFigures:
    """One repeat's figures and, where its host crossed a limit, why it is disturbed; where its streams stalled, that
    too, as its own field (pure)."""
    one = summarize(scenario.name, records, concurrency=scenario.concurrency, request_rate=scenario.request_rate,
                    input_len=scenario.input_len, output_len=scenario.output_len)
    stalls = stream_stalls(records)
    return RepeatFigures(tok_s=round(one.output_tok_s, 3), seconds=one.duration_s, requests=one.requests,
                         completed=one.completed, disturbed=interference.judge(host) if host else "",
                         stalled=judge_stalls(stalls), host=host or {},
                        per_request=request_latencies(records), **stalls)


def measure_scenario(client: LoadClient, scenario: Scenario, cell_dir: Path, *, after_warmup: Callable[[], None],
                     reference: ScenarioResult | None, is_reference: bool, watch_host: bool,
                     targets: tuple[Target, ...] = ()) -> ScenarioResult:
    """The scenario's repeats until decided (module docstring). `reference`: the reference's record of this
    scenario (None: nothing to decide against, so every planned repeat runs); `watch_host`: whether the host's other
    processes can be told from the engine's (not for an external engine the harness did not launch); `targets`: the
    matrix's SLO, whose goodput must be decided too (`stop_reason`)."""
    low, high = scenario.repeat_plan()
    done = load_repeats(cell_dir, scenario)
    figures = [f for f, _ in done]
    records = [r for _, r in done]
    warmed = False
    stopped = None
    their = side_of(reference) if reference is not None and reference.output_tok_s > 0 else None
    while True:
        side = Side(tuple(f.tok_s for f in figures), tuple(f.disturbed for f in figures), (low, high))
        goodput = None if not targets or their is None or reference is None or not figures else (
            goodput_side(figures, targets, (low, high)), goodput_side(reference.repeat_figures, targets, None))
        stopped = stop_reason(side, remeasure=scenario.remeasure, reference=their, is_reference=is_reference,
                              goodput=goodput, goodput_requests=(kept_requests(figures, side), requests_for(targets)))
        if stopped is not None:
            break
        if client.hung:
            stopped = "the engine stopped answering"
            break
        window = interference.open_window() if watch_host else None
        measured = measure_repeat(client, repeat=len(figures), concurrency=scenario.concurrency,
                                  request_rate=scenario.request_rate, input_len=scenario.input_len,
                                  output_len=scenario.output_len, requests=scenario.requests,
                                  duration_s=scenario.duration_s, warmup=0 if warmed else scenario.warmup_requests,
                                  after_warmup=None if warmed else after_warmup,
                                  processes=scenario.client_processes)
        warmed = True
        host = window.close() if window is not None else None
        one = judge_repeat(scenario, measured, host)
        figures.append(one)
        records.append(measured)
        _append(cell_dir, scenario, one, measured)
    if not warmed:  # every repeat came from an earlier launch: the counters still need their reading
        after_warmup()
    side = Side(tuple(f.tok_s for f in figures), tuple(f.disturbed for f in figures), (low, high))
    kept = kept_indices(side)
    kept_records = [records[i] for i in kept] or records
    kept_rates = [figures[i].tok_s for i in kept] or [f.tok_s for f in figures]
    result = combine_repeats(scenario.name, kept_records, concurrency=scenario.concurrency,
                             request_rate=scenario.request_rate, input_len=scenario.input_len,
                             output_len=scenario.output_len, prompts=client.prompts.name, rates=kept_rates)
    every = summarize(scenario.name, [r for one in records for r in one], concurrency=scenario.concurrency,
                      request_rate=scenario.request_rate, input_len=scenario.input_len, output_len=scenario.output_len)
    # all judged; the prompt tokens with them, so that prompt_tokens / completed is a mean over the same requests
    result.requests, result.completed, result.errors = every.requests, every.completed, every.errors
    result.prompt_tokens = every.prompt_tokens
    # each request's prompt as the server counted it, in the order sent: every cell sends the same prompts in the
    # same order, so two cells (two engines) pair request by request (analysis/engines.py)
    result.request_prompt_tokens = [r.prompt_tokens for one in records for r in one][:PAIRED_PROMPTS]
    if len(figures) > 1:
        result.repeat_tok_s = [f.tok_s for f in figures]
        result.output_tok_s = sum(kept_rates) / len(kept_rates)
    result.repeat_figures = figures
    result.repeat_plan = [low, high] if low < high else None
    result.stopped = stopped
    return result


def measure_sweep(sweep: SweepSection, point: OperatingPointSpec | None,
                  measure: Callable[[Scenario], ScenarioResult]) -> list[ScenarioResult]:
    """A load sweep's steps in order, each measured by `measure` (its repeats until decided), stopping after the
    first step that shows saturation, never before the operating point's load."""
    out: list[ScenarioResult] = []
    for scenario in sweep.steps():
        result = measure(scenario)
        why = sweep_stop(out[-1] if out else None, result, point.concurrency if point else None,
                         point.request_rate if point else None, sweep.saturation_gain)
        out.append(result)
        if why:
            result.stopped = f"{result.stopped}; the sweep's last step, {why}" if result.stopped else why
            break
    return out
