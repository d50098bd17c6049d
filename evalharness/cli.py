"""The command line: run, validate, report, detect, bench, gate, baseline. Bad input exits 2 with one clear message; nothing else lives here."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalharness import __version__

EXIT_BAD_INPUT = 2


def _fail(message: str) -> int:
    print(f"evalharness: error: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT


def cmd_validate(args: argparse.Namespace) -> int:
    import shlex

    from evalharness.matrix.errors import SpecError
    from evalharness.matrix.load import load_matrix
    from evalharness.records.masking import mask_argv, mask_env
    from evalharness.serving.engines import ENGINES, render_args

    try:
        matrix, cells, reference = load_matrix(args.matrix)
    except SpecError as exc:
        return _fail(str(exc))
    print(f"{args.matrix}: matrix {matrix.name!r}, engine {matrix.engine}, {len(cells)} cells, reference {reference.id}")
    engine = ENGINES[matrix.engine]
    if matrix.engine != "external":
        example = engine.launch_plan(matrix, reference, port=0, work_dir="OUT")
        print(f"  launch (reference cell, port chosen at run time): {shlex.join(mask_argv(example.argv))}")
    for cell in cells:
        flags = shlex.join(mask_argv(render_args(cell.args))) or "(no flags)"
        env = " ".join(f"{k}={v}" for k, v in mask_env(cell.env).items())
        print(f"  {cell.id}{' (reference)' if cell.id == reference.id else ''}: {flags}{'  env: ' + env if env else ''}")
    if matrix.engine == "sglang":
        return _validate_sglang(matrix, cells, args.engine_python)
    return 0


def _validate_sglang(matrix, cells, engine_python: str | None) -> int:
    from evalharness.serving.engines.sglang_check import check_cells, find_python

    result = check_cells(matrix, cells, find_python(matrix, engine_python))
    if not result.checked:
        print(f"SGLang: not checked: {result.reason}")
        return 0
    print(f"SGLang {result.version} ({result.python}): {len(cells) - len(result.failed)}/{len(cells)} cells accepted "
          "by its parser and environment")
    for check in result.failed:
        if not check.ok:
            print(f"  REJECTED {check.id}: {check.error} (sglang {result.version})", file=sys.stderr)
        if check.unknown_env:
            print(f"  REJECTED {check.id}: environment variables that sglang {result.version} does not define: "
                  f"{', '.join(check.unknown_env)}", file=sys.stderr)
    return EXIT_BAD_INPUT if result.failed else 0


def cmd_run(args: argparse.Namespace) -> int:
    from evalharness.matrix.errors import SpecError
    from evalharness.matrix.load import load_matrix
    from evalharness.runner.run import RunError, execute

    try:
        matrix, cells, reference = load_matrix(args.matrix)
    except SpecError as exc:
        return _fail(str(exc))
    out_dir = Path(args.out)
    try:
        run, status = execute(matrix, cells, reference, Path(args.matrix), out_dir, args.resume)
    except RunError as exc:
        return _fail(str(exc))
    print(f"{len(run.cells)}/{len(run.cell_order)} cells: {run.status_summary() or 'no cells finished'}")
    print(f"report: {out_dir / 'report.md'}")
    print(f"results: {out_dir / 'results.json'}")
    return status


def cmd_report(args: argparse.Namespace) -> int:
    from evalharness.analysis.drift import refresh_drift
    from evalharness.records.io import ResultsError, load_run
    from evalharness.render.outputs import render_all

    out_dir = Path(args.dir)
    try:
        run = load_run(out_dir)
    except ResultsError as exc:
        return _fail(str(exc))
    refresh_drift(run, out_dir)
    render_all(run, out_dir)
    print(f"report: {out_dir / 'report.md'}")
    return 0


def cmd_detect(args: argparse.Namespace) -> int:
    import json

    from pydantic import ValidationError

    from evalharness.phases.detectors import Sample, judge

    path = Path(args.file)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        return _fail(f"{path}: cannot read: {exc}")
    samples = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return _fail(f"{path}:{number}: not a JSON object; each line needs at least {{\"output\": \"...\"}}")
        try:
            samples.append((number, Sample.model_validate({k: v for k, v in data.items() if k in Sample.model_fields})))
        except ValidationError as exc:
            first = exc.errors()[0]
            return _fail(f"{path}:{number}: {'.'.join(map(str, first['loc']))}: {first['msg']}")
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout
    try:
        for number, sample in samples:
            verdict = judge(sample)
            record = {"line": number, "garbage": verdict.garbage,
                      "detectors": [f.model_dump() for f in verdict.findings]}
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def cmd_bench(args: argparse.Namespace) -> int:
    from evalharness.phases.throughput.client import LoadClient, run_scenario
    from evalharness.records.io import atomic_write_text
    from evalharness.render.markdown import markdown_table
    from evalharness.render.throughput import THROUGHPUT_HEADER, throughput_notes, throughput_rows

    from evalharness.phases.throughput.prompts import PromptSourceError, load_source

    root = args.base_url.rstrip("/").removesuffix("/v1")
    try:
        prompts = load_source(args.prompts)
    except PromptSourceError as exc:
        return _fail(str(exc))
    client = LoadClient(args.base_url, args.model, api=args.api, timeout_s=args.timeout,
                        ignore_eos=not args.no_ignore_eos, tokenize_url=f"{root}/tokenize", prompts=prompts)
    results = []
    for concurrency in args.concurrency:
        results.append(run_scenario(client, name=f"c{concurrency}", concurrency=concurrency, request_rate=None,
                                    input_len=args.input_len, output_len=args.output_len,
                                    requests=args.requests, duration_s=None, warmup=args.warmup,
                                    repeats=max(1, args.repeats), processes=max(1, args.client_processes)))
    print(markdown_table(THROUGHPUT_HEADER, throughput_rows(results)))
    for note in throughput_notes(results):
        print(note)
    if args.json:
        import json

        atomic_write_text(Path(args.json), json.dumps([r.model_dump() for r in results], indent=2) + "\n")
    failed = sum(r.completed == 0 for r in results)
    return 1 if failed else 0


def _cell_mapping(items: list[str] | None) -> dict[str, str]:
    mapping = {}
    for item in items or []:
        run_id, sep, base_id = item.partition("=")
        mapping[run_id] = base_id if sep else run_id
    return mapping


def cmd_gate(args: argparse.Namespace) -> int:
    from evalharness.analysis.drift import refresh_drift
    from evalharness.analysis.gate import check, machine_warning, thresholds_for
    from evalharness.records.baseline import BaselineError, load_baseline
    from evalharness.records.io import ResultsError, load_run

    run_dir = Path(args.dir)
    try:
        run = load_run(run_dir)
        baseline = load_baseline(Path(args.baseline))
        refresh_drift(run, run_dir)
        violations = check(run, run_dir, baseline, _cell_mapping(args.cell))
    except (ResultsError, BaselineError) as exc:  # BaselineError covers GateError
        return _fail(str(exc))
    limits = thresholds_for(run, baseline)
    warning = machine_warning(run, baseline)
    if warning:
        print(f"gate: warning: {warning}")
    caveat = "; baseline from another kind of machine, see the warning" if warning else ""
    if violations:
        print(f"gate: FAIL: {len(violations)} violation(s) against {args.baseline} "
              f"({limits.model_dump(exclude_none=True)}{caveat})")
        for line in violations:
            print(f"  - {line}")
        return 1
    print(f"gate: pass against {args.baseline} ({limits.model_dump(exclude_none=True)}{caveat})")
    return 0


def cmd_baseline_save(args: argparse.Namespace) -> int:
    from evalharness.analysis.gate import GateError, make_baseline
    from evalharness.records.baseline import Thresholds, save_baseline
    from evalharness.records.io import ResultsError, load_run

    run_dir = Path(args.dir)
    try:
        run = load_run(run_dir)
        gate = {k: v for k, v in (run.meta.matrix.get("gate") or {}).items() if v is not None}
        baseline = make_baseline(run, run_dir, args.cell, Thresholds(**gate))
    except (ResultsError, GateError) as exc:
        return _fail(str(exc))
    save_baseline(baseline, Path(args.output))
    print(f"baseline: {args.output} ({', '.join(baseline.cells)}; engine {baseline.engine} {baseline.engine_version})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="evalharness", description=__doc__)
    parser.add_argument("--version", action="version", version=f"evalharness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="serve every cell of a matrix and report")
    run.add_argument("--matrix", required=True, help="matrix YAML file")
    run.add_argument("--out", required=True, help="output folder (results.json, report.md, cells/<id>/)")
    run.add_argument("--resume", action="store_true", help="finish a run in --out, skipping its finished cells")
    run.set_defaults(func=cmd_run)

    validate = sub.add_parser("validate", help="check a matrix and list its cells without launching anything")
    validate.add_argument("--matrix", required=True)
    validate.add_argument("--engine-python", help="for SGLang matrices: a Python with sglang importable, whose parser "
                          "checks every cell (default: $EVALHARNESS_SGLANG_PYTHON, the launcher, or `sglang`'s own)")
    validate.set_defaults(func=cmd_validate)

    detect = sub.add_parser("detect", help="run the garbage detectors on a JSONL file of outputs")
    detect.add_argument("file", help="JSONL: one object per line with 'output' (and optionally 'prompt', "
                                     "'finish_reason', 'expect_stop', 'reference_output')")
    detect.add_argument("-o", "--output", help="write the JSON lines here instead of stdout")
    detect.set_defaults(func=cmd_detect)

    bench = sub.add_parser("bench", help="measure streaming throughput of any OpenAI-compatible endpoint")
    bench.add_argument("--base-url", required=True, help="as the openai client takes it, e.g. http://127.0.0.1:8000/v1")
    bench.add_argument("--model", required=True)
    bench.add_argument("--concurrency", type=_int_list, default=[1], help="comma-separated, e.g. 1,8,32")
    bench.add_argument("--requests", type=int, default=None, help="measured requests per level (default 4x concurrency, at least 8)")
    bench.add_argument("--input-len", type=int, default=128, help="prompt words, with --prompts random only")
    bench.add_argument("--prompts", default="natural", help="natural (the shipped corpus), task:NAME, a .jsonl file, "
                       "or random (capacity figures only)")
    bench.add_argument("--repeats", type=int, default=1, help="measure each concurrency this many times")
    bench.add_argument("--client-processes", type=int, default=1, help="shard the streams over this many processes")
    bench.add_argument("--output-len", type=int, default=128)
    bench.add_argument("--warmup", type=int, default=1)
    bench.add_argument("--api", choices=["completions", "chat"], default="completions")
    bench.add_argument("--timeout", type=float, default=300.0, help="per request, seconds")
    bench.add_argument("--no-ignore-eos", action="store_true", help="let requests stop at EOS")
    bench.add_argument("--json", help="also write the results here")
    bench.set_defaults(func=cmd_bench)

    gate = sub.add_parser("gate", help="pass/fail a run against a committed baseline (exit 0 pass, 1 fail, 2 bad input)")
    gate.add_argument("dir")
    gate.add_argument("--baseline", required=True)
    gate.add_argument("--cell", action="append", metavar="RUN_ID[=BASELINE_ID]",
                      help="gate these cells (default: every cell that the baseline names, or all against a one-cell baseline)")
    gate.set_defaults(func=cmd_gate)

    baseline = sub.add_parser("baseline", help="save a baseline from a finished run")
    baseline_sub = baseline.add_subparsers(dest="baseline_command", required=True)
    save = baseline_sub.add_parser("save")
    save.add_argument("dir")
    save.add_argument("--cell", action="append", help="cells to keep (default: every ok cell)")
    save.add_argument("-o", "--output", required=True)
    save.set_defaults(func=cmd_baseline_save)

    report = sub.add_parser("report", help="re-render report.md from a run folder's results.json")
    report.add_argument("dir")
    report.set_defaults(func=cmd_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
