"""How many leaf tasks an lm-eval group runs, read from the group's own YAML before any run (issue 61, 4): a
matrix's quality.limit is per subtask for a group (mmlu_pro: 14 subjects x 15 = 210 documents), so `plan` sizes a
group from its subtasks. lm-eval declares a group in a YAML file with `group: NAME` and a `task:` list whose entries
are leaf tasks, other groups (counted through) or inline task configs (one leaf each); the same file format its
TaskManager indexes. Reads only the folders it is given (the cli passes the matrix's include_path or the shipped
tasks, and lm-eval's own tasks where quality.include_defaults); imports neither lm_eval nor phases. Also which
tasks' answers repeat (`greedy_tasks`: greedy decoding or log-likelihood scoring), so `plan` prices them as such.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterable

import yaml


_GROUP = re.compile(r"^group:\s*['\"]?([^'\"\s#]+)['\"]?\s*$", re.M)


def yaml_index(folders: Iterable[Path], declares: re.Pattern[str]) -> dict[str, Path]:
    """{name: the first YAML file whose line `declares` it} over the folders, in their order (one pass)."""
    index: dict[str, Path] = {}
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*.yaml")):
            try:
                text = path.read_text(encoding="utf-8", errors="ignore")
            except OSError:
                continue
            for name in declares.findall(text):
                index.setdefault(name, path)
    return index


def group_index(folders: Iterable[Path]) -> dict[str, Path]:
    """{group name: the first YAML file that declares it}."""
    return yaml_index(folders, _GROUP)


def _entries(path: Path) -> list | None:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):  # a config with !function tags: not a group list this reader can use
        return None
    entries = data.get("task") if isinstance(data, dict) else None
    return entries if isinstance(entries, list) else None


def leaf_count(name: str, index: dict[str, Path], _seen: frozenset[str] = frozenset()) -> tuple[int, Path] | None:
    """(leaf tasks, the group's file) of group `name` in a `group_index`; None when no file declares such a group
    (a plain task)."""
    path = index.get(name)
    entries = _entries(path) if path is not None else None
    if not entries or name in _seen:
        return None
    total = 0
    for entry in entries:
        child = entry if isinstance(entry, str) else entry.get("task") if isinstance(entry, dict) else None
        inner = leaf_count(child, index, _seen | {name}) if isinstance(child, str) and child != name else None
        total += inner[0] if inner else 1
    return total, path


def group_sizes(tasks: Iterable[str], folders: Iterable[Path]) -> dict[str, tuple[int, str]]:
    """{task: (leaf tasks, where the group is declared)} for each of `tasks` that is a group."""
    index = group_index(folders)
    out = {}
    for task in tasks:
        found = leaf_count(task, index)
        if found is not None:
            out[task] = (found[0], found[1].name)
    return out


SCORED_NOT_SAMPLED = ("multiple_choice", "loglikelihood", "loglikelihood_rolling")  # lm-eval's output types
_TASK = re.compile(r"^task:\s*['\"]?([^'\"\s#]+)['\"]?\s*$", re.M)


def _sampling(kwargs: object) -> bool | None:
    """True where generation kwargs sample, False where they decode greedily, None where they do not say."""
    if not isinstance(kwargs, dict):
        return None
    if kwargs.get("do_sample") is True or float(kwargs.get("temperature") or 0) > 0:
        return True
    if kwargs.get("do_sample") is False or kwargs.get("temperature") == 0:
        return False
    return None


def greedy_tasks(tasks: Iterable[str], folders: Iterable[Path], matrix_kwargs: dict[str, dict]) -> dict[str, str]:
    """{task: why} for the tasks whose answers are greedy: the matrix's gen_kwargs for the task (`matrix_kwargs`,
    task_settings over quality) say so, or say nothing about sampling and the task's own YAML does (`do_sample:
    false` or `temperature: 0` in its generation_kwargs). A greedy task's answers repeat, so `plan` needs no
    consistency for it; so are tasks scored by log-likelihood, where nothing is sampled. One whose sampling nothing
    states is not listed."""
    files = yaml_index(folders, _TASK)
    out = {}
    for task in tasks:
        stated = _sampling(matrix_kwargs.get(task))
        if stated is False:
            out[task] = "greedy (the matrix's gen_kwargs)"
        elif stated is None and task in files:
            try:
                data = yaml.safe_load(files[task].read_text(encoding="utf-8"))
            except (OSError, yaml.YAMLError):
                continue
            if not isinstance(data, dict):
                continue
            if data.get("output_type") in SCORED_NOT_SAMPLED:
                out[task] = f"scored by log-likelihood ({files[task].name}: {data['output_type']}), nothing sampled"
            elif _sampling(data.get("generation_kwargs")) is False:
                out[task] = f"greedy ({files[task].name}'s generation_kwargs)"
    return out
