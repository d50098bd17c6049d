"""Reading engine logs: crash classification and warnings worth a user's attention, as data plus pure functions.

Each engine module contributes its own rules (engines/sglang.py, engines/vllm.py); the rules shared by every Python
engine live here. Rules are tried in order, so specific ones come before general ones. Patterns are written from the
engines' real messages; the tests hold those real lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from evalharness.records.measures import CrashReason, LogWarning


@dataclass(frozen=True)
class CrashRule:
    """A log pattern that explains why a server died, and what kind of failure it is."""

    kind: str
    pattern: re.Pattern[str]
    hint: str = ""


@dataclass(frozen=True)
class WarningRule:
    """A log pattern worth surfacing; its named groups become the warning's values (e.g. max_running_requests)."""

    key: str
    pattern: re.Pattern[str]


@dataclass(frozen=True)
class LogRules:
    crashes: tuple[CrashRule, ...] = ()
    warnings: tuple[WarningRule, ...] = ()
    # lines that start with a level tag the engine uses for warnings, kept apart as "other warnings"
    generic_warning: re.Pattern[str] = field(default=re.compile(r"\bWARNING\b|\bUserWarning\b|\bFutureWarning\b"))


def _rx(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE)


# Shared by every Python engine. Kinds: unsupported_kernel, out_of_memory, bad_argument, config_conflict,
# import_error, port_in_use, model_not_found, other.
COMMON_CRASHES: tuple[CrashRule, ...] = (
    CrashRule("port_in_use", _rx(r"address already in use|\[Errno 98\]"), "another process holds the port"),
    CrashRule(
        "bad_argument",
        _rx(r"error: (unrecognized arguments?|argument [-\w/ ]+: invalid (choice|\w+ value))|error: the following arguments are required"),
        "the engine's argument parser refused a flag: check the flag against the installed version",
    ),
    CrashRule(
        "unsupported_kernel",
        _rx(
            r"unsupported architecture|no kernel image is available|not compiled for|"
            r"only supported on (sm_?\d+|hopper|blackwell)|requires (sm_?\d+|compute capability)|"
            r"_C::\w+\(\) expected at most \d+ argument|"
            r"could not run '[\w:]+' with arguments from the '\w+' backend|NotImplementedError: .*(kernel|backend)"
        ),
        "a kernel this build or GPU does not have",
    ),
    CrashRule(
        "out_of_memory",
        _rx(
            r"out of memory|OutOfMemoryError|cannot allocate memory|not enough memory|insufficient memory|"
            r"no available memory for the cache blocks|larger than the available KV cache|"
            r"is larger than the maximum number of tokens that can be stored in KV cache"
        ),
        "lower the memory fraction, context length or batch size",
    ),
    CrashRule(
        "model_not_found",
        _rx(
            r"(Repo id must be|is not a local folder and is not a valid model identifier|"
            r"does not appear to have a file named config\.json|Can't load the configuration of|"
            r"Invalid repository ID or local directory specified|No such file or directory: '[^']*config\.json')"
        ),
        "the model path or id cannot be found (offline?)",
    ),
    CrashRule("import_error", _rx(r"ModuleNotFoundError: |ImportError: |undefined symbol: "), "a broken install"),
    CrashRule(
        "config_conflict",
        _rx(r"\d+ validation errors? for \w*Config|^\s*(ValueError|AssertionError)\b.*\b(not supported|only supports?|must be|cannot be used|incompatible|conflict)"),
        "two settings that cannot be combined",
    ),
)

_TRACEBACK_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception))\s*:\s*(.+)$")
# vLLM's own prefix: "(EngineCore_DP0 pid=123) ERROR 11-29 22:31:02 [core.py:708] "; SGLang's: "[2026-03-07 15:22:11] "
_ENGINE_PREFIX = re.compile(
    r"^\s*(?:\([\w-]+ pid=\d+\)\s*)?(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+\d{2}-\d{2} \d{2}:\d{2}:\d{2}\s+\[[^\]]+\]\s*)?"
    r"(?:\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[^\]]*\]\s*)?(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+[\w.]+:\d+:\s*)?"
)
# Errors that only say "the real cause is above": never the reason when something more specific exists.
_WRAPPER_ERRORS = re.compile(
    r"Engine core initialization failed|See root cause above|Engine process failed to start|"
    r"Process \w+ died|Rank \d+ scheduler is dead|KeyboardInterrupt|SystemExit"
)


def strip_prefix(line: str) -> str:
    """A log line without the engine's process tag, level, timestamp and source location."""
    return _ENGINE_PREFIX.sub("", line, count=1).strip()


def _excerpt(lines: list[str], index: int, before: int = 3, after: int = 2) -> str:
    return "\n".join(lines[max(0, index - before) : index + after + 1])


def classify_crash(log_text: str, rules: LogRules) -> CrashReason:
    """Why a server died, from its whole log: the first rule (in rule order) that matches any line wins; otherwise the
    last exception line that is not a wrapper of an earlier one; otherwise the last lines of the log."""
    lines = log_text.splitlines()
    for rule in (*rules.crashes, *COMMON_CRASHES):
        for index, line in enumerate(lines):
            if rule.pattern.search(line) and not _WRAPPER_ERRORS.search(line):
                return CrashReason(kind=rule.kind, line=strip_prefix(line), excerpt=_excerpt(lines, index), hint=rule.hint)
    exception_lines = [i for i, line in enumerate(lines) if _TRACEBACK_ERROR.match(strip_prefix(line))]
    specific = [i for i in exception_lines if not _WRAPPER_ERRORS.search(lines[i])]
    chosen = (specific or exception_lines or [None])[-1]
    if chosen is not None:
        return CrashReason(kind="other", line=strip_prefix(lines[chosen]), excerpt=_excerpt(lines, chosen))
    tail = [line for line in lines if line.strip()][-5:]
    return CrashReason(kind="other", line=strip_prefix(tail[-1]) if tail else "(empty log)", excerpt="\n".join(tail))


def extract_warnings(log_text: str, rules: LogRules, generic_limit: int = 20) -> list[LogWarning]:
    """Known warnings with their parsed values, then up to `generic_limit` other distinct warning lines."""
    known: dict[tuple[str, str], LogWarning] = {}
    generic: dict[str, LogWarning] = {}
    for line in log_text.splitlines():
        matched = False
        for rule in rules.warnings:
            found = rule.pattern.search(line)
            if found:
                message = strip_prefix(line)
                values = {k: v for k, v in found.groupdict().items() if v is not None}
                key = (rule.key, message)
                if key in known:
                    known[key].count += 1
                else:
                    known[key] = LogWarning(key=rule.key, message=message, values=values)
                matched = True
                break
        if not matched and rules.generic_warning.search(line):
            message = strip_prefix(line)
            if message in generic:
                generic[message].count += 1
            elif len(generic) < generic_limit:
                generic[message] = LogWarning(key="other", message=message)
    return [*known.values(), *generic.values()]
