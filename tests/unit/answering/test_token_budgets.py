"""Prompt budgets count the model's tokens: the server's tokenize endpoint, a tokenizer
file, or cl100k where neither is at hand."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from longscan.answering.llm import LLMClient, LLMConfig, token_counter
from longscan.answering.pipelines import answer_full_context
from longscan.answering.tokens import count_tokens
from longscan.documents import Document
from longscan.encoders.bert import packaged_model_dir
from scripted_server import completion_body


@pytest.fixture
def char_tokenizing_server() -> Iterator[tuple[str, list[str]]]:
    """An OpenAI-style server whose tokenizer makes every character a token (as llama.cpp's
    /tokenize answers), and which records the prompts it was sent."""
    prompts: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/tokenize":
                reply = json.dumps({"tokens": list(range(len(body["content"])))})
            else:
                prompts.append(body["messages"][-1]["content"])
                reply = completion_body("partial")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/v1", prompts
    finally:
        server.shutdown()


def test_full_context_windows_fit_the_servers_tokens(char_tokenizing_server, tmp_path) -> None:
    url, prompts = char_tokenizing_server
    config = LLMConfig(url, "m", context_tokens=1_500, max_tokens=100,
                       cache_path=str(tmp_path / "llm.sqlite"))  # fmt: skip
    client = LLMClient(config)
    assert client.count_tokens("twelve chars") == 12
    text = "\n\n".join(f"Paragraph {i} says something about topic {i}. " * 6 for i in range(40))
    answer_full_context(client, "What about topic 7?", [Document("doc", text)])
    windows = [p for p in prompts if p.startswith("Part ")]
    window_tokens = 1_500 - 100 - 300  # the context less the answer and the prompt margin
    assert len(windows) >= 8  # cl100k would have put 3-4 characters in a token: 2-3 windows
    assert all(len(p) < window_tokens * 1.3 for p in windows)  # text + instructions


def test_a_tokenizer_file_or_cl100k(tmp_path) -> None:
    from tokenizers import Tokenizer

    path = packaged_model_dir() / "tokenizer.json"
    config = LLMConfig("http://127.0.0.1:9/v1", "m", tokenizer=str(path))
    expected = len(
        Tokenizer.from_file(str(path))
        .encode("Unbelievably long words", add_special_tokens=False)
        .ids
    )  # noqa: E501
    assert token_counter(config)("Unbelievably long words") == expected
    assert token_counter(LLMConfig("http://127.0.0.1:9/v1", "m")) is count_tokens  # no server
    with pytest.raises(ValueError, match="no tokenize endpoint"):
        token_counter(LLMConfig("http://127.0.0.1:9/v1", "m", tokenizer="server"))
    with pytest.raises(ValueError, match="cannot read the tokenizer"):
        token_counter(LLMConfig("http://127.0.0.1:9/v1", "m", tokenizer=str(tmp_path / "x")))


def test_the_local_llama_cpp_server_counts_its_own_tokens(local_llm_url: str) -> None:
    counter = token_counter(LLMConfig(local_llm_url, "gemma-3-270m"))
    assert counter is not count_tokens
    assert counter("The key is under the third stone.") > 0
