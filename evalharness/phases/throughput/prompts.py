"""Where a throughput scenario's prompts come from (a scenario's `prompts:` key).

- `natural` (the default): the shipped corpus of natural requests, tasks/throughput/natural.jsonl (questions,
  instructions, stories to continue, passages to summarise; written for this project, see make_corpus.py beside it);
- `task:NAME`: the prompts of a shipped lm-eval task (tasks/lm_eval/NAME.yaml: its doc_to_text over its data file);
- a path to a JSONL file: one object per line with "prompt" (or "text");
- `length:B`: the documents of length bucket B of the matrix's `length:` section (phases/longcontext.py), from the
  run's own folder: a run writes them before any cell starts;
- `random`: common words drawn at random, `input_len` of them; for pure capacity figures only. A model given random
  words tends to loop, and a speculative drafter then finds its own loops: acceptance and speed-ups measured on it
  are not what users get.

Natural sources are used as written (the report shows the prompt tokens the engine counted); `input_len` sizes only
`random`. Prompt i of a scenario is text (seed + i) of the source, wrapping around.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from evalharness.records.io import read_jsonl

TASKS = Path(__file__).resolve().parents[3] / "tasks"
NATURAL_CORPUS = TASKS / "throughput" / "natural.jsonl"
RANDOM = "random"


class PromptSourceError(ValueError):
    """A scenario's prompt source that cannot be read (bad input: exit 2 before any launch)."""


def synthetic_prompt(input_len: int, seed: int) -> str:
    """About `input_len` tokens of varied common words (one word is about one token for most tokenizers)."""
    words = ("time person year way day thing man world life hand part child eye woman place work week case point "
             "number group problem fact river stone light music paper garden window").split()
    rng = random.Random(seed)
    return " ".join(rng.choice(words) for _ in range(max(1, input_len)))


@dataclass(frozen=True)
class PromptSource:
    """A named list of prompts (empty texts for `random`, which makes each prompt from its seed)."""

    name: str
    texts: tuple[str, ...] = ()

    def prompt(self, index: int, input_len: int) -> str:
        if not self.texts:
            return synthetic_prompt(input_len, index)
        return self.texts[index % len(self.texts)]

    @property
    def natural(self) -> bool:
        return bool(self.texts)


def _jsonl_texts(path: Path) -> list[str]:
    texts = []
    for number, data in read_jsonl(path, PromptSourceError, reading="the prompt file",
                                   expected='one {"prompt": "..."} (or {"text": "..."}) per line'):
        text = data.get("prompt", data.get("text"))
        if not isinstance(text, str) or not text.strip():
            raise PromptSourceError(f"{path}:{number}: each line needs a non-empty \"prompt\" (or \"text\") string")
        texts.append(text)
    if not texts:
        raise PromptSourceError(f"{path}: no prompts")
    return texts


def _task_texts(name: str) -> list[str]:
    """A shipped lm-eval task's prompts: its doc_to_text template over its local data file."""
    import jinja2
    from ruamel.yaml import YAML

    path = TASKS / "lm_eval" / f"{name}.yaml"
    if not path.exists():
        known = sorted(p.stem for p in (TASKS / "lm_eval").glob("*.yaml"))
        raise PromptSourceError(f"prompts: task:{name}: no shipped task {name!r} (shipped: {', '.join(known)})")
    config = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    template = config.get("doc_to_text")
    files = ((config.get("dataset_kwargs") or {}).get("data_files") or {})
    data_file = files.get(config.get("test_split", "test")) if isinstance(files, dict) else None
    if not isinstance(template, str) or not isinstance(data_file, str):
        raise PromptSourceError(f"prompts: task:{name}: needs a doc_to_text template and a local data file")
    render = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(template).render
    docs = [json.loads(line) for line in (path.parent / data_file).read_text(encoding="utf-8").splitlines() if line]
    return [render(**doc) for doc in docs]


def load_source(spec: str, length_files: Mapping[str, Path] | None = None) -> PromptSource:
    """The prompts a scenario names (see the module docstring); `length:B` from the run's file for it in
    `length_files`. Raises PromptSourceError."""
    if spec.startswith("length:"):
        path = (length_files or {}).get(spec)
        if path is None:
            raise PromptSourceError(f"prompts: {spec}: a length bucket's documents exist inside a run only, for "
                                    "the buckets of its matrix's length section")
        if not path.exists():
            raise PromptSourceError(f"prompts: {spec}: {path} was not written (is the bucket in length.buckets?)")
        return PromptSource(spec, tuple(_jsonl_texts(path)))
    if spec == RANDOM:
        return PromptSource(RANDOM)
    if spec == "natural":
        return PromptSource("natural", tuple(_jsonl_texts(NATURAL_CORPUS)))
    if spec.startswith("task:"):
        return PromptSource(spec, tuple(_task_texts(spec[5:])))
    path = Path(spec).expanduser()
    if path.suffix != ".jsonl":
        raise PromptSourceError(f"prompts: {spec!r}: expected natural, random, task:NAME or a .jsonl file")
    if not path.exists():
        raise PromptSourceError(f"prompts: {spec}: no such file")
    return PromptSource(spec, tuple(_jsonl_texts(path)))
