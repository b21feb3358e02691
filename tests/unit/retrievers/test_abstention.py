"""`ask` says "no evidence found" when the re-scorer judges none of the best evidence an
answer, and does not ask an LLM then; a question the text answers is answered, whichever
retriever found the evidence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from longscan.cli import app
from longscan.documents import Document
from longscan.encoders.adapter import CONFIG_FILE, AdapterError
from longscan.rerankers.abstention import abstain_below, abstains, best_judgement
from longscan.rerankers.cross_encoder import PACKAGED
from longscan.retrievers import get_retriever

ANSWERED = "Who fell down the rabbit hole?"
ABSENT = "Who won the 1998 World Cup?"  # nothing in the novel says


def asked(novel_path: Path, question: str, *options: str) -> dict:
    result = CliRunner().invoke(
        app,
        ["ask", str(novel_path), "-q", question, "--json", "-k", "3", *options],
        env={"LONGSCAN_LLM_URL": "http://127.0.0.1:9/v1"},  # an LLM that would fail if asked
    )  # fmt: skip
    return {"exit_code": result.exit_code, **json.loads(result.stdout)}


def test_a_question_the_novel_cannot_answer_abstains_and_asks_no_llm(novel_path: Path) -> None:
    absent = asked(novel_path, ABSENT)
    assert absent["abstained"] is True and absent["exit_code"] == 0
    assert absent["evidence"] and absent["llm_error"] is None and absent["answer"] is None
    forced = asked(novel_path, ABSENT, "--no-abstain")
    assert forced["abstained"] is False and forced["llm_error"]  # it did ask the LLM
    assert [e["start"] for e in forced["evidence"]] == [e["start"] for e in absent["evidence"]]
    answered = asked(novel_path, ANSWERED)
    assert answered["abstained"] is False and answered["llm_error"]


@pytest.mark.parametrize("retriever", ["bm25-sentence", "dense-chunk", "scanner"])
def test_the_judgement_reads_any_retrievers_evidence(novel: Document, retriever: str) -> None:
    chosen = get_retriever(retriever)
    judged = {
        question: best_judgement(question, chosen.retrieve(question, [novel], top_k=5), [novel])
        for question in (ANSWERED, ABSENT)
    }
    threshold = abstain_below()
    assert threshold is not None
    assert judged[ANSWERED] >= threshold > judged[ABSENT]
    assert not abstains(ANSWERED, chosen.retrieve(ANSWERED, [novel], top_k=5), [novel])


def test_no_evidence_abstains_and_a_bad_threshold_is_refused(tmp_path: Path) -> None:
    assert abstains(ANSWERED, [], [Document("empty", "Nothing here.")], threshold=0.0)
    folder = tmp_path / "reranker"
    shutil.copytree(PACKAGED, folder)
    config = json.loads((folder / CONFIG_FILE).read_text())
    config["abstain_below"] = "high"
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(AdapterError, match="abstain_below must be a number"):
        abstain_below(folder)
