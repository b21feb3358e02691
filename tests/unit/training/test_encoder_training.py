"""The fine-tuned bi-encoder: its triplets, a smoke fine-tuning run, and how its adapter
keys the vector caches."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from longscan.devices import device_name, torch_device
from longscan.documents import Document
from longscan.encoders.adapter import WEIGHTS_FILE, AdapterError
from longscan.encoders.cache import EmbeddingCache
from longscan.encoders.minilm import DEFAULT_ENCODER, get_encoder
from longscan.retrievers.dense import DenseRetriever
from longscan.training.encoder import encoder_triplets, sentence_of


def test_triplets_pair_each_gold_sentence_with_a_look_alike_of_its_question(
    tiny_pairs,
) -> None:
    pairs, counts = tiny_pairs
    triplets = encoder_triplets(pairs)
    assert len(triplets) == counts["squad/hop1/1"]
    for triplet in triplets:
        mine = [p for p in pairs if p.query == triplet.anchor]
        assert triplet.positive in {sentence_of(p.passage) for p in mine if p.label == 1.0}
        assert triplet.negative in {sentence_of(p.passage) for p in mine if p.label == 0.0}
        assert " [SEP] " not in triplet.positive + triplet.negative  # the sentence alone


def test_fine_tuning_lowers_the_loss_on_the_device_it_records(tuned) -> None:
    _, report = tuned
    assert report["steps"] >= 4
    assert report["final_loss"] < report["initial_loss"]
    # the model and the trainer share one device (the trainer once pulled a GPU model back
    # to the CPU, and the probe loss then mixed devices)
    assert report["device"] == device_name(torch_device())


def test_the_adapter_changes_the_vectors_and_the_cache_key(tuned, tmp_path: Path) -> None:
    out, _ = tuned
    base, tuned_encoder = get_encoder(), get_encoder(adapter=str(out))
    assert base.name == DEFAULT_ENCODER
    assert tuned_encoder.name.startswith(DEFAULT_ENCODER + "+") and tuned_encoder.name != base.name
    text = "The river floods in spring. Farmers plant rice after the water recedes."
    document = Document("farm", text)
    cache = EmbeddingCache(tmp_path / "vectors")
    plain = DenseRetriever(cache=cache, encoder=base)
    adapted = DenseRetriever(cache=cache, encoder=tuned_encoder)
    plain.retrieve("When is rice planted?", [document])
    adapted.retrieve("When is rice planted?", [document])
    assert adapted.encoded_units == 2  # the base vectors in the same cache were not reused
    assert len(list((tmp_path / "vectors").glob("*.safetensors"))) == 2
    units = [text]
    assert not np.allclose(base.encode(units), tuned_encoder.encode(units), atol=1e-4)


def test_a_corrupt_encoder_adapter_is_refused_with_the_file_named(tuned, tmp_path: Path) -> None:
    copy = tmp_path / "adapter"
    shutil.copytree(tuned[0], copy)
    raw = bytearray((copy / WEIGHTS_FILE).read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (copy / WEIGHTS_FILE).write_bytes(bytes(raw))
    with pytest.raises(AdapterError, match=f"{WEIGHTS_FILE}.*SHA-256.*corrupt"):
        get_encoder(adapter=str(copy))


def test_training_goes_on_from_an_adapter_and_refuses_one_of_another_shape(
    tiny_pairs, tuned, tmp_path: Path
) -> None:
    from longscan.encoders.adapter import AdapterConfig, read_adapter
    from longscan.training.encoder import EncoderTrainConfig, train_encoder

    start, _ = tuned
    shape = AdapterConfig(8, 16, max_length=64)
    triplets = encoder_triplets(tiny_pairs[0])
    config = EncoderTrainConfig(
        epochs=1, batch_size=4, learning_rate=0.0, adapter=shape, init_from=str(start)
    )
    out = tmp_path / "continued"
    report = train_encoder(triplets, out, config, progress=False)
    before, after = read_adapter(start, "test"), read_adapter(out, "test")
    assert report["init_from_sha256"] == before.digest
    assert set(before.tensors) == set(after.tensors)
    for name, tensor in before.tensors.items():  # a zero learning rate changes nothing
        np.testing.assert_array_equal(tensor.numpy(), after.tensors[name].numpy())
    units = ["Farmers plant rice after the water recedes."]
    np.testing.assert_allclose(
        get_encoder(adapter=str(start)).encode(units), get_encoder(adapter=str(out)).encode(units)
    )
    with pytest.raises(AdapterError, match="is not"):
        train_encoder(
            triplets, tmp_path / "other", EncoderTrainConfig(init_from=str(start)), progress=False
        )


def test_synthetic_pairs_are_kept_only_for_the_questions_of_the_files_named(
    tmp_path: Path,
) -> None:
    import json

    from longscan.training.encoder import example_questions, synthetic_kept
    from longscan.training.reranker import Pair

    kept_question, dropped_question = "What was the 2024 revenue?", "Who signed the lease?"
    pairs = [
        Pair("Where is Paris?", "Paris is in France.", 1.0, "hop1", "squad"),
        Pair(kept_question, "Revenue was $5 million.", 1.0, "hop1", "synthetic/table"),
        Pair(kept_question, "Rent was $3,095.", 0.0, "hop1", "synthetic/table"),
        Pair(dropped_question, "The lessee signed it.", 1.0, "hop1", "synthetic/chunk"),
    ]
    agreed = tmp_path / "agreed.jsonl"
    agreed.write_text(json.dumps({"id": "table-1", "question": kept_question}) + "\n\n")
    questions = example_questions([agreed])
    assert questions == {kept_question}
    assert synthetic_kept(pairs, questions) == pairs[:3]  # Wikipedia pairs always stay
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "x"}\n')
    with pytest.raises(ValueError, match="broken.jsonl:1: not a synth example"):
        example_questions([broken])
