from __future__ import annotations

from pathlib import Path

import pytest

from longscan.bench.datasets import default_data_dir


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared data; tests that read it are skipped only when it is absent."""
    try:
        return default_data_dir()
    except FileNotFoundError as error:
        pytest.skip(str(error))
