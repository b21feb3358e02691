"""The whole answering path against a real OpenAI-compatible server on loopback
(llama.cpp's, serving Gemma 3 270M): answers, CLI, a Loong run, and a rerun from the cache."""

from __future__ import annotations

import json
import re
from pathlib import Path

from typer.testing import CliRunner

from longscan.answering.llm import LLMClient, LLMConfig, ResponseCache
from longscan.answering.local import LOCAL_MODEL_NAME
from longscan.bench.qa import run_loong
from longscan.cli import app
from longscan.retrievers import get_retriever


def _client(url: str, cache: Path, max_tokens: int = 24) -> LLMClient:
    config = LLMConfig(url, LOCAL_MODEL_NAME, max_tokens=max_tokens, context_tokens=4096)
    return LLMClient(config, ResponseCache(cache))


def test_real_server_answers_and_counts_tokens(local_llm_url: str, tmp_path: Path) -> None:
    client = _client(local_llm_url, tmp_path / "c.sqlite")
    completion = client.chat([{"role": "user", "content": "Name a colour."}])
    assert completion.text.strip() and not completion.cached
    assert completion.prompt_tokens > 0 and 0 < completion.completion_tokens <= 24
    assert client.usage.calls == 1 and client.usage.seconds > 0


def test_ask_with_llm_cites_evidence_by_offsets(
    local_llm_url: str, novel_path: Path, tmp_path: Path
) -> None:
    # A short answer cap from a config file: the 270M model otherwise echoes its prompt up to
    # the default 512 tokens, which took 290 s of the 300 s timeout on a busy 2-core machine.
    config = tmp_path / "llm.toml"
    config.write_text("[llm]\nmax_tokens = 64\n", encoding="utf-8")
    result = CliRunner().invoke(
        app,
        ["ask", str(novel_path), "-q", "Who is late?", "-r", "bm25-sentence", "-k", "3",
         "--llm", local_llm_url, "--llm-model", LOCAL_MODEL_NAME, "--llm-config", str(config),
         "--answerer", "llm", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    answer = payload["answer"]
    assert answer is not None and payload["llm_error"] is None
    text = novel_path.read_text(encoding="utf-8")
    for citation in answer["citations"]:
        assert text[citation["start"] : citation["end"]] == citation["text"]
    # The small model's replies are often malformed: whatever it wrote, a citation of a
    # number it was not given, or no citation at all, is flagged beside the answer.
    numbers = {int(n) for n in re.findall(r"\[(\d+)(?=[\],;\s])", answer["text"])}
    flagged = " ".join(answer["warnings"])
    for number in numbers - set(range(1, len(answer["evidence"]) + 1)):
        assert f"[{number}]" in flagged
    body = re.sub(r"\[[\d,;\s]+\]", " ", answer["text"]).strip()
    if body and not answer["citations"] and "NOT FOUND" not in body.upper():
        assert "cites no evidence" in flagged


def test_loong_runs_end_to_end_and_a_rerun_makes_no_calls(
    local_llm_url: str, tmp_path: Path
) -> None:
    cache = tmp_path / "loong.sqlite"
    retriever = get_retriever("bm25-sentence")
    first = run_loong(_client(local_llm_url, cache), retriever, budget_words=150, max_items=2)
    assert len(first.records) == 2 and first.usage["calls"] == 4  # 2 answers + 2 judgements
    assert "Overall (n=2)" in first.summary["markdown"]
    assert 0 <= first.summary["parse_failure_rate"] <= 1
    again = run_loong(_client(local_llm_url, cache), retriever, budget_words=150, max_items=2)
    assert again.usage["calls"] == 0 and again.usage["cache_hits"] == 4
    assert [r["answer"] for r in again.records] == [r["answer"] for r in first.records]
