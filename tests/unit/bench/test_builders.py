"""Builders place gold evidence exactly, reach their length, and never mix splits."""

from __future__ import annotations

from pathlib import Path

import pytest

from longscan.bench.builders import (
    build_loong,
    build_multihop,
    build_squad_long,
    multihop_questions,
    split_of,
    squad_articles,
)
from longscan.bench.catalogue import BENCHMARKS, build_benchmark
from longscan.bench.datasets import load_hotpotqa, load_leval, load_loong
from longscan.items import QAItem
from longscan.segment import count_words

BUILT = ["squad-long", "hotpotqa-long", "musique-long", "hotpotqa-collection", "musique-collection"]


def _signature(items: list[QAItem]) -> list[tuple]:
    return [
        (item.id, [d.text for d in item.documents], item.gold_spans, item.gold_doc_ids)
        for item in items
    ]


def _expected_gold(name: str, split: str, data_dir: Path) -> dict[str, list[str]]:
    """Question id -> the evidence texts the loader says its gold spans must cover."""
    dataset = name.split("-")[0]
    return {
        q.id: sorted(p.text[s:e] for p in q.paragraphs for s, e in p.support)
        for q in multihop_questions(dataset, split, data_dir=data_dir)
    }


def test_split_of_is_stable_and_proportional() -> None:
    keys = [f"question-{i}" for i in range(2000)]
    splits = [split_of(key, 0.3, seed=7) for key in keys]
    assert splits == [split_of(key, 0.3, seed=7) for key in keys]
    assert 0.25 < splits.count("dev") / len(keys) < 0.35
    assert splits != [split_of(key, 0.3, seed=8) for key in keys]
    assert {split_of(key, 0.0) for key in keys} == {"train"}
    assert {split_of(key, 1.0) for key in keys} == {"dev"}
    with pytest.raises(ValueError, match="dev_fraction"):
        split_of("x", 1.5)


@pytest.mark.parametrize("name", BUILT)
@pytest.mark.parametrize("target_words", [2_000, 5_000, 20_000])
def test_gold_offsets_are_exact(data_dir: Path, name: str, target_words: int) -> None:
    items = build_benchmark(name, "dev", target_words, max_items=40, data_dir=data_dir)
    assert items
    expected = None if name == "squad-long" else _expected_gold(name, "dev", data_dir)
    for item in items:
        assert item.gold_spans
        texts = []
        for span in item.gold_spans:
            text = item.document(span.doc_id).text[span.start : span.end]
            assert text and text == text.strip()
            texts.append(text)
        if expected is None:
            assert set(texts) <= set(item.answers)
        else:
            assert sorted(texts) == expected[item.metadata["question_id"]]


@pytest.mark.parametrize("name", BUILT)
def test_target_length_is_reached(data_dir: Path, name: str) -> None:
    for target in (2_000, 10_000):
        items = build_benchmark(name, "dev", target, max_items=10, data_dir=data_dir)
        for item in items:
            words = sum(count_words(d.text) for d in item.documents)
            assert item.metadata["total_words"] == words >= target
            assert item.metadata["split"] == "dev"


def test_squad_documents_stop_at_the_target(data_dir: Path) -> None:
    longest = max(p.words for a in squad_articles("dev", data_dir=data_dir) for p in a.paragraphs)
    for item in build_squad_long("dev", 5_000, max_items=200, data_dir=data_dir):
        assert item.metadata["total_words"] < 5_000 + longest + 20  # one paragraph and a title


def test_squad_reaches_100k_words_when_allowed(data_dir: Path) -> None:
    items = build_squad_long("dev", 100_000, data_dir=data_dir, dev_fraction=1.0)
    assert items and all(item.metadata["total_words"] >= 100_000 for item in items)
    with pytest.raises(ValueError, match="fewer than target_words"):
        build_squad_long("dev", 10_000_000, data_dir=data_dir)


def test_squad_gold_positions_and_layout(data_dir: Path) -> None:
    for item in build_squad_long("dev", 5_000, max_items=50, data_dir=data_dir):
        (document,) = item.documents
        positions = item.metadata["gold_positions"]
        assert positions == [span.start / len(document.text) for span in item.gold_spans]
        assert all(0 <= p < 1 for p in positions)
        first_title = document.metadata["articles"][0].replace("_", " ")
        assert document.text.startswith(first_title + "\n\n")


@pytest.mark.parametrize("name", ["hotpotqa-long", "musique-long"])
def test_multihop_gold_positions(data_dir: Path, name: str) -> None:
    for item in build_benchmark(name, "dev", 5_000, max_items=20, data_dir=data_dir):
        length = len(item.documents[0].text)
        assert item.metadata["gold_positions"] == [s.start / length for s in item.gold_spans]
        assert not item.gold_doc_ids


@pytest.mark.parametrize("name", BUILT)
def test_same_seed_same_items_other_seed_other_order(data_dir: Path, name: str) -> None:
    def build(seed: int) -> list[QAItem]:
        return build_benchmark(name, "dev", 5_000, max_items=30, seed=seed, data_dir=data_dir)

    first = build(0)
    assert _signature(first) == _signature(build(0))
    assert [item.id for item in first] != [item.id for item in build(1)]


def test_squad_splits_share_no_article_or_question(data_dir: Path) -> None:
    built = {
        split: build_squad_long(split, 2_000, max_items=2_000, data_dir=data_dir)
        for split in ("train", "dev")
    }
    titles = {
        split: {t for item in items for t in item.documents[0].metadata["articles"]}
        for split, items in built.items()
    }
    questions = {
        split: {item.metadata["question_id"] for item in items} for split, items in built.items()
    }
    assert titles["train"] and titles["dev"] and not titles["train"] & titles["dev"]
    assert not questions["train"] & questions["dev"]
    for split, items in built.items():
        assert len({item.id for item in items}) == len(items)  # each question at most once
        assert all(item.metadata["title"] in titles[split] for item in items)


@pytest.mark.parametrize(
    ("dataset", "dev_fraction"), [("musique", None), ("hotpotqa", None), ("hotpotqa", 0.5)]
)
def test_multihop_splits_are_disjoint(
    data_dir: Path, dataset: str, dev_fraction: float | None
) -> None:
    ids = {}
    paragraphs = {}
    for split in ("train", "dev"):
        questions = multihop_questions(dataset, split, dev_fraction, data_dir=data_dir)
        ids[split] = {q.id for q in questions}
        paragraphs[split] = {p.key for q in questions for p in q.paragraphs}
        items = build_multihop(
            dataset, split, 5_000, data_dir=data_dir, dev_fraction=dev_fraction, mode="collection"
        )
        assert {item.metadata["question_id"] for item in items} == ids[split]
        for item in items:  # distractors come from the same split only
            assert {(d.metadata["title"], d.text) for d in item.documents} <= paragraphs[split]
    assert ids["train"] and ids["dev"] and not ids["train"] & ids["dev"]
    if dataset == "hotpotqa" and dev_fraction is not None:
        train_file = {q.id for q in load_hotpotqa(data_dir, "train")}
        assert ids["train"] | ids["dev"] == train_file


@pytest.mark.parametrize("dataset", ["hotpotqa", "musique"])
def test_multihop_mixes_in_other_questions_paragraphs(data_dir: Path, dataset: str) -> None:
    questions = {q.id: q for q in multihop_questions(dataset, "dev", data_dir=data_dir)}
    for item in build_multihop(dataset, "dev", 20_000, max_items=20, data_dir=data_dir):
        own = questions[item.metadata["question_id"]].paragraphs
        text = item.documents[0].text
        assert all(p.text in text for p in own)
        assert item.metadata["paragraphs"] > item.metadata["own_paragraphs"] * 5
        pieces = text.split("\n\n")
        assert len(pieces) == item.metadata["paragraphs"] == len(set(pieces))  # no repeats


@pytest.mark.parametrize("dataset", ["hotpotqa", "musique"])
def test_collection_mode_documents(data_dir: Path, dataset: str) -> None:
    for item in build_multihop(
        dataset, "dev", 5_000, max_items=30, data_dir=data_dir, mode="collection"
    ):
        keys = [(d.metadata["title"], d.text) for d in item.documents]
        assert len(set(keys)) == len(keys)
        assert item.gold_doc_ids and set(item.gold_doc_ids) == {s.doc_id for s in item.gold_spans}
        for document in item.documents:
            title = document.metadata["title"]
            assert document.id == title or document.id.startswith(title + " [")
            assert document.text.startswith(title + "\n")


@pytest.mark.parametrize("dataset", ["hotpotqa", "musique"])
def test_keep_leaves_rejected_distractors_out_but_never_evidence(
    data_dir: Path, dataset: str
) -> None:
    def keep(paragraph) -> bool:  # reject every paragraph whose title starts with A-M
        return paragraph.title[:1].upper() > "M"

    for item in build_multihop(dataset, "train", 3_000, max_items=15, data_dir=data_dir, keep=keep):
        question = item.metadata["question_id"]
        supporting = {
            p.text
            for q in multihop_questions(dataset, "train", data_dir=data_dir)
            if q.id == question
            for p in q.paragraphs
            if p.supporting
        }
        pieces = item.documents[0].text.split("\n\n")
        assert supporting <= set(pieces)
        rejected = [p for p in pieces if p not in supporting and p[:1].upper() <= "M"]
        assert not rejected


def test_leval_items_count_equals_instructions(data_dir: Path) -> None:
    for name, task in (("leval-coursera", "coursera"), ("leval-financial", "financial_qa")):
        items = build_benchmark(name, data_dir=data_dir)
        assert len(items) == len(load_leval(data_dir, task))
        assert all(len(item.documents) == 1 for item in items)
        with pytest.raises(ValueError, match="evaluation set"):
            build_benchmark(name, "train", data_dir=data_dir)


def test_loong_collection_and_concatenation(data_dir: Path) -> None:
    loaded = {item.id: item for item in load_loong(data_dir)}
    collections = build_loong(seed=3, data_dir=data_dir)
    assert [i.id for i in collections] == [i.id for i in build_loong(seed=3, data_dir=data_dir)]
    for item, joined in zip(
        collections, build_loong(seed=3, data_dir=data_dir, concatenate=True), strict=True
    ):
        original = loaded[item.id]
        assert sorted(d.id for d in item.documents) == sorted(d.id for d in original.documents)
        (document,) = joined.documents
        parts = document.metadata["parts"]
        assert [part["id"] for part in parts] == [d.id for d in item.documents]
        for part, source in zip(parts, item.documents, strict=True):
            assert document.text[part["start"] : part["end"]] == source.text
            header = source.text.split("\n", 1)[0]
            assert header.startswith("《") or item.metadata["type"] == "paper"
        assert "\n\n".join(d.text for d in item.documents) == document.text


def test_every_listed_benchmark_builds(data_dir: Path) -> None:
    for name, description in BENCHMARKS.items():
        assert description
        items = build_benchmark(name, "dev", 2_000, max_items=2, data_dir=data_dir)
        assert 1 <= len(items) <= 2
        assert all(item.metadata["split"] == "dev" for item in items)
    with pytest.raises(ValueError, match="unknown benchmark"):
        build_benchmark("nope")
    with pytest.raises(ValueError, match="unknown split"):
        build_benchmark("squad-long", "test")
