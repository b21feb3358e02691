"""The packaged MiniLM comes from a third party's repackaging: its weights are read only
once they hash to the file its authors publish."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from longscan.encoders import bert
from longscan.encoders.bert import EncoderRuntimeError, checked_model_dir, packaged_model_dir


@pytest.fixture(autouse=True)
def fresh_check() -> Iterator[None]:
    checked_model_dir.cache_clear()
    yield
    checked_model_dir.cache_clear()


def test_the_installed_weights_are_the_published_ones() -> None:
    assert checked_model_dir() == packaged_model_dir()


def test_altered_or_missing_weights_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copy = tmp_path / "model"
    shutil.copytree(packaged_model_dir(), copy)
    monkeypatch.setattr(bert, "packaged_model_dir", lambda: copy)
    weights = copy / "model.safetensors"
    with weights.open("r+b") as handle:  # one byte of the last tensor
        handle.seek(-1, 2)
        last = handle.read(1)
        handle.seek(-1, 2)
        handle.write(bytes([last[0] ^ 1]))
    with pytest.raises(EncoderRuntimeError, match="not the published all-MiniLM-L6-v2"):
        checked_model_dir()
    weights.unlink()
    with pytest.raises(EncoderRuntimeError, match="cannot be read"):
        checked_model_dir()


def test_the_packaged_tokenizer_and_version_are_the_weights_packages() -> None:
    """longscan carries MiniLM's tokenizer and names its exports by the pinned weights
    version, so a question needs no weights package: both must be that package's."""
    from importlib import metadata

    shipped = bert.tokenizer_file().read_bytes()
    assert shipped == (packaged_model_dir() / "tokenizer.json").read_bytes()
    assert metadata.version(bert.WEIGHTS_PACKAGE) == bert.WEIGHTS_VERSION
