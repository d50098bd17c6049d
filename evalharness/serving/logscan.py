"""Reading engine logs: crash classification and warnings worth a user's attention, as data plus pure functions.

Each engine module contributes its own rules (engines/sglang_logs.py, engines/vllm.py); the rules shared by every
Python engine live here. Every rule names where its text comes from (`source`: the engine file, or the story's log).

Classification looks at the lines that say the process failed first (exception lines, traceback bodies, ERROR-level
lines, argparse's "error:"), the last of them first; then plain lines; never warnings. So a warning that mentions
memory ("... reducing max_m to N to avoid out of memory") never decides the class. SGLang 0.5.23 logs
`[time TPn] message` with no level at all, which is why "fatal" is read from the text, not from a level tag.
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
    source: str = ""  # the engine file the text comes from (or "story": seen only in ../shared/seed)


@dataclass(frozen=True)
class WarningRule:
    """A log pattern worth surfacing; its named groups become the warning's values (e.g. max_running_requests)."""

    key: str
    pattern: re.Pattern[str]
    source: str = ""  # the engine file the text comes from (or "story")
    meaning: str = ""  # what it means for the matrix, in one sentence (shown by `evalharness diagnose`)


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
        _rx(
            r"error: (unrecognized arguments?|argument [-\w/ ]+: invalid (choice|\w+ value))|"
            r"error: the following arguments are required"
        ),
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
        _rx(
            r"\d+ validation errors? for \w*Config|"
            r"^\s*(ValueError|AssertionError)\b.*\b(not supported|only supports?|must be|"
            r"cannot be used|incompatible|conflict)"
        ),
        "two settings that cannot be combined",
    ),
)

_TRACEBACK_ERROR = re.compile(r"^\s*(?:[\w.]+\.)?(\w*(?:Error|Exception))\s*:\s*(.+)$")
# vLLM's own prefix: "(EngineCore_DP0 pid=123) ERROR 11-29 22:31:02 [core.py:708] "; SGLang's: "[2026-03-07 15:22:11] "
# with "WARNING file.py:N: " in the story's older build, "[2026-03-07 15:22:11.123 DP0 TP3] " in 0.5.23
# (sglang/srt/utils/common.py: configure_logger, the prefix from srt/managers/scheduler.py), and uvicorn's
# "[time] ERROR:    " (srt/utils/common.py: set_uvicorn_logging_configs)
_ENGINE_PREFIX = re.compile(
    r"^\s*(?:\([\w-]+ pid=\d+\)\s*)?"
    r"(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+\d{2}-\d{2} \d{2}:\d{2}:\d{2}\s+\[[^\]]+\]\s*)?"
    r"(?:\[\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}[^\]]*\]\s*)?(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\s+[\w.]+:\d+:\s*)?"
    r"(?:(?:INFO|WARNING|ERROR|DEBUG|CRITICAL):\s+)?"
)
# Errors that only say "the real cause is above": never the reason when something more specific exists.
_WRAPPER_ERRORS = re.compile(
    r"Engine core initialization failed|See root cause above|Engine process failed to start|"
    r"Process \w+ died|Rank \d+ scheduler is dead|KeyboardInterrupt|SystemExit|"
    # sglang/srt/entrypoints/engine.py: _wait_for_scheduler_ready, a scheduler that reported a failure
    r"Initialization failed\. Please see the error messages above|"
    # the same message with any exit code but -9 (that one is the OOM killer, a rule of its own)
    r"scheduler died during initialization \(exit code: (?!-9\))"
)


def strip_prefix(line: str) -> str:
    """A log line without the engine's process tag, level, timestamp and source location."""
    return _ENGINE_PREFIX.sub("", line, count=1).strip()


def _excerpt(lines: list[str], index: int, before: int = 3, after: int = 2) -> str:
    return "\n".join(lines[max(0, index - before) : index + after + 1])


_FATAL_LEVEL = re.compile(r"\b(ERROR|CRITICAL|FATAL)\b|^\s*\S*: error: |\berror: (unrecognized|argument|the following)")
_TRACEBACK_START = re.compile(r"Traceback \(most recent call last\)")


def line_tiers(lines: list[str], rules: LogRules) -> list[str]:
    """Per line: 'fatal' (an exception line, inside a traceback, an ERROR-level line, argparse's error), 'warning'
    (a known warning or a generic warning line) or 'plain' (pure)."""
    tiers = []
    in_traceback = False
    for line in lines:
        body = strip_prefix(line)
        if _TRACEBACK_START.search(line):
            in_traceback = True
        continuation = bool(tiers) and tiers[-1] == "fatal" and line.startswith((" ", "\t")) and body
        if in_traceback or continuation or _TRACEBACK_ERROR.match(body) or _FATAL_LEVEL.search(line):
            tiers.append("fatal")
        elif any(rule.pattern.search(line) for rule in rules.warnings) or rules.generic_warning.search(line):
            tiers.append("warning")
        else:
            tiers.append("plain")
        if in_traceback and _TRACEBACK_ERROR.match(body) and not line.startswith((" ", "\t")):
            in_traceback = False  # the exception line ends the traceback
    return tiers


def classify_crash(log_text: str, rules: LogRules) -> CrashReason:
    """Why a server died, from its whole log. Fatal lines first, then plain lines, never warnings; within a tier the
    first rule (in rule order) that matches wins, on the last line it matches. Otherwise the last exception line that
    is not a wrapper of an earlier one; otherwise the last lines of the log."""
    lines = log_text.splitlines()
    tiers = line_tiers(lines, rules)
    # a warning line never decides the class: "... reducing max_m to N to avoid out of memory" is not a crash
    for tier in ("fatal", "plain"):
        indices = [i for i in range(len(lines) - 1, -1, -1) if tiers[i] == tier]
        for rule in (*rules.crashes, *COMMON_CRASHES):
            for index in indices:
                line = lines[index]
                if rule.pattern.search(line) and not _WRAPPER_ERRORS.search(line):
                    return CrashReason(kind=rule.kind, line=strip_prefix(line), excerpt=_excerpt(lines, index),
                                       hint=rule.hint)
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
