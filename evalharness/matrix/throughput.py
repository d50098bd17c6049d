"""The matrix's throughput section (scenarios, the load sweep) and what the report reads speed at (the SLO, the
operating point). Pure; imports nothing of evalharness but matrix/base.py.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, ValidationError, model_validator

from evalharness.matrix.base import NAME_PATTERN, _Strict

class RepeatRange(_Strict):
    """Adaptive repeats: at least `min`, at most `max`, stopping once the speed verdict is decided."""

    min: int = Field(2, ge=1, le=100)
    max: int = Field(6, ge=1, le=100)

    @model_validator(mode="after")
    def _ordered(self) -> "RepeatRange":
        if self.min > self.max:
            raise ValueError(f"repeats: min {self.min} is above max {self.max}")
        return self


def _fixed_repeats(value: Any) -> Any:
    """`repeats: N` is a fixed design, {min: N, max: N}."""
    return {"min": value, "max": value} if isinstance(value, int) and not isinstance(value, bool) else value


class Scenario(_Strict):
    name: Annotated[str, Field(pattern=NAME_PATTERN)]
    concurrency: int | None = Field(None, gt=0)
    request_rate: float | None = Field(None, gt=0)
    input_len: int = Field(128, gt=0)
    output_len: int = Field(128, gt=0)
    requests: int | None = Field(None, gt=0)
    duration_s: float | None = Field(None, gt=0)
    warmup_requests: int = Field(1, ge=0)
    ignore_eos: bool = True
    api: Literal["completions", "chat"] = "completions"
    prompts: str = Field("natural", min_length=1, description="natural (the shipped corpus of natural requests), "
                         "task:NAME (a shipped lm-eval task's prompts), a .jsonl file of {prompt}, or random (random "
                         "words, input_len of them: capacity figures only; speculative decoding finds its own loops "
                         "in them)")
    repeats: Annotated[RepeatRange, BeforeValidator(_fixed_repeats)] = Field(
        default_factory=lambda: RepeatRange(min=1, max=1),
        description="measure the scenario this many times (fresh prompts each time), or {min, max}: a cell measures "
                    "until the speed rule (analysis/speed.py) decides it against the reference, the reference all max")
    remeasure: int = Field(2, ge=0, le=20, description="repeats disturbed while measured (a busy host, a stalled "
                           "stream, a figure far below the others) measured again, at most, per scenario and cell")
    client_processes: int = Field(1, ge=1, le=64, description="shard the streams over this many client processes "
                                  "(one process keeps up with about 40,000 events/s: see benchmarks/README.md)")

    def repeat_plan(self) -> tuple[int, int]:
        """(min, max) repeats: a fixed number is both."""
        return self.repeats.min, self.repeats.max

    @model_validator(mode="after")
    def _one_mode(self) -> "Scenario":
        if (self.concurrency is None) == (self.request_rate is None):
            raise ValueError(f"scenario {self.name!r}: give exactly one of concurrency or request_rate")
        return self


_STEP_KEYS = ("name", "concurrency", "request_rate", "requests", "duration_s")


class SweepSection(_Strict):
    """A load sweep (issue 38): one scenario's prompts and lengths at each load in turn, from one stream toward
    saturation. Each step is measured as a scenario of its own, `<name>-c<N>` (or `<name>-r<rate>`), with the speed
    verdicts' repeats and interference rules; a cell's sweep stops at saturation (docs/speed.md)."""

    name: Annotated[str, Field(pattern=NAME_PATTERN)] = "load"
    concurrency: list[Annotated[int, Field(gt=0)]] | None = Field(None, min_length=1, description="the steps' "
                                                                   "concurrent streams, in increasing order")
    request_rate: list[Annotated[float, Field(gt=0)]] | None = Field(None, min_length=1, description="or the "
                                                                      "steps' request rates (requests/s, Poisson)")
    requests_per_stream: int = Field(2, gt=0, description="requests a concurrency step sends per stream in a repeat")
    step_seconds: float = Field(20, gt=0, description="a rate step's repeat lasts about this long: rate x "
                                "step_seconds requests (at least 4)")
    saturation_gain: float = Field(0.1, ge=0, description="a step whose output tok/s grew less than this share over "
                                   "the step before while its median time per output token (or end-to-end "
                                   "latency) grew more is saturation: the cell's sweep stops there (never before "
                                   "the operating point's load)")
    scenario: dict[str, Any] = Field(default_factory=dict, description="what every step shares, as a scenario's "
                                     "keys (prompts, api, input_len, output_len, repeats, warmup_requests, ...); "
                                     "not name, concurrency, request_rate, requests or duration_s")

    @model_validator(mode="after")
    def _valid_steps(self) -> "SweepSection":
        if (self.concurrency is None) == (self.request_rate is None):
            raise ValueError("give exactly one of concurrency or request_rate: the loads the sweep steps through")
        loads = self.concurrency or self.request_rate or []
        if list(loads) != sorted(set(loads)):
            raise ValueError(f"the sweep's loads must increase, each once: {list(loads)}")
        for key in _STEP_KEYS:
            if key in self.scenario:
                raise ValueError(f"scenario.{key}: the sweep sets it per step; set the sweep's loads instead")
        try:
            self.steps()  # a bad scenario key is reported here, at load time
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise ValueError(f"scenario.{where}: {first['msg']}" if where else first["msg"]) from None
        return self

    def step_name(self, load: float) -> str:
        if self.concurrency is not None:
            return f"{self.name}-c{int(load)}"
        return f"{self.name}-r{load:g}".replace(".", "_")

    def steps(self) -> list[Scenario]:
        """One scenario per load, in the sweep's order; the steps after the first skip the warm-up (the engine is
        warm from the step before)."""
        out = []
        for i, load in enumerate(self.concurrency or self.request_rate or []):
            if self.concurrency is not None:
                step = {"concurrency": int(load), "requests": int(load) * self.requests_per_stream}
            else:
                step = {"request_rate": load, "requests": max(4, round(load * self.step_seconds))}
            warm = {"warmup_requests": 0} if i else {}
            out.append(Scenario.model_validate({**self.scenario, **step, **warm, "name": self.step_name(load)}))
        return out


class ThroughputSection(_Strict):
    """Throughput scenarios, measured the same way in every ready cell (phases/throughput/, runner/speedloop.py), and
    a load sweep."""

    scenarios: list[Scenario] = Field(default_factory=list)
    sweep: SweepSection | None = None
    watch_host: bool = Field(True, description="judge each repeat by what else ran on the host "
                             "(serving/interference.py); false where the engine is not the harness's own process "
                             "tree, e.g. a launcher that proxies to a server started elsewhere on this host, whose "
                             "work would count as another process's (an external engine is never watched)")

    @model_validator(mode="after")
    def _something(self) -> "ThroughputSection":
        if not self.scenarios and self.sweep is None:
            raise ValueError("scenarios: give at least one scenario, or a sweep")
        names = [s.name for s in self.all_scenarios()]
        doubled = sorted({n for n in names if names.count(n) > 1})
        if doubled:
            raise ValueError(f"scenario names must differ (a sweep's steps are named <sweep>-c<N>): {doubled}")
        return self

    def all_scenarios(self) -> list[Scenario]:
        """The scenarios, then the sweep's steps."""
        return [*self.scenarios, *(self.sweep.steps() if self.sweep else [])]


SloMetric = Literal["ttft", "tpot", "e2e"]


class SloTarget(_Strict):
    """One latency target: at most `max_ms` at `percentile` of the requests."""

    percentile: float = Field(90, gt=0, le=100)
    max_ms: float = Field(gt=0)


def _operating_point(value: Any) -> Any:
    """`operating_point: max_goodput` is {max_goodput: true}."""
    return {"max_goodput": True} if value == "max_goodput" else value


class OperatingPointSpec(_Strict):
    """Where the speed half of every decision is read: a stated load, or each cell's most goodput under the SLO."""

    concurrency: int | None = Field(None, gt=0)
    request_rate: float | None = Field(None, gt=0)
    max_goodput: bool = False

    @model_validator(mode="after")
    def _one(self) -> "OperatingPointSpec":
        if sum([self.concurrency is not None, self.request_rate is not None, self.max_goodput]) != 1:
            raise ValueError("give exactly one of concurrency, request_rate or max_goodput")
        return self
