"""The command line, in the order a user runs its commands: validate a matrix, plan what its verdicts cost, run it,
report (re-render) a run, save a baseline from it, gate a run against a baseline, compare two runs; and three tools:
diagnose a server log, detect garbage in saved outputs, bench any OpenAI-compatible endpoint. Bad input exits 2 with
one clear message; nothing else lives here."""

from __future__ import annotations

import argparse

from evalharness import __version__
from evalharness.cli.common import int_list, positive_float, positive_int, unit_fraction
from evalharness.cli.runs import cmd_plan, cmd_report, cmd_run, cmd_validate
from evalharness.cli.tools import cmd_bench, cmd_detect, cmd_diagnose
from evalharness.cli.verdicts import cmd_baseline_save, cmd_compare, cmd_gate
from evalharness.serving.engines import ENGINES


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalharness", description=__doc__,
                                     epilog="Every command and option: docs/cli.md. "
                                            "A first run: docs/getting-started.md.")
    parser.add_argument("--version", action="version", version=f"evalharness {__version__}")
    # listed in --help in the order a user runs them (tests/unit/test_docs.py)
    sub = parser.add_subparsers(dest="command", required=True, title="commands", metavar="COMMAND")

    validate = sub.add_parser("validate", help="check a matrix and list its cells without launching anything")
    validate.add_argument("--matrix", required=True, help="matrix YAML file")
    validate.add_argument("--engine-python", help="for SGLang matrices: a Python with sglang importable, whose parser "
                          "checks every cell (default: $EVALHARNESS_SGLANG_PYTHON, the launcher, or `sglang`'s own)")
    validate.add_argument("--no-engine-check", action="store_true",
                          help="do not run the cells through the installed engine (otherwise a matrix that could not "
                               "be checked exits 2)")
    validate.set_defaults(func=cmd_validate)

    plan = sub.add_parser("plan", help="what a matrix's verdicts cost: repeats and hours per task for its margins, "
                          "what the matrix as written certifies, and with a confirm section both stages in box-hours")
    plan.add_argument("--matrix", required=True, help="matrix YAML file")
    plan.add_argument("--from", dest="from_run", metavar="RUN", help="a previous run folder: its reference's "
                      "documents, accuracy, within-document variance, tokens per answer and throughput")
    plan.add_argument("--tok-s", type=positive_float,
                      help="output tokens/s of the quality phase (default: the previous run's)")
    plan.add_argument("--budget-hours", type=positive_float, help="hours to spend (default quality.budget_hours); "
                      "with a confirm section, box-hours of both stages: what each task certifies within them")
    plan.add_argument("--documents", action="append", metavar="TASK=N", help="a task's documents (default: "
                      "quality.limit, times a group's subtasks as its lm-eval config lists them)")
    plan.add_argument("--answer-tokens", action="append", metavar="TASK=N", help="a task's typical answer length in "
                      "tokens, reasoning included (default: the median --from recorded, else max_gen_toks, shown "
                      "as the budget bound it is)")
    plan.add_argument("--startup-min", type=positive_float, help="minutes from launch to ready, per launch (default: "
                      "the median --from recorded, else timeouts.startup_s as a bound)")
    plan.add_argument("--accuracy", action="append", metavar="TASK=X", help="a task's expected accuracy")
    plan.add_argument("--consistency", type=unit_fraction, help="the share of an answer's variance between documents "
                      "(default: measured from --from's repeats, else 0.5)")
    plan.set_defaults(func=cmd_plan)

    run = sub.add_parser("run", help="serve every cell of a matrix and report")
    run.add_argument("--matrix", required=True, help="matrix YAML file")
    run.add_argument("--out", required=True, help="output folder (results.json, report.md, cells/<id>/)")
    run.add_argument("--resume", action="store_true", help="finish a run in --out, skipping its finished cells")
    run.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                     help="run the cells on a Ray cluster: its head's HOST:PORT, or none for the matrix's "
                          "cluster.ray (default 'auto': RAY_ADDRESS or the cluster started on this machine)")
    run.add_argument("--over-budget", action="store_true", help="run even when quality.budget_hours cannot reach "
                     "the margins (the plan printed at the start says what it reaches)")
    _baseline_options(run, "after the run, gate it")
    run.set_defaults(func=cmd_run)

    report = sub.add_parser("report", help="re-render report.md, report.html and the rest from a run folder's "
                            "results.json")
    report.add_argument("dir", help="a run folder (its results.json)")
    report.add_argument("--html", action="store_true", help="write only report.html: one self-contained page "
                        "(chart, sortable cells, every document's answers beside the reference's) that opens from disk")
    _baseline_options(report, "gate the run")
    report.set_defaults(func=cmd_report)

    baseline = sub.add_parser("baseline", help="save a baseline from a finished run")
    baseline_sub = baseline.add_subparsers(dest="baseline_command", required=True)
    save = baseline_sub.add_parser("save", help="save a run's ok cells (or those --cell names) as a baseline "
                                   "for `gate`")
    save.add_argument("dir", help="a finished run folder")
    save.add_argument("--cell", action="append", help="cells to keep (default: every ok cell)")
    save.add_argument("-o", "--output", required=True, help="the baseline file to write, e.g. baselines/mine.json")
    save.add_argument("--merge", action="store_true", help="refresh the baseline in --output with this run's repeats: "
                      "per task, the same documents' scores pooled over both (the run must use other seeds: "
                      "quality.seed), so the baseline's own draw weighs less on every later gate")
    save.set_defaults(func=cmd_baseline_save)

    gate = sub.add_parser("gate", help="pass/fail a run against a committed baseline (exit 0 pass, 1 fail, "
                          "2 bad input, 3 inconclusive: nothing failed but the samples cannot show every task "
                          "within its margin)")
    gate.add_argument("dir", help="the run folder to gate")
    gate.add_argument("--baseline", required=True, help="a baseline file (`baseline save`)")
    gate.add_argument("--cell", action="append", metavar="RUN_ID[=BASELINE_ID]",
                      help="gate these cells (default: every cell that the baseline names, or all against a "
                           "one-cell baseline)")
    gate.add_argument("--json", metavar="FILE", help="write each cell's outcome (pass, fail, inconclusive) with its "
                      "tasks' outcomes and bounds")
    gate.set_defaults(func=cmd_gate)

    compare = sub.add_parser("compare", help="what changed between two runs of one matrix, cell by cell (exit 0, 1 "
                             "when a change fails the matrix's gate thresholds, 2 on bad input)")
    compare.add_argument("base", help="run folder of the base (e.g. the main branch)")
    compare.add_argument("head", help="run folder of the head (e.g. the pull request)")
    compare.add_argument("--out", help="write compare.md, summary.md, compare.json and compare.png here")
    compare.add_argument("--markdown", help="write the short form (a pull-request comment) to this file")
    compare.set_defaults(func=cmd_compare)

    diag = sub.add_parser("diagnose", help="crash class and known warnings of a server log produced outside "
                          "the harness")
    diag.add_argument("log", help="the server's log (stdout and stderr)")
    diag.add_argument("--engine", choices=[name for name, e in ENGINES.items() if e.launches],
                      help="default: guessed from the log's lines")
    diag.add_argument("--json", action="store_true", help="JSON instead of Markdown")
    diag.set_defaults(func=cmd_diagnose)

    detect = sub.add_parser("detect", help="run the garbage detectors on a JSONL file of outputs")
    detect.add_argument("file", help="JSONL: one object per line with 'output' or 'text' (and optionally 'prompt', "
                                     "'finish_reason', 'expect_stop', 'reference_output')")
    detect.add_argument("-o", "--output", help="write the JSON lines here instead of stdout")
    detect.set_defaults(func=cmd_detect)

    bench = sub.add_parser("bench", help="measure streaming throughput of any OpenAI-compatible endpoint")
    bench.add_argument("--base-url", required=True, help="as the openai client takes it, e.g. http://127.0.0.1:8000/v1")
    bench.add_argument("--model", required=True, help="the served model name")
    bench.add_argument("--concurrency", type=int_list, default=[1], help="comma-separated, e.g. 1,8,32")
    bench.add_argument("--requests", type=positive_int, default=None,
                       help="measured requests per level (default 4x concurrency, at least 8)")
    bench.add_argument("--input-len", type=positive_int, default=128, help="prompt words, with --prompts random only")
    bench.add_argument("--prompts", default="natural", help="natural (the shipped corpus), task:NAME, a .jsonl file, "
                       "or random (capacity figures only)")
    bench.add_argument("--repeats", type=positive_int, default=1, help="measure each concurrency this many times")
    bench.add_argument("--client-processes", type=positive_int, default=1,
                       help="shard the streams over this many processes")
    bench.add_argument("--output-len", type=positive_int, default=128, help="tokens each request generates")
    bench.add_argument("--warmup", type=int, default=1, help="requests sent before measuring, not counted")
    bench.add_argument("--api", choices=["completions", "chat"], default="completions", help="the endpoint the "
                       "requests go to")
    bench.add_argument("--timeout", type=positive_float, default=300.0, help="per request, seconds")
    bench.add_argument("--no-ignore-eos", action="store_true", help="let requests stop at EOS")
    bench.add_argument("--json", help="also write the results here")
    bench.set_defaults(func=cmd_bench)
    return parser


def _baseline_options(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--baseline", help=f"{what} against this baseline file as `gate` does: the outcome opens "
                        "the reports (the verdict box's Gate line) and sets the exit status (0 pass, 1 fail, "
                        "3 inconclusive)")
    parser.add_argument("--cell", action="append", metavar="RUN_ID[=BASELINE_ID]", help="with --baseline: gate "
                        "these cells (as `gate --cell`)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)
