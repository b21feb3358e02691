from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from longscan.bench.datasets import default_data_dir

if TYPE_CHECKING:
    from longscan.training.reranker import Pair


@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The shared data; tests that read it are skipped only when it is absent."""
    try:
        return default_data_dir()
    except FileNotFoundError as error:
        pytest.skip(str(error))


@pytest.fixture(scope="session")
def tiny_pairs(data_dir: Path) -> tuple[list[Pair], dict[str, int]]:
    """Cross-encoder pairs mined from four real SQuAD training items (two BM25, two dense
    and one random negative each), and their counts."""
    from longscan.bench.builders import build_squad_long
    from longscan.encoders.minilm import get_encoder
    from longscan.training.reranker import MiningConfig, mine_pairs

    items = build_squad_long("train", 600, max_items=4, seed=0, data_dir=data_dir)
    return mine_pairs(
        [("squad", items)], get_encoder(), MiningConfig(2, 2, 1, False), progress=False
    )
