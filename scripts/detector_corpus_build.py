"""How scripts/make_detector_corpus.py turns engine outputs into the corpus: the raw files a launch rewrites
(`replace_lines`), the detokenizer faults (`detok`, by the engine's Python) and `build`: raw outputs + review
overrides + hand-written examples -> tests/data/detector_corpus.jsonl, with ids and splits (`split_of`).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from detector_corpus_prompts import DATA, ROOT

def split_of(prompt: str | None, text: str) -> str:
    key = prompt if prompt else text
    return "train" if int(hashlib.sha256(key.encode()).hexdigest(), 16) % 10 < 6 else "test"


def replace_lines(path: Path, stale, records: list[dict]) -> None:
    """Rewrite a JSONL file without the records of a launch that ran again, plus its new ones."""
    kept = [r for r in map(json.loads, path.read_text(encoding="utf-8").splitlines()) if not stale(r)] \
        if path.exists() else []
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in [*kept, *records]), encoding="utf-8")


DETOK = DATA / "detector_corpus_raw_detok.jsonl"


def detok(python: Path, model: Path, raw: Path) -> None:
    """Detokenizer and vocabulary faults on the healthy float32 answers (scripts/detector_corpus_detok.py, run by the
    engine's Python for its `tokenizers`)."""
    healthy = [r for r in map(json.loads, raw.read_text(encoding="utf-8").splitlines())
               if r["source"] == "engine:healthy-float32" and r["label"] == "healthy" and r["text"].strip()]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in healthy))
    try:
        subprocess.run([str(python), str(ROOT / "scripts" / "detector_corpus_detok.py"), str(model), f.name,
                        str(DETOK)], check=True)
    finally:
        os.unlink(f.name)


def build(raw: Path) -> None:
    """Raw engine outputs + review overrides + hand-written examples -> the corpus, with ids and splits."""
    sys.path.insert(0, str(DATA))
    from detector_handwritten import HANDWRITTEN  # noqa: E402

    review_path = DATA / "detector_corpus_review.jsonl"
    review = {}
    if review_path.exists():
        review = {r["id"]: r for r in map(json.loads, review_path.read_text().splitlines()) if r}
    records = [json.loads(line) for path in (raw, DETOK) if path.exists()
               for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    records += [{"text": text, "label": label, "class": cls, "source": "hand-written", "how": "hand-written",
                 "prompt": prompt, "finish_reason": None, "expect_stop": False, **extra}
                for label, cls, text, prompt, extra in HANDWRITTEN]
    seen: set[str] = set()
    out = []
    for rec in records:
        rec["id"] = hashlib.sha256(
            f"{rec['source']}|{rec['how']}|{rec['prompt']}|{rec['text']}".encode()).hexdigest()[:12]
        if rec["id"] in seen:
            continue
        seen.add(rec["id"])
        if rec["id"] in review:
            fix = review[rec["id"]]
            rec.update({k: fix[k] for k in ("label", "class") if k in fix})
            rec["review"] = fix.get("note", "")
            if fix.get("drop"):
                continue
        rec["split"] = split_of(rec.get("prompt"), rec["text"])
        out.append(rec)
    (DATA / "detector_corpus.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out),
                                                encoding="utf-8")
    by = {}
    for r in out:
        by[(r["label"], r["split"])] = by.get((r["label"], r["split"]), 0) + 1
    print(f"{len(out)} records: {by}")
