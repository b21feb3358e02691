"""The committed synthetic filings examples: small, rebuilt exactly from ``train-docs/``,
and none sharing more than 1% of its sentences with any evaluation document."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from longscan.documents import Document
from longscan.tables import row_context
from longscan.training.decontamination import contamination, evaluation_fingerprints
from longscan.training.synthetic_examples import SyntheticExample, parse_examples, read_examples

DATA = Path(__file__).parents[3] / "training-data"
SHIPPED = DATA / "synthetic-filings"


@cache
def shipped_examples(folder: str, data_dir: Path) -> list[SyntheticExample]:
    """A committed file read once for the module (rebuilding 2,636 examples takes seconds)."""
    return read_examples(DATA / folder / "examples.jsonl", data_dir / "train-docs")


@pytest.fixture(scope="module")
def fingerprints(
    data_dir: Path, tmp_path_factory: pytest.TempPathFactory, evaluation_fingerprints_made: Path
) -> set[bytes]:
    """Every evaluation sentence (the corpus included): about a minute to segment, once a
    session. A module's fixture comes before each test's isolated cache: it names its own."""
    cache = tmp_path_factory.mktemp("cache")
    (cache / "fingerprints").symlink_to(evaluation_fingerprints_made, target_is_directory=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LONGSCAN_CACHE_DIR", str(cache))
        return evaluation_fingerprints(str(data_dir), corpus=True)


@pytest.mark.parametrize(
    ("folder", "strategies", "sources", "at_least"),
    [
        ("synthetic-filings", {"chunk", "link"}, ("cuad", "sec-full-filings", "sec-10k-item1a"),
         2000),
        ("synthetic-tables", {"table"}, ("sec-full-filings",), 100),
    ],
)  # fmt: skip
def test_the_shipped_examples_are_small_clean_and_rebuild_from_their_sources(
    data_dir: Path,
    fingerprints: set[bytes],
    folder: str,
    strategies: set[str],
    sources: tuple[str, ...],
    at_least: int,
) -> None:
    assert (DATA / folder / "examples.jsonl").stat().st_size <= 20 * 2**20
    examples = shipped_examples(folder, data_dir)  # hashes and labels checked
    assert len(examples) >= at_least and len({e.id for e in examples}) == len(examples)
    assert {e.strategy for e in examples} == strategies
    assert all(e.source_id.split("/")[0] in sources for e in examples)
    dirty = [e.id for e in examples if contamination(Document(e.id, e.text), fingerprints) > 0.01]
    assert dirty == []
    counts = json.loads((DATA / folder / "stats.json").read_text(encoding="utf-8"))
    assert sum(counts[s]["examples"] for s in counts) >= len(examples)
    assert all(isinstance(counts[s]["dropped"], dict) for s in counts)


def test_examples_cut_to_begin_at_their_evidence_keep_every_label_exact(
    data_dir: Path,
) -> None:
    """The spans `synth` cuts never begin with their evidence; a cut copy does, with the same
    labelled text at shifted offsets and its place in the source kept."""
    from longscan.training.synthetic_examples import begin_some_at_evidence, starting_at_evidence

    examples = shipped_examples(SHIPPED.name, data_dir)[:60]
    assert all(_first_sentence(e) not in e.labels for e in examples)
    for example in examples:
        cut = starting_at_evidence(example)
        assert cut is not None and cut.question == example.question
        assert _first_sentence(cut) in cut.labels
        assert [cut.text[a:b] for a, b in cut.labels] == [
            example.text[a:b] for a, b in example.labels
        ]
        assert example.text.endswith(cut.text) and len(cut.text) < len(example.text)
        assert cut.source_start - example.source_start == len(example.text) - len(cut.text)

    assert begin_some_at_evidence(examples, 0.0) == (examples, set())
    every, every_cut = begin_some_at_evidence(examples, 1.0)
    assert every_cut == {e.id for e in examples}
    assert every == [starting_at_evidence(e) for e in examples]
    some, some_cut = begin_some_at_evidence(examples, 0.5)
    assert 0 < len(some_cut) < len(examples)
    assert {e.id for e, cut in zip(examples, some, strict=True) if cut != e} == some_cut
    reversed_some, _ = begin_some_at_evidence(examples[::-1], 0.5)
    assert reversed_some == some[::-1]  # chosen by id, not by place in the list


def _first_sentence(example: SyntheticExample) -> tuple[int, int]:
    start, end = Document(example.id, example.text).sentences[0]
    return int(start), int(end)


@pytest.mark.parametrize(
    ("text", "says"),
    [("\u2022", False), ("\u200b", False), ("[\u2026***\u2026]", False), ("21", False),
     ("2.", False), ("%", False), ("Item 2.", True), ("2024 2023", True),
     ("Total liabilities 1,234", True)],
)  # fmt: skip
def test_a_bullet_or_a_page_number_says_nothing(text: str, says: bool) -> None:
    from longscan.training.data import says_something

    assert says_something(text) is says


def test_labelled_bullets_of_the_shipped_examples_are_not_positives(data_dir: Path) -> None:
    """A writer labels a run of lines; the bullets and numbers inside it are no evidence, and
    an example left with no positive is dropped and counted, never trained on as all-negative."""
    from dataclasses import replace

    from longscan.encoders import get_encoder
    from longscan.encoders.contextual import ContextualSentenceEncoder
    from longscan.training.data import says_something, synthetic_labels, synthetic_training_set

    examples = shipped_examples(SHIPPED.name, data_dir)[:200]
    silent = 0
    for example in examples:
        document, labels = synthetic_labels(example)
        spans = [(int(a), int(b)) for a, b in document.sentences]
        positives = {span for span, label in zip(spans, labels, strict=True) if label}
        assert positives == {s for s in example.labels if says_something(example.text[slice(*s)])}
        silent += len(example.labels) - len(positives)
    assert silent > 0  # the shipped file holds such labels: the rule is exercised
    bullet_only = next(
        replace(e, labels=[s]) for e in examples for s in e.labels
        if not says_something(e.text[slice(*s)])
    )  # fmt: skip
    data = synthetic_training_set(
        ContextualSentenceEncoder(get_encoder()), [bullet_only, examples[0]], progress=False
    )
    assert data.manifest["dropped_without_content"] == 1 and len(data.labels) == 1
    assert data.manifest["dropped_ids"] == [bullet_only.id]  # so no count takes it as trained on
    assert all(label.sum() > 0 for label in data.labels)


def test_every_reader_drops_the_same_synthetic_examples_and_checks_a_span_once(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``usable_synthetic`` (the scanner's data, the re-scorer's pairs, the token-level rows):
    a contaminated span is dropped and reported with its reason, every other example comes
    with ``synthetic_labels``' labels, and a span met again is not checked again."""
    import numpy as np

    from longscan.training import decontamination
    from longscan.training.data import synthetic_labels, usable_synthetic
    from longscan.training.decontamination import fingerprint

    path = DATA / "synthetic-tables" / "examples.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()[:3]
    examples = parse_examples("\n".join(lines), str(path), data_dir / "train-docs")
    dirty = examples[1]
    fingerprints = {fingerprint(t) for t in Document(dirty.id, dirty.text).sentence_texts()}
    checked = []
    monkeypatch.setattr(
        decontamination, "contamination", lambda d, f: checked.append(d.id) or contamination(d, f)
    )
    dropped = []

    def drop(example: SyntheticExample, reason: str) -> None:
        dropped.append((example.id, reason))

    kept = list(usable_synthetic([*examples, *examples], fingerprints, 0.01, drop))
    assert dropped == [(dirty.id, "contaminated")] * 2
    assert [e.id for e, _, _ in kept] == [e.id for e in examples if e is not dirty] * 2
    for example, document, labels in kept:
        assert np.array_equal(labels, synthetic_labels(example)[1]) and labels.any()
        assert document.text == example.text
    assert sorted(checked) == sorted(e.id for e in examples)  # once per span


def test_a_labelled_rows_context_lines_are_negatives_only_when_asked(data_dir: Path) -> None:
    """``row_context_negative``: of the committed table examples over real filings, a labelled
    title, column header or group line of a labelled row turns negative; the rows themselves,
    every other positive and every unlabelled line keep their labels."""
    from longscan.training.data import synthetic_labels

    examples = shipped_examples("synthetic-tables", data_dir)[:120]
    turned = 0
    for example in examples:
        document, plain = synthetic_labels(example)
        _, relabelled = synthetic_labels(example, row_context_negative=True)
        context = {
            unit for row, units in row_context(document).items() if plain[row] for unit in units
        }
        for unit, (before, after) in enumerate(zip(plain, relabelled, strict=True)):
            assert after == (0.0 if unit in context else before)
        rows = [row for row in row_context(document) if plain[row] and row not in context]
        assert all(relabelled[row] == 1 for row in rows)
        turned += int(plain.sum() - relabelled.sum())
        text = document.sentence_texts()
        assert all(text[unit].strip() for unit in context)  # real lines, cut where they are
    assert turned > 0  # the committed examples hold such labels: the rule is exercised
