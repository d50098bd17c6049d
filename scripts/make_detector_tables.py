"""Build the small tables the text detectors read, from permissive sources available offline:

- character bigram log-probabilities per language (Latin, Cyrillic and Greek scripts) from langdetect's language
  profiles (Apache-2.0; n-gram counts from Wikipedia): `pip download --no-deps langdetect==1.0.9` and unpack it;
- an English word list from SCOWL's American English list (Debian's `wamerican`, /usr/share/dict/american-english;
  SCOWL's licence allows copying with its notice, kept in evalharness/phases/detectors/data/NOTICE).

    python scripts/make_detector_tables.py --profiles /tmp/ld/langdetect-1.0.9/langdetect/profiles \\
        --words /usr/share/dict/american-english

Nothing here is fitted to the detector corpus: the tables describe languages, not our test data.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import unicodedata
from collections import defaultdict
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "evalharness" / "phases" / "detectors" / "data"
SCRIPTS = ("LATIN", "CYRILLIC", "GREEK")


def script_of(ch: str) -> str | None:
    name = unicodedata.name(ch, "")
    return next((s for s in SCRIPTS if name.startswith(s)), None)


def bigram_table(profile: dict) -> dict[str, float] | None:
    """log P(b | a) for letters a, b of one script and the word boundary ' ', add-half smoothed."""
    pairs: dict[str, float] = defaultdict(float)
    for gram, count in profile["freq"].items():
        if len(gram) == 2:
            pairs[gram.lower()] += count
    letters = [ch for gram in pairs for ch in gram if ch != " "]
    scripts = defaultdict(int)
    for ch in letters:
        scripts[script_of(ch)] += 1
    main = max(scripts, key=scripts.get)
    if main is None or scripts[main] < 0.8 * len(letters):
        return None
    pairs = {g: c for g, c in pairs.items() if all(ch == " " or script_of(ch) == main for ch in g)}
    first = defaultdict(float)
    for g, c in pairs.items():
        first[g[0]] += c
    alphabet = len(first) + 1
    table = {g: round(math.log((c + 0.5) / (first[g[0]] + 0.5 * alphabet)), 2) for g, c in pairs.items()}
    table["_script"] = main
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profiles", type=Path, required=True)
    ap.add_argument("--words", type=Path, required=True)
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    tables = {}
    for path in sorted(args.profiles.iterdir()):
        table = bigram_table(json.loads(path.read_text(encoding="utf-8")))
        if table:
            tables[path.name] = table
    with gzip.open(OUT / "bigrams.json.gz", "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(tables, f, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    words = sorted({w.strip().lower() for w in args.words.read_text(encoding="utf-8").splitlines()
                    if w.strip() and "'" not in w})
    with gzip.open(OUT / "english_words.txt.gz", "wt", encoding="utf-8", compresslevel=9) as f:
        f.write("\n".join(words) + "\n")
    print(f"{len(tables)} languages ({', '.join(sorted(tables))}); {len(words)} English words")


if __name__ == "__main__":
    main()
