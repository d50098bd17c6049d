"""The commands that stand alone from a run: detect (garbage detectors on saved outputs), diagnose (a server log
produced outside the harness), bench (streaming throughput of any endpoint)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evalharness.cli.common import fail


def cmd_detect(args: argparse.Namespace) -> int:
    import json

    from pydantic import ValidationError

    from evalharness.phases.detectors import Sample, judge
    from evalharness.records.io import read_jsonl

    path = Path(args.file)
    try:
        rows = read_jsonl(path, ValueError, reading="the outputs",
                          expected='one JSON object per line with at least {"output": "..."}')
    except ValueError as exc:
        return fail(str(exc))
    samples = []
    for number, data in rows:
        if "output" not in data and "text" in data:
            data["output"] = data["text"]  # the detector corpus's lines (tests/data/detector_corpus.jsonl) as they are
        try:
            samples.append((number, Sample.model_validate({k: v for k, v in data.items() if k in Sample.model_fields})))
        except ValidationError as exc:
            first = exc.errors()[0]
            return fail(f"{path}:{number}: {'.'.join(map(str, first['loc']))}: {first['msg']}")
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


def cmd_diagnose(args: argparse.Namespace) -> int:
    from evalharness.render.diagnosis import diagnosis_markdown
    from evalharness.serving.diagnose import diagnose

    path = Path(args.log)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return fail(f"{path}: cannot read: {exc.strerror or exc}")
    try:
        result = diagnose(text, str(path), args.engine)
    except ValueError as exc:
        return fail(f"{path}: {exc}")
    print(result.model_dump_json(indent=2) if args.json else diagnosis_markdown(result), end="\n" if args.json else "")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from evalharness.phases.throughput.client import LoadClient, run_scenario
    from evalharness.records.io import atomic_write_text
    from evalharness.render.markdown import markdown_table
    from evalharness.render.throughput import THROUGHPUT_HEADER, throughput_notes, throughput_rows

    from evalharness.phases.throughput.prompts import PromptSourceError, load_source

    from urllib.parse import urlsplit

    url = urlsplit(args.base_url)
    if url.scheme not in ("http", "https") or not url.hostname:  # the load client speaks plain HTTP(S) only
        return fail(f"--base-url {args.base_url!r}: not an http(s) URL; expected e.g. http://127.0.0.1:8000/v1")
    root = args.base_url.rstrip("/").removesuffix("/v1")
    try:
        prompts = load_source(args.prompts)
    except PromptSourceError as exc:
        return fail(str(exc))
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
