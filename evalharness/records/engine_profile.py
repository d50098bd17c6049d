"""What the report says of an engine that a run's records do not hold: where its record keeps each setting the report
compares by meaning, and what it does with a request's OpenAI `seed`. Each engine module declares its own
(serving/engines/: `settings`, `seeds`); the runner and the CLI hand the engines to rendering (render/outputs.py
`render_all`), because analysis/ and render/ read records only and never import serving/. An engine no one described
(a run rendered without them) reads as UNKNOWN. No engine is named here. Imports nothing of evalharness.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

MODEL_OWN = "the model's own"
# the settings compared by meaning, in the report's order (analysis/engines.py); an engine maps those it reports
SETTING_CONCEPTS = ("weights dtype", "KV cache dtype", "context length", "KV cache tokens",
                    "requests at once (ceiling)", "tokenizer mode", "quantization", "prefix caching", "chunked prefill",
                    "default sampling", "chat template")


@dataclass(frozen=True)
class SettingSource:
    """Where a cell's record holds one setting: `part` ("resolved": what the engine said it runs; "server": its
    measured facts), `key` there, how its value `reads` as the concept's, and what an absent key means (`absent`:
    a flag vLLM records only when given; None: not reported)."""

    part: str
    key: str
    reads: Callable[[Any], Any] = field(default=lambda value: value)
    absent: Any = None


class EngineProfile(Protocol):
    seeds: str  # what the engine does with a request's `seed`, from its source, as a clause of a sentence
    settings: Mapping[str, SettingSource]  # concept (SETTING_CONCEPTS) -> where the engine's record holds it


@dataclass(frozen=True)
class UnknownEngine:
    seeds: str = "unknown whether it honours per-request seeds"
    settings: Mapping[str, SettingSource] = field(default_factory=dict)


UNKNOWN = UnknownEngine()


def profile_of(engines: Mapping[str, EngineProfile] | None, name: str) -> EngineProfile:
    return (engines or {}).get(name) or UNKNOWN


def torch_dtype(value: Any) -> Any:
    return value.removeprefix("torch.") if isinstance(value, str) else value


def negated(value: Any) -> Any:
    return (not value) if isinstance(value, bool) else value
