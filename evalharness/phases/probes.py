"""The garbage-probe phase: a small prompt set sent greedily to a cell's chat endpoint, judged by the detectors.

It runs first in every cell because it costs seconds, and a cell that serves "!!!!!!" should not spend an hour on
quality tasks. The outputs are kept in cells/<id>/probes.jsonl; the reference cell's outputs (run first) make the
verdict relative, since a 135M model loops on some prompts in every configuration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from evalharness.phases.detectors import Sample, cell_verdict, judge, same_answer
from evalharness.phases.openai_api import Endpoint
from evalharness.phases.retries import RequestFailed, map_in_threads
from evalharness.records.io import read_jsonl
from evalharness.records.measures import ProbeOutput, ProbeSummary, RequestTally

DEFAULT_PROBES = Path(__file__).resolve().parents[2] / "tasks" / "probes" / "default.jsonl"


class Probe(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    messages: list[dict[str, str]]
    expect_stop: bool = False
    max_tokens: int | None = None


class ProbeError(Exception):
    """The probe file is missing or malformed."""


def load_probes(path: Path) -> list[Probe]:
    probes = []
    for number, data in read_jsonl(path, ProbeError, reading="the probe prompts",
                                   expected='one probe per line, {"id": ..., "prompt": ...}'):
        try:
            probes.append(Probe.model_validate(data))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise ProbeError(f"{path}:{number}: {'.'.join(map(str, first['loc'])) or 'line'}: {first['msg']}") from None
    if not probes:
        raise ProbeError(f"{path}: no probe prompts")
    return probes


def reasoning_of(message: object) -> str | None:
    """A reasoning model's thinking, apart from its answer: SGLang and vLLM's `reasoning_content`, newer vLLM's
    `reasoning` (extra fields of the openai client's message)."""
    for name in ("reasoning_content", "reasoning"):
        value = getattr(message, name, None)
        if isinstance(value, str) and value:
            return value
    return None


def _ask(api: Endpoint, model: str, probe: Probe, max_tokens: int,
         chat_template_kwargs: dict[str, Any] | None = None) -> ProbeOutput:
    prompt = next((m["content"] for m in reversed(probe.messages) if m.get("role") == "user"), "")
    extra = {"extra_body": {"chat_template_kwargs": chat_template_kwargs}} if chat_template_kwargs else {}
    try:
        answer = api.chat(model=model, messages=probe.messages, max_tokens=probe.max_tokens or max_tokens,
                          temperature=0.0, seed=0, **extra)
        choice = answer.choices[0]
        return ProbeOutput(id=probe.id, prompt=prompt, output=choice.message.content or "",
                           reasoning=reasoning_of(choice.message),
                           finish_reason=getattr(choice, "finish_reason", None),
                           completion_tokens=getattr(answer.usage, "completion_tokens", None))
    except RequestFailed as exc:
        return ProbeOutput(id=probe.id, prompt=prompt, error=str(exc))
    except (KeyError, IndexError, TypeError, AttributeError) as exc:
        return ProbeOutput(id=probe.id, prompt=prompt, error=f"bad_answer: {type(exc).__name__}: {exc}")


THINK_TAG = "<think>"


def reasons(argv: list[str]) -> bool:
    """A cell launched with a reasoning parser (vLLM's and SGLang's `--reasoning-parser`) serves a thinking model."""
    return any(a == "--reasoning-parser" or a.startswith("--reasoning-parser=") for a in argv)


PROMPT_ROOM = 256  # tokens left within the served context for a probe's prompt and its chat template
CONTEXT_FLAGS = ("--max-model-len", "--context-length")  # vLLM's, SGLang's
SIZE_SUFFIXES = {"k": 1000, "m": 1000**2, "g": 1000**3, "K": 1024, "M": 1024**2, "G": 1024**3}  # vLLM's '32k', '1K'


def context_limit(argv: list[str]) -> int | None:
    """The context length a cell's args serve (prompt and answer together), or None where the engine's default."""
    for index, arg in enumerate(argv):
        for flag in CONTEXT_FLAGS:
            value = argv[index + 1] if arg == flag and index + 1 < len(argv) else \
                arg[len(flag) + 1:] if arg.startswith(flag + "=") else None
            if value:
                scale = SIZE_SUFFIXES.get(value[-1], 1)
                try:
                    return int(float(value[:-1] if scale > 1 else value) * scale)
                except ValueError:
                    return None
    return None


def reasoning_budget(argv: list[str], plain: int, reasoning: int) -> int:
    """The probes' budget for a cell that reasons: `reasoning`, within the context the cell serves (a budget past it
    is refused with HTTP 400), never below the plain budget."""
    limit = context_limit(argv)
    return max(plain, reasoning if limit is None else min(reasoning, limit - PROMPT_ROOM))


def thought(outputs: list[ProbeOutput]) -> bool:
    """Answers that carry thinking: a reasoning field, or a think tag left in the content (no parser configured)."""
    return any(o.reasoning or THINK_TAG in (o.output or "") for o in outputs if o.error is None)


def ask_all(base_url: str, model: str, probes: list[Probe], max_tokens: int, timeout_s: float,
            concurrency: int = 4, retries: int = 2, hung_after: int = 3,
            chat_template_kwargs: dict[str, Any] | None = None) -> tuple[list[ProbeOutput], RequestTally]:
    """Every probe, greedy, a few at a time, through the openai client (phases/openai_api.py); a request that keeps
    failing is recorded with its error."""
    with Endpoint(base_url, timeout_s, retries=retries, hung_after=hung_after) as api:
        outputs = map_in_threads(lambda probe: _ask(api, model, probe, max_tokens, chat_template_kwargs), probes,
                                 concurrency)
        return outputs, api.tally


def judge_outputs(outputs: list[ProbeOutput], probes: list[Probe], reference: dict[str, ProbeOutput],
                  min_share: float, min_excess: float, seconds: float) -> ProbeSummary:
    """Run the detectors on each answered probe and decide the cell's verdict (pure)."""
    expect = {p.id: p.expect_stop for p in probes}
    answered = [o for o in outputs if o.error is None]
    for out in answered:
        ref = reference.get(out.id)
        ref = ref if ref is not None and ref.error is None else None
        out.garbage, out.findings = _judge_parts(out, expect.get(out.id, False), ref)
    # the same text to many prompts: the answer, or the reasoning where a model only reasoned
    for index, finding in same_answer([o.output or o.reasoning or "" for o in answered]).items():
        answered[index].garbage = True
        answered[index].findings.append(finding.model_dump())
    ref_flags = [reference[o.id].garbage for o in answered if o.id in reference and reference[o.id].error is None]
    verdict = cell_verdict([o.garbage for o in answered], ref_flags or None, min_share, min_excess)
    errors = len(outputs) - len(answered)
    reason = verdict.reason + (f"; {errors} probes failed" if errors else "")
    return ProbeSummary(garbage=verdict.garbage, flagged=verdict.flagged, total=verdict.total, errors=errors,
                        reason=reason, offending=[o for o in answered if o.garbage][:3], seconds=round(seconds, 2))


def _judge_parts(out: ProbeOutput, expect_stop: bool, ref: ProbeOutput | None) -> tuple[bool, list[dict]]:
    """A reasoning model's answer and its reasoning, each through the detectors. An answer that only reasons (cut
    off by max_tokens while thinking, content empty) is not garbage for its missing answer: its reasoning is judged
    instead; reasoning that is symbol soup or a loop marks the probe like an answer would. Findings about the
    reasoning are named 'reasoning:<detector>'."""
    garbage, findings = False, []
    if out.output or not out.reasoning:
        verdict = judge(Sample(output=out.output, prompt=out.prompt, finish_reason=out.finish_reason,
                               expect_stop=expect_stop, reference_output=ref.output if ref else None))
        garbage, findings = verdict.garbage, [f.model_dump() for f in verdict.findings]
    if out.reasoning:
        # thinking long is what a reasoning model does: never_stops does not apply to it (no finish_reason passed)
        verdict = judge(Sample(output=out.reasoning, prompt=out.prompt, answer_empty=not (out.output or "").strip(),
                               reference_output=(ref.reasoning or None) if ref else None))
        garbage = garbage or verdict.garbage
        findings += [{**f.model_dump(), "detector": f"reasoning:{f.detector}"} for f in verdict.findings]
    return garbage, findings
