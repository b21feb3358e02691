"""The cross-encoder re-scorer: what it reads, how its adapter loads, and that it learns."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from longscan.bench.builders import build_squad_long
from longscan.documents import Document
from longscan.encoders.adapter import CONFIG_FILE, WEIGHTS_FILE, AdapterConfig, AdapterError
from longscan.rerankers.cross_encoder import CrossEncoderReranker, sentence_in_context
from longscan.training.reranker import TrainConfig, train_reranker


def test_a_sentence_is_read_first_with_its_paragraph_lead_and_predecessor() -> None:
    text = (
        "Ada Lovelace was a mathematician. She wrote notes. They describe an algorithm.\n\nOther."
    )
    document = Document("d", text)
    assert sentence_in_context(document, 0) == "Ada Lovelace was a mathematician."
    third = sentence_in_context(document, 2)
    assert third.startswith("They describe an algorithm. [SEP] Ada Lovelace")
    assert "She wrote notes." in third
    assert sentence_in_context(document, 3) == "Other."  # a new paragraph has no context


def test_mined_pairs_hold_the_gold_sentence_and_look_alikes_from_its_document(
    tiny_pairs, data_dir: Path
) -> None:
    pairs, counts = tiny_pairs
    items = build_squad_long("train", 600, max_items=4, seed=0, data_dir=data_dir)
    for item in items:
        mine = [p for p in pairs if p.query == item.query]
        gold = item.documents[0].text[item.gold_spans[0].start : item.gold_spans[0].end]
        positives = [p.passage for p in mine if p.label == 1.0]
        assert positives and any(gold in p or p.split(" [SEP] ")[0] in gold for p in positives)
        negatives = [p.passage for p in mine if p.label == 0.0]
        assert len(negatives) == 5 and not set(negatives) & set(positives)
        assert all(p.split(" [SEP] ")[0] in item.documents[0].text for p in negatives)
    assert counts["squad/hop1/1"] >= len(items)


@pytest.fixture(scope="module")
def trained(tiny_pairs, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A smoke fine-tuning run on real mined pairs: its adapter folder and report."""
    pairs, _ = tiny_pairs
    out = tmp_path_factory.mktemp("reranker") / "adapter"
    config = TrainConfig(epochs=3, batch_size=8, learning_rate=1e-3, adapter=AdapterConfig(8, 16))
    return out, train_reranker(pairs, out, config, progress=False)


def test_fine_tuning_lowers_the_loss_and_the_adapter_round_trips(tiny_pairs, trained) -> None:
    pairs, _ = tiny_pairs
    out, report = trained
    assert report["final_loss"] < report["initial_loss"]
    saved = json.loads((out / CONFIG_FILE).read_text())
    assert saved["adapter"]["rank"] == 8 and saved["training"]["pairs"] == len(pairs)
    card = (out / "MODEL_CARD.md").read_text()
    assert f"{report['initial_loss']}\nbefore, {report['final_loss']} after" in card
    assert f"Trained on {report['device']} in" in card  # CPU here; the GPU's name on one
    passages = [p.passage for p in pairs[:6]]
    once = CrossEncoderReranker.load(out).score(pairs[0].query, passages)
    again = CrossEncoderReranker.load(out).score(pairs[0].query, passages)
    np.testing.assert_allclose(once, again, rtol=1e-5, atol=1e-5)


@pytest.fixture
def adapter_copy(trained, tmp_path: Path) -> Path:
    copy = tmp_path / "adapter"
    shutil.copytree(trained[0], copy)
    return copy


def test_a_corrupt_adapter_is_refused_with_the_file_named(adapter_copy: Path) -> None:
    weights = adapter_copy / WEIGHTS_FILE
    raw = bytearray(weights.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    weights.write_bytes(bytes(raw))
    with pytest.raises(AdapterError, match="SHA-256.*corrupt"):
        CrossEncoderReranker.load(adapter_copy)


def test_a_truncated_adapter_with_a_matching_hash_is_refused(adapter_copy: Path) -> None:
    weights = adapter_copy / WEIGHTS_FILE
    weights.write_bytes(weights.read_bytes()[:100])
    config = json.loads((adapter_copy / CONFIG_FILE).read_text())
    from longscan.files import file_sha256

    config["sha256"] = file_sha256(weights)
    (adapter_copy / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(AdapterError, match="unreadable safetensors"):
        CrossEncoderReranker.load(adapter_copy)


def test_a_missing_or_foreign_adapter_is_refused(adapter_copy: Path) -> None:
    config = json.loads((adapter_copy / CONFIG_FILE).read_text())
    config["base_model"] = "bert-base-uncased"
    (adapter_copy / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(AdapterError, match="bert-base-uncased"):
        CrossEncoderReranker.load(adapter_copy)
    (adapter_copy / WEIGHTS_FILE).unlink()
    with pytest.raises(AdapterError, match="missing"):
        CrossEncoderReranker.load(adapter_copy)


def _gold_wins(
    reranker: CrossEncoderReranker, read: Callable[[str], str], data_dir: Path
) -> tuple[int, int]:
    """On 12 development SQuAD questions (never trained on), each read as ``read`` gives
    it: how often the gold sentence, read in context, outscores the sentences on either
    side of it, which share its subject and words; and of how many."""
    from longscan.evaluation.gold import gold_unit_labels

    items = build_squad_long("dev", 5_000, max_items=12, seed=0, data_dir=data_dir)
    wins = 0
    for item in items:
        (document,) = item.documents
        gold = int(np.flatnonzero(gold_unit_labels(item)[document.id])[0])
        near = [i for i in (gold - 1, gold + 1) if 0 <= i < len(document.sentences)]
        passages = [reranker.passage(document, i) for i in (gold, *near)]
        scores = reranker.score(read(item.query), passages)
        wins += bool(scores[0] > scores[1:].max())
    return wins, len(items)


def test_the_shipped_cross_encoder_prefers_real_gold_sentences_to_their_neighbours(
    data_dir: Path,
) -> None:
    """The gold sentence wins for most questions (chance is one in three; the shipped
    adapter wins 8 of these 12, its weak spot: BENCHMARKS.md, "Cross-encoder re-scorer")."""
    from longscan.rerankers.cross_encoder import get_reranker

    wins, items = _gold_wins(get_reranker(), lambda question: question, data_dir)
    assert wins > items / 2, f"gold beat both neighbours on {wins} of {items} questions"


# an instruction of about 120 word pieces, as long prompts (Loong's, L-Eval's) put before
# their question
INSTRUCTION = 2 * (
    "Please read the long document given above carefully, paying attention to every "
    "section, table and footnote, and then answer the question that follows using only the "
    "information that you found in the document. If the document does not contain the "
    "information needed, say that it cannot be answered. Keep your answer short and precise."
    "\n\n"
)


def test_a_long_prompt_is_read_to_its_question(data_dir: Path) -> None:
    """A pair is cut longest first, so a long prompt lost its question: read to its last
    ``QUERY_PIECES`` pieces, which end with the question, the same prompt finds the gold
    sentence for most questions, as the questions alone do (8 of 12; cut longest first, 5),
    and a query that fits is read as given."""
    from longscan.rerankers.cross_encoder import QUERY_PIECES, get_reranker

    reranker = get_reranker()
    question = "Who fell down the rabbit hole?"
    read = reranker.fit_query(INSTRUCTION + question)
    assert read.endswith(question) and (INSTRUCTION + question).endswith(read)
    pieces = reranker.model.tokenizer(read, add_special_tokens=False)["input_ids"]
    assert len(pieces) == QUERY_PIECES and reranker.fit_query(question) == question
    wins, items = _gold_wins(reranker, lambda q: reranker.fit_query(INSTRUCTION + q), data_dir)
    assert wins > items / 2, f"gold beat both neighbours on {wins} of {items} questions"


def test_bfloat16_reading_keeps_the_float32_scores_and_order(data_dir: Path) -> None:
    """Development SQuAD questions: a gold sentence and its neighbours scored in both
    precisions (bfloat16 is what machines with bfloat16 hardware read by default); the scores
    stay within a tenth of a logit, so rankings change only between near ties."""
    from longscan.rerankers.cross_encoder import get_reranker

    shipped = get_reranker()
    items = build_squad_long("dev", 5_000, max_items=3, seed=0, data_dir=data_dir)
    for item in items:
        (document,) = item.documents
        start = item.gold_spans[0].start
        gold = int(np.searchsorted(document.sentences[:, 1], start, side="right"))
        passages = [shipped.passage(document, i) for i in range(max(gold - 3, 0), gold + 4)]
        exact = CrossEncoderReranker(shipped.model, shipped.config, shipped.digest)
        fast = CrossEncoderReranker(shipped.model, shipped.config, shipped.digest, bfloat16=True)
        float32, bfloat16 = exact.score(item.query, passages), fast.score(item.query, passages)
        assert np.abs(float32 - bfloat16).max() < 0.1, (float32, bfloat16)
        assert float32.std() > 0.5  # real spread, so the agreement above means something


def test_an_adapter_reads_passages_as_it_was_trained_to(adapter_copy: Path) -> None:
    text = "A Title\n\nIt opened in 1980. It grew.\n\nIt closed in 2001."
    document = Document("d", text)
    trained_with_headings = CrossEncoderReranker.load(adapter_copy)
    assert trained_with_headings.passage(document, 3) == "It closed in 2001. [SEP] A Title"
    config = json.loads((adapter_copy / CONFIG_FILE).read_text())
    del config["adapter"]["headings"]  # as in configs written before headings were read
    (adapter_copy / CONFIG_FILE).write_text(json.dumps(config))
    older = CrossEncoderReranker.load(adapter_copy)
    assert older.passage(document, 3) == "It closed in 2001."
    assert older.passage(document, 2) == trained_with_headings.passage(document, 2).replace(
        "A Title ", ""
    )


def test_a_run_that_does_not_learn_is_flagged_by_the_cli(tiny_pairs, tmp_path) -> None:
    from typer.testing import CliRunner

    from longscan.cli import app
    from longscan.rerankers.cross_encoder import PACKAGED
    from longscan.training.reranker import save_pairs, stalled

    assert not stalled(json.loads((PACKAGED / CONFIG_FILE).read_text())["training"])
    pairs_file = tmp_path / "pairs.jsonl"
    save_pairs(tiny_pairs[0], pairs_file)
    out = tmp_path / "frozen"
    args = ["train-reranker", "--out", str(out), "--pairs-cache", str(pairs_file), "--lr", "0"]
    result = CliRunner().invoke(app, [*args, "--batch-size", "8", "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "this seed did not learn" in " ".join(result.output.split())
    assert (out / WEIGHTS_FILE).is_file()  # written all the same: the user decides


def _first_examples(data_dir: Path, folder: str, count: int) -> list:
    from longscan.training.synthetic_examples import parse_examples

    path = Path(__file__).parents[3] / "training-data" / folder / "examples.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()[:count]
    return parse_examples("\n".join(lines), str(path), data_dir / "train-docs")


def test_synthetic_pairs_take_labelled_lines_that_say_something_as_positives(
    data_dir: Path,
) -> None:
    from longscan.encoders.minilm import get_encoder
    from longscan.lexical.bm25 import build_index, tokenize
    from longscan.training.data import says_something, synthetic_labels
    from longscan.training.decontamination import fingerprint
    from longscan.training.reranker import MiningConfig, mine_synthetic_pairs

    examples = _first_examples(data_dir, "synthetic-tables", 3)
    config = MiningConfig(0, 2, 0, second_hop=True, dense_pool=4)  # dense only, within BM25's 4
    pairs, dropped = mine_synthetic_pairs(examples, get_encoder(), config, progress=False)
    assert dropped == {"without_content": 0, "contaminated": 0}
    for example in examples:
        document, labels = synthetic_labels(example)
        texts = document.sentence_texts()
        mine = [p for p in pairs if p.query == example.question]
        assert {p.kind for p in mine} == {"hop1"} and mine[0].source == "synthetic/table"
        read = {1.0: [], 0.0: []}
        for pair in mine:
            read[pair.label].append(pair.passage.split(" [SEP] ")[0])
        gold = [texts[i] for i in np.flatnonzero(labels)]
        assert sorted(read[1.0]) == sorted(gold)
        assert all(says_something(text) for text in gold)
        bm25 = build_index(texts).get_scores(tokenize([example.question])[0])
        best = {texts[i] for i in np.argsort(-bm25, kind="stable")[:4]}
        assert read[0.0] and set(read[0.0]) <= best - set(gold)
    # an example sharing its sentences with evaluation text is dropped and counted
    fingerprints = {fingerprint(t) for t in synthetic_labels(examples[0])[0].sentence_texts()}
    _, dropped = mine_synthetic_pairs(
        examples[:1], get_encoder(), config, fingerprints=fingerprints, progress=False
    )
    assert dropped == {"without_content": 0, "contaminated": 1}


def test_training_goes_on_from_an_adapter_and_refuses_one_of_another_shape(
    tiny_pairs, trained, tmp_path: Path
) -> None:
    from longscan.encoders.adapter import read_adapter

    start, _ = trained
    config = TrainConfig(
        epochs=1, batch_size=8, learning_rate=0.0, adapter=AdapterConfig(8, 16),
        init_from=str(start),
    )  # fmt: skip
    out = tmp_path / "continued"
    report = train_reranker(tiny_pairs[0], out, config, progress=False)
    before, after = read_adapter(start, "test"), read_adapter(out, "test")
    assert report["init_from_sha256"] == before.digest
    assert set(before.tensors) == set(after.tensors)
    for name, tensor in before.tensors.items():  # a zero learning rate changes nothing
        np.testing.assert_array_equal(tensor.numpy(), after.tensors[name].numpy())
    assert f"--init-from {start}" in (out / "MODEL_CARD.md").read_text()
    with pytest.raises(AdapterError, match="is not"):
        train_reranker(
            tiny_pairs[0], tmp_path / "other", TrainConfig(init_from=str(start)), progress=False
        )


def test_a_pairs_cache_keeps_how_it_was_mined_and_refuses_other_sources(
    data_dir: Path, tmp_path: Path
) -> None:
    from longscan.training.reranker import MiningConfig, training_pairs

    cache = tmp_path / "pairs.jsonl"
    mining = MiningConfig(1, 1, 0, False)
    asked = ({"squad": 2}, mining, 0, cache, str(data_dir))
    pairs, card = training_pairs(*asked, progress=False)
    again, card_again = training_pairs(*asked, progress=False)  # read back, not mined
    assert again == pairs and card_again == card and card["data"]["max_per_source"] == {"squad": 2}
    tables = Path(__file__).parents[3] / "training-data" / "synthetic-tables" / "examples.jsonl"
    with pytest.raises(ValueError, match="not as asked"):
        training_pairs(*asked, progress=False, synthetic=[tables])
    with pytest.raises(ValueError, match="not as asked"):
        training_pairs({"squad": 3}, *asked[1:], progress=False)
