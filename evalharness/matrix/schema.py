"""The matrix file's schema (pydantic, extra keys refused) and the Cell it expands into. Pure; imports nothing else of
evalharness but its own parts (matrix/base.py, matrix/quality.py). A matrix names an engine, a model, base launch
arguments and environment, and axes; each axis has named values that add arguments and/or environment variables, and
may serve the cell on another engine with its own command (the engine as an axis: SGLang and vLLM side by side).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from evalharness.matrix.base import NAME_PATTERN, TASK_PATTERN, _Strict, unknown_name  # noqa: F401  (re-exported)
from evalharness.matrix.confirm import ConfirmSection
from evalharness.matrix.engines import (EngineName, LaunchedEngineName, engines_of, known_engine, launch_problem,
                                        settle_tokenizer)
from evalharness.matrix.fidelity import LengthSection
from evalharness.matrix.quality import QualitySection, TaskSettings
from evalharness.measures.specs import MeasureSections
from evalharness.matrix.throughput import (  # noqa: F401  (re-exported)
    OperatingPointSpec, RepeatRange, Scenario, SloMetric, SloTarget, SweepSection, ThroughputSection, _operating_point)

ArgScalar = Union[bool, int, float, str, None]
ArgValue = Union[ArgScalar, list[Union[int, float, str]], dict[str, Any]]
"""A launch argument's value: true is a bare flag, false or null omits it, a mapping is passed as JSON, a list as
several values after the flag."""


def _env_value(value: Any) -> Any:
    # YAML turns `SGLANG_ENABLE_JIT_DEEPGEMM: 0` into an int; the environment only holds strings. A bare true/false is
    # refused rather than guessed ("1"? "true"? "True"?): engines disagree on what they accept.
    if isinstance(value, bool):
        raise ValueError("environment values must be strings or numbers; quote true/false as the engine expects them")
    if isinstance(value, (int, float)):
        return str(value)
    return value


EnvValue = Annotated[str, BeforeValidator(_env_value)]



def _check_flags(args: dict[str, Any]) -> dict[str, Any]:
    for flag in args:
        if not flag.startswith("-"):
            raise ValueError(f"argument {flag!r} must be written as a flag, e.g. '--{flag}'")
    return args


class Settings(_Strict):
    """What one axis value adds to the base launch, or changes: the engine that serves the cell and its command."""

    description: str | None = None
    label: str | None = Field(None, min_length=1, max_length=24, pattern=r"^[\w.+:-]+$", description="how reports "
                              "name a cell with this value (default: the value, or axis=value where the value alone "
                              "does not tell its axis), e.g. `mtp` for nextn: on")
    engine: LaunchedEngineName | None = Field(None, description="serve the cells with this value on this engine "
                                              "instead of the matrix's (the engine as an axis); give its own "
                                              "`command` and the flags only it takes in this value's args")
    command: list[str] | None = Field(None, min_length=1, description="the launcher argv for the cells with this "
                                      "value (default: the matrix's command where the engine is the matrix's, "
                                      "else the engine's default)")
    args: dict[str, ArgValue] = Field(default_factory=dict)
    env: dict[str, EnvValue] = Field(default_factory=dict)

    _flags = field_validator("args")(classmethod(lambda cls, v: _check_flags(v)))

    @field_validator("engine")
    @classmethod
    def _known(cls, value: str | None, info: ValidationInfo) -> str | None:
        return known_engine(value, info, launched_only=True)


class Timeouts(_Strict):
    startup_s: float = Field(900.0, gt=0, description="launch to ready; a 397B model takes minutes")
    teardown_grace_s: float = Field(30.0, gt=0, description="SIGTERM to SIGKILL")
    gpu_release_s: float = Field(60.0, ge=0, description="after teardown, wait this long for GPU memory to come back "
                                 "to its level before launch (where nvidia-smi exists); SGLang's own tests wait 60 s")
    request_s: float = Field(300.0, gt=0, description="one request, answer read in full")


class ProbesSection(_Strict):
    """Garbage probes: run first in every cell (on by default), greedy, through the chat endpoint."""

    enabled: bool = True
    prompts: str | None = Field(None, description="JSONL of probes; default tasks/probes/default.jsonl")
    max_tokens: int = Field(64, gt=0)
    reasoning_max_tokens: int = Field(2048, gt=0, description="the budget for a model that reasons (a "
                                      "--reasoning-parser in its args, or thinking in its first answers): a loop in "
                                      "the thinking starts thousands of characters in, past what 64 tokens see")
    concurrency: int = Field(4, gt=0)
    garbage_min_share: float = Field(0.5, gt=0, le=1, description="share of marked probe outputs that makes garbage")
    garbage_min_excess: float = Field(0.3, ge=0, le=1, description="...and by how much it must exceed the reference's")
    run_costly_phases_on_garbage: bool = Field(False, description="a garbage cell goes on to the numerics check, "
                                               "throughput and quality (by default it stops after its probes)")
    chat_template_kwargs: dict[str, Any] | None = Field(None, description="passed with every probe, e.g. "
                                                        "{enable_thinking: false}")


class RequestsSection(_Strict):
    """How measuring requests are retried, and how many may fail before the cell is marked error (retries.py)."""

    retries: int = Field(2, ge=0, description="per probe or distribution request, on resets, 5xx and 429; never "
                         "throughput requests (lm-eval retries its own)")
    max_error_rate: float = Field(0.05, ge=0, le=1, description="share of a phase's requests that may fail after "
                                  "retries; the cell keeps its results but is marked error above it")
    hung_after: int = Field(3, gt=0, description="timeouts in a row that mean the engine stopped answering")


class ReportSection(_Strict):
    """How the decisions read speed (a scenario, or an operating point with SLOs) and which drift measure."""

    throughput_scenario: str | None = Field(None, description="default: the first single-stream scenario; not with "
                                            "operating_point")
    slo: dict[SloMetric, SloTarget] = Field(default_factory=dict, description="latency targets per request: ttft "
                                            "(time to first token), tpot (time per output token after the first), "
                                            "e2e (the whole request), each {percentile, max_ms}; goodput counts "
                                            "the requests meeting every one (docs/speed.md)")
    operating_point: Annotated[OperatingPointSpec | None, BeforeValidator(_operating_point)] = Field(
        None, description="{concurrency: N}, {request_rate: R} or max_goodput (needs slo and a sweep): the front, "
        "'vs reference', screening and the recommendation read each cell's figure there")
    drift_measure: Literal["accuracy", "kld"] = "accuracy"
    relaunch_reference: bool = Field(False, description="the A/A between launches: one more cell, "
                                     "'<reference>.relaunch', with the reference's own settings, launched apart and "
                                     "compared like any cell: what relaunching an unchanged configuration does to "
                                     "drift and speed (the report's within-launch A/A rows split one launch's repeats)")
    task_weights: dict[str, float] = Field(default_factory=dict, description="task -> weight in the pooled accuracy "
                                           "figure (default: every task weighs the same, never by document count)")


class GateSection(_Strict):
    """Thresholds for `evalharness gate`; they override the baseline's."""

    margin: Union[Annotated[float, Field(gt=0)], dict[str, Annotated[float, Field(gt=0)]], None] = Field(
        None, description="the equivalence margin of every task's accuracy, or task -> margin (with an optional "
        "'default'): equivalent inside it, worse beyond it, credibly (analysis/equivalence.py)")
    max_accuracy_drop: float | None = Field(None, gt=0, description="the margin where `margin` is not set")
    hard_accuracy_drop: float | None = Field(None, ge=0, description="fails when exceeded, whatever the sample size")
    alpha: float | None = Field(None, gt=0, lt=1)
    max_flips: int | None = Field(None, ge=0)
    max_kld: float | None = Field(None, ge=0)
    min_throughput_ratio: float | None = Field(None, gt=0)
    length_tolerance: float | None = Field(None, gt=0, lt=1, description="how far a cell's mean output tokens "
                                           "per answer may stray from the reference's (default 0.1: within ±10%, "
                                           "as MLPerf's TEST06 asks); outside it the cell is named beside its "
                                           "speed-up (analysis/outputlength.py)")


class ClusterSection(_Strict):
    """Run the cells on a Ray cluster (runner/ray_runner.py), as `run --ray` does: the reference first, then every
    other cell as a Ray task asking for what one cell needs, so that no two cells share a GPU."""

    ray: str = Field("auto", description="'auto' (RAY_ADDRESS, else the cluster `ray start` began on this machine) "
                     "or the head node's address, host:port")
    gpus_per_cell: float | None = Field(None, ge=0, description="GPUs one cell asks for; default the product of its "
                                        "tensor-, pipeline- and data-parallel sizes in args (1 when none is given)")
    resources: dict[str, float] = Field(default_factory=dict, description="custom Ray resources one cell asks for, "
                                        "e.g. {eh_node: 1} with every node started with --resources '{\"eh_node\": 1}'"
                                        ": one cell per node at a time")
    max_retries: int = Field(2, ge=0, description="re-runs of a cell whose node or worker was lost mid-cell")


AxisName = Annotated[str, Field(pattern=NAME_PATTERN)]
ValueName = Annotated[str, Field(pattern=NAME_PATTERN)]


class Matrix(MeasureSections):  # every measure's section (measures/specs.py), with the config of _Strict
    """A matrix file, validated. Relative paths in `model` and `command[0]` are resolved by `load_matrix`."""

    name: str = Field(min_length=1)
    description: str | None = None
    engine: EngineName | None = Field(
        None, description="the engine of every cell whose axis values do not name one; needed unless they all do")
    model: str = Field(min_length=1)
    served_model_name: str | None = None
    command: list[str] | None = Field(
        None, min_length=1, description="launcher argv before the engine's flags; each engine has a default"
    )
    base_url: str | None = Field(None, description="engine 'external' only: the endpoint that is already up")
    host: str = "127.0.0.1"
    port: int | None = Field(None, ge=1, le=65535, description="serve every cell on this port; default: a free one "
                             "per cell")
    args: dict[str, ArgValue] = Field(default_factory=dict)
    env: dict[str, EnvValue] = Field(default_factory=dict)
    axes: dict[AxisName, dict[ValueName, Settings | None]] = Field(default_factory=dict)
    exclude: list[dict[str, Union[str, list[str]]]] = Field(default_factory=list)
    reference: Union[str, dict[str, str], None] = None
    timeouts: Timeouts = Field(default_factory=Timeouts)
    requests: RequestsSection = Field(default_factory=RequestsSection)
    probes: ProbesSection = Field(default_factory=ProbesSection)
    length: LengthSection = Field(default_factory=LengthSection)
    quality: QualitySection | None = None
    throughput: ThroughputSection | None = None
    gate: GateSection | None = None
    report: ReportSection = Field(default_factory=ReportSection)
    cluster: ClusterSection | None = Field(None, description="run on a Ray cluster (as `run --ray`)")
    confirm: ConfirmSection | None = Field(None, description="the second stage: the finalist relaunched against the "
                                           "reference relaunched, its claim on that data alone (absent: one stage, "
                                           "the recommendation read from exploration)")

    _flags = field_validator("args")(classmethod(lambda cls, v: _check_flags(v)))

    @field_validator("engine")
    @classmethod
    def _known(cls, value: str | None, info: ValidationInfo) -> str | None:
        return known_engine(value, info, launched_only=False)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> "Matrix":
        for axis, values in self.axes.items():
            if not values:
                raise ValueError(f"axes.{axis}: an axis needs at least one value")
        engine_values = {f"{axis}.{name}": value.engine for axis, values in self.axes.items()
                         for name, value in values.items() if value and value.engine}
        engines = engines_of(info)  # the engines' own traits, handed in by whoever loads the file (matrix/engines.py)
        if engines is not None:
            launches = bool(self.command or self.args or any(v and (v.args or v.env)
                                                              for vs in self.axes.values() for v in vs.values()))
            problem = launch_problem(self.engine, engine_values, self.base_url, launches, engines)
            if problem:
                raise ValueError(problem)
        elif self.engine is None and not engine_values:
            raise ValueError("engine: needed, unless axis values name each cell's engine")
        problem = settle_tokenizer(self.quality, self.engine, engine_values, engines)
        if problem:
            raise ValueError(problem)
        self._add_length()
        unknown = [t for t in self.batching.tasks if not self.quality or t not in self.quality.tasks]
        if self.batching.enabled and unknown:
            raise ValueError("batching.tasks: "
                             f"{unknown_name('task', unknown[0], self.quality.tasks if self.quality else [])}"
                             " (answered again one at a time, they must be quality tasks)")
        self._check_operating_point()
        if self.confirm is not None:
            self.confirm.check(self.quality.tasks if self.quality else [], self.throughput is not None)
        point = self.report.operating_point
        if self.quality is not None and "concurrency" not in self.quality.model_fields_set and point is not None \
                and point.concurrency:
            # the accuracy side at the load the cells are served at, unless the matrix sets its own
            self.quality.concurrency = point.concurrency
        for i, rule in enumerate(self.exclude):
            for axis, names in rule.items():
                if axis not in self.axes:
                    raise ValueError(f"exclude[{i}]: {unknown_name('axis', axis, self.axes)}")
                for name in [names] if isinstance(names, str) else names:
                    if name not in self.axes[axis]:
                        raise ValueError(f"exclude[{i}].{axis}: {unknown_name('value', name, self.axes[axis])}")
        return self

    def command_for(self, cell: "Cell") -> list[str] | None:
        """The launcher argv of one cell before its flags: its axis value's command, else the matrix's where the cell
        runs on the matrix's engine, else None (the engine's default)."""
        if cell.command:
            return cell.command
        return self.command if cell.engine == self.engine else None

    def _add_length(self) -> None:
        """The length section's tasks and scenarios join the quality tasks and throughput scenarios (once: a matrix
        dumped and validated again keeps them as they are)."""
        length = self.length
        if not length.enabled:
            return
        context = next((self.args[flag] for flag in ("--max-model-len", "--context-length")
                        if isinstance(self.args.get(flag), int) and not isinstance(self.args.get(flag), bool)), None)
        if context is not None and length.buckets[-1] + length.max_gen_toks > context:
            raise ValueError(f"length.buckets: the longest, {length.buckets[-1]} tokens, and its {length.max_gen_toks} "
                             f"answer tokens do not fit the served context of {context} tokens (args)")
        if length.tasks:
            if self.quality is None:
                raise ValueError("length: its per-bucket tasks need a quality section (or length.tasks: false)")
            for task in length.task_names():
                if task not in self.quality.tasks:
                    self.quality.tasks.append(task)
                    # every document of the bucket (quality.limit sizes the matrix's own tasks), greedy, by
                    # completion (the document ends with the answer's first words; no chat template, no thinking),
                    # whatever the section's generation settings for the matrix's own tasks say
                    self.quality.task_settings[task] = TaskSettings(
                        limit=None, api="completions", max_gen_toks=length.max_gen_toks,
                        gen_kwargs={"do_sample": False, "temperature": 0.0}, chat_template_kwargs=None,
                        think_end_token=None, stop_strings=None)
        if length.speed:
            scenarios = length.scenarios()
            if self.throughput is None:
                self.throughput = ThroughputSection(scenarios=scenarios)
            else:
                known = {s.name for s in self.throughput.all_scenarios()}
                self.throughput.scenarios += [s for s in scenarios if s.name not in known]

    def _check_operating_point(self) -> None:
        report = self.report
        scenarios = self.throughput.all_scenarios() if self.throughput else []
        names = [s.name for s in scenarios]
        if report.throughput_scenario and report.throughput_scenario not in names:
            raise ValueError("report.throughput_scenario: "
                             f"{unknown_name('scenario', report.throughput_scenario, names)}")
        point = report.operating_point
        if point is None:
            return
        if report.throughput_scenario:
            raise ValueError("report: give throughput_scenario or operating_point, not both (the operating point "
                             "says where speed is read)")
        if point.max_goodput:
            if not report.slo:
                raise ValueError("report.operating_point: max_goodput needs report.slo (goodput counts the requests "
                                 "meeting it)")
            if not (self.throughput and self.throughput.sweep):
                raise ValueError("report.operating_point: max_goodput needs throughput.sweep (the loads to choose "
                                 "from)")
        elif not any(s.concurrency == point.concurrency if point.concurrency else s.request_rate == point.request_rate
                     for s in scenarios):
            loads = sorted({s.concurrency for s in scenarios if s.concurrency}) if point.concurrency else \
                sorted({s.request_rate for s in scenarios if s.request_rate})
            raise ValueError(f"report.operating_point: no scenario or sweep step runs at "
                             f"""{'concurrency ' + str(point.concurrency) if point.concurrency
                                 else 'request rate ' + str(point.request_rate)}"""
                             f" (measured loads: {loads or 'none'})")


class Cell(BaseModel):
    """One configuration to serve: the axis values that make it, and the merged launch settings."""

    model_config = ConfigDict(frozen=True)

    id: str
    axes: dict[str, str]
    args: dict[str, ArgValue]
    env: dict[str, str]
    settings_hash: str
    engine: str = Field(description="the engine that serves this cell (the matrix's, or its axis value's)")
    command: list[str] | None = Field(None, description="its axis value's own launcher argv (None: the matrix's, "
                                      "see Matrix.command_for)")
