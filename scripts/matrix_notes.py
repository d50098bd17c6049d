"""What each matrix key that has no description in the schema does, for docs/matrix.md (scripts/make_docs.py reads
it, keyed by model and field). The schema's own `Field(description=...)` wins: a line here is better moved there.
"""

NOTES = {
    "Matrix.name": "the matrix's name: the report's title, and how `compare` knows two runs are of one matrix",
    "Matrix.description": "what the matrix compares, in words (a label: changing it keeps finished cells)",
    "Matrix.model": "the model every cell serves: a hub id or a local folder (a path starting `./` or `../` is "
                    "resolved against the matrix file's folder, as is `command[0]`)",
    "Matrix.served_model_name": "the name the endpoint serves the model under (default: `model`)",
    "Matrix.host": "the address each launched server binds and is asked on",
    "Matrix.args": "base launch flags every cell shares, written as flags (`--tp-size: 8`): true is a bare flag, "
                   "false or null leaves it out, a mapping is passed as JSON, a list as several values",
    "Matrix.env": "environment variables every cell's server gets (numbers become strings; quote true/false as the "
                  "engine expects them)",
    "Matrix.exclude": "combinations left out: each entry maps axes to a value or a list of values, and a cell that "
                      "matches every axis of one entry is not run",
    "Matrix.reference": "the cell every other is compared with: a cell id, or a mapping of axis to value (default: "
                        "the first cell)",
    "Matrix.timeouts": "how long the harness waits, in seconds",
    "Settings.description": "what this value changes, in words (a label, kept with the matrix in results.json)",
    "Settings.args": "flags this value adds to the matrix's `args`, or overrides (written as there)",
    "Settings.env": "variables this value adds to the matrix's `env`, or overrides",
    "ProbesSection.enabled": "send the garbage probes",
    "ProbesSection.max_tokens": "greedy tokens per probe answer",
    "ProbesSection.concurrency": "probe requests in flight at once",
    "DistributionSection.enabled": "run the numerics check",
    "BatchingSection.enabled": "measure batch dependence",
    "LengthSection.enabled": "measure drift and speed by context length",
    "RepeatRange.min": "repeats a cell measures at least (adaptive: then until the speed rule decides)",
    "RepeatRange.max": "repeats at most; the reference measures all of them",
    "QualitySection.tasks": "lm-eval task names: the shipped offline tasks (`eh_capitals`, `eh_arithmetic`, "
                            "`eh_copy`, `eh_choice`, `eh_capitals_chat`, `eh_tools`, `eh_json`) or, with "
                            "`include_defaults`, lm-eval's own (gsm8k, ...)",
    "QualitySection.api": "the endpoint every task is scored through: completions (loglikelihood and generation "
                          "tasks) or chat (the chat template and any reasoning parser)",
    "QualitySection.concurrency": "requests in flight while scoring (unset: the operating point's concurrency where "
                                  "the report states one)",
    "QualitySection.task_timeout_s": "one task's wall-clock limit",
    "TaskData.data_files": "split -> file or files",
    "TaskData.format": "the files' format",
    "ThroughputSection.scenarios": "named scenarios, each measured the same way in every ready cell",
    "Scenario.name": "the scenario's name in the report and its file names",
    "Scenario.concurrency": "closed loop: this many streams, each sending its next request when the last one ends "
                            "(give this or request_rate)",
    "Scenario.request_rate": "open loop: requests per second, Poisson arrivals",
    "Scenario.input_len": "prompt words, with `prompts: random` only",
    "Scenario.output_len": "tokens each request asks for (all of them with ignore_eos)",
    "Scenario.requests": "measured requests per repeat (with neither this nor duration_s: 4 per stream, at least 8)",
    "Scenario.duration_s": "or measure each repeat for this long",
    "Scenario.warmup_requests": "requests sent before the first repeat, not measured",
    "Scenario.ignore_eos": "generate output_len tokens whatever the model says, so every cell does the same work",
    "Scenario.api": "completions, or chat (the engine applies the chat template)",
    "SweepSection.name": "the steps' name: `<name>-c<N>` or `<name>-r<rate>`",
    "GateSection.alpha": "the error rate of the gate's tests (default the baseline's: 0.05)",
    "GateSection.max_flips": "more right->wrong answers than this fails (single 0/1 samples)",
    "GateSection.max_kld": "per-token KL in either direction credibly above this fails (docs/drift-and-gate.md)",
    "GateSection.min_throughput_ratio": "a scenario's tok/s credibly below this share of the baseline's fails (the "
                                        "same kind of machine only)",
    "ReportSection.drift_measure": "the Pareto front's drift axis: accuracy (each cell's verdict against the margin) "
                                   "or kld (per-token KL(ref||cell))",
    "SloTarget.percentile": "the percentile of the requests that must meet max_ms",
    "SloTarget.max_ms": "the target, milliseconds",
    "OperatingPointSpec.concurrency": "read every cell at this concurrency",
    "OperatingPointSpec.request_rate": "or at this request rate",
    "OperatingPointSpec.max_goodput": "or where the reference serves the most goodput under the SLO (written "
                                      "`operating_point: max_goodput`)",
}
