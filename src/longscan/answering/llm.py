"""A client for any OpenAI-compatible chat API (OpenAI, vLLM, llama.cpp server, Ollama).

Benchmarks call an LLM thousands of times, so every call goes through a persistent response
cache (a rerun costs nothing and gives the same text), is counted (tokens, seconds, cost),
retried with backoff on 408/409/429/5xx and dropped connections (the ``openai`` package's
retry loop), and runs under bounded concurrency. The API key is read from the environment
only and never written to a log, a report or an error message.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
import tomllib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from longscan.progress import track

logger = logging.getLogger(__name__)

Message = dict[str, str]

ENV_URL = "LONGSCAN_LLM_URL"
ENV_MODEL = "LONGSCAN_LLM_MODEL"
ENV_KEY = "LONGSCAN_LLM_API_KEY"
CONFIG_FILE_NAME = "llm.toml"  # in the config folder (settings.Folders)
HOW_TO_ADD_AN_LLM = (
    "No LLM server is configured. Point longscan at any OpenAI-compatible server: "
    "`--llm http://127.0.0.1:8080/v1 --llm-model NAME`, or set "
    f"{ENV_URL} and {ENV_MODEL} (the key, if the server needs one, goes in {ENV_KEY} or "
    "OPENAI_API_KEY), or write them in ~/.config/longscan/llm.toml. "
    "`longscan llm-serve` starts a small local model."
)


class LLMError(RuntimeError):
    """The LLM could not give an answer (after retries); the message names the cause.

    ``status`` is the HTTP status when the server answered with an error (e.g. 400 for a
    prompt longer than its window), else None (timeout, refused connection, bad reply).
    """

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class LLMConfig:
    """Where the LLM is and how to call it. Holds the *name* of the key's variable, never
    the key, so a config can be printed and saved with a report."""

    base_url: str
    model: str
    api_key_env: str = ENV_KEY
    timeout_s: float = 300.0
    max_retries: int = 3
    concurrency: int = 2
    temperature: float = 0.0
    max_tokens: int = 512
    context_tokens: int = 8192  # the model's window, for prompt budgets
    # How to ask for JSON that follows a schema: "json_schema" (OpenAI, vLLM, Ollama),
    # "json_object_schema" (llama.cpp's Python server), or "none" (the prompt alone).
    json_mode: str = "json_schema"
    prompt_price_per_million: float = 0.0
    completion_price_per_million: float = 0.0
    cache_path: str | None = None  # None: <longscan's cache folder>/llm.sqlite
    # How prompt budgets count tokens: "auto" (the server's tokenize endpoint when it has one,
    # else cl100k), "server", "cl100k", or the path of a tokenizer.json (Hugging Face).
    tokenizer: str = "auto"

    def api_key(self) -> str:
        """The key from the environment; local servers accept any non-empty string."""
        from longscan.settings import variable

        return variable(self.api_key_env) or variable("OPENAI_API_KEY") or "none"

    def public(self) -> dict[str, Any]:
        return asdict(self)


def resolve_config(
    url: str | None = None,
    model: str | None = None,
    config_file: Path | None = None,
    **overrides: Any,
) -> LLMConfig | None:
    """The configured LLM, or None: arguments win over the environment, which wins over the
    config file (``LONGSCAN_LLM_CONFIG`` or ~/.config/longscan/llm.toml, ``[llm]`` table).

    Raises:
        ValueError: a config file that is unreadable or names unknown settings.
    """
    from longscan.settings import Folders, LLMEnvironment

    values: dict[str, Any] = {}
    environment = LLMEnvironment()
    path = config_file or environment.config or Folders().config_dir / CONFIG_FILE_NAME
    if config_file is not None or path.is_file():
        try:
            values.update(tomllib.loads(path.read_text(encoding="utf-8")).get("llm", {}))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as error:
            raise ValueError(f"cannot read the LLM config {path}: {error}") from None
        if "api_key" in values:
            raise ValueError(
                f"{path}: do not write the key in a file; put it in {ENV_KEY} "
                "(or name another variable with api_key_env)"
            )
    values.update({k: v for k, v in (("base_url", environment.url),
                                     ("model", environment.model)) if v})  # fmt: skip
    values.update({k: v for k, v in (("base_url", url), ("model", model)) if v})
    values.update({k: v for k, v in overrides.items() if v is not None})
    if not values.get("base_url"):
        return None
    values.setdefault("model", "default")
    known = set(LLMConfig.__dataclass_fields__)
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"unknown LLM settings {sorted(unknown)}; known: {sorted(known)}")
    return LLMConfig(**values)


@dataclass
class Usage:
    """What a run cost: calls made and answered from the cache, tokens, seconds, money."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    cost: float = 0.0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, completion: Completion, config: LLMConfig) -> None:
        with self._lock:
            if completion.cached:
                self.cache_hits += 1
                return
            self.calls += 1
            self.prompt_tokens += completion.prompt_tokens
            self.completion_tokens += completion.completion_tokens
            self.seconds += completion.seconds
            self.cost += (
                completion.prompt_tokens * config.prompt_price_per_million
                + completion.completion_tokens * config.completion_price_per_million
            ) / 1e6

    def as_dict(self) -> dict[str, float]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}


@dataclass(frozen=True)
class Completion:
    text: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool = False


class ResponseCache:
    """SQLite table ``key → response``; the key hashes model, messages and parameters."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, value TEXT NOT NULL)"
        )
        self._db.commit()

    @staticmethod
    def key(model: str, messages: Sequence[Message], params: dict[str, Any]) -> str:
        payload = json.dumps([model, list(messages), params], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()

    def get(self, key: str) -> Completion | None:
        with self._lock:
            row = self._db.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        return Completion(**{**json.loads(row[0]), "cached": True})

    def put(self, key: str, completion: Completion) -> None:
        value = json.dumps({k: v for k, v in asdict(completion).items() if k != "cached"})
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, value))
            self._db.commit()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


def default_cache_path() -> Path:
    from longscan.files import default_cache_dir

    return default_cache_dir() / "llm.sqlite"


# A server's tokenize endpoints, below its root: llama.cpp's server and vLLM ("/tokenize"),
# llama-cpp-python's ("/extras/tokenize"). One body serves all: each reads its own field.
TOKENIZE_ROUTES = ("tokenize", "extras/tokenize")


def _server_counter(config: LLMConfig) -> Callable[[str], int] | None:
    """Counts with the server's own tokenizer, or None when none of its routes answers."""
    import httpx

    root = config.base_url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {config.api_key()}"}

    def body(text: str) -> dict[str, Any]:
        return {"content": text, "prompt": text, "input": text, "model": config.model,
                "add_special_tokens": False}  # fmt: skip

    def tokens(reply: httpx.Response) -> int:
        data = reply.raise_for_status().json()
        return int(data["count"]) if "count" in data else len(data["tokens"])

    for route in TOKENIZE_ROUTES:
        url = f"{root}/{route}"
        try:
            tokens(httpx.post(url, json=body("a probe"), headers=headers, timeout=10))
        except (httpx.HTTPError, ValueError, KeyError, TypeError):
            continue
        return lambda text, url=url: tokens(
            httpx.post(url, json=body(text), headers=headers, timeout=config.timeout_s)
        )
    return None


def token_counter(config: LLMConfig) -> Callable[[str], int]:
    """How ``config``'s model counts tokens (``LLMConfig.tokenizer``).

    Raises:
        ValueError: "server" for a server without a tokenize endpoint, or a tokenizer file
            that cannot be read.
    """
    from longscan.answering.tokens import count_tokens

    if config.tokenizer == "cl100k":
        return count_tokens
    if config.tokenizer in ("auto", "server"):
        counter = _server_counter(config)
        if counter is not None:
            return counter
        if config.tokenizer == "server":
            raise ValueError(f"{config.base_url}: the server offers no tokenize endpoint")
        logger.info("%s has no tokenize endpoint; prompt budgets count cl100k tokens",
                    config.base_url)  # fmt: skip
        return count_tokens
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(config.tokenizer)
    except Exception as error:  # tokenizers raises its own exception types
        raise ValueError(f"cannot read the tokenizer {config.tokenizer}: {error}") from None
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False).ids)


class LLMClient:
    """Chat completions with cache, accounting, retries and bounded concurrency."""

    def __init__(self, config: LLMConfig, cache: ResponseCache | None = None) -> None:
        import openai

        self.config = config
        if cache is None:
            cache = ResponseCache(Path(config.cache_path or default_cache_path()))
        self.cache = cache
        self.usage = Usage()
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=config.api_key(),
            timeout=config.timeout_s,
            max_retries=config.max_retries,
        )
        self._counter: Callable[[str], int] | None = None

    def count_tokens(self, text: str) -> int:
        """``text``'s tokens as the model counts them (``LLMConfig.tokenizer``), for prompt
        budgets: a model's own tokenizer can count a third more than cl100k."""
        if self._counter is None:
            self._counter = token_counter(self.config)
        return self._counter(text)

    def chat(
        self,
        messages: Sequence[Message],
        max_tokens: int | None = None,
        schema: dict[str, Any] | None = None,
    ) -> Completion:
        """One completion (from the cache when this exact request was made before); with
        ``schema``, the server is asked for JSON that follows it (see ``json_mode``).

        Raises:
            LLMError: the server refused, timed out after retries, or sent a malformed reply.
        """
        params: dict[str, Any] = {
            "temperature": self.config.temperature,
            "max_tokens": max_tokens or self.config.max_tokens,
        }
        if schema is not None and self.config.json_mode == "json_schema":
            params["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "reply", "schema": schema},
            }
        elif schema is not None and self.config.json_mode == "json_object_schema":
            params["response_format"] = {"type": "json_object", "schema": schema}
        key = ResponseCache.key(self.config.model, messages, params)
        completion = self.cache.get(key)
        if completion is None:
            completion = self._call(messages, params)
            self.cache.put(key, completion)
        self.usage.add(completion, self.config)
        return completion

    def chat_many(
        self,
        requests: Sequence[Sequence[Message]],
        max_tokens: int | None = None,
        desc: str = "LLM calls",
        schema: dict[str, Any] | None = None,
    ) -> list[Completion]:
        """Completions in request order, at most ``config.concurrency`` in flight."""
        with ThreadPoolExecutor(max_workers=max(1, self.config.concurrency)) as pool:
            futures = [
                pool.submit(self.chat, messages, max_tokens, schema) for messages in requests
            ]
            return [future.result() for future in track(futures, desc, enabled=len(futures) > 1)]

    def _call(self, messages: Sequence[Message], params: dict[str, Any]) -> Completion:
        import openai

        where = f"{self.config.base_url} (model {self.config.model})"
        start = time.perf_counter()
        try:
            response = self._client.chat.completions.create(
                model=self.config.model, messages=list(messages), **params
            )
        except openai.APITimeoutError:
            raise LLMError(f"{where} timed out after {self.config.timeout_s:g} s") from None
        except openai.APIConnectionError:
            raise LLMError(f"cannot connect to {where}: is the server running?") from None
        except openai.APIStatusError as error:
            raise LLMError(
                f"{where} answered HTTP {error.status_code} after "
                f"{self.config.max_retries} retries",
                status=error.status_code,
            ) from None
        except (openai.OpenAIError, ValueError) as error:  # bodies that are not the API's JSON
            raise LLMError(f"{where} sent a malformed reply ({type(error).__name__})") from None
        seconds = time.perf_counter() - start
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise LLMError(f"{where} sent a reply without choices")
        usage = getattr(response, "usage", None)
        return Completion(
            text=choices[0].message.content or "",
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            seconds=seconds,
        )
