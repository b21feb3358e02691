"""A bank on an encoder of the user's choosing: recorded when the bank is created, used by
every later add and search, and another one refused. The model here is the packaged MiniLM
with a seeded 384→96 projection on top, saved to a folder: another model, another width."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from longscan.bank import MemoryBank
from longscan.bank.errors import BankError
from longscan.bank.ingest import ingest
from longscan.documents import Document
from longscan.encoders.external import ExternalEncoder
from longscan.encoders.minilm import EMBEDDING_DIM, packaged_model

WIDTH = 96


@pytest.fixture(scope="module")
def projected_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from sentence_transformers import SentenceTransformer

    try:
        from sentence_transformers.sentence_transformer.modules import Dense
    except ImportError:  # its place before sentence-transformers 6
        from sentence_transformers.models import Dense

    torch.manual_seed(0)
    modules = [*packaged_model(), Dense(EMBEDDING_DIM, WIDTH)]
    folder = tmp_path_factory.mktemp("model") / "projected-minilm"
    SentenceTransformer(modules=modules, device="cpu").save(str(folder))
    return folder


def test_the_bank_searches_with_the_encoder_it_was_built_with(
    tmp_path: Path, paragraphs: list[Document], projected_model: Path
) -> None:
    documents = paragraphs[:12]
    bank = MemoryBank(tmp_path, encoder=str(projected_model))
    ingest(bank, documents[:8], progress=False)
    reopened = MemoryBank(tmp_path)  # no encoder named: the recorded one
    ingest(reopened, documents[8:], progress=False)
    assert reopened.stats()["encoder"] == str(projected_model.resolve())
    assert reopened.indexes.dense().ndim == WIDTH and len(reopened.indexes.dense()) == 12

    model = ExternalEncoder(str(projected_model))
    openings = model.encode([d.text for d in documents])
    for document in documents[::3]:
        question = document.text.split(".")[0]
        expected = documents[int(np.argmax(openings @ model.encode([question])[0]))].id
        best = reopened.search_dense(question, 1)[0][0]
        assert reopened.get([best])[0].key == expected


def test_another_encoder_is_refused_and_old_banks_keep_the_packaged_one(
    tmp_path: Path, paragraphs: list[Document], projected_model: Path
) -> None:
    ingest(MemoryBank(tmp_path / "mine", encoder=str(projected_model)), paragraphs[:2],
           progress=False)  # fmt: skip
    with pytest.raises(BankError, match="holds vectors of the encoder"):
        MemoryBank(tmp_path / "mine", encoder="minilm")

    plain = MemoryBank(tmp_path / "plain")
    ingest(plain, paragraphs[:2], progress=False)
    assert plain.stats()["encoder"] == "minilm" and plain.indexes.dense().ndim == 384
    with pytest.raises(BankError, match="'minilm', not"):
        MemoryBank(tmp_path / "plain", encoder=str(projected_model))

    with sqlite3.connect(tmp_path / "plain" / "bank.sqlite") as db:  # a bank from before
        db.executescript("DROP TABLE bank_settings; PRAGMA user_version = 2;")
    older = MemoryBank(tmp_path / "plain")
    assert older.encoder == "minilm" and older.search_dense(paragraphs[0].text[:80], 1)
