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
        # an LLM that would fail if asked, which `auto` prefers to every other answerer
        env={"LONGSCAN_LLM_URL": "http://127.0.0.1:9/v1", "LONGSCAN_ANSWERER": "auto"},
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
    assert judged[ANSWERED] >= threshold and judged[ANSWERED] > judged[ABSENT] + 1.0
    assert not abstains(ANSWERED, chosen.retrieve(ANSWERED, [novel], top_k=5), [novel])
    # The threshold answers 99.5% of answerable development questions: a question about
    # another subject then abstains over the default retriever's evidence, while a first
    # stage's closest sentences about "winning" may pass (BENCHMARKS.md, "Abstention").
    if retriever == "scanner":
        assert judged[ABSENT] < threshold


TOWER = (
    "The tower was built in 1889 for the fair.\n\n"
    "Its designer was Gustave Eiffel, an engineer.\n\n"
    "Paris is the capital of France."
)


@pytest.mark.parametrize("retriever", ["scanner", "bm25-sentence", "bm25-chunk", "rerank"])
def test_a_sentence_that_answers_through_its_neighbour_is_answered(
    tmp_path: Path, retriever: str
) -> None:
    """ "Its designer was ..." answers "Who designed the tower?" only beside "The tower was
    built ...": the judge reads the second round the re-scorer reads, so it answers."""
    path = tmp_path / "d.txt"
    path.write_text(TOWER, encoding="utf-8")
    reply = asked(path, "Who designed the tower?", "--retriever", retriever)
    assert reply["abstained"] is False and reply["llm_error"]  # answered: the LLM was asked
    assert any("Gustave Eiffel" in e["text"] for e in reply["evidence"])


def test_the_judge_gives_a_sentence_the_score_the_rerank_retriever_gives_it(monkeypatch) -> None:
    """One model, one reading: in float32 the judge's best score is the ``rerank``
    retriever's score of the same sentence, through PyTorch and through ONNX Runtime (whose
    weights, stored in fewer bits, move it by hundredths at most)."""
    monkeypatch.setenv("LONGSCAN_PRECISION", "float32")
    from longscan.rerankers.cross_encoder import get_reranker
    from longscan.rerankers.onnx import OnnxCrossEncoder
    from longscan.retrievers.rerank import hybrid_rerank

    get_reranker.cache_clear()  # read again under the precision set here
    document = Document("d.txt", TOWER)
    question = "Who designed the tower?"
    ranked = hybrid_rerank().retrieve(question, [document], top_k=3)
    assert "Gustave Eiffel" in ranked[0].text
    for judge, within in ((OnnxCrossEncoder(), 0.05), (get_reranker(), 1e-3)):
        judged = best_judgement(question, ranked, [document], judge=judge)
        assert judged == pytest.approx(ranked[0].score, abs=within)
    get_reranker.cache_clear()


def test_a_short_html_page_that_names_the_keeper_is_answered(tmp_path: Path) -> None:
    path = tmp_path / "keeper.html"
    path.write_text(
        "<html><body><h1>The lighthouse</h1><p>The keeper was named Oswin Tarrow.</p>"
        "</body></html>",
        encoding="utf-8",
    )
    reply = asked(path, "Who was the keeper?")
    assert reply["abstained"] is False and reply["llm_error"]  # answered: the LLM was asked
    best = max(reply["evidence"], key=lambda item: item["score"])  # listed in document order
    assert "Oswin Tarrow" in best["text"]


def test_no_evidence_abstains_and_a_bad_threshold_is_refused(tmp_path: Path) -> None:
    assert abstains(ANSWERED, [], [Document("empty", "Nothing here.")], threshold=0.0)
    folder = tmp_path / "reranker"
    shutil.copytree(PACKAGED, folder)
    config = json.loads((folder / CONFIG_FILE).read_text())
    config["abstain_below"] = "high"
    (folder / CONFIG_FILE).write_text(json.dumps(config))
    with pytest.raises(AdapterError, match="abstain_below must be a number"):
        abstain_below(folder)
