"""One pipeline under every front end: the Python API, `longscan ask --json` and the HTTP
service give the same evidence, the same answer with the same citations and span, and the
same abstention, for a question the novel answers and one it cannot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from longscan.answering.answerers import get_answerer
from longscan.cli import app
from longscan.pipeline import Pipeline
from longscan.readers.files import read_paths
from longscan.service import ServiceSettings, create_app

QUESTIONS = (
    "What time is it always at the Hatter's tea party?",  # answered
    "Who won the 1998 World Cup?",  # nothing in the novel says: abstains
)
TOP_K = 4


def comparable(reply: dict[str, Any]) -> dict[str, Any]:
    """A reply without what differs by front end: document ids (a path, a bank number) and
    timings."""

    def places(items: list[dict[str, Any]]) -> list[tuple[int, int, str, float]]:
        return [(e["start"], e["end"], e["text"], round(e["score"], 3)) for e in items]

    answer = reply["answer"]
    return {
        "abstained": reply["abstained"],
        "evidence": places(reply["evidence"]),
        "answer": None
        if answer is None
        else {
            "text": answer["text"],
            "model": answer["model"],
            "numbered": places(answer["evidence"]),
            "citations": places(answer["citations"]),
            "span": None if answer["span"] is None else places([answer["span"]]),
            "warnings": answer["warnings"],
        },
    }


def test_python_cli_and_http_give_the_same_answer(novel_path: Path, tmp_path: Path) -> None:
    pipeline = Pipeline("scanner", get_answerer("extractive"), top_k=TOP_K)
    documents = read_paths([novel_path])
    through_python = [pipeline.answer(q, documents).to_json() for q in QUESTIONS]

    runner = CliRunner()
    through_cli = []
    for question in QUESTIONS:
        command = ["ask", str(novel_path), "-q", question, "-k", str(TOP_K), "--json"]
        result = runner.invoke(app, [*command, "--answerer", "extractive"])
        assert result.exit_code == 0, result.output
        through_cli.append(json.loads(result.stdout))

    settings = ServiceSettings(tmp_path / "service", answerer="extractive")
    with TestClient(create_app(settings), base_url="http://127.0.0.1") as client:
        raw = novel_path.read_bytes()
        upload = client.post("/api/documents", files={"file": ("novel.txt", raw, "text/plain")})
        assert upload.status_code == 200, upload.text
        doc_id = upload.json()["id"]
        through_http = []
        for question in QUESTIONS:
            body = {"question": question, "doc_ids": [doc_id], "top_k": TOP_K}
            asked = client.post("/api/ask", json=body)
            assert asked.status_code == 200, asked.text
            through_http.append(asked.json())

    python = [comparable(reply) for reply in through_python]
    assert python == [comparable(reply) for reply in through_cli]
    assert python == [comparable(reply) for reply in through_http]
    answered, absent = python
    assert answered["abstained"] is False and absent["abstained"] is True
    assert absent["answer"] is None and absent["evidence"]  # the closest evidence, no answer
    span = answered["answer"]["span"][0]
    text = novel_path.read_text(encoding="utf-8")
    assert text[span[0] : span[1]] == span[2]
    assert "six" in span[2]  # "It's always six o'clock now."
    assert answered["answer"]["citations"][0][0] <= span[0] < span[1]
    assert span[1] <= answered["answer"]["citations"][0][1]


@pytest.mark.parametrize("question", ["", " " * 10])
def test_an_empty_question_is_refused_before_any_reading(question: str, novel_path) -> None:
    pipeline = Pipeline("bm25-sentence", None)
    with pytest.raises(ValueError, match="empty"):
        pipeline.answer(question, read_paths([novel_path]))


def test_neighbours_read_each_sentence_with_those_beside_it(novel_path: Path) -> None:
    documents = read_paths([novel_path])
    question = "What did Alice drink from the bottle marked DRINK ME?"
    alone = Pipeline("bm25-sentence", None, top_k=1, paragraph=False, abstain=False).find(
        question, documents
    )
    widened = Pipeline("bm25-sentence", None, top_k=1, neighbours=1, abstain=False).find(
        question, documents
    )
    (hit,), (wide,) = alone.evidence, widened.evidence
    sentences = documents[0].sentences.tolist()
    index = [start for start, _ in sentences].index(hit.start)
    paragraph = documents[0].sentence_paragraph
    same = [i for i in (index - 1, index + 1) if paragraph[i] == paragraph[index]]
    assert wide.start == sentences[min(same + [index])][0]
    assert wide.end == sentences[max(same + [index])][1]
    assert wide.text == documents[0].text[wide.start : wide.end]
    assert len(wide.text) > len(hit.text)


def test_ask_paragraphs_gives_each_sentence_its_paragraph(novel_path: Path) -> None:
    question = "What did Alice drink from the bottle marked DRINK ME?"
    command = ["ask", str(novel_path), "-q", question, "-r", "bm25-sentence", "-k", "3"]
    command += ["--answerer", "none", "--no-abstain", "--json"]
    plain = json.loads(
        CliRunner().invoke(app, [*command, "--no-paragraphs"], env={"COLUMNS": "80"}).stdout
    )
    wide = json.loads(
        CliRunner().invoke(app, [*command, "--paragraphs"], env={"COLUMNS": "80"}).stdout
    )
    document = read_paths([novel_path])[0]
    paragraphs = {tuple(span) for span in document.paragraphs.tolist()}
    assert {(e["start"], e["end"]) for e in wide["evidence"]} <= paragraphs
    for sentence in plain["evidence"]:  # every sentence is inside the evidence read
        assert any(
            e["start"] <= sentence["start"] and sentence["end"] <= e["end"]
            for e in wide["evidence"]
        )
    first = json.loads(
        CliRunner()
        .invoke(app, [*command, "--paragraphs", "--widened", "1"], env={"COLUMNS": "80"})
        .stdout
    )
    spans = [(e["start"], e["end"]) for e in first["evidence"]]
    best = plain["evidence"][0]
    assert spans[0] in paragraphs and spans[0][0] <= best["start"] <= best["end"] <= spans[0][1]
    alone = CliRunner().invoke(
        app, [*command, "--no-paragraphs", "--widened", "1"], env={"COLUMNS": "80"}
    )
    assert alone.exit_code != 0 and "nothing to widen" in alone.output
    # the others are the plain sentences, unless the best one's paragraph swallowed them
    inside = [e for e in plain["evidence"][1:] if not spans[0][0] <= e["start"] < spans[0][1]]
    assert set(spans[1:]) == {(e["start"], e["end"]) for e in inside}
