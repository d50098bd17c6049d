"""Small data files in the real schema of lm-eval's standard datasets, written by the tests (no hub here).

Schemas as the hub datasets have them (the columns lm-eval's own task configs read, plus the others they carry):
- openai/gsm8k (config main), splits train/test: question, answer ("...reasoning...\\n#### 42");
- TIGER-Lab/MMLU-Pro, splits test/validation: question_id, question, options (up to 10), answer (a letter),
  answer_index, cot_content, category (one of 14; each mmlu_pro_<subject> subtask keeps its own), src.
The questions are easy on purpose: a 135M model should answer some right and some wrong, so pairing is exercised on
both outcomes. Few-shot examples are short so that lm-eval's 5-shot prompts fit a 1024-token context.
"""

from __future__ import annotations

import json
from pathlib import Path

MMLU_PRO_CATEGORIES = ["biology", "business", "chemistry", "computer science", "economics", "engineering", "health",
                       "history", "law", "math", "other", "philosophy", "physics", "psychology"]


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def gsm8k_rows(n: int, offset: int = 0) -> list[dict]:
    rows = []
    for i in range(offset, offset + n):
        a, b = 2 + i % 7, 3 + (i * 5) % 11
        rows.append({"question": f"Tom has {a} apples and buys {b} more. How many apples does Tom have now?",
                     "answer": f"Tom has {a} + {b} = <<{a}+{b}={a + b}>>{a + b} apples.\n#### {a + b}"})
    return rows


def write_gsm8k(folder: Path, test: int = 8) -> dict[str, str]:
    """data_files for lm-eval's gsm8k (5-shot from train, scored on test)."""
    return {"train": str(_write(folder / "gsm8k" / "train.jsonl", gsm8k_rows(5, offset=100))),
            "test": str(_write(folder / "gsm8k" / "test.jsonl", gsm8k_rows(test)))}


def mmlu_pro_rows(per_category: int, offset: int = 0, with_cot: bool = False) -> list[dict]:
    rows = []
    for c, category in enumerate(MMLU_PRO_CATEGORIES):
        for j in range(per_category):
            n = offset + c * 10 + j
            a, b = 1 + n % 5, 2 + n % 4
            options = [str(a + b + d) for d in (0, 1, 2, 3)]
            index = (n % 4)
            options[0], options[index] = options[index], options[0]
            letter = "ABCD"[index]
            rows.append({
                "question_id": n, "question": f"What is {a} + {b}?", "options": options, "answer": letter,
                "answer_index": index,
                "cot_content": f"A: Let's think step by step. {a} + {b} = {a + b}. The answer is ({letter})."
                if with_cot else "",
                "category": category, "src": f"evalharness-test-{category}"})
    return rows


def write_mmlu_pro(folder: Path, per_category: int = 2) -> dict[str, str]:
    """data_files for lm-eval's mmlu_pro group: one test and one validation (few-shot) file; each subtask filters
    its own category, as on the hub."""
    return {"test": str(_write(folder / "mmlu_pro" / "test.jsonl", mmlu_pro_rows(per_category))),
            "validation": str(_write(folder / "mmlu_pro" / "validation.jsonl",
                                     mmlu_pro_rows(5, offset=500, with_cot=True)))}
