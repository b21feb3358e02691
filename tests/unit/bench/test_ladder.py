"""The ladder's global distractors: real reports cut into EMB-S-sized documents."""

from __future__ import annotations

from pathlib import Path

from longscan.bench.ladder import sections
from longscan.documents import Document
from longscan.readers.files import read_file


def test_a_report_becomes_sections_that_lose_nothing(data_dir: Path) -> None:
    path = sorted((data_dir / "corpus" / "loong-docs" / "financial").glob("*.txt"))[0]
    text = read_file(path).text
    parts = list(sections("loong:report", text, tokens=500))
    assert len(parts) > 5
    assert "".join(part.text for part in parts).strip() == text.strip()
    assert [part.id for part in parts] == [f"loong:report#{i}" for i in range(len(parts))]
    sentence_ends = set(Document("r", text).sentences[:, 1].tolist())
    offset = 0
    for part in parts[:-1]:
        offset = text.index(part.text, offset) + len(part.text)
        assert offset in sentence_ends  # cut at a sentence end, never inside a sentence
        assert len(part.text) >= 2_000  # past its size (500 tokens of 4 characters)


def test_short_and_blank_texts(novel: Document) -> None:
    assert [part.text for part in sections("k", "One sentence.")] == ["One sentence."]
    assert list(sections("k", "   \n\n  ")) == []
    whole = list(sections("novel", novel.text))
    assert "".join(part.text for part in whole) == novel.text
