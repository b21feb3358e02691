"""A question over a memory bank goes through the one pipeline: cited bank ids with exact
offsets, the same reply from Python and `longscan bank ask --json`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.answering.answerers import get_answerer
from longscan.bank import MemoryBank
from longscan.bank.answer import ask
from longscan.bench.builders import build_multihop
from longscan.cli import app
from longscan.documents import Document
from longscan.pipeline import Pipeline
from longscan.scanning.scanner import Scanner


@pytest.fixture(scope="module")
def bank_folder(tmp_path_factory: pytest.TempPathFactory, paragraphs: list[Document]) -> Path:
    folder = tmp_path_factory.mktemp("bank")
    bank = MemoryBank(folder)
    bank.add(paragraphs)
    bank.sync(progress=False)
    return folder


def test_a_bank_question_is_answered_with_citations_into_stored_text(bank_folder: Path) -> None:
    item = build_multihop("hotpotqa", "dev", 3_000, max_items=6, mode="collection")[2]
    bank = MemoryBank(bank_folder, create=False)
    pipeline = Pipeline(None, get_answerer("extractive"), budget_words=200, abstain=False)
    scanner = Scanner.from_pretrained(cache=bank.sentence_cache())
    result = ask(bank, item.query, pipeline, scanner, k=4)
    answer = result.answer
    stored = {d.id: d.text for d in result.documents}
    assert answer.text and answer.citations and answer.span is not None
    for unit in [*answer.evidence, *answer.citations, answer.span]:
        assert stored[unit.doc_id][unit.start : unit.end] == unit.text
    assert sum(len(e.text.split()) for e in answer.evidence) <= 200
    gold = {str(bank.id_of(key)) for key in item.gold_doc_ids}
    assert gold & {e.doc_id for e in answer.evidence}  # a gold paragraph gives evidence

    runner = CliRunner()
    command = ["bank", "ask", "-q", item.query, "--bank", str(bank_folder), "-k", "4"]
    command += ["--answerer", "extractive", "--budget-words", "200", "--no-abstain", "--json"]
    replied = runner.invoke(app, command)
    assert replied.exit_code == 0, replied.output
    through_cli = json.loads(replied.stdout)
    through_python = answer.to_json()
    for reply in (through_cli, through_python):
        for key in ("seconds", "timings"):
            reply.pop(key, None)
    through_cli.pop("question"), through_cli.pop("retriever")
    assert through_cli == through_python


def test_an_empty_bank_question_is_refused(bank_folder: Path) -> None:
    result = CliRunner().invoke(app, ["bank", "ask", "-q", "  ", "--bank", str(bank_folder)])
    assert result.exit_code != 0 and "query is empty" in result.output
