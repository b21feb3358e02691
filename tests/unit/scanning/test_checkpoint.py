from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from longscan.documents import Document
from longscan.encoders.cache import EmbeddingCache
from longscan.models.config import ScannerConfig
from longscan.models.scanner import ScannerModel
from longscan.scanning import CheckpointError, Scanner, load_checkpoint, save_checkpoint
from longscan.scanning.checkpoint import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    default_checkpoint_dir,
    verified_info,
)
from longscan.scanning.features import FEATURE_NAMES


def test_round_trip_gives_identical_logits(tiny_checkpoint: Path, make_tiny_model) -> None:
    original = make_tiny_model()
    loaded, info = load_checkpoint(tiny_checkpoint)
    sentences, query = torch.randn(1, 23, 384), torch.randn(1, 384)
    features = torch.rand(1, 23, original.config.n_features)
    assert torch.equal(
        original.scan(sentences, query, features), loaded.scan(sentences, query, features)
    )
    assert info.encoder == "all-MiniLM-L6-v2/ctx256"


def test_corrupt_weights_are_refused(tiny_checkpoint: Path) -> None:
    weights = tiny_checkpoint / WEIGHTS_FILE
    data = bytearray(weights.read_bytes())
    data[len(data) // 2] ^= 0xFF
    weights.write_bytes(bytes(data))
    with pytest.raises(CheckpointError, match="SHA-256"):
        load_checkpoint(tiny_checkpoint)


def test_truncated_weights_with_matching_hash_are_refused(tiny_checkpoint: Path) -> None:
    weights = tiny_checkpoint / WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[:100])
    config = json.loads((tiny_checkpoint / CONFIG_FILE).read_text())
    from longscan.files import file_sha256

    config["weights_sha256"] = file_sha256(weights)
    (tiny_checkpoint / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="unreadable safetensors"):
        load_checkpoint(tiny_checkpoint)


def test_mismatched_config_is_refused(tiny_checkpoint: Path) -> None:
    config = json.loads((tiny_checkpoint / CONFIG_FILE).read_text())
    config["model"]["d_model"] = 64
    (tiny_checkpoint / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="do not fit"):
        load_checkpoint(tiny_checkpoint)


@pytest.mark.parametrize("content", ["{not json", "[]", '{"format": "other"}'])
def test_corrupt_config_is_refused(tiny_checkpoint: Path, content: str) -> None:
    (tiny_checkpoint / CONFIG_FILE).write_text(content)
    with pytest.raises(CheckpointError):
        load_checkpoint(tiny_checkpoint)


def test_features_out_of_order_are_refused(tiny_checkpoint: Path) -> None:
    config = json.loads((tiny_checkpoint / CONFIG_FILE).read_text())
    config["features"] = list(reversed(config["features"]))
    (tiny_checkpoint / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="are named"):
        load_checkpoint(tiny_checkpoint)


def test_features_this_longscan_lacks_are_refused(tiny_checkpoint: Path) -> None:
    config = json.loads((tiny_checkpoint / CONFIG_FILE).read_text())
    config["features"][-1] = "a_column_from_the_future"
    (tiny_checkpoint / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="does not compute"):
        load_checkpoint(tiny_checkpoint)


def test_a_scanner_reads_the_columns_its_config_names(tmp_path: Path, monkeypatch) -> None:
    """A network trained on chosen columns (not the first n) reads exactly those, saved
    and loaded by name, whatever their positions."""
    chosen = ("dense_rank", "window_dense_rank", "bm25_over_max")
    torch.manual_seed(0)
    config = ScannerConfig(
        d_model=32, n_layers=1, d_state=8, headdim=16, n_features=3, feature_names=chosen
    )
    directory = save_checkpoint(
        ScannerModel(config).eval(), tmp_path / "c", "all-MiniLM-L6-v2/ctx256"
    )
    assert json.loads((directory / CONFIG_FILE).read_text())["features"] == list(chosen)
    model, info = load_checkpoint(directory)
    assert info.features == chosen and model.config.feature_names == chosen
    scanner = Scanner(model, info, cache=EmbeddingCache(tmp_path / "vectors"))
    document = Document("d", "Paris is the capital of France.\n\nBerlin is in Germany. It is big.")
    seen = []
    monkeypatch.setattr(scanner, "_scan", lambda v, q, features: seen.append(features) or v[:, 0])
    query = "capital of France"
    scanner.scan(query, [document])
    vectors = scanner.sentence_vectors(document)
    every = scanner.features.for_scan(query, [document], vectors, scanner.query_vector(query))
    assert seen[0] == pytest.approx(every[:, [FEATURE_NAMES.index(n) for n in chosen]])


def test_missing_checkpoint_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="not a scanner checkpoint"):
        load_checkpoint(tmp_path)


def test_pickle_files_are_never_loaded(tmp_path: Path, make_tiny_model) -> None:
    save_checkpoint(make_tiny_model(), tmp_path, "all-MiniLM-L6-v2/ctx256")
    (tmp_path / WEIGHTS_FILE).unlink()
    torch.save(make_tiny_model().state_dict(), tmp_path / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="missing"):
        load_checkpoint(tmp_path)


def test_shipped_checkpoint_loads_and_is_small() -> None:
    directory = default_checkpoint_dir()
    model, info = load_checkpoint(directory)
    assert (directory / WEIGHTS_FILE).stat().st_size <= 30 * 2**20
    assert model.config.n_features == len(info.features)
    assert (directory / "MODEL_CARD.md").is_file()


def test_ensemble_round_trip_scores_the_mean_of_its_members(
    tmp_path: Path, make_tiny_model
) -> None:
    from longscan.models.scanner import ScannerEnsemble

    members = [make_tiny_model(seed=seed) for seed in (0, 1)]
    ensemble = ScannerEnsemble(members[0].config, 2)
    for slot, member in zip(ensemble.members, members, strict=True):
        slot.load_state_dict(member.state_dict())
    save_checkpoint(ensemble, tmp_path / "ens", "all-MiniLM-L6-v2/ctx256")
    loaded, info = load_checkpoint(tmp_path / "ens")
    assert info.members == 2 and isinstance(loaded, ScannerEnsemble)
    sentences, query = torch.randn(1, 23, 384), torch.randn(1, 384)
    features = torch.rand(1, 23, members[0].config.n_features)
    each = [member.scan(sentences, query, features) for member in members]
    assert not torch.allclose(each[0], each[1])
    assert torch.allclose(loaded.scan(sentences, query, features), (each[0] + each[1]) / 2)
    with pytest.raises(ValueError, match="two or more"):
        ScannerEnsemble(members[0].config, 1)


@pytest.mark.parametrize("members", [0, -1, "2", True])
def test_bad_member_count_is_refused(tiny_checkpoint: Path, members: object) -> None:
    config = json.loads((tiny_checkpoint / CONFIG_FILE).read_text())
    config["members"] = members
    (tiny_checkpoint / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="members"):
        load_checkpoint(tiny_checkpoint)


def test_ensemble_of_a_single_network_is_refused(tiny_checkpoint: Path) -> None:
    """A config that says 2 members over one network's weights does not load."""
    config = json.loads((tiny_checkpoint / CONFIG_FILE).read_text())
    config["members"] = 2
    (tiny_checkpoint / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match="do not fit"):
        load_checkpoint(tiny_checkpoint)


def test_a_checkpoint_keeps_the_token_match_it_was_trained_with(
    tmp_path: Path, make_tiny_model
) -> None:
    """The token-match columns depend on how many first-pass sentences are matched and how
    many word pieces each and the query keep: a checkpoint records them, and one written
    before they were recorded reads with the values it was trained with (20 and 48; the
    query cut like a sentence)."""
    from longscan.scanning.features import (
        LEGACY_TOKEN_MATCH,
        TRAINED_FEATURES,
        TokenMatch,
    )

    directory = save_checkpoint(
        make_tiny_model(), tmp_path / "a", "all-MiniLM-L6-v2/ctx256", token_match=TokenMatch(7, 9)
    )
    assert verified_info(directory)[0].token_match == TokenMatch(candidates=7, max_tokens=9)
    config = json.loads((directory / CONFIG_FILE).read_text())
    config["token_match"] = {"candidates": 7, "max_tokens": 9}  # written before query_tokens
    (directory / CONFIG_FILE).write_text(json.dumps(config))
    assert verified_info(directory)[0].token_match == TokenMatch(7, 9, query_tokens=9)
    del config["token_match"]
    (directory / CONFIG_FILE).write_text(json.dumps(config))
    assert verified_info(directory)[0].token_match == LEGACY_TOKEN_MATCH
    for invalid in ({"candidates": 0, "max_tokens": 32}, {"query_tokens": 257}, [16, 32]):
        config["token_match"] = invalid
        (directory / CONFIG_FILE).write_text(json.dumps(config))
        with pytest.raises(CheckpointError, match="invalid token_match"):
            verified_info(directory)
    shipped = verified_info(default_checkpoint_dir())[0]
    assert shipped.token_match == TokenMatch()  # the shipped scanner reads what training makes
    assert shipped.features == TRAINED_FEATURES  # and `train` trains its layout
