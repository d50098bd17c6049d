"""Detokenizer and vocabulary faults applied to the healthy engine's own answers, run with the engine's Python (it needs
the `tokenizers` library, which the harness does not install). Called by make_detector_corpus.py:

    .engine/venv/bin/python scripts/detector_corpus_detok.py MODEL_DIR IN.jsonl OUT.jsonl

For each healthy answer of 5 tokens or more (a one-word answer's fault shows only against the reference's answer, not
in its text), its token ids under the model's own tokenizer, then
- no_decoder: decoded by the same tokenizer.json with its ByteLevel decoder removed (what an engine prints when the
  tokenizer file lost its decoder: tokens joined by spaces, Ġ for a space, Ċ for a newline, 'âĢĻ' for '’');
- raw_tokens: the token strings concatenated ('TheĠcapitalĠof'), what a detokenizer that skips the byte decoding does;
- wrong_vocab: decoded by a tokenizer whose vocabulary ids are shuffled (special tokens kept): the ids a model emitted
  read through another vocabulary, as when an engine pairs weights with the wrong tokenizer.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

from tokenizers import Tokenizer


MIN_TOKENS = 5


def shuffled(path: Path, seed: int) -> Tokenizer:
    tok = json.loads(path.read_text(encoding="utf-8"))
    vocab = tok["model"]["vocab"]
    special = {t["content"] for t in tok["added_tokens"]}
    keys = [k for k in vocab if k not in special]
    ids = [vocab[k] for k in keys]
    random.Random(seed).shuffle(ids)
    vocab.update(zip(keys, ids))
    return Tokenizer.from_str(json.dumps(tok))


def main() -> None:
    model, src, dst = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    good = Tokenizer.from_file(str(model / "tokenizer.json"))
    bare = Tokenizer.from_file(str(model / "tokenizer.json"))
    bare.decoder = None
    wrong = shuffled(model / "tokenizer.json", 17)
    out = []
    for n, rec in enumerate(map(json.loads, src.read_text(encoding="utf-8").splitlines())):
        ids = good.encode(rec["text"], add_special_tokens=False).ids
        if len(ids) < MIN_TOKENS:
            continue  # a word or two: no text measure can tell a wrong word from a right one; the reference can
        variants = {
            "no_decoder": (bare.decode(ids), "tokenizer.json without its ByteLevel decoder (tokenizers' decode)"),
            "raw_tokens": ("".join(good.id_to_token(i) for i in ids), "token strings concatenated, no byte decoding"),
            "wrong_vocab": (wrong.decode(ids), "ids decoded through a vocabulary with shuffled ids (seed 17)"),
        }
        kind = ("no_decoder", "raw_tokens", "wrong_vocab")[n % 3]  # one fault per answer keeps the classes balanced
        text, how = variants[kind]
        if text == rec["text"]:
            continue  # no space, newline or multi-byte character to betray the fault ('Ateni.')
        out.append({**rec, "text": text, "label": "garbage", "class": f"detokenizer/{kind}",
                    "source": f"{rec['source']}+{kind}", "how": f"{rec['how']}; then {how}",
                    "finish_reason": rec["finish_reason"]})
    dst.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in out), encoding="utf-8")


if __name__ == "__main__":
    main()
