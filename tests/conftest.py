"""Shared fixtures: the bundled novel, the shared data and a real filing, an isolated cache,
a scripted LLM server on loopback for error paths, and the real local LLM server."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from longscan.answering.llm import LLMClient, LLMConfig, ResponseCache
from longscan.bench.datasets import default_data_dir
from longscan.documents import Document
from longscan.readers.files import read_file
from scripted_server import Reply, ScriptedServer

REPO = Path(__file__).resolve().parents[1]
NOVEL = REPO / "src" / "longscan" / "data" / "sample_novel.txt"


@pytest.fixture(scope="session")
def onnx_exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of ONNX exports for the session: they derive from shipped weights alone."""
    return tmp_path_factory.mktemp("onnx")


@pytest.fixture(scope="session")
def causal_lms(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of dequantised causal LMs for the session (a GGUF takes a minute)."""
    return tmp_path_factory.mktemp("causal-lm")


@pytest.fixture(scope="session")
def joined_models(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of models joined from their parts for the session (1.1 GB to write)."""
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="session")
def evaluation_fingerprints_made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder of evaluation fingerprints for the session (the corpus takes a minute)."""
    return tmp_path_factory.mktemp("fingerprints")


@pytest.fixture(autouse=True)
def isolated_cache(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    onnx_exports: Path,
    causal_lms: Path,
    joined_models: Path,
    evaluation_fingerprints_made: Path,
):
    """Every test gets its own on-disk cache, so no test sees another's vectors; the ONNX
    exports of the shipped networks, the dequantised causal LMs, the joined local models
    and the evaluation fingerprints are shared (each would take seconds to a minute to make
    again). Commands give evidence only unless a test names an answerer: the answerers
    have tests of their own, and a generative answer costs seconds."""
    directory = tmp_path_factory.mktemp("cache")
    (directory / "onnx").symlink_to(onnx_exports, target_is_directory=True)
    (directory / "causal-lm").symlink_to(causal_lms, target_is_directory=True)
    (directory / "fingerprints").symlink_to(evaluation_fingerprints_made, target_is_directory=True)
    (directory / "models").symlink_to(joined_models, target_is_directory=True)
    monkeypatch.setenv("LONGSCAN_CACHE_DIR", str(directory))
    monkeypatch.setenv("LONGSCAN_ANSWERER", "none")
    return directory


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The reference datasets (``$LONGSCAN_BENCH_DATA``, else ``../shared/data`` beside the
    checkout); tests that read them are skipped only when they are absent."""
    try:
        return default_data_dir()
    except FileNotFoundError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def filing_path(data_dir: Path) -> Path:
    """A real 10-Q (Apple's, flattened to lines): prose, statements and their table rows."""
    return data_dir / "train-docs" / "sec-full-filings" / "aapl_aapl-10-q-2025-08-01.txt"


@pytest.fixture(scope="session")
def statement_excerpt(filing_path: Path) -> str:
    """Apple's statement of operations, from its title to the line after the services row:
    a short text whose rows read under a title and a column header."""
    text = filing_path.read_text(encoding="utf-8")
    row = text.index("Services 6,698 6,296")
    title = text.rindex("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS", 0, row)
    return text[title : text.index("\n", text.index("\n", row) + 1)]


@pytest.fixture(scope="session")
def novel_path() -> Path:
    return NOVEL


@pytest.fixture(scope="session")
def novel() -> Document:
    return read_file(NOVEL, doc_id="alice")


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Callable[..., tuple[ScriptedServer, LLMClient]]]:
    servers: list[ScriptedServer] = []

    def make(replies: list[Reply], **config: object) -> tuple[ScriptedServer, LLMClient]:
        server = ScriptedServer(replies)
        servers.append(server)
        settings = LLMConfig(server.url, "scripted", **{"max_retries": 2, "timeout_s": 5, **config})
        return server, LLMClient(settings, ResponseCache(tmp_path / f"cache{len(servers)}.sqlite"))

    yield make
    for server in servers:
        server.close()


@pytest.fixture(scope="session")
def local_llm_url() -> Iterator[str]:
    """The real local model behind llama.cpp's server (skipped only where the [local-llm]
    extra is absent and LONGSCAN_REQUIRE_LLM is not set; scripts/test.sh sets it)."""
    if not os.environ.get("LONGSCAN_REQUIRE_LLM"):
        pytest.importorskip("llama_cpp", reason="the [local-llm] extra is not installed")
    from longscan.answering.local import LocalServer

    with LocalServer(context_tokens=4096) as url:
        yield url
