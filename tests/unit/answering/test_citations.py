"""An answer's citations are checked against the evidence it was given: a number that names
no evidence, an answer that cites nothing, a figure or a key phrase found in no cited
evidence are flagged beside the answer, in the CLI's text and JSON and the service's JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.answering.pipelines import answer_with_evidence, citation_warnings
from longscan.cli import app
from longscan.documents import Document, Evidence
from scripted_server import completion_body

TOWER = (
    "The tower was built in 1889 for the fair.\n\n"
    "Its designer was Gustave Eiffel, an engineer.\n\n"
    "Paris is the capital of France."
)


def evidence_of(document: Document) -> list[Evidence]:
    return [
        Evidence.of(document, int(start), int(end), 1.0, unit)
        for unit, (start, end) in enumerate(document.sentences.tolist())
    ]


@pytest.mark.parametrize(
    ("reply", "flagged"),
    [
        ("Gustave Eiffel designed it [2].", []),
        ("It was built in 1889 [1], by Gustave Eiffel [2].", []),
        ("Gustave Eiffel [2][3]", []),
        ("NOT FOUND", []),
        ("Gustave Eiffel [7].", ["[7], which no evidence given has", "cites no evidence"]),
        ("Gustave Eiffel [0]", ["[0], which no evidence given has", "cites no evidence"]),
        ("Gustave Eiffel.", ["cites no evidence"]),
        ("It was built in 1887 [1].", ["1887: in no evidence it cites"]),
        ("Napoleon Bonaparte, emperor and general [2].", ["most of its key words"]),
        ("Eiffel [2]. Paris, fair, capital, France and more words from elsewhere.", []),
        ("Gustave Eiffel [2, 9]", ["[9], which no evidence given has"]),
    ],
)
def test_what_the_evidence_does_not_back_is_flagged(reply: str, flagged: list[str]) -> None:
    document = Document("d.txt", TOWER)
    warnings = citation_warnings(reply, evidence_of(document), [document])
    assert len(warnings) == len(flagged), warnings
    for warning, expected in zip(warnings, flagged, strict=True):
        assert expected in warning


@pytest.mark.parametrize(("reply", "flagged"), [("6 o'clock [1]", []), ("7 o'clock [1]", ["7"])])
def test_a_number_word_backs_its_figure(reply: str, flagged: list[str]) -> None:
    document = Document("novel.txt", "It's always six o'clock now.")
    warnings = citation_warnings(reply, evidence_of(document), [document])
    assert [w.split(":")[0] for w in warnings] == flagged


def test_an_answer_carries_its_warnings(scripted) -> None:
    document = Document("d.txt", TOWER)
    _, client = scripted([(200, completion_body("Designed by Gustave Eiffel [4]."), 0)])
    answer = answer_with_evidence(
        client, "Who designed the tower?", evidence_of(document), [document]
    )
    assert answer.citations == []
    assert answer.warnings[0].startswith("cites [4]")


def test_ask_shows_the_warnings_in_text_and_json(scripted, tmp_path: Path) -> None:
    path = tmp_path / "d.txt"
    path.write_text(TOWER, encoding="utf-8")
    server, _ = scripted([(200, completion_body("It was built in 1887 [1]."), 0)] * 2)
    command = ["ask", str(path), "-q", "When was the tower built?", "-k", "3"]
    env = {
        "LONGSCAN_LLM_URL": server.url,
        "LONGSCAN_LLM_MODEL": "scripted",
        "LONGSCAN_ANSWERER": "auto",  # a configured server answers first
        "COLUMNS": "80",
    }
    as_json = CliRunner().invoke(app, [*command, "--json"], env=env)
    reply = json.loads(as_json.stdout)
    assert reply["answer"]["text"] == "It was built in 1887 [1]." and reply["abstained"] is False
    assert reply["answer"]["warnings"] == ["1887: in no evidence it cites"]
    as_text = CliRunner().invoke(app, command, env=env)
    assert "unbacked: 1887: in no evidence it cites" in as_text.stdout


@pytest.mark.parametrize("reply", ["[2]", "[2]."])
def test_a_reply_of_citations_alone_is_asked_again_from_the_cited_evidence(
    scripted, reply: str
) -> None:
    """A small model that finds the evidence but writes only "[2]" is asked again with the
    item it cited alone, unnumbered; its words keep the citation and are checked as any
    answer is. A reply in words the first time is left as it is."""
    from longscan.answering.answerers import ChatAnswerer

    document = Document("d.txt", TOWER)
    replies = [(200, completion_body(reply), 0), (200, completion_body("Gustave Eiffel"), 0)]
    server, client = scripted(replies)
    answer = ChatAnswerer(client, "scripted").answer(
        "Who designed the tower?", evidence_of(document), [document]
    )
    assert answer.text == f"Gustave Eiffel {reply}" and answer.span is None
    assert answer.citations == [evidence_of(document)[1]] and answer.warnings == []
    again = server.requests[1]["messages"][-1]["content"]
    assert "Its designer was Gustave Eiffel" in again and "[" not in again
    assert "1889" not in again  # only the cited item
    _, words = scripted([(200, completion_body("Gustave Eiffel [2]."), 0)])
    kept = ChatAnswerer(words, "scripted").answer(
        "Who designed the tower?", evidence_of(document), [document]
    )
    assert kept.text == "Gustave Eiffel [2]." and kept.span is None


@pytest.mark.parametrize("again", ["[2]", "NOT FOUND"])
def test_citations_alone_twice_get_the_readers_span_in_the_cited_evidence(
    scripted, again: str
) -> None:
    """When the second reply holds no answer either, the extractive reader marks the answer
    inside the item cited, with exact offsets, and the answer says how it was made."""
    from longscan.answering.answerers import CITED_ONLY, ChatAnswerer

    document = Document("d.txt", TOWER)
    replies = [(200, completion_body("[2]"), 0), (200, completion_body(again), 0)]
    _, client = scripted(replies)
    answer = ChatAnswerer(client, "scripted").answer(
        "Who designed the tower?", evidence_of(document), [document]
    )
    assert answer.text.endswith(" [2]") and "Eiffel" in answer.text
    assert answer.span is not None and "Eiffel" in answer.span.text
    assert TOWER[answer.span.start : answer.span.end] == answer.span.text
    assert answer.citations == [evidence_of(document)[1]] and CITED_ONLY in answer.warnings
