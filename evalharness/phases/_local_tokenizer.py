"""The served model's own tokenizer, read from its files on this machine: `quality.tokenizer: local`. Imported by the
lm-eval worker's process only (phases/_lmeval_worker.py, phases/_lmeval_models.py).

lm-eval's loglikelihood tasks need a tokenizer on the client side: it splits each request into context and
continuation tokens and reads the continuation's log-probabilities from the engine's echoed prompt. Its "remote"
backend asks the engine (vLLM's /tokenizer_info, then /tokenize and /detokenize per request); SGLang has /tokenize but
no /tokenizer_info. This backend reads the tokenizer.json that the engine itself loads (a Hugging Face fast tokenizer)
with the `tokenizers` library (Rust; no torch, no transformers), and the special tokens from tokenizer_config.json
and special_tokens_map.json, behind RemoteTokenizer's interface (lm_eval/utils.py): encode without special tokens,
decode keeping them (lossless, so the decoded prompt the worker sends re-tokenizes to the same ids), eos/bos tokens
and ids, eot_token. lm-eval's TemplateAPI then uses it on its "remote" code paths unchanged.

Which files: those of the tokenizer the engine reports it serves (SGLang's /model_info `tokenizer_path`, vLLM's
/v1/models `root`): a folder, or a hub id read from the Hugging Face cache (the engine on this machine put it there).
Before a task runs, a probe text is tokenized here and by the engine's /tokenize: a disagreement stops the task.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

TOKENIZER_FILE = "tokenizer.json"
# spaces, digits, punctuation, accents, a special token's text, newlines: where tokenizers differ if they do
PROBE = "The opposite of hot is cold. 12 + 30 = 42; naïve café, «Paris» — <|im_end|>\n\n  two  spaces\tend"


class TokenizerProblem(Exception):
    """The local tokenizer cannot be used: its files are missing, or it disagrees with the engine's."""


def tokenizer_folder(where: str) -> Path:
    """The folder that holds `where`'s tokenizer.json: `where` itself when it is a folder, else a hub id whose
    tokenizer.json is in the Hugging Face cache (offline: the engine on this machine downloaded it)."""
    path = Path(where)
    if path.is_dir():
        if (path / TOKENIZER_FILE).is_file():
            return path
        raise TokenizerProblem(f"tokenizer: local reads {path / TOKENIZER_FILE} (the Hugging Face fast tokenizer's "
                               "file), which does not exist; a model with only a sentencepiece tokenizer.model "
                               "needs it converted, or `tokenizer: remote` on vLLM")
    if path.is_absolute() or where.startswith(("./", "../")):
        raise TokenizerProblem(f"tokenizer: local reads the served model's {TOKENIZER_FILE}, but its folder {where} "
                               "does not exist on this machine (an endpoint served from another machine needs "
                               "`tokenizer: remote`, or `none` for generation tasks only)")
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - lm-eval's datasets depend on it
        found = None
    else:
        found = try_to_load_from_cache(where, TOKENIZER_FILE)
    if isinstance(found, str):
        return Path(found).parent
    raise TokenizerProblem(f"tokenizer: local: the served model {where!r} is not a folder and its {TOKENIZER_FILE} "
                           "is not in the Hugging Face cache of this machine (HF_HOME)")


def _special(config: dict[str, Any], key: str) -> str | None:
    value = config.get(key)
    if isinstance(value, dict):  # an AddedToken as transformers writes it
        value = value.get("content")
    return value if isinstance(value, str) else None


class LocalTokenizer:
    """A tokenizer.json behind lm-eval's RemoteTokenizer interface."""

    def __init__(self, folder: str | Path):
        from tokenizers import Tokenizer

        self.folder = Path(folder)
        try:
            self._tokenizer = Tokenizer.from_file(str(self.folder / TOKENIZER_FILE))
        except Exception as exc:  # the library raises its own Exception for a file it cannot parse
            raise TokenizerProblem(f"tokenizer: local: {self.folder / TOKENIZER_FILE} could not be loaded by the "
                                   f"tokenizers library: {exc}") from None
        config: dict[str, Any] = {}
        # transformers' order: tokenizer_config.json, then special_tokens_map.json over it
        for name in ("tokenizer_config.json", "special_tokens_map.json"):
            try:
                config.update({k: v for k, v in json.loads((self.folder / name).read_text()).items()
                               if k in ("bos_token", "eos_token", "pad_token") and v is not None})
            except FileNotFoundError:
                continue
            except (OSError, ValueError) as exc:
                raise TokenizerProblem(f"tokenizer: local: {self.folder / name} is unreadable: {exc}") from None
        self.eos_token = _special(config, "eos_token")
        self.bos_token = _special(config, "bos_token")
        self.pad_token = _special(config, "pad_token")

    def _id(self, token: str | None) -> int | None:
        if token is None:
            return None
        found = self._tokenizer.token_to_id(token)
        return found if found is not None else self.encode(token)[0]  # RemoteTokenizer's own rule

    @property
    def eos_token_id(self) -> int | None:
        return self._id(self.eos_token)

    @property
    def bos_token_id(self) -> int | None:
        return self._id(self.bos_token)

    @property
    def eot_token(self) -> int | None:
        return self.eos_token_id

    def encode(self, text: str) -> list[int]:
        return self._tokenizer.encode(text, add_special_tokens=False).ids

    def decode(self, tokens: list[int]) -> str:
        return self._tokenizer.decode(tokens, skip_special_tokens=False)

    def batch_decode(self, tokens_list: list[list[int]]) -> list[str]:
        return self._tokenizer.decode_batch(tokens_list, skip_special_tokens=False)

    def describe(self) -> dict[str, Any]:
        return {"backend": "local", "folder": str(self.folder), "eos_token": self.eos_token,
                "bos_token": self.bos_token, "vocab_size": self._tokenizer.get_vocab_size()}


def root_of(base_url: str) -> str:
    """The server's root from an OpenAI base URL or endpoint (…/v1, …/v1/completions)."""
    url = base_url.rstrip("/")
    for tail in ("/chat/completions", "/completions"):
        if url.endswith(tail):
            url = url[: -len(tail)]
    return url[:-3] if url.endswith("/v1") else url


def served_tokenizer(base_url: str, timeout_s: float = 30.0, served_model: str | None = None) -> str:
    """Where the engine behind `base_url` loaded its tokenizer from: SGLang's /model_info (`tokenizer_path`), else
    vLLM's /v1/models (`root`, the model it serves), else the served model's name where it is a local folder (a
    server that names its model by the path it was given: transformers serve, whose /v1/models fails offline)."""
    import httpx

    root = root_of(base_url)
    with httpx.Client(timeout=timeout_s) as client:
        try:
            info = client.get(f"{root}/model_info")
            if info.status_code == 200 and isinstance(info.json().get("tokenizer_path"), str):
                return info.json()["tokenizer_path"]
            models = client.get(f"{root}/v1/models")
            if models.status_code == 200:
                for card in models.json().get("data") or []:
                    if isinstance(card.get("root"), str) and not card.get("parent"):
                        return card["root"]
        except (httpx.HTTPError, ValueError) as exc:
            raise TokenizerProblem(f"tokenizer: local: could not ask {root} which tokenizer it serves: "
                                   f"{type(exc).__name__}: {exc}") from None
    if served_model and Path(served_model).is_dir():
        return served_model
    raise TokenizerProblem(f"tokenizer: local: {root} names no tokenizer path (neither /model_info's "
                           "tokenizer_path nor /v1/models' root, and the served model is no local folder)")


def engine_agreement(tokenizer: LocalTokenizer, base_url: str, model: str, timeout_s: float = 30.0,
                     text: str = PROBE) -> bool | None:
    """Whether the engine's /tokenize gives the local ids for `text` (True); raises TokenizerProblem when it gives
    others; None when it has no /tokenize to ask."""
    import httpx

    root = root_of(base_url)
    try:
        reply = httpx.post(f"{root}/tokenize", json={"model": model, "prompt": text, "add_special_tokens": False},
                           timeout=timeout_s)
        theirs = reply.json().get("tokens") if reply.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None
    if not isinstance(theirs, list):
        return None
    ours = tokenizer.encode(text)
    if ours != theirs:
        at = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
        raise TokenizerProblem(f"tokenizer: local: {tokenizer.folder / TOKENIZER_FILE} and the engine's /tokenize "
                               f"disagree on a probe text from token {at} (local {ours[at:at + 5]}, engine "
                               f"{theirs[at:at + 5]}): the engine serves another tokenizer; use `tokenizer: remote`")
    return True
