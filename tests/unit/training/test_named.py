"""Questions that name the filer: the name comes from a real cover page, the copy keeps the
example's labels and text, and sources without a cover give no copy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from longscan.documents import Document
from longscan.training.named import (
    NAMED_SUFFIX,
    Filers,
    content_words,
    filer_name,
    named_copies,
    naming,
    other_filers,
)
from longscan.training.synthetic_examples import SyntheticExample, read_examples

SHIPPED_FILINGS = Path(__file__).parents[3] / "training-data" / "synthetic-filings"


@pytest.mark.parametrize(
    ("filing", "name"),
    [
        ("aapl_aapl-10-q-2025-08-01.txt", "Apple Inc."),
        ("10-K_0001193125-10-073212.txt", "GAINSCO, INC."),
        ("20-F_0001062993-16-008650.txt", "LONCOR RESOURCES INC."),
    ],
)
def test_the_filer_is_read_from_a_real_cover_page(data_dir: Path, filing: str, name: str) -> None:
    text = (data_dir / "train-docs" / "sec-full-filings" / filing).read_text(encoding="utf-8")
    assert filer_name(text) == name


def test_a_contract_and_a_prospectus_have_no_filer(data_dir: Path) -> None:
    docs = data_dir / "train-docs"
    contract = next((docs / "cuad").glob("*.txt"))
    prospectus = docs / "sec-full-filings" / "data_Flushing-424B4.txt"
    for path in (contract, prospectus):
        assert filer_name(path.read_text(encoding="utf-8")) is None, path.name


def test_naming_keeps_the_question_and_adds_the_name() -> None:
    question = "What were the total revenues in 2024?"
    phrasings = {naming(question, "Tesla, Inc.", f"example-{i}") for i in range(30)}
    assert phrasings == {
        "For Tesla, Inc., what were the total revenues in 2024?",
        "What were the total revenues in 2024 of Tesla, Inc.?",
        "Tesla, Inc.: What were the total revenues in 2024?",
    }
    assert naming(question, "Tesla, Inc.", "x") == naming(question, "Tesla, Inc.", "x")
    assert naming("Revenue by segment", "Tesla", "example-1").endswith("Revenue by segment")


def shipped_lines() -> list[tuple[str, dict[str, Any]]]:
    """The shipped filings examples' packed lines, each with its decoded JSON."""
    lines = (SHIPPED_FILINGS / "examples.jsonl").read_text(encoding="utf-8").splitlines()
    return [(line, json.loads(line)) for line in lines]


def packed_file(tmp_path: Path, lines: list[str]) -> Path:
    """A file of some shipped lines (reading all 2,636 back takes a minute)."""
    path = tmp_path / "chosen.jsonl"
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def is_filing(raw: dict[str, Any]) -> bool:
    return raw["source"].startswith("sec-full-filings/")


def test_named_copies_of_the_shipped_examples(data_dir: Path, tmp_path: Path) -> None:
    filings = [line for line, raw in shipped_lines() if is_filing(raw)]
    others = [line for line, raw in shipped_lines() if not is_filing(raw)][:20]
    path = packed_file(tmp_path, filings + others)  # 20 contracts and risk-factor sections
    examples = read_examples(path, data_dir / "train-docs")
    copies, unnamed = named_copies(examples, data_dir / "train-docs")
    by_id = {example.id: example for example in examples}
    assert copies, "the shipped filings examples include 10-K and 10-Q spans"
    assert unnamed > 0  # contracts and risk-factor sections have no cover page
    assert len(copies) + unnamed <= len(examples)
    for copy in copies:
        original = by_id[copy.id.removesuffix(NAMED_SUFFIX)]
        assert copy.id.endswith(NAMED_SUFFIX)
        assert (copy.text, copy.labels, copy.source_id) == (
            original.text,
            original.labels,
            original.source_id,
        )
        assert copy.question != original.question
        source = (data_dir / "train-docs" / copy.source_id).read_text(encoding="utf-8")
        name = filer_name(source)
        assert name is not None and name in copy.question
        assert name.casefold() not in original.question.casefold()


def test_train_mixes_in_the_named_copies_and_says_so(data_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from longscan.cli import app

    short = [  # ten filing spans under 3,000 words: seconds to encode
        line
        for line, raw in shipped_lines()
        if is_filing(raw) and raw["source_end"] - raw["source_start"] < 18_000
    ][:10]
    path = packed_file(tmp_path, short)
    copies, unnamed = named_copies(read_examples(path), data_dir / "train-docs")
    assert len(copies) >= 5
    out = tmp_path / "named"
    result = CliRunner().invoke(
        app,
        ["train", "--out", str(out), "--datasets", "", "--synthetic", str(path),
         "--named-synthetic", str(path), "--named-synthetic", str(path), "--named-among", "1",
         "--d-model", "32", "--layers", "1", "--threads", "1"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "training.json").read_text())["train_manifest"]
    named = manifest["named"]  # a file named twice weighs twice
    assert 0 < named <= 2 * len(copies) and named % 2 == 0
    assert manifest["named_without_filer"] == 2 * unnamed
    assert manifest["examples"] > named  # the originals are trained on too
    card = (out / "MODEL_CARD.md").read_text()
    assert f"Of them, {named} are copies whose question names the filer" in card
    assert 0 < manifest["read_beside_others"] <= named  # the short spans have several filers
    assert f"{manifest['read_beside_others']} copies are read among other" in " ".join(card.split())
    alone = CliRunner().invoke(
        app, ["train", "--out", str(tmp_path / "x"), "--synthetic", str(path), "--named-among", "1"]
    )
    assert alone.exit_code != 0 and "--named-among reads --named-synthetic copies" in alone.output


def short_filing_examples(tmp_path: Path, count: int) -> list[SyntheticExample]:
    """The first ``count`` shipped filing spans under 3,000 words: seconds to encode."""
    short = [
        line
        for line, raw in shipped_lines()
        if is_filing(raw) and raw["source_end"] - raw["source_start"] < 18_000
    ][:count]
    return read_examples(packed_file(tmp_path, short))


def test_other_filers_are_other_companies_asked_the_closest_questions(
    data_dir: Path, tmp_path: Path
) -> None:
    examples = short_filing_examples(tmp_path, 40)
    filers = Filers(data_dir / "train-docs")
    copies, _ = named_copies(examples, data_dir / "train-docs")
    beside = other_filers(copies, examples, 2, data_dir / "train-docs")
    assert set(beside) == {copy.id for copy in copies}
    for copy in copies:
        name = filers.of(copy)
        own = content_words(copy.question, leave_out=name or "")
        others = [e for e in examples if filers.of(e) not in (None, name)]
        chosen = beside[copy.id]
        assert len(chosen) == min(2, len(others))
        assert all(filers.of(other) not in (None, name) for other in chosen)
        overlaps = sorted((len(own & content_words(e.question)) for e in others), reverse=True)
        assert [len(own & content_words(e.question)) for e in chosen] == overlaps[:2]
    assert any(beside.values()), "the short spans come from several filers"


def test_a_copy_is_read_beside_another_filer_as_a_collection_is_read(tmp_path: Path) -> None:
    from longscan.encoders import get_encoder
    from longscan.encoders.contextual import ContextualSentenceEncoder
    from longscan.training.data import synthetic_training_set
    from longscan.training.decontamination import sentence_fingerprints

    examples = short_filing_examples(tmp_path, 40)
    filers = Filers()
    own = next(e for e in examples if filers.of(e) is not None)
    other = next(e for e in examples if filers.of(e) not in (None, filers.of(own)))
    encoder = ContextualSentenceEncoder(get_encoder())
    alone = synthetic_training_set(encoder, [own, other], progress=False)
    together = synthetic_training_set(encoder, [own], progress=False, beside={own.id: [other]})
    (read,) = together.document_of
    lengths = [len(v) for v in alone.vectors]
    assert len(together.vectors[read]) == len(together.labels[0]) == sum(lengths)
    assert len(together.features[0]) == sum(lengths)
    own_first = torch.equal(together.vectors[read][: lengths[0]], alone.vectors[0])
    order = [0, 1] if own_first else [1, 0]  # the order an id's hash picks
    assert torch.equal(together.vectors[read], torch.cat([alone.vectors[i] for i in order]))
    negatives = torch.zeros(lengths[1])
    expected = [alone.labels[0], negatives] if order == [0, 1] else [negatives, alone.labels[0]]
    assert torch.equal(together.labels[0], torch.cat(expected))
    assert together.manifest["read_beside_others"] == 1

    tainted = sentence_fingerprints(Document("x", other.text).sentence_texts())
    kept = synthetic_training_set(
        encoder, [own], tainted, progress=False, beside={own.id: [other]}
    )  # evaluation text shares the other span: it is left out, the copy kept
    (read,) = kept.document_of
    assert torch.equal(kept.vectors[read], alone.vectors[0])
    assert torch.equal(kept.labels[0], alone.labels[0])
