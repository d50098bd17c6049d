"""Precision and recall of the garbage detectors on the labelled corpus (tests/data/detector_corpus.jsonl).

The corpus is split by a hash of each record's prompt (60% train, 40% test, fixed when the corpus is built): the
thresholds are chosen on train (`--sweep` prints the train figures for each candidate value of one threshold); the
figures that count are the test split's. "garbage" is the positive class: precision is the share of outputs marked
garbage that are garbage (a false alarm costs a user a good cell), recall the share of garbage outputs marked (a miss
ships a broken backend).

    .venv/bin/python benchmarks/detectors.py                    # both splits, per class, the test split's errors
    .venv/bin/python benchmarks/detectors.py --sweep letter_salad.SALAD_PLAUSIBILITY=-3.6,-3.9,-4.2,-4.5
    .venv/bin/python benchmarks/detectors.py --with-reference   # each sample also given the healthy float32 answer
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalharness.phases.detectors import Sample, judge  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "detector_corpus.jsonl"
MODULES = {"repetition": "evalharness.phases.detectors.repetition",
           "language": "evalharness.phases.detectors.language",
           "classic": "evalharness.phases.detectors.classic",
           "nonwords": "evalharness.phases.detectors.nonwords"}


def load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def references(records: list[dict]) -> dict[str, str]:
    """The healthy float32 engine's answer to each prompt: what the reference cell would have said."""
    return {r["prompt"]: r["text"] for r in records if r["source"] == "engine:healthy-float32" and r.get("prompt")
            and r["label"] == "healthy" and "chat request {" not in r["how"]}  # not a request-parameter fault


def evaluate(records: list[dict], refs: dict[str, str] | None = None) -> dict:
    tp = fp = fn = tn = 0
    by_class: dict[str, Counter] = defaultdict(Counter)
    errors = []
    started = time.perf_counter()
    for r in records:
        ref = refs.get(r.get("prompt") or "") if refs is not None else None
        if ref is not None and ref == r["text"]:
            ref = None
        verdict = judge(Sample(output=r["text"], prompt=r.get("prompt"), finish_reason=r.get("finish_reason"),
                               expect_stop=r.get("expect_stop", False), reference_output=ref))
        truth = r["label"] != "healthy"  # garbage, or a loop (a reasoning corpus labels loops apart)
        tp += truth and verdict.garbage
        fp += (not truth) and verdict.garbage
        fn += truth and not verdict.garbage
        tn += (not truth) and not verdict.garbage
        key = f"{r['label']}:{r['class'].split('/')[-1] if r['label'] == 'healthy' else r['class']}"
        by_class[key]["n"] += 1
        by_class[key]["right"] += truth == verdict.garbage
        if truth != verdict.garbage:
            errors.append((r, verdict))
    elapsed = time.perf_counter() - started
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "precision": precision, "recall": recall,
            "us_per_sample": 1e6 * elapsed / max(1, len(records)), "by_class": by_class, "errors": errors}


def line(name: str, m: dict) -> str:
    return (f"{name:<6} n={m['tp'] + m['fp'] + m['fn'] + m['tn']:<4} precision {m['precision']:.3f}  recall "
            f"{m['recall']:.3f}  (tp {m['tp']}, fp {m['fp']}, fn {m['fn']}, tn {m['tn']}; "
            f"{m['us_per_sample']:.0f} us per sample)")


def sweep(records: list[dict], spec: str) -> None:
    name, values = spec.split("=", 1)
    module_key, constant = name.split(".")
    module = importlib.import_module(MODULES[module_key])
    original = getattr(module, constant)
    train = [r for r in records if r["split"] == "train"]
    for value in values.split(","):
        setattr(module, constant, type(original)(float(value)))
        print(line(f"{constant}={value}", evaluate(train)).replace("n=", "train n="))
    setattr(module, constant, original)


def installed_docs(limit: int = 4000) -> None:
    """False alarms on human-written Markdown (paragraphs of the Markdown files and package descriptions installed in
    this Python environment): not model outputs, but the tables, rules, code and lists they contain are."""
    import random
    import re
    import sysconfig

    root = Path(sysconfig.get_paths()["purelib"])
    files = sorted([*root.glob("**/*.md"), *root.glob("*.dist-info/METADATA")])
    random.Random(0).shuffle(files)
    paragraphs = []
    for path in files[:600]:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        paragraphs += [(path, p) for p in re.split(r"\n\s*\n", text) if 40 < len(p) < 1500]
    random.Random(1).shuffle(paragraphs)
    flagged = [(path, p, judge(Sample(output=p))) for path, p in paragraphs[:limit]]
    flagged = [f for f in flagged if f[2].garbage]
    print(f"installed docs: {len(flagged)} of {min(limit, len(paragraphs))} paragraphs marked garbage")
    for path, p, verdict in flagged[:10]:
        print(f"  {path.relative_to(root)}: {p[:100]!r} | {verdict.findings[0].evidence[:80]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--sweep", action="append", default=[], help="module.CONSTANT=v1,v2,... on the train split")
    ap.add_argument("--with-reference", action="store_true")
    ap.add_argument("--errors", choices=["test", "train", "all", "none"], default="test")
    ap.add_argument("--installed-docs", action="store_true", help="also count false alarms on installed Markdown")
    args = ap.parse_args(argv)
    if args.installed_docs:
        installed_docs()
    records = load(args.corpus)
    for spec in args.sweep:
        sweep(records, spec)
    if args.sweep:
        return 0
    refs = references(records) if args.with_reference else None
    sources = Counter(("engine" if r["source"].startswith("engine") else r["source"], r["label"]) for r in records)
    print(f"corpus: {len(records)} outputs; " + ", ".join(f"{s} {lab}: {n}" for (s, lab), n in sorted(sources.items())))
    results = {}
    for split in ("train", "test"):
        results[split] = evaluate([r for r in records if r["split"] == split], refs)
        print(line(split, results[split]))
    print("\nper class (test split): right/n")
    for key, c in sorted(results["test"]["by_class"].items()):
        print(f"  {key:<48} {c['right']}/{c['n']}")
    shown = [] if args.errors == "none" else [e for s in ("train", "test") if args.errors in (s, "all")
                                              for e in results[s]["errors"]]
    for r, verdict in shown:
        kind = "MISS" if r["label"] == "garbage" else "FALSE ALARM"
        print(f"\n{kind} [{r['split']}] {r['class']} ({r['source']}) {r['id']}: {r['text'][:160]!r}")
        for f in verdict.findings:
            print(f"    {f.detector} ({f.strength}): {f.evidence}")
    test = results["test"]
    return 0 if test["precision"] >= 0.95 and test["recall"] >= 0.95 else 1


if __name__ == "__main__":
    sys.exit(main())
