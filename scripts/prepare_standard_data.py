"""Fetch lm-eval's standard datasets on a machine with internet and write them as JSON-lines files to copy to one
without (docs/quality.md). Writes DIR/<task>/<split>.jsonl, in the hub datasets' own schema, and prints the
`quality.data` block for the matrix.

    pip install datasets                      # and `huggingface-cli login` for gpqa (gated: accept its terms first)
    python scripts/prepare_standard_data.py --out standard-data [gsm8k gpqa_diamond mmlu_pro ifeval]
    rsync -a standard-data/ gpu-box:/data/standard-data/

On the machine without internet, name the copied folder in the printed block (or keep the relative paths and put
the matrix beside the folder). ifeval also needs `pip install langdetect immutabledict nltk` and nltk's punkt_tab:
`python -m nltk.downloader -d standard-data/nltk_data punkt_tab` here, `NLTK_DATA=/data/standard-data/nltk_data`
there.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# task -> (hub dataset, config, splits lm-eval's config reads); the tasks' own YAMLs in lm_eval/tasks name them
SOURCES = {
    "gsm8k": ("openai/gsm8k", "main", ["train", "test"]),  # 5-shot from train, scored on test
    "gpqa_diamond": ("Idavidrein/gpqa", "gpqa_diamond", ["train"]),  # gpqa_diamond_* tasks: train is the only split
    "mmlu_pro": ("TIGER-Lab/MMLU-Pro", None, ["test", "validation"]),  # few-shot from validation
    "ifeval": ("google/IFEval", None, ["train"]),
}
# the lm-eval task names each dataset serves (any of them can take the files)
TASKS = {"gsm8k": ["gsm8k"], "gpqa_diamond": ["gpqa_diamond_cot_zeroshot", "gpqa_diamond_zeroshot"],
         "mmlu_pro": ["mmlu_pro"], "ifeval": ["ifeval"]}


def write_splits(dataset, splits: list[str], folder: Path) -> dict[str, str]:
    """Each split as JSON lines (pure but for the files): the schema stays the hub's, nested fields included."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for split in splits:
        path = folder / f"{split}.jsonl"
        dataset[split].to_json(str(path), lines=True, force_ascii=False)
        files[split] = str(path)
    return files


def data_block(written: dict[str, dict[str, str]]) -> str:
    lines = ["quality:", "  data:"]
    for name, files in written.items():
        for task in TASKS[name]:
            lines.append(f"    {task}: {{data_files: {{{', '.join(f'{s}: {p}' for s, p in files.items())}}}}}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("datasets", nargs="*", default=list(SOURCES), choices=list(SOURCES))
    args = parser.parse_args(argv)
    import datasets

    written = {}
    for name in args.datasets:
        path, config, splits = SOURCES[name]
        print(f"{name}: {path} ({config or 'default'}) {', '.join(splits)}", file=sys.stderr)
        written[name] = write_splits(datasets.load_dataset(path, config), splits, args.out / name)
    print(data_block(written))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
