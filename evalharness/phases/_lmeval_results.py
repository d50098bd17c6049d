"""What the harness keeps of one lm-eval evaluation (pure: lm-eval's results dict in, summary and sample rows out).

- The headline of a task comes from its own config: the first metric of `metric_list` under the first filter of
  `filter_list` ('none' without one), as lm-eval names it in its results ('exact_match,strict-match'). For a group,
  the first aggregate lm-eval reports for it (its `aggregate_metric_list`), whose value is lm-eval's own pooling.
- A group's samples come keyed by leaf task (mmlu_pro_biology, ...): every leaf's rows are kept, each naming its
  leaf, and each leaf's version and headline are recorded, so they can be paired per subtask.
- Each row carries what the side file of the recording client kept of its answer (finish_reason, reasoning, and
  whether its chain ends inside a loop: detectors/loops.py), and the
  task's generation statistics count each request once (a document's filters share one answer).
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from evalharness.phases.detectors.loops import loops_to_the_end

NOT_METRICS = {"alias", "name", "sample_len", "sample_count", "samples"}


def jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        if hasattr(value, "item"):  # numpy scalars
            return value.item()
        if isinstance(value, (list, tuple)):
            return [jsonable(v) for v in value]
        return str(value)


def leaves(task: str, group_subtasks: dict[str, list[str]]) -> list[str]:
    """The leaf tasks under a task or group, in lm-eval's order (a group may hold groups)."""
    if task not in group_subtasks:
        return [task]
    return [leaf for child in group_subtasks[task] for leaf in leaves(child, group_subtasks)]


def _metric_keys(metrics: dict[str, Any]) -> list[str]:
    return [k for k in metrics if k not in NOT_METRICS and "_stderr" not in k and isinstance(metrics[k], (int, float))]


def fallback_headline(metrics: dict[str, Any]) -> str | None:
    """Where a config names no metric: exact_match first, then acc, then the first other number."""
    keys = _metric_keys(metrics)
    for prefix in ("exact_match", "acc,", "acc_norm", ""):
        chosen = next((k for k in keys if k.startswith(prefix)), None)
        if chosen:
            return chosen
    return None


class HeadlineMissing(ValueError):
    """The matrix's headline for a task is not among the figures lm-eval reported for it."""


def chosen_headline(choice: str | None) -> str | None:
    """The matrix's `headline` as lm-eval names it in its results: 'metric,filter' ('metric/filter' accepted;
    a bare metric is the 'none' filter's)."""
    if not choice:
        return None
    metric, sep, filt = choice.replace("/", ",").partition(",")
    return f"{metric.strip()},{filt.strip() if sep else 'none'}"


def config_headline(config: dict[str, Any] | None, metrics: dict[str, Any], choice: str | None = None) -> str | None:
    """'metric,filter': the matrix's choice, else from a leaf task's config, checked against what lm-eval reported
    for it."""
    if choice:
        if choice not in metrics:
            raise HeadlineMissing(f"headline {choice!r} is not a figure lm-eval reports for this task; it has "
                                  f"{', '.join(_metric_keys(metrics)) or 'none'}")
        return choice
    config = config or {}
    metric_list = config.get("metric_list") or []
    filter_list = config.get("filter_list") or []
    if metric_list and isinstance(metric_list[0], dict) and metric_list[0].get("metric"):
        first_filter = (filter_list[0].get("name", "none") if filter_list and isinstance(filter_list[0], dict)
                        else "none")
        key = f"{metric_list[0]['metric']},{first_filter}"
        if key in metrics:
            return key
    return fallback_headline(metrics)


def aggregation_of(config: dict[str, Any] | None, metric_key: str | None) -> str | None:
    """The aggregation a leaf task's config gives its headline metric, by name ('mean', 'agg_inst_level_acc',
    'f1'; a function by its own name); None where the config names none (lm-eval's default for the metric)."""
    name = (metric_key or "").partition(",")[0]
    for entry in (config or {}).get("metric_list") or []:
        if isinstance(entry, dict) and entry.get("metric") == name and entry.get("aggregation") is not None:
            agg = entry["aggregation"]
            if callable(agg):
                return getattr(agg, "__name__", str(agg))
            text = str(agg)
            found = re.search(r"function (\w+)", text)  # '<function agg_inst_level_acc at 0x...>'
            return found.group(1) if found else text.rsplit(".", 1)[-1]
    return None


def higher_is_better_of(results: dict[str, Any], leaf: str, metric_key: str | None) -> bool | None:
    """lm-eval's own direction for a metric of a leaf task (results['higher_is_better'])."""
    value = ((results.get("higher_is_better") or {}).get(leaf) or {}).get((metric_key or "").partition(",")[0])
    return value if isinstance(value, bool) else None


def stderr_of(metrics: dict[str, Any], key: str | None) -> float | None:
    if not key:
        return None
    name, _, filt = key.partition(",")
    value = metrics.get(f"{name}_stderr,{filt}" if filt else f"{name}_stderr")
    return float(value) if isinstance(value, (int, float)) else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def prompt_of(sample: dict[str, Any]) -> str | None:
    """The prompt lm-eval sent for a sample: the context of its first request (a chat prompt as its JSON text);
    kept so that a reader of the run sees what the model was asked (render/html_data.py)."""
    arguments = sample.get("arguments") or []
    if isinstance(arguments, dict):  # lm-eval's JSON form: {"gen_args_0": {"arg_0": context, ...}, ...}
        arguments = list(arguments.values())
    first = arguments[0] if isinstance(arguments, list | tuple) and arguments else None
    if isinstance(first, dict):
        first = [first.get("arg_0")]
    context = first[0] if isinstance(first, list | tuple) and first else None
    context = getattr(context, "prompt", context)  # lm-eval's JsonChatStr
    return context if isinstance(context, str) else None


def sample_row(leaf: str, sample: dict[str, Any], answer: dict[str, Any] | None) -> dict[str, Any]:
    filtered = sample.get("filtered_resps")
    resps = sample.get("resps") or []
    raw = resps[0][0] if resps and isinstance(resps[0], list) and resps[0] else None
    row = {
        "task": leaf,
        "doc_id": sample.get("doc_id"),
        "doc_hash": sample.get("doc_hash"),
        "prompt_hash": sample.get("prompt_hash"),
        "target": jsonable(sample.get("target")),
        "response": jsonable(filtered[0] if isinstance(filtered, list) and len(filtered) == 1 else filtered),
        "answer": jsonable(raw),  # what lm-eval scored, before its filters: the content, never the reasoning
        "filter": sample.get("filter"),
        "metrics": {name: jsonable(sample.get(name)) for name in sample.get("metrics") or []},
        "prompt": prompt_of(sample),
    }
    if answer is not None:
        row.update(finish_reason=answer.get("finish_reason"), completion_tokens=answer.get("completion_tokens"),
                   reasoning=answer.get("reasoning"), stop_reason=answer.get("stop_reason"),
                   answer_stop=answer.get("answer_stop"), loops=chain_loops(answer))
    return row


def chain_loops(answer: dict[str, Any]) -> bool:
    """The answer's chain (its reasoning, then its content) ends inside a loop (detectors/loops.py). Kept on the
    answer as `loops` once decided: a document's filters share one answer, and the task's statistics count it too."""
    if "loops" not in answer:
        reasoning, content = answer.get("reasoning") or "", answer.get("content") or ""
        answer["loops"] = loops_to_the_end(f"{reasoning}\n{content}".strip(),
                                           answer_empty=bool(reasoning.strip()) and not content.strip())
    return answer["loops"]


def prompt_key(prompt_hash: str | None, chat_template_kwargs: dict[str, Any] | None) -> str | None:
    """What a document was asked with (analysis/pairing.py): the prompt's hash, and the chat template switches that
    change the prompt the engine renders (none: the hash itself, as before switches were kept)."""
    switches = json.dumps(chat_template_kwargs or {}, sort_keys=True)
    if switches == "{}" or not prompt_hash:
        return prompt_hash
    return hashlib.sha256(f"{prompt_hash}|{switches}".encode()).hexdigest()


def read_failures(path) -> list[dict]:
    """The failed attempts of requests (request_failures.jsonl of _lmeval_requests.py), oldest first."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    out = []
    for line in lines:
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def generation_stats(answers: list[dict[str, Any]], failures: list[dict] | None = None) -> dict[str, Any] | None:
    """GenerationStats (records/measures.py) over one answer per request, and the failed attempts."""
    failures = failures or []
    if not answers:
        return {"requests": 0, "failed_attempts": len(failures),
                "retried_requests": len({f.get("key") for f in failures})} if failures else None
    tokens = [a["completion_tokens"] for a in answers if isinstance(a.get("completion_tokens"), int)]
    reasoning_tokens = [a["reasoning_tokens"] for a in answers if isinstance(a.get("reasoning_tokens"), int)]
    looping = [chain_loops(a) for a in answers]
    return {
        "requests": len(answers),
        "truncated": sum(a.get("finish_reason") == "length" for a in answers),
        "looping": sum(looping),
        "truncated_looping": sum(a.get("finish_reason") == "length" and loops for a, loops in zip(answers, looping)),
        "empty": sum(not str(a.get("content") or "").strip() for a in answers),
        # content empty while the reasoning is not: the thinking never reached an answer (sgl-project/sglang#33995)
        "empty_with_reasoning": sum(not str(a.get("content") or "").strip() and bool(str(a.get("reasoning") or "")
                                                                                     .strip()) for a in answers),
        # ended by a stop string the engine matched (in the reasoning too: an empty answer with finish "stop")
        "stop_string": sum(isinstance(a.get("stop_reason"), str) for a in answers),
        "failed_attempts": len(failures),
        "retried_requests": len({f.get("key") for f in failures}),
        "with_reasoning": sum(bool(a.get("reasoning")) for a in answers),
        "mean_completion_tokens": sum(tokens) / len(tokens) if tokens else None,
        "mean_reasoning_chars": sum(len(a.get("reasoning") or "") for a in answers) / len(answers),
        "mean_reasoning_tokens": sum(reasoning_tokens) / len(reasoning_tokens) if reasoning_tokens else None,
    }


def summarize(task: str, results: dict[str, Any], answers: dict[str, dict], headline: str | None = None,
              failures: list[dict] | None = None) -> tuple[dict[str, Any], list[dict]]:
    """(summary.json, samples.jsonl rows) of one requested task; `answers` by prompt hash from the side file;
    `headline` the matrix's choice ('metric,filter' or 'metric/filter'; None: the task config's first)."""
    choice = chosen_headline(headline)
    per_task = results.get("results") or {}
    configs = results.get("configs") or {}
    versions = results.get("versions") or {}
    n_samples = results.get("n-samples") or {}
    samples = results.get("samples") or {}
    leaf_names = leaves(task, results.get("group_subtasks") or {})
    group = leaf_names != [task]
    rows: list[dict] = []
    used: dict[str, dict] = {}
    subtasks = {}
    for leaf in leaf_names:
        for sample in samples.get(leaf, []):
            answer = answers.get(sample.get("prompt_hash") or "")
            rows.append(sample_row(leaf, sample, answer))
            if answer is not None:
                used.setdefault(answer["prompt_hash"], answer)
        metrics = per_task.get(leaf, {})
        headline = config_headline(configs.get(leaf), metrics, choice if not group or choice in metrics else None)
        subtasks[leaf] = {"version": jsonable(versions.get(leaf)), "metric": headline,
                          "value": _number(metrics.get(headline)) if headline else None,
                          "n": (n_samples.get(leaf) or {}).get("effective"),
                          "aggregation": aggregation_of(configs.get(leaf), headline),
                          "higher_is_better": higher_is_better_of(results, leaf, headline)}
    own = per_task.get(task, {})
    if group and choice:
        headline = choice if choice in own else next(s["metric"] for s in subtasks.values())
        if all(s["metric"] != choice for s in subtasks.values()) and choice not in own:
            raise HeadlineMissing(f"headline {choice!r} is not a figure lm-eval reports for {task} or its subtasks")
    elif group:
        headline = next(iter(_metric_keys(own)), None) or next((s["metric"] for s in subtasks.values()), None)
    else:
        headline = subtasks[task]["metric"]
    value = _number(own.get(headline)) if headline else None
    if value is None and group:  # a group lm-eval does not aggregate: the pooled mean of its leaves, by size
        sized = [(s["value"], s["n"]) for s in subtasks.values() if s["value"] is not None and s["n"]]
        value = sum(v * n for v, n in sized) / sum(n for _, n in sized) if sized else None
    first_leaf = next(iter(subtasks.values()))
    summary = {
        "task": task,
        "aggregation": first_leaf["aggregation"] if group else subtasks[task]["aggregation"],
        "higher_is_better": (higher_is_better_of(results, task, headline) if group else None)
        or first_leaf["higher_is_better"],
        "version": jsonable(versions.get(task)),
        "headline": headline,
        "value": value,
        "stderr": stderr_of(own, headline),
        "metrics": {k: jsonable(v) for k, v in own.items() if k != "alias"},
        "n": sum(s["n"] or 0 for s in subtasks.values()),
        "subtasks": subtasks if group else {},
        "generation": generation_stats(list(used.values()), failures),
        "config_hash": jsonable({leaf: (results.get("task_hashes") or {}).get(leaf) for leaf in leaf_names}),
        "lm_eval_version": jsonable((results.get("config") or {}).get("lm_eval_version")
                                    or results.get("lm_eval_version")),
    }
    return summary, rows


def read_answers(path, key: str = "prompt_hash") -> dict[str, dict]:
    """The side file of the recording client, by prompt hash (a later answer to the same prompt wins); the calls
    worker's journal by case id (`key` "id")."""
    out: dict[str, dict] = {}
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue  # a line cut short by a killed attempt
        if isinstance(record, dict) and record.get(key):
            out[record[key]] = record
    return out
