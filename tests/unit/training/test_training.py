from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

from longscan.documents import Document
from longscan.encoders import get_encoder
from longscan.encoders.contextual import ContextualSentenceEncoder
from longscan.models.config import ScannerConfig
from longscan.models.scanner import ScannerEnsemble, ScannerModel
from longscan.scanning import FEATURE_NAMES, N_FEATURES, load_checkpoint, save_checkpoint
from longscan.training import TrainingArgs, TrainingSet, build_training_set, train, weighted_bce
from longscan.training.data import source_items
from longscan.training.decontamination import CleanParagraphs, contamination, sentence_fingerprints
from longscan.training.ensemble import combine_checkpoints
from longscan.training.losses import listwise_softmax
from longscan.training.trainer import cosine_with_warmup


def test_weighted_bce_uses_negatives_over_positives() -> None:
    logits = torch.tensor([[0.0, 0.0, 0.0, float("-inf")]])
    labels = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True, False]])
    # pos_weight = 2: (2 * log 2 + log 2 + log 2) / 3
    assert float(weighted_bce(logits, labels, mask)) == pytest.approx(4 * np.log(2) / 3)


def test_listwise_term_is_the_softmax_mass_missed_on_gold_sentences() -> None:
    logits = torch.tensor([[0.0, 0.0, 0.0, 9.0], [0.0, 5.0, 0.0, 0.0], [1.0, 2.0, 3.0, 4.0]])
    labels = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True, True, True, False], [True, True, True, True], [True] * 4])
    # row 1: one gold of 3 real equal logits (the padded 9.0 counts for nothing): log 3;
    # row 2: both golds share the mass of e^0 + e^5 against 2 more e^0; row 3 has no gold
    second = np.log(2 + np.exp(5) + 1) - np.log(1 + np.exp(5))
    loss = listwise_softmax(logits, labels, mask)
    assert float(loss) == pytest.approx((np.log(3) + second) / 2)
    assert float(listwise_softmax(logits[2:], labels[2:], mask[2:])) == 0.0


def test_schedule_warms_up_then_decays_to_zero() -> None:
    factor = cosine_with_warmup(100, 0.1)
    assert factor(0) == pytest.approx(0.1) and factor(9) == pytest.approx(1.0)
    assert factor(55) == pytest.approx(0.5, abs=0.02) and factor(100) == pytest.approx(0.0)


def test_decontamination_keeps_half_percent_drops_two_percent() -> None:
    sentences = [f"Sentence number {i} is here." for i in range(1000)]
    document = Document("d", " ".join(sentences))
    assert len(document.sentences) == 1000
    assert contamination(document, sentence_fingerprints(sentences[:5])) == pytest.approx(0.005)
    assert contamination(document, sentence_fingerprints(sentences[:20])) == pytest.approx(0.02)
    assert contamination(document, sentence_fingerprints(["  SENTENCE number 3 is  here."])) > 0
    headings = Document("h", "Introduction.\n\nSentence number 1 is here.")
    assert contamination(headings, sentence_fingerprints(["Introduction."])) == 0  # boilerplate


def test_evaluation_fingerprints_are_read_once_then_from_the_cache(
    data_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fingerprints of the evaluation text are read once, then from the cache folder; a
    damaged file is read again, never trusted."""
    from longscan.training import decontamination

    monkeypatch.setenv("LONGSCAN_CACHE_DIR", str(tmp_path / "cache"))  # none made yet
    reads = []
    read = decontamination._read_evaluation_fingerprints
    monkeypatch.setattr(
        decontamination, "_read_evaluation_fingerprints", lambda *a: reads.append(a) or read(*a)
    )
    first = decontamination.evaluation_fingerprints(data_dir)
    assert decontamination.evaluation_fingerprints(data_dir) == first and len(reads) == 1
    assert first == read(data_dir, False)
    (made,) = (tmp_path / "cache" / "fingerprints").glob("*.bin")
    made.write_bytes(made.read_bytes()[:-24])  # two fingerprints lost
    assert decontamination.evaluation_fingerprints(data_dir) == first and len(reads) == 2


def test_the_fingerprints_key_names_the_evaluation_files_only(tmp_path: Path) -> None:
    from longscan.training.decontamination import _fingerprints_key

    for name in ("squad/dev.json", "train-docs/a.txt", "corpus/b.txt"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("one")
    before = {corpus: _fingerprints_key(tmp_path, corpus) for corpus in (False, True)}
    (tmp_path / "train-docs" / "a.txt").write_text("two")  # training text: never read
    assert {corpus: _fingerprints_key(tmp_path, corpus) for corpus in (False, True)} == before
    (tmp_path / "corpus" / "b.txt").write_text("two")  # read only with the corpus
    assert _fingerprints_key(tmp_path, False) == before[False]
    assert _fingerprints_key(tmp_path, True) != before[True]
    (tmp_path / "squad" / "dev.json").write_text("two")
    assert _fingerprints_key(tmp_path, False) != before[False]


def test_clean_paragraphs_keep_musique_training_documents_free_of_dev_sentences() -> None:
    from longscan.bench.builders import multihop_questions

    dev_sentences = [
        s
        for q in multihop_questions("musique", "dev")
        for p in q.paragraphs
        for s in Document("p", p.text).sentence_texts()
    ]
    fingerprints = sentence_fingerprints(dev_sentences)
    keep = CleanParagraphs(fingerprints)
    items = source_items("musique", "train", 3_800, seed=0, limit=40, keep=keep)
    shares = [contamination(item.documents[0], fingerprints) for item in items]
    # supporting paragraphs may be shared with dev questions; distractors never are
    assert sum(share <= 0.01 for share in shares) >= 0.9 * len(items)
    unfiltered = source_items("musique", "train", 3_800, seed=0, limit=40)
    assert sum(contamination(i.documents[0], fingerprints) <= 0.01 for i in unfiltered) < sum(
        share <= 0.01 for share in shares
    )


def test_a_few_steps_on_real_data_lower_the_loss(tmp_path) -> None:
    encoder = ContextualSentenceEncoder(get_encoder(), paragraph_cache_size=10_000)
    data = build_training_set(
        encoder, "train", ["squad", "hotpotqa"], [600], [0], 6, progress=False
    )
    assert len(data) == 12 and data.manifest["examples"] == 12
    data.save(tmp_path / "data")
    again = TrainingSet.load(tmp_path / "data")
    assert again.sources == data.sources and again.document_of == data.document_of
    for a, b in zip(again.features + again.labels, data.features + data.labels, strict=True):
        assert torch.equal(a, b)
    for labels, features in zip(data.labels, data.features, strict=True):
        assert labels.sum() >= 1 and features.shape == (len(labels), N_FEATURES)
    args = TrainingArgs(
        model=ScannerConfig(d_model=32, n_layers=1, d_state=8, headdim=16, n_features=N_FEATURES),
        epochs=40,
        batch_size=12,
        accumulation=1,
        lr=3e-3,
        warmup_ratio=0.05,
        threads=1,
    )
    model, history = train(args, data, progress=False)
    losses = history["loss"]
    assert np.mean(losses[-5:]) < 0.7 * np.mean(losses[:5])
    assert not model.training


def tiny_args(**changes: object) -> TrainingArgs:
    """A one-layer scanner on four real SQuAD documents of 600 words: seconds to train."""
    model = ScannerConfig(d_model=32, n_layers=1, d_state=8, headdim=16, n_features=N_FEATURES)
    return TrainingArgs(
        model=model,
        datasets=("squad",),
        lengths_words=(600,),
        seeds=(0,),
        max_per_source=4,
        batch_size=4,
        accumulation=1,
        threads=1,
        **changes,  # type: ignore[arg-type]
    )


def test_run_training_writes_a_loadable_checkpoint_and_reuses_cached_data(tmp_path) -> None:
    from longscan.training.pipeline import run_training

    args = tiny_args()
    first = run_training(args, tmp_path / "a", progress=False, data_cache=tmp_path / "data")
    second = run_training(args, tmp_path / "b", progress=False, data_cache=tmp_path / "data")
    assert first["train_manifest"] == second["train_manifest"]
    assert second["seconds_data"] < first["seconds_data"]
    vectors = sorted((tmp_path / "data" / "vectors").iterdir())
    assert len(vectors) == first["train_manifest"]["documents"] + first["dev_manifest"]["documents"]
    other = replace(args, sentence_labels=True)  # other data, same documents: nothing encoded
    third = run_training(other, tmp_path / "c", progress=False, data_cache=tmp_path / "data")
    assert third["train_manifest"]["musique_gold"] == "sentence"
    assert "MuSiQue sentence answering each hop" in (tmp_path / "c" / "MODEL_CARD.md").read_text()
    assert "MuSiQue supporting paragraph" in (tmp_path / "b" / "MODEL_CARD.md").read_text()
    assert sorted((tmp_path / "data" / "vectors").iterdir()) == vectors
    model, info = load_checkpoint(tmp_path / "b")
    assert info.encoder == "all-MiniLM-L6-v2/ctx256"
    card = (tmp_path / "b" / "MODEL_CARD.md").read_text()
    assert card.startswith("# longscan scanner") and ", ".join(FEATURE_NAMES) in card
    assert_combined(tmp_path / "b", tmp_path / "c", tmp_path / "ens")
    tune = replace(args, init_from=str(tmp_path / "ens"))  # fine-tunes every member
    tuned = run_training(tune, tmp_path / "tuned", progress=False, data_cache=tmp_path / "data")
    assert [row["epoch"] for row in tuned["dev_metrics"]] == ["1 (member 0)", "1 (member 1)"]
    before, after = load_checkpoint(tmp_path / "ens")[0], load_checkpoint(tmp_path / "tuned")[0]
    assert isinstance(after, ScannerEnsemble) and len(after.members) == 2
    for old, new in zip(before.members, after.members, strict=True):
        pairs = zip(old.parameters(), new.parameters(), strict=True)
        assert any(not torch.equal(a, b) for a, b in pairs)


def test_instructed_copies_read_the_same_vectors_with_their_own_query_columns(tmp_path) -> None:
    from longscan.training.pipeline import run_training

    args = tiny_args(instruction_copies=1.0)
    report = run_training(args, tmp_path / "a", progress=False, data_cache=tmp_path / "data")
    train_manifest, dev_manifest = report["train_manifest"], report["dev_manifest"]
    assert train_manifest["instruction_copies"] * 2 == train_manifest["examples"] > 0
    assert "instruction_copies" not in dev_manifest  # dev rows stay comparable across runs
    data = TrainingSet.load(next((tmp_path / "data").glob("*/train")))
    half = len(data) // 2
    assert data.document_of[half:] == data.document_of[:half]
    assert all(source.endswith("+instruction") for source in data.sources[half:])
    for plain, copy in zip(data.labels[:half], data.labels[half:], strict=True):
        assert torch.equal(plain, copy)
    assert not torch.equal(data.queries[0], data.queries[half])
    pairs = zip(data.features[:half], data.features[half:], strict=True)
    assert any(not torch.equal(plain, copy) for plain, copy in pairs)
    card = (tmp_path / "a" / "MODEL_CARD.md").read_text()
    assert f"{train_manifest['instruction_copies']} are copies" in card


def test_a_new_synthetic_mix_reads_the_datasets_part_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The datasets' examples are cached apart from the synthetic ones: a run with a new
    synthetic file builds only that part, and a run with the same mix builds nothing."""
    from longscan.training import pipeline

    args = tiny_args()
    cache = tmp_path / "data"
    first = pipeline.run_training(args, tmp_path / "a", progress=False, data_cache=cache)
    shipped = Path(__file__).parents[3] / "training-data" / "synthetic-filings" / "examples.jsonl"
    lines = [  # three short filing spans: seconds to encode
        line
        for line in shipped.read_text(encoding="utf-8").splitlines()
        if (raw := json.loads(line))["source_end"] - raw["source_start"] < 12_000
    ][:3]
    mix = tmp_path / "mix.jsonl"
    mix.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    mixed_args = replace(args, synthetic=(str(mix),))
    monkeypatch.setattr(pipeline, "build_training_set", _never_called)
    mixed = pipeline.run_training(mixed_args, tmp_path / "b", progress=False, data_cache=cache)
    datasets_part = {k: v for k, v in mixed["train_manifest"].items() if k != "synthetic"}
    assert datasets_part == first["train_manifest"]
    assert mixed["dev_manifest"] == first["dev_manifest"]
    assert mixed["train_manifest"]["synthetic"]["examples"] == 3
    for name in (
        "_examples_of_files",
        "synthetic_training_set",
        "evaluation_fingerprints",
        "get_encoder",
    ):
        monkeypatch.setattr(pipeline, name, _never_called)  # the same mix builds nothing
    again = pipeline.run_training(mixed_args, tmp_path / "c", progress=False, data_cache=cache)
    assert again["train_manifest"] == mixed["train_manifest"]


def _never_called(*args: object, **kwargs: object) -> None:
    raise AssertionError("built a part of the data that the cache holds")


def assert_combined(first: Path, second: Path, out: Path) -> None:
    """Two trained checkpoints combine into one that scores their mean, with a card naming
    both; an ensemble or a checkpoint of another config is refused as a member."""
    combine_checkpoints([first, second], out, "longscan ensemble ...")
    ensemble, info = load_checkpoint(out)
    members = [load_checkpoint(path)[0] for path in (first, second)]
    assert info.members == 2
    sentences, query = torch.randn(1, 9, 384), torch.randn(1, 384)
    features = torch.rand(1, 9, info.config.n_features)
    mean = (
        members[0].scan(sentences, query, features) + members[1].scan(sentences, query, features)
    ) / 2
    assert torch.allclose(ensemble.scan(sentences, query, features), mean)
    card = (out / "MODEL_CARD.md").read_text()
    assert card.startswith("# longscan scanner ensemble (2 members)") and "## Member 0:" in card
    with pytest.raises(ValueError, match="already an ensemble"):
        combine_checkpoints([out, first], out.with_name("nested"), "")
    other = save_checkpoint(
        ScannerModel(replace(info.config, d_model=16)), out.with_name("other"), info.encoder
    )
    with pytest.raises(ValueError, match="another config"):
        combine_checkpoints([first, other], out.with_name("mixed"), "")


@pytest.mark.parametrize("module_name", ["longscan.scanning.features", "longscan.training.data"])
def test_cached_data_is_keyed_by_the_code_that_builds_it(
    module_name: str, tmp_path, monkeypatch
) -> None:
    """Data built by other feature or labelling code (same column names) is not reused: its
    key differs."""
    import importlib

    from longscan.training import pipeline

    module = importlib.import_module(module_name)
    args = TrainingArgs(datasets=("squad",))
    before = pipeline._data_key(args)
    edited = tmp_path / "edited.py"
    edited.write_text(Path(module.__file__).read_text() + "\n# a changed rule\n")
    monkeypatch.setattr(module, "__file__", str(edited))
    assert pipeline._data_key(args) != before
    assert pipeline._data_key(replace(args, seed=7)) == pipeline._data_key(args)


def test_a_scanner_trained_on_int8_vectors_reads_them(tmp_path) -> None:
    """Trained on the int8 export's vectors, the checkpoint names that encoder, its data is
    cached apart from float32's, and the scanner it loads into encodes with int8."""
    from longscan.scanning.scanner import Scanner
    from longscan.training import pipeline

    args = tiny_args(encoder="all-MiniLM-L6-v2+int8")
    assert pipeline._data_key(args) != pipeline._data_key(replace(args, encoder="all-MiniLM-L6-v2"))
    report = pipeline.run_training(args, tmp_path / "int8", progress=False)
    assert report["train_manifest"]["encoder"] == "all-MiniLM-L6-v2+int8/ctx256"
    scanner = Scanner.from_pretrained(tmp_path / "int8")
    assert scanner.encoder.name == "all-MiniLM-L6-v2+int8/ctx256"
    document = Document("d", "The key is under the stone.\n\nIt rained all day in June.")
    assert np.isfinite(scanner.score("Where is the key?", [document])).all()
    with pytest.raises(ValueError, match="unknown encoder 'minilm-int4'"):
        pipeline.run_training(replace(args, encoder="minilm-int4"), tmp_path / "bad")


def test_a_scanner_trained_on_tuned_vectors_carries_its_encoder_adapter(tuned, tmp_path) -> None:
    """With a fine-tuned encoder, the data is keyed and the checkpoint named by its adapter,
    the checkpoint keeps a hash-checked copy of it, and the scanner reads with it."""
    from longscan.encoders.adapter import CONFIG_FILE, WEIGHTS_FILE
    from longscan.scanning.checkpoint import ENCODER_ADAPTER_DIR, CheckpointError
    from longscan.scanning.scanner import Scanner
    from longscan.training import pipeline
    from longscan.training.args import encoder_reading

    adapter = tuned[0]
    args = tiny_args(encoder_adapter=str(adapter))
    assert pipeline._data_key(args) != pipeline._data_key(tiny_args())
    report = pipeline.run_training(args, tmp_path / "ft", progress=False)
    name = report["train_manifest"]["encoder"]
    assert name == get_encoder(adapter=str(adapter)).name + "/ctx256" != "all-MiniLM-L6-v2/ctx256"
    card = (tmp_path / "ft" / "MODEL_CARD.md").read_text()
    assert f"copied into `{ENCODER_ADAPTER_DIR}/`" in card
    scanner = Scanner.from_pretrained(tmp_path / "ft")
    assert scanner.encoder.name == name
    document = Document("d", "The key is under the stone.\n\nIt rained all day in June.")
    assert np.isfinite(scanner.score("Where is the key?", [document])).all()
    plain = ContextualSentenceEncoder.from_name("all-MiniLM-L6-v2/ctx256")
    tuned_vectors = scanner.encoder.encode_document(document)
    assert not np.allclose(tuned_vectors, plain.encode_document(document), atol=1e-4)
    copied = tmp_path / "ft" / ENCODER_ADAPTER_DIR
    assert encoder_reading(tmp_path / "ft", None, None, None, None) == (
        "all-MiniLM-L6-v2",
        copied,
        256,
        False,
    )
    config = json.loads((copied / CONFIG_FILE).read_text())
    config["adapter"]["alpha"] *= 2  # another scaling: other merged weights, other vectors
    (copied / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(CheckpointError, match=f"{ENCODER_ADAPTER_DIR}/{CONFIG_FILE}: SHA-256"):
        Scanner.from_pretrained(tmp_path / "ft")
    shutil.copyfile(adapter / CONFIG_FILE, copied / CONFIG_FILE)
    raw = bytearray((copied / WEIGHTS_FILE).read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    (copied / WEIGHTS_FILE).write_bytes(bytes(raw))
    with pytest.raises(CheckpointError, match=f"{ENCODER_ADAPTER_DIR}/{WEIGHTS_FILE}: SHA-256"):
        Scanner.from_pretrained(tmp_path / "ft")
