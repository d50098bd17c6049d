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


SPECIAL = str.maketrans({"ł": "l", "ø": "o", "ß": "ss", "æ": "ae", "đ": "d", "ħ": "h", "ı": "i", "œ": "oe",
                         "þ": "th", "ð": "d", "ŀ": "l", "ŧ": "t"})


def fold(text: str) -> str:
    """Lowercase without diacritics (the detector folds words the same way): 'Vltavě' -> 'vltave', 'għ' -> 'gh'."""
    text = unicodedata.normalize("NFKD", text.lower().translate(SPECIAL))
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def script_of(ch: str) -> str | None:
    name = unicodedata.name(ch, "")
    return next((s for s in SCRIPTS if name.startswith(s)), None)


def bigram_table(profile: dict) -> dict[str, float] | None:
    """log P(b | a) for folded letters a, b of one script and the word boundary ' ', add-half smoothed."""
    pairs: dict[str, float] = defaultdict(float)
    for gram, count in profile["freq"].items():
        if len(gram) == 2 and len(fold(gram)) == 2:
            pairs[fold(gram)] += count
    scripts: dict[str | None, float] = defaultdict(float)
    for gram, count in pairs.items():
        for ch in gram.strip():
            scripts[script_of(ch)] += count
    main = max(scripts, key=scripts.get)
    if main is None or scripts[main] < 0.8 * sum(scripts.values()):
        return None  # a script the tables do not cover (Arabic, Devanagari, CJK, ...)
    pairs = {g: c for g, c in pairs.items() if all(ch == " " or script_of(ch) == main for ch in g)}
    first = defaultdict(float)
    for g, c in pairs.items():
        first[g[0]] += c
    alphabet = len(first) + 1
    table = {g: round(math.log((c + 0.5) / (first[g[0]] + 0.5 * alphabet)), 2) for g, c in pairs.items()}
    table["_script"] = main
    return table


def write_gz(path: Path, text: str) -> None:
    """Reproducible: no time stamp in the gzip header."""
    with path.open("wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as f:
        f.write(text.encode("utf-8"))


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
    write_gz(OUT / "bigrams.json.gz", json.dumps(tables, ensure_ascii=False, separators=(",", ":"), sort_keys=True))
    words = sorted({w.strip().lower() for w in args.words.read_text(encoding="utf-8").splitlines()
                    if w.strip() and "'" not in w})
    write_gz(OUT / "english_words.txt.gz", "\n".join(words) + "\n")
    print(f"{len(tables)} languages ({', '.join(sorted(tables))}); {len(words)} English words")


if __name__ == "__main__":
    main()
