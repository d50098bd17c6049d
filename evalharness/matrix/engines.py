"""What the matrix must know of an engine to check a file, asked of the engines rather than written here: an engine's
name and two traits (`EngineTraits`). The engines live in serving/engines/, which imports the matrix, so the matrix
cannot import them: whoever loads a file hands them in as pydantic's validation context (serving/engines'
`load_matrix`), and the checks below run on what they say. A matrix validated without them (a record re-read by the
runner, a test's hand-built matrix) skips the checks that need them. No engine is named here (tests/unit/test_layout).
Must not import anything of evalharness outside matrix/.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from pydantic import Field, ValidationInfo

ENGINE_PATTERN = r"^[a-z][a-z0-9_]*$"


class EngineTraits(Protocol):
    """What a matrix check asks of an engine (serving/engines/_common.py Engine has them)."""

    launches: bool  # False: an endpoint already up, named by `base_url`; nothing launched, no args or env
    tokenizer_info: bool  # serves /tokenizer_info, which lm-eval's remote tokenizer reads before anything else
    label: str  # how a person names it in a sentence ("SGLang")


@dataclass(frozen=True)
class EngineNames:
    """Marks a field whose value names an engine (scripts/make_docs.py lists the registered names there)."""

    launched_only: bool  # an axis value names an engine to launch, never an endpoint that is already up


EngineName = Annotated[str, Field(pattern=ENGINE_PATTERN), EngineNames(launched_only=False)]
LaunchedEngineName = Annotated[str, Field(pattern=ENGINE_PATTERN), EngineNames(launched_only=True)]


def engines_of(info: ValidationInfo) -> Mapping[str, EngineTraits] | None:
    """The engines handed in with the file, None when none were."""
    return (info.context or {}).get("engines") if isinstance(info.context, dict) else None


def in_words(names: list[str], quote: bool = True) -> str:
    """"'a', 'b' or 'c'" (quote=False: "a, b or c")."""
    words = [repr(n) if quote else n for n in names]
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"


def known_engine(value: str | None, info: ValidationInfo, launched_only: bool) -> str | None:
    """`value` when the engines handed in have one of that name (and it launches, where `launched_only`)."""
    engines = engines_of(info)
    if value is None or engines is None:
        return value
    names = [n for n, e in engines.items() if e.launches or not launched_only]
    if value not in names:
        raise ValueError(f"{value!r} is not an engine{' the harness launches' if launched_only else ''}; "
                         f"expected {in_words(names)}")
    return value


def launch_problem(engine: str | None, engine_values: dict[str, str], base_url: str | None, launches_anything: bool,
                   engines: Mapping[str, EngineTraits]) -> str | None:
    """Why the file's engine, its axis values' engines and its base_url disagree, if they do (pure)."""
    if engine is None and not engine_values:
        return f"engine: needed ({in_words(list(engines), quote=False)}), unless axis values name each cell's engine"
    endpoint = engine is not None and not engines[engine].launches
    if endpoint and engine_values:
        return (f"axes: engine {engine!r} serves one endpoint; {', '.join(engine_values)} name engines to launch")
    if endpoint and not base_url:
        return f"base_url: engine {engine!r} needs the base_url of the running endpoint"
    if endpoint and launches_anything:
        return f"engine {engine!r} launches nothing: command, args and axis args/env do not apply"
    if not endpoint and base_url:
        takes = [n for n, e in engines.items() if not e.launches]
        return (f"base_url: only engine {in_words(takes)} takes a base_url; engine {engine!r} is launched")
    return None


def settle_tokenizer(quality: Any, engine: str | None, engine_values: dict[str, str],
                     engines: Mapping[str, EngineTraits] | None) -> str | None:
    """Give `quality.tokenizer` its default where the file left it out (matrix/quality.py says why): remote where
    every engine of the file serves /tokenizer_info (or the engines are not known), else local; and say why a remote
    tokenizer cannot work where one of them does not."""
    used = {engine, *engine_values.values()} - {None}
    lacking = [engines[name].label for name in sorted(used) if not engines[name].tokenizer_info] if engines else []
    if quality is not None and quality.tokenizer is None:
        quality.tokenizer = "local" if lacking else "remote"
    if lacking and quality is not None and quality.uses_api("completions") and quality.tokenizer == "remote":
        # lm-eval's RemoteTokenizer GETs /tokenizer_info first; an engine without it answers 404 (SGLang 0.5.23:
        # sglang/srt/entrypoints/http_server.py has /tokenize only), so every task would fail after its retries
        names = " and ".join(lacking)
        return (f"quality.tokenizer: {names} has no /tokenizer_info endpoint, which the remote tokenizer needs; set "
                f"`tokenizer: local` (the served model's tokenizer.json, read by the harness; the default on "
                f"{names}), `none` (generation tasks only) or `api: chat`")
    return None
