"""One JSON schema for evidence everywhere: `longscan ask --json`, `longscan bank search
--json` and the service's API all give what ``Evidence.to_json`` gives, and it validates
against ``EVIDENCE_JSON_SCHEMA``."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from longscan.cli import app
from longscan.documents import EVIDENCE_JSON_SCHEMA, Document, Evidence

runner = CliRunner()
STORY = (
    "Mara kept the spare key under the blue flowerpot by the back door. "
    "Her brother Tom never found it.\n\n"
    "In June the family drove to Lisbon for the wedding of a cousin. "
    "The ferry across the river was late."
)
QUESTION = "Where is the spare key?"


def check(evidence: dict, text: str, doc_id: str) -> None:
    """Valid against the schema, with exact offsets and the index of the sentence it was
    found at: the span is that sentence, or its paragraph (read in context), which then
    points at that sentence first in ``found``, every found sentence inside the span."""
    jsonschema.validate(evidence, EVIDENCE_JSON_SCHEMA)
    assert evidence["doc_id"] == doc_id
    assert text[evidence["start"] : evidence["end"]] == evidence["text"]
    document = Document(doc_id, text)
    sentence = tuple(document.sentences[evidence["unit"]].tolist())
    paragraph = tuple(document.paragraphs[document.sentence_paragraph[evidence["unit"]]].tolist())
    assert (evidence["start"], evidence["end"]) in (sentence, paragraph)
    found = [(span["start"], span["end"]) for span in evidence["found"]]
    sentences = {tuple(pair) for pair in document.sentences.tolist()}
    if (evidence["start"], evidence["end"]) == sentence:
        assert found == []
    else:
        assert found[0] == sentence and set(found) <= sentences
        assert all(evidence["start"] <= a < b <= evidence["end"] for a, b in found)


@pytest.mark.parametrize("score", [float("nan"), float("inf"), float("-inf")])
def test_to_json_refuses_a_score_that_json_cannot_hold(score: float) -> None:
    with pytest.raises(ValueError, match="not a finite number"):
        Evidence("a.txt", 0, 4, "Mara", score, 0).to_json()


def test_to_json_is_the_schema_and_refuses_a_unit_that_is_not_an_index() -> None:
    item = Evidence("a.txt", 0, 4, "Mara", 1.5, 0)
    jsonschema.validate(item.to_json(), EVIDENCE_JSON_SCHEMA)
    assert list(item.to_json()) == list(EVIDENCE_JSON_SCHEMA["properties"])
    with pytest.raises(ValueError, match="index"):
        Evidence("a.txt", 0, 4, "Mara", 1.5, "sentence").to_json()  # type: ignore[arg-type]


def test_ask_json_evidence_follows_the_schema(tmp_path: Path) -> None:
    (tmp_path / "story.txt").write_text(STORY)
    result = runner.invoke(
        app, ["ask", str(tmp_path / "story.txt"), "-q", QUESTION, "-r", "bm25-sentence", "--json"]
    )
    assert result.exit_code == 0, result.output
    evidence = json.loads(result.stdout)["evidence"]
    assert evidence
    for item in evidence:
        check(item, STORY, str(tmp_path / "story.txt"))


def test_bank_search_json_evidence_follows_the_schema(tmp_path: Path) -> None:
    from longscan.bank import MemoryBank

    bank = MemoryBank(tmp_path / "bank")
    bank.add([Document("story.txt", STORY), Document("other.txt", "Nothing about keys here.")])
    bank.sync(progress=False)
    doc_id = str(bank.id_of("story.txt"))
    del bank
    result = runner.invoke(
        app, ["bank", "search", "-q", QUESTION, "--bank", str(tmp_path / "bank"), "--json"]
    )
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)
    assert hits[0]["doc_id"] == doc_id and hits[0]["key"] == "story.txt"
    assert hits[0]["evidence"]
    for hit in hits:
        assert isinstance(hit["doc_id"], str)  # the same type as in its evidence
        for item in hit["evidence"]:
            assert item["doc_id"] == hit["doc_id"]
    for item in hits[0]["evidence"]:
        check(item, STORY, doc_id)


def test_service_evidence_follows_the_schema(tmp_path: Path) -> None:
    from longscan.service import ServiceSettings, create_app

    service = create_app(ServiceSettings(tmp_path, answerer="none"))
    with TestClient(service, base_url="http://127.0.0.1:8000") as client:  # a bound host
        response = client.post("/api/documents/text", json={"name": "story.txt", "text": STORY})
        assert response.status_code == 200, response.text
        doc_id = response.json()["id"]
        response = client.post("/api/ask", json={"question": QUESTION, "doc_ids": [doc_id]})
        assert response.status_code == 200, response.text
        evidence = response.json()["evidence"]
        assert evidence
        for item in evidence:
            check(item, STORY, str(doc_id))
        published = client.get("/openapi.json").json()["components"]["schemas"]["EvidenceOut"]
    assert set(published["properties"]) == set(EVIDENCE_JSON_SCHEMA["properties"])
    for name, spec in EVIDENCE_JSON_SCHEMA["properties"].items():
        assert json_types(published["properties"][name]) == json_types(spec), name


def json_types(spec: dict) -> set[str]:
    """The JSON types a property allows, written as ``type`` (one or a list) or ``anyOf``."""
    if "anyOf" in spec:
        return set().union(*map(json_types, spec["anyOf"]))
    return {spec["type"]} if isinstance(spec["type"], str) else set(spec["type"])


def check_context(evidence: dict, text: str) -> None:
    """A row's context spans are exact and lie above it; any other unit has none."""
    from longscan.tables import is_row

    for span in evidence["context"]:
        assert text[span["start"] : span["end"]] == span["text"]
        assert span["end"] <= evidence["start"]
    if not is_row(evidence["text"]):
        assert evidence["context"] == []


def test_a_table_row_is_given_with_the_spans_of_its_title_and_header(
    filing_path: Path,
) -> None:
    text = filing_path.read_text(encoding="utf-8")
    result = runner.invoke(
        app,
        ["ask", str(filing_path), "-q", "Services 6,698 6,296", "-r", "bm25-sentence", "--json"],
    )
    assert result.exit_code == 0, result.output
    evidence = json.loads(result.stdout)["evidence"]
    for item in evidence:
        check(item, text, str(filing_path))
        check_context(item, text)
    row = next(item for item in evidence if item["text"].startswith("Services 6,698 6,296"))
    lines = [span["text"] for span in row["context"]]
    assert lines[0].startswith("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS")
    assert lines[-1] == "Cost of sales:" and any("2025" in line for line in lines)
    assert any(item["context"] == [] for item in evidence)  # prose among them has none


def test_the_service_gives_a_row_its_context_spans(statement_excerpt: str, tmp_path: Path) -> None:
    from longscan.service import ServiceSettings, create_app

    excerpt = statement_excerpt
    service = create_app(ServiceSettings(tmp_path, answerer="none"))
    with TestClient(service, base_url="http://127.0.0.1:8000") as client:
        response = client.post("/api/documents/text", json={"name": "q3.txt", "text": excerpt})
        assert response.status_code == 200, response.text
        doc_id = response.json()["id"]
        question = {"question": "What was the cost of sales for services?", "doc_ids": [doc_id]}
        response = client.post("/api/ask", json=question)
        assert response.status_code == 200, response.text
    evidence = response.json()["evidence"]
    for item in evidence:
        check(item, excerpt, str(doc_id))
        check_context(item, excerpt)
    assert any(item["context"] for item in evidence)
