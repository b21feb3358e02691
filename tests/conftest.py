"""Shared fixtures: the bundled novel, the shared data directory, an isolated cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscan.documents import Document, read_file

REPO = Path(__file__).resolve().parents[1]
NOVEL = REPO / "src" / "longscan" / "data" / "sample_novel.txt"


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """Every test gets its own on-disk cache, so no test sees another's vectors."""
    directory = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("LONGSCAN_CACHE_DIR", str(directory))
    return directory


@pytest.fixture(scope="session")
def novel_path() -> Path:
    return NOVEL


@pytest.fixture(scope="session")
def novel() -> Document:
    return read_file(NOVEL, doc_id="alice")
