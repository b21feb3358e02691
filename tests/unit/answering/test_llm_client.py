"""The LLM client against a scripted loopback server: retries, errors, cache, secrets."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from longscan.answering.llm import LLMClient, LLMConfig, LLMError, ResponseCache, resolve_config
from scripted_server import completion_body

HELLO = [{"role": "user", "content": "hello"}]


def test_429_then_500_are_retried_until_an_answer(scripted) -> None:
    server, client = scripted([(429, "{}", 0), (500, "{}", 0), (200, completion_body("hi"), 0)])
    completion = client.chat(HELLO)
    assert completion.text == "hi" and len(server.requests) == 3
    assert client.usage.calls == 1 and client.usage.prompt_tokens == 11


def test_persistent_500_is_a_clear_error_after_the_retries(scripted) -> None:
    server, client = scripted([(500, "{}", 0)], max_retries=2)
    with pytest.raises(LLMError, match="HTTP 500 after 2 retries"):
        client.chat(HELLO)
    assert len(server.requests) == 3  # the first try and two retries


@pytest.mark.parametrize("body", ["not json at all", '{"choices": []}', '{"choices": "x"}'])
def test_malformed_replies_are_errors_not_answers(scripted, body: str) -> None:
    _, client = scripted([(200, body, 0)])
    with pytest.raises(LLMError, match="malformed|without choices"):
        client.chat(HELLO)
    assert len(client.cache) == 0  # nothing wrong is cached


def test_timeout_is_an_error(scripted) -> None:
    _, client = scripted([(200, completion_body("late"), 3)], timeout_s=0.5, max_retries=0)
    with pytest.raises(LLMError, match="timed out"):
        client.chat(HELLO)


def test_refused_connection_is_an_error(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port that nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = LLMConfig(f"http://127.0.0.1:{port}/v1", "m", max_retries=0, timeout_s=2)
    with pytest.raises(LLMError, match="cannot connect"):
        LLMClient(config, ResponseCache(tmp_path / "c.sqlite")).chat(HELLO)


def test_second_identical_request_is_served_from_the_cache(scripted, tmp_path: Path) -> None:
    server, client = scripted([(200, completion_body("cached answer"), 0)])
    first = client.chat(HELLO)
    again = LLMClient(client.config, ResponseCache(client.cache.path))  # a new process, same file
    second = again.chat(HELLO)
    assert second.text == first.text and second.cached
    assert len(server.requests) == 1 and again.usage.calls == 0 and again.usage.cache_hits == 1
    client.chat([{"role": "user", "content": "other"}])
    assert len(server.requests) == 2  # other messages are another key


def test_bounded_concurrency_keeps_order(scripted) -> None:
    server, client = scripted([(200, completion_body("ok"), 0.2)], concurrency=2)
    requests = [[{"role": "user", "content": str(i)}] for i in range(4)]
    completions = client.chat_many(requests)
    assert [c.text for c in completions] == ["ok"] * 4
    assert [r["messages"][0]["content"] for r in server.requests] != []
    assert sorted(r["messages"][0]["content"] for r in server.requests) == ["0", "1", "2", "3"]


def test_the_key_is_sent_but_never_shown(scripted, monkeypatch) -> None:
    monkeypatch.setenv("LONGSCAN_LLM_API_KEY", "sk-very-secret-123")
    server, client = scripted([(500, "{}", 0)], max_retries=0)
    with pytest.raises(LLMError) as error:
        client.chat(HELLO)
    headers = {k.lower(): v for k, v in server.headers[0].items()}
    assert headers["authorization"] == "Bearer sk-very-secret-123"
    assert "sk-very-secret" not in str(error.value)
    assert "sk-very-secret" not in repr(client.config) + str(client.config.public())


def test_config_precedence_and_no_keys_in_files(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("LONGSCAN_LLM_URL", raising=False)
    monkeypatch.delenv("LONGSCAN_LLM_MODEL", raising=False)
    config_file = tmp_path / "llm.toml"
    config_file.write_text(
        '[llm]\nbase_url = "http://file/v1"\nmodel = "from-file"\nmax_tokens = 99\n'
    )
    assert resolve_config(config_file=config_file).model == "from-file"
    monkeypatch.setenv("LONGSCAN_LLM_MODEL", "from-env")
    resolved = resolve_config(config_file=config_file)
    assert (resolved.base_url, resolved.model, resolved.max_tokens) == (
        "http://file/v1",
        "from-env",
        99,
    )
    assert resolve_config("http://arg/v1", "from-arg", config_file).model == "from-arg"
    config_file.write_text('[llm]\nbase_url = "http://file/v1"\napi_key = "sk-x"\n')
    with pytest.raises(ValueError, match="do not write the key"):
        resolve_config(config_file=config_file)
    monkeypatch.setenv("LONGSCAN_LLM_CONFIG", str(tmp_path / "absent.toml"))
    monkeypatch.delenv("LONGSCAN_LLM_MODEL")
    assert resolve_config() is None


def test_full_context_reads_windows_then_merges(scripted) -> None:
    from longscan.answering.pipelines import answer_full_context
    from longscan.documents import Document

    server, client = scripted([(200, completion_body("partial"), 0)], context_tokens=1200)
    text = "\n\n".join(f"Paragraph {i} says something about topic {i}. " * 8 for i in range(60))
    answer = answer_full_context(client, "What about topic 7?", [Document("doc", text)])
    chats = [r for r in server.requests if "messages" in r]  # not the tokenize probes
    windows = [r for r in chats if "Part " in r["messages"][1]["content"]]
    assert answer.windows == len(windows) >= 3  # stride = half the window, so they overlap
    texts = [r["messages"][1]["content"] for r in windows]  # arrival order varies (concurrency)
    last = next(t for t in texts if t.startswith(f"Part {len(windows)} of {len(windows)}"))
    assert "Paragraph 59" in last  # the end is read too
    merge = server.requests[-1]["messages"][1]["content"]
    assert merge.count("- partial") == len(windows) and answer.text == "partial"
