"""Baselines on a sentence-transformers model of the user's choosing, loaded offline from
safetensors: here the packaged MiniLM saved to a folder, so its rankings must match."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from longscan.bench.datasets import load_squad
from longscan.documents import Document
from longscan.encoders.minilm import packaged_model
from longscan.retrievers import get_retriever


@pytest.fixture(scope="module")
def saved_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("model") / "my-minilm"
    packaged_model().save(str(folder))
    assert list(folder.rglob("*.safetensors"))
    return folder


def test_a_model_folder_ranks_as_the_packaged_encoder(saved_model: Path, data_dir: Path) -> None:
    article = load_squad(data_dir)[1]
    document = Document(article.title, "\n\n".join(p.context for p in article.paragraphs))
    questions = [q.question for p in article.paragraphs[:5] for q in p.questions[:2]]
    for kind in ("dense-sentence", "hybrid-sentence"):
        packaged, mine = get_retriever(kind), get_retriever(f"{kind}:{saved_model}")
        same = sum(
            packaged.retrieve(q, [document], top_k=1)[0].start
            == mine.retrieve(q, [document], top_k=1)[0].start
            for q in questions
        )
        assert same == len(questions), kind
    dense = get_retriever(f"dense-sentence:{saved_model}")
    assert dense.encoder_name.startswith("st:") and str(saved_model.resolve()) in dense.encoder_name


def test_pickled_weights_and_unknown_models_are_refused(saved_model: Path, tmp_path: Path) -> None:
    pickled = tmp_path / "pickled"
    shutil.copytree(saved_model, pickled)
    for weights in pickled.rglob("*.safetensors"):
        weights.rename(weights.with_name("pytorch_model.bin"))
    with pytest.raises(ValueError, match="does not unpickle"):
        get_retriever(f"dense-sentence:{pickled}")
    with pytest.raises(ValueError, match="cannot load .* offline"):
        get_retriever("dense-chunk:no-such-org/no-such-model")
