"""Fine-tuning the token-level scanner: the paper's loss lowers on real data; large
networks are refused on a CPU."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from longscan.cli import app
from longscan.models.spscanner import MAMBA2_130M, SPScannerConfig
from longscan.scanning.spscanner import load_spscanner, read_spscanner_info
from longscan.training.spscanner import (
    SPScannerTrainConfig,
    TokenExamples,
    batch_loss,
    check_trainable,
    tokenize_examples,
    train_spscanner,
)


@pytest.fixture(scope="module")
def squad_examples(converted_spscanner: Path, data_dir: Path) -> TokenExamples:
    """Eight real SQuAD training questions over ~400-word documents, as token ids."""
    from longscan.bench.builders import build_squad_long
    from longscan.evaluation.gold import gold_unit_labels

    _, tokenizer, _ = load_spscanner(converted_spscanner)
    items = build_squad_long("train", 400, max_items=8, seed=0, data_dir=data_dir)
    rows = []
    for item in items:
        (document,) = item.documents
        rows.append((item.query, document, gold_unit_labels(item)[document.id]))
    return tokenize_examples(tokenizer, rows)


def _mean_loss(directory: Path, examples: TokenExamples) -> float:
    model, _, _ = load_spscanner(directory)
    batch = [examples.example(i) for i in range(len(examples))]
    return batch_loss(model, batch, "cpu", bfloat16=False, backward=False)


def test_fine_tuning_lowers_the_weighted_bce_on_real_questions(
    converted_spscanner: Path, squad_examples: TokenExamples, tmp_path: Path
) -> None:
    before = _mean_loss(converted_spscanner, squad_examples)
    config = SPScannerTrainConfig(lr=3e-3, min_lr=3e-4, batch_size=4, epochs=8, warmup=0.1)
    report = train_spscanner(
        converted_spscanner, tmp_path / "tuned", squad_examples, config, "cpu", progress=False
    )
    assert report["steps"] == 16
    after = _mean_loss(tmp_path / "tuned", squad_examples)
    assert after < 0.8 * before
    info = read_spscanner_info(tmp_path / "tuned")  # hash-checked like any checkpoint
    assert info.source["fine_tuned"]["init_weights_sha256"] != info.weights_sha256


def test_examples_survive_a_cache_round_trip(squad_examples: TokenExamples, tmp_path: Path) -> None:
    squad_examples.save(tmp_path / "examples.npz")
    again = TokenExamples.load(tmp_path / "examples.npz")
    for i in range(len(squad_examples)):
        for a, b in zip(squad_examples.example(i), again.example(i), strict=True):
            assert np.array_equal(a, b)
    ids, ends, labels = squad_examples.example(0)
    assert ends.max() < len(ids) and labels.sum() >= 1


def test_the_130m_layout_is_refused_on_a_cpu_and_a_tiny_one_is_not() -> None:
    config = SPScannerConfig.from_mamba_ssm(MAMBA2_130M)
    with pytest.raises(ValueError, match="CUDA GPU"):
        check_trainable(config, "cpu")
    check_trainable(config, "cuda")
    check_trainable(SPScannerConfig(vocab_size=600, d_model=64, n_layer=2), "cpu")


def test_cli_trains_a_converted_checkpoint_and_needs_init(
    converted_spscanner: Path, data_dir: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["train", "--token-level", "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "--init" in result.output
    out = tmp_path / "tuned"
    arguments = ["train", "--token-level", "--init", str(converted_spscanner), "--out", str(out)]
    arguments += ["--datasets", "squad", "--seeds", "0", "--max-per-source", "2"]
    arguments += ["--batch-size", "3", "--data-cache", str(tmp_path / "cache")]
    result = runner.invoke(app, arguments)
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout[: result.stdout.rindex("}") + 1])
    assert report["steps"] == 2  # 3 lengths x 2 questions, 3 a step
    assert len(list((tmp_path / "cache").glob("token-examples-*.npz"))) == 1
    assert read_spscanner_info(out).config == read_spscanner_info(converted_spscanner).config
