"""Runs built by hand for the operating-point tests (issue 38): cells with a load sweep whose every repeat carries
per-request latencies, so goodput, the SLO, the front and the recommendation can be checked against hand counts."""

from __future__ import annotations

from evalharness.analysis.decision import decide
from evalharness.records.drift import CellDrift, TaskDrift
from evalharness.records.measures import Percentiles, RepeatFigures, ScenarioResult
from evalharness.records.run import CellResult, RunMeta, RunResult

SECONDS = 2.0  # every repeat lasts this long
TOKENS = 64  # output tokens per request


def step(concurrency: int, rates: list[float], *, tpot_s: float, ttft_s: float = 0.2, sweep: str = "load",
         name: str | None = None) -> ScenarioResult:
    """One sweep step: each repeat's output tok/s as given, its requests all at the given TPOT and TTFT (so every
    request meets an SLO above them and none below)."""
    figures = []
    for rate in rates:
        requests = 2 * concurrency
        tokens = rate * SECONDS / requests  # the repeat's output tokens shared by its requests
        rows = [[ttft_s, tpot_s, ttft_s + tpot_s * (TOKENS - 1), tokens] for _ in range(requests)]
        figures.append(RepeatFigures(tok_s=rate, seconds=SECONDS, requests=requests, completed=requests,
                                     per_request=rows))
    p = Percentiles(p50=tpot_s, p90=tpot_s, p99=tpot_s)
    decode = Percentiles(p50=1 / tpot_s)
    return ScenarioResult(name=name or f"{sweep}-c{concurrency}", concurrency=concurrency, input_len=8,
                          output_len=TOKENS, requests=sum(f.requests for f in figures),
                          completed=sum(f.completed for f in figures), duration_s=SECONDS * len(rates),
                          output_tokens=int(sum(rates) * SECONDS), output_tok_s=sum(rates) / len(rates),
                          request_decode_tok_s=decode, ttft_s=Percentiles(p50=ttft_s, p90=ttft_s), tpot_s=p, itl_s=p,
                          e2e_s=Percentiles(), repeat_tok_s=list(rates) if len(rates) > 1 else [],
                          repeat_figures=figures)


def cell(cid: str, steps: list[ScenarioResult], *, outcome: str | None = "equivalent",
         args: dict | None = None) -> CellResult:
    # one task whose TOST p-value matches the outcome: equivalent well inside the margin, else not at all (the
    # recommendation tests the candidates' equivalence as a family: analysis/recommend.py)
    task = TaskDrift(task="t", outcome=outcome, level=0.05, p_equivalent=1e-4 if outcome == "equivalent" else 0.5,
                     paired=100, reference=0.8, cell=0.8, delta=0.0, ci_low=-0.01, ci_high=0.01, method="t",
                     p_value=1.0, margin=0.05)
    drift = None if outcome is None else CellDrift(cell=cid, outcome=outcome, accuracy_delta=0.0, ci_low=-0.01,
                                                   ci_high=0.01, worst_drop_upper=0.01, tasks=[task])
    return CellResult(id=cid, axes={}, settings_hash=cid, args=args or {}, env={}, argv=["serve", cid], status="ok",
                      phase="done", started_at="t", finished_at="t", duration_s=1, throughput=steps, drift=drift)


def sweep_run(cells: list[CellResult], *, concurrency: list[int], slo: dict | None = None,
              operating_point=None) -> RunResult:
    """A finished run: the first cell is the reference; the matrix declares the sweep, the SLO and the point."""
    report = {"drift_measure": "accuracy", "slo": slo or {}, "operating_point": operating_point}
    matrix = {"throughput": {"scenarios": [], "sweep": {"name": "load", "concurrency": concurrency}},
              "report": report}
    meta = RunMeta(harness_version="0", engine="vllm", matrix_name="m", matrix_path="m.yaml", started_at="t",
                   matrix=matrix)
    run = RunResult(meta=meta, reference=cells[0].id, cell_order=[c.id for c in cells],
                    cells={c.id: c for c in cells}, complete=True)
    run.decision = decide(run)  # as the runner's refresh leaves a finished run (analysis/decision.py)
    return run
