from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from longscan.training.reranker import Pair


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


def spscanner_config() -> dict:
    """A published SPScanner's config.json (mamba_ssm's MambaConfig), scaled down."""
    from longscan.models.spscanner import MAMBA2_130M

    ssm = {"layer": "Mamba2", "d_state": 16, "headdim": 16, "chunk_size": 32}
    return {**MAMBA2_130M, "d_model": 64, "n_layer": 2, "vocab_size": 600, "ssm_cfg": ssm}


def novel_text() -> str:
    return (resources.files("longscan") / "data" / "sample_novel.txt").read_text(encoding="utf-8")


def _train_tokenizer(path: Path) -> None:
    """A byte-level BPE like GPT-NeoX-20B's, learnt from the bundled novel (offline)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=600,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<|endoftext|>"],
        show_progress=False,
    )
    tokenizer.train_from_iterator([novel_text()], trainer)
    tokenizer.save(str(path))


@pytest.fixture(scope="session")
def published_spscanner(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder as the SPScanner authors publish one: random weights in mamba_ssm naming,
    pickled, with its config.json and tokenizer.json."""
    import torch

    from longscan.models.spscanner import SPScannerConfig, SPScannerModel

    folder = tmp_path_factory.mktemp("published")
    (folder / "config.json").write_text(json.dumps(spscanner_config()))
    torch.manual_seed(0)
    model = SPScannerModel(SPScannerConfig.from_mamba_ssm(spscanner_config()))
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.05 * torch.randn_like(parameter))
    torch.save(model.mamba_ssm_state_dict(), folder / "pytorch_model.bin")
    _train_tokenizer(folder / "tokenizer.json")
    return folder


@pytest.fixture(scope="session")
def converted_spscanner(
    published_spscanner: Path, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """That folder converted once, checked against the weights' hash."""
    from longscan.scanning.spscanner import convert_checkpoint

    out = tmp_path_factory.mktemp("converted")
    weights = published_spscanner / "pytorch_model.bin"
    digest = hashlib.sha256(weights.read_bytes()).hexdigest()
    return convert_checkpoint(published_spscanner, out, expect_sha256=digest)


@pytest.fixture(scope="session")
def tuned(tiny_pairs, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A smoke fine-tuning run of the bi-encoder on real mined pairs: its adapter folder and
    report."""
    from longscan.encoders.adapter import AdapterConfig
    from longscan.training.encoder import EncoderTrainConfig, encoder_triplets, train_encoder

    out = tmp_path_factory.mktemp("encoder") / "adapter"
    config = EncoderTrainConfig(
        epochs=4, batch_size=4, learning_rate=1e-3, adapter=AdapterConfig(8, 16, max_length=64)
    )
    return out, train_encoder(encoder_triplets(tiny_pairs[0]), out, config, progress=False)
