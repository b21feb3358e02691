"""The HTTP API: documents in, evidence (offsets into the text) and cited answers out."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from asgi_scope import loopback_post
from fastapi import FastAPI
from fastapi.testclient import TestClient
from httpx import Response

from longscan.answering.llm import LLMConfig
from longscan.service import ServiceSettings, create_app
from longscan.service.engine import JobCounts
from printed_pdf import page_chunks, write_pdf
from scripted_server import ScriptedServer, completion_body


def events(body: str) -> list[tuple[str, Any]]:
    """``(event name, JSON data)`` of a server-sent event stream."""
    parsed = []
    for frame in body.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in frame.splitlines())
        parsed.append((fields["event"], json.loads(fields["data"])))
    return parsed


def test_evidence_points_into_the_uploaded_text(
    client: TestClient, story_id: int, story: str
) -> None:
    response = client.post(
        "/api/ask", json={"question": "Where is the spare key?", "doc_ids": [story_id]}
    )
    assert response.status_code == 200, response.text
    evidence = response.json()["evidence"]
    text = client.get(f"/api/documents/{story_id}").json()["text"]
    assert text == story
    for item in evidence:
        assert item["doc_id"] == str(story_id)
        assert text[item["start"] : item["end"]] == item["text"]
    assert "flowerpot" in evidence[0]["text"]
    assert [e["score"] for e in evidence] == sorted((e["score"] for e in evidence), reverse=True)


def test_top_k_bounds_the_evidence(client: TestClient, story_id: int, story: str) -> None:
    body = {"question": "Where did they drive?", "doc_ids": [story_id]}
    unbounded = client.post("/api/ask", json=body).json()["evidence"]
    assert len(unbounded) == 3  # the whole story fits the word budget, paragraph by paragraph
    (best,) = client.post("/api/ask", json={**body, "top_k": 1}).json()["evidence"]
    assert "Lisbon" in best["text"] and "ferry" in best["text"]  # its sentence's paragraph
    assert story[best["start"] : best["end"]] == best["text"]


def test_stream_reports_encoding_progress_then_the_result(client: TestClient, story: str) -> None:
    text = story.replace("Lisbon", "Porto") + "\n\nA new paragraph makes this text unseen."
    doc_id = client.post("/api/documents/text", json={"name": "new.txt", "text": text}).json()
    body = {"question": "Which city did they drive to?", "doc_ids": [doc_id["id"]]}
    with client.stream("POST", "/api/ask/stream", json=body) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        streamed = events(response.read().decode())
    names = [name for name, _ in streamed]
    assert names[0] == "queued" and names[-1] == "result"
    progress = [data for name, data in streamed if name == "progress"]
    assert progress and progress[-1]["done"] == progress[-1]["total"]
    assert any("Porto" in item["text"] for item in streamed[-1][1]["evidence"])
    again = client.post("/api/ask", json=body).json()
    assert again["evidence"] == streamed[-1][1]["evidence"]


def test_stream_ends_with_an_error_event_for_an_unknown_document(client: TestClient) -> None:
    body = {"question": "anything?", "doc_ids": [987654]}
    with client.stream("POST", "/api/ask/stream", json=body) as response:
        streamed = events(response.read().decode())
    assert streamed[-1] == ("error", {"status": 404, "detail": streamed[-1][1]["detail"]})


def test_reupload_updates_the_same_document(client: TestClient) -> None:
    first = client.post("/api/documents/text", json={"name": "v.txt", "text": "One text."})
    same = client.post("/api/documents/text", json={"name": "v.txt", "text": "One text."})
    changed = client.post("/api/documents/text", json={"name": "v.txt", "text": "Another."})
    assert [r.json()["status"] for r in (first, same, changed)] == [
        "added",
        "unchanged",
        "updated",
    ]
    assert first.json()["id"] == changed.json()["id"]
    assert client.get(f"/api/documents/{first.json()['id']}").json()["text"] == "Another."
    keys = [d["key"] for d in client.get("/api/documents").json()]
    assert keys.count("v.txt") == 1


def test_file_upload_keeps_its_name_and_reports_non_utf8(client: TestClient) -> None:
    raw = "Café prices rose in March.".encode() + b"\xff\xfe broken bytes."
    response = client.post("/api/documents", files={"file": ("menu.txt", raw, "text/plain")})
    assert response.status_code == 200, response.text
    assert response.json()["key"] == "menu.txt"
    text = client.get(f"/api/documents/{response.json()['id']}").json()["text"]
    assert text == raw.decode("utf-8", "replace")
    assert response.json()["decoding_errors"] == text.count("\ufffd") > 0


def test_an_uploaded_pdf_answers_with_its_pages(
    client: TestClient, novel_path: Path, tmp_path: Path
) -> None:
    chunks = page_chunks(novel_path.read_text(encoding="utf-8"), pages=6)
    write_pdf(tmp_path / "alice.pdf", chunks)
    raw = (tmp_path / "alice.pdf").read_bytes()
    response = client.post("/api/documents", files={"file": ("alice.pdf", raw, "application/pdf")})
    assert response.status_code == 200, response.text
    doc_id = response.json()["id"]
    text = client.get(f"/api/documents/{doc_id}").json()["text"]
    assert text.startswith(" ".join(chunks[0].split()[:3]))  # the extracted text, not bytes
    for page, chunk in enumerate(chunks, start=1):
        question = max(chunk.split(". "), key=len)[:200]
        asked = client.post("/api/ask", json={"question": question, "doc_ids": [doc_id]})
        assert asked.status_code == 200, asked.text
        top = asked.json()["evidence"][0]
        assert text[top["start"] : top["end"]] == top["text"]
        assert top["page"] == page, (question, top)


def test_unusable_input_is_a_clear_client_error(client: TestClient, story_id: int) -> None:
    binary = client.post("/api/documents", files={"file": ("a.txt", b"\x00\x01\x02PK")})
    empty = client.post("/api/documents", files={"file": ("b.txt", b"  \n ")})
    blank_question = client.post("/api/ask", json={"question": "   ", "doc_ids": [story_id]})
    unknown = client.post("/api/ask", json={"question": "why?", "doc_ids": [987654]})
    assert (binary.status_code, empty.status_code) == (400, 400)
    assert "binary" in binary.json()["detail"] and "no text" in empty.json()["detail"]
    assert blank_question.status_code == 400 and "empty" in blank_question.json()["detail"]
    assert unknown.status_code == 404
    assert client.get("/api/documents/987654").status_code == 404


def test_health_metrics_and_schema(client: TestClient, story_id: int) -> None:
    client.post("/api/ask", json={"question": "What stopped at noon?", "doc_ids": [story_id]})
    health = client.get("/api/health", headers={"X-API-Key": ""}).json()
    metrics = client.get("/metrics").text
    assert health["status"] == "ok" and health["documents"] >= 1
    assert 'route="/api/ask",status="200"' in metrics
    assert "longscan_ask_seconds_count" in metrics
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/api/documents", "/api/ask", "/api/ask/stream", "/api/health"} <= set(paths)


def test_the_page_and_its_script_are_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and 'id="doc-view"' in page.text
    assert client.get("/static/app.js").status_code == 200


def asked_with_reply(
    reply: str, data_dir: Path, tmp_path: Path, story: str, base_url: str
) -> tuple[dict, list[dict]]:
    """``/api/ask`` about the story with an LLM that replies ``reply``: the service's JSON
    and the requests the LLM received."""
    server = ScriptedServer([(200, completion_body(reply), 0.0)])
    try:
        llm = LLMConfig(server.url, "scripted", max_retries=0, cache_path=str(tmp_path / "c.db"))
        with TestClient(
            create_app(ServiceSettings(data_dir, llm=llm)), base_url=base_url
        ) as client:
            doc_id = client.post(
                "/api/documents/text", json={"name": "story.txt", "text": story}
            ).json()["id"]
            body = {"question": "Where is the key?", "doc_ids": [doc_id], "top_k": 1}
            return client.post("/api/ask", json=body).json(), server.requests
    finally:
        server.close()


def test_answer_citations_map_to_evidence_offsets(
    data_dir: Path, tmp_path: Path, story: str, base_url: str
) -> None:
    reply = "Under the blue flowerpot [1]."
    result, requests = asked_with_reply(reply, data_dir, tmp_path, story, base_url)
    answer = result["answer"]
    assert answer["text"] == reply and answer["model"] == "scripted"
    assert answer["citations"] == [answer["evidence"][0]] == result["evidence"]
    assert "flowerpot" in answer["citations"][0]["text"]
    assert "flowerpot" in requests[0]["messages"][-1]["content"]
    assert answer["warnings"] == []  # its words are in the evidence it cites


def test_an_answer_citing_evidence_it_was_not_given_is_flagged(
    data_dir: Path, tmp_path: Path, story: str, base_url: str
) -> None:
    reply = "Under the blue flowerpot [3]."
    answer = asked_with_reply(reply, data_dir, tmp_path, story, base_url)[0]["answer"]
    assert answer["citations"] == []
    assert answer["warnings"][0].startswith("cites [3], which no evidence given has")


def post_raw_json(client: TestClient, path: str, body: dict[str, Any]) -> Response:
    """POST ``body`` as ASCII JSON, which can carry a lone surrogate (``"\\ud800"``)."""
    headers = {"Content-Type": "application/json"}
    return client.post(path, content=json.dumps(body).encode(), headers=headers)


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/ask", {"question": "Where is the key \ud800?", "doc_ids": [1]}),
        ("/api/ask/stream", {"question": "\ud800", "doc_ids": [1]}),
        ("/api/documents/text", {"name": "s.txt", "text": "Half a pair: \udc00."}),
        ("/api/documents/text", {"name": "\ud800.txt", "text": "Text."}),
    ],
)
def test_a_lone_surrogate_is_a_clear_client_error(
    client: TestClient, path: str, body: dict[str, Any]
) -> None:
    response = post_raw_json(client, path, body)
    assert response.status_code == 422, response.text
    assert "unicode" in response.json()["detail"][0]["msg"]
    assert client.get("/api/health").status_code == 200  # the connection and server live on


def test_concurrent_uploads_under_one_name_each_get_their_own_content(
    service: tuple[FastAPI, TestClient], data_dir: Path
) -> None:
    app, client = service
    engine = app.state.engine
    release = threading.Event()
    texts = {"first": "A short text.", "second": "A longer text, with a second sentence. Yes."}
    answers: dict[str, Any] = {}

    def upload(which: str) -> None:
        answers[which] = client.post(
            "/api/documents", files={"file": ("same.txt", texts[which].encode())}
        ).json()

    held = client.portal.start_task_soon(engine.call, release.wait, 30)  # the worker is busy
    threads = [threading.Thread(target=upload, args=(which,)) for which in texts]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while engine.counts().queued < 2 and time.monotonic() < deadline:  # both wait their turn
        time.sleep(0.01)
    release.set()
    for thread in threads:
        thread.join(60)
    held.result(30)
    for which, text in texts.items():
        assert answers[which]["chars"] == len(text), (which, answers)
    stored = (data_dir / "uploads" / "same.txt").read_text()
    assert client.get(f"/api/documents/{answers['first']['id']}").json()["text"] == stored
    assert not list((data_dir / "uploads").glob(".same.txt.*.part*"))


def test_a_refused_reupload_keeps_the_stored_file(client: TestClient, data_dir: Path) -> None:
    kept = client.post("/api/documents", files={"file": ("keep.txt", b"The good text.")})
    refused = client.post("/api/documents", files={"file": ("keep.txt", b"\x00\x01binary")})
    assert (kept.status_code, refused.status_code) == (200, 400)
    assert (data_dir / "uploads" / "keep.txt").read_bytes() == b"The good text."
    doc = client.get(f"/api/documents/{kept.json()['id']}").json()
    assert doc["text"] == "The good text."
    assert not list((data_dir / "uploads").glob(".keep.txt.*.part*"))


def test_documents_kept_in_memory_are_bounded_by_bytes(
    service: tuple[FastAPI, TestClient], max_upload_bytes: int
) -> None:
    app, client = service
    engine = app.state.engine
    budget = engine.settings.cache_bytes
    line = "Each line of this document says the same thing again.\n"
    ids = []
    for number in range(6):  # each nearly the upload limit; six are over the budget
        text = f"Document {number}.\n" + line * (max_upload_bytes * 9 // 10 // len(line))
        response = client.post("/api/documents/text", json={"name": f"m{number}.txt", "text": text})
        assert response.status_code == 200, response.text
        ids.append(response.json()["id"])
        assert client.get(f"/api/documents/{ids[-1]}").status_code == 200
        assert 0 < engine.documents_bytes <= budget
    assert 6 * max_upload_bytes * 9 // 10 > budget


def test_a_short_request_timeout_still_starts_and_reports_the_worker(
    tmp_path: Path, base_url: str
) -> None:
    """``serve --timeout 3`` must start: loading the scanner takes longer than any request
    may, and it is no request."""
    app = create_app(ServiceSettings(tmp_path, scan_timeout_s=0.01, answerer="none"))
    with TestClient(app, base_url=base_url) as client:
        health = client.get("/api/health").json()
    assert health["status"] == "ok"
    assert (health["queued"], health["running"], health["abandoned"]) == (0, 0, 0)


def test_a_stream_whose_client_left_abandons_its_question(
    service: tuple[FastAPI, TestClient], story_id: int, api_key: str
) -> None:
    """The question of a closed event stream must not run for nobody: it is abandoned (and
    skipped, here, since it had not started) and counted until then."""
    app, _ = service
    engine = app.state.engine
    release = threading.Event()
    body = json.dumps({"question": "Where is the key?", "doc_ids": [story_id]}).encode()
    sent: list[bytes] = []
    seen: list[Any] = []
    calls = 0
    first_event: asyncio.Event

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"type": "http.request", "body": body, "more_body": False}
        await first_event.wait()
        return {"type": "http.disconnect"}  # the client read "queued" and left

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            sent.append(message["body"])
            first_event.set()
        elif message["type"] == "http.response.start":
            sent.append(b"")

    scope = loopback_post(
        "/api/ask/stream",
        [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-api-key", api_key.encode()),
        ],
    )

    async def scenario() -> None:
        nonlocal first_event
        first_event = asyncio.Event()
        held = asyncio.ensure_future(engine.call(release.wait, 30))  # the worker is busy
        await asyncio.sleep(0.05)
        await asyncio.wait_for(app(scope, receive, send), 30)
        seen.append(engine.counts())
        release.set()
        await held
        deadline = time.monotonic() + 10
        while engine.pending and time.monotonic() < deadline:  # the worker skips it next
            await asyncio.sleep(0.01)
        seen.append(engine.counts())

    asyncio.run(scenario())
    assert b"event: queued" in b"".join(sent) and b"event: result" not in b"".join(sent)
    assert seen == [JobCounts(queued=1, running=1, abandoned=1), JobCounts(0, 0, 0)]


def test_an_upload_while_another_process_writes_the_bank_is_503_not_a_stuck_worker(
    service: tuple[FastAPI, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CLI `bank add` holds the writer lock: the upload waits a little, then is refused
    with 503 and Retry-After, and the worker answers the next request."""
    from longscan.bank import MemoryBank
    from longscan.service import engine as engine_module

    app, client = service
    engine = app.state.engine
    assert engine.bank.lock_timeout == engine_module.BANK_LOCK_WAIT_S  # never waits forever
    monkeypatch.setattr(engine.bank, "lock_timeout", 0.3)
    other_writer = MemoryBank(engine.bank.path)  # its own lock file handle, as another process
    before = client.get("/api/documents").json()
    with other_writer.writing():
        answer = client.post("/api/documents", files={"file": ("held.txt", b"Held back. Yes.")})
    assert answer.status_code == 503 and "being written by" in answer.json()["detail"]
    assert answer.headers["Retry-After"] == "5"
    assert client.get("/api/documents").json() == before
    done = client.post("/api/documents", files={"file": ("held.txt", b"Now stored. Yes.")})
    assert done.status_code == 200, done.text


@pytest.mark.parametrize("text", ["\ufeffThe key is blue. It hangs by the door.", "Plain. Text."])
def test_pasted_text_is_stored_whole_even_when_it_starts_with_u_feff(
    client: TestClient, text: str
) -> None:
    """A paste is read back like an uploaded file, where a leading U+FEFF is a byte-order
    mark: the text the service keeps, and every offset into it, is still the text pasted."""
    stored = client.post("/api/documents/text", json={"name": "bom.txt", "text": text})
    assert stored.status_code == 200, stored.text
    kept = client.get(f"/api/documents/{stored.json()['id']}").json()["text"]
    assert kept == text
    body = {"question": "Where does the key hang?", "doc_ids": [stored.json()["id"]]}
    for item in client.post("/api/ask", json=body).json()["evidence"]:
        assert text[item["start"] : item["end"]] == item["text"]


def test_a_slow_upload_does_not_hold_up_a_question(
    service: tuple[FastAPI, TestClient], story_id: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An upload that takes long to read (a deeply nested page, say) is read beside the
    worker: a question about another document is answered meanwhile."""
    from longscan.service import engine as engine_module

    app, client = service
    reading, release = threading.Event(), threading.Event()
    read_file = engine_module.read_file

    def slow_read(path: Path, doc_id: str, max_bytes: int) -> Any:
        if doc_id == "slow.html":
            reading.set()
            release.wait(120)
        return read_file(path, doc_id, max_bytes)

    monkeypatch.setattr(engine_module, "read_file", slow_read)
    replies: dict[str, Response] = {}

    def post(what: str, url: str, **body: Any) -> threading.Thread:
        thread = threading.Thread(target=lambda: replies.update({what: client.post(url, **body)}))
        thread.start()
        return thread

    page = b"<html><body><p>Read slowly. It takes a while.</p></body></html>"
    upload = post("upload", "/api/documents", files={"file": ("slow.html", page)})
    try:
        assert reading.wait(60)
        question = {"question": "Where is the spare key?", "doc_ids": [story_id]}
        ask = post("ask", "/api/ask", json=question)
        ask.join(60)
        assert not ask.is_alive(), "the question waited for an upload being read"
        assert replies["ask"].status_code == 200, replies["ask"].text
        assert "flowerpot" in replies["ask"].json()["evidence"][0]["text"]
        assert client.get("/api/health").json()["reading"] == 1
    finally:
        release.set()
        upload.join(60)
    assert replies["upload"].status_code == 200, replies["upload"].text


def test_a_question_whose_client_left_is_abandoned(
    service: tuple[FastAPI, TestClient], story_id: int, api_key: str
) -> None:
    """``/api/ask``, like the stream, notices a closed connection: its question is abandoned
    (skipped here, as it had not started), counted until then, and the request ends."""
    app, _ = service
    engine = app.state.engine
    release = threading.Event()
    body = json.dumps({"question": "Where is the key?", "doc_ids": [story_id]}).encode()
    sent: list[dict[str, Any]] = []
    calls = 0

    async def receive() -> dict[str, Any]:
        nonlocal calls
        calls += 1
        if calls == 1:
            return {"type": "http.request", "body": body, "more_body": False}
        while engine.counts().queued == 0:  # the question waits behind the held worker
            await asyncio.sleep(0.01)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = loopback_post(
        "/api/ask",
        [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"x-api-key", api_key.encode()),
        ],
    )

    async def scenario() -> list[JobCounts]:
        held = asyncio.ensure_future(engine.call(release.wait, 30))  # the worker is busy
        try:
            while engine.counts().running == 0:
                await asyncio.sleep(0.01)
            await asyncio.wait_for(app(scope, receive, send), 20)
            seen = [engine.counts()]
        finally:
            release.set()
            await held
        deadline = time.monotonic() + 10
        while engine.pending and time.monotonic() < deadline:  # the worker skips it next
            await asyncio.sleep(0.01)
        return [*seen, engine.counts()]

    seen = asyncio.run(scenario())
    assert seen == [JobCounts(queued=1, running=1, abandoned=1), JobCounts(0, 0, 0)]


def test_a_timed_out_question_keeps_its_encoding_for_the_next(
    service: tuple[FastAPI, TestClient], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document whose first encoding outlasts the timeout can still be asked: the 504'd
    question's encoding goes on, and the next question finds the document encoded."""
    app, client = service
    engine = app.state.engine
    scanner = engine.pipeline.retriever.scanner
    encode = scanner.sentence_vectors
    timed_out = threading.Event()

    def late(document: Any, progress: bool = False, on_progress: Any = None) -> Any:
        if on_progress is not None:  # the question's own encoding, not the scan's lookup
            timed_out.wait(60)
        return encode(document, progress, on_progress)

    text = "\n\n".join(
        f"The lighthouse keeper logged {number} ships on day {number}. Fog came at dusk."
        for number in range(1, 13)
    )
    doc_id = client.post("/api/documents/text", json={"name": "log.txt", "text": text}).json()
    body = {"question": "What came at dusk?", "doc_ids": [doc_id["id"]]}
    settings = engine.settings
    monkeypatch.setattr(scanner, "sentence_vectors", late)
    monkeypatch.setattr(engine, "settings", dataclasses.replace(settings, scan_timeout_s=1.0))
    first = client.post("/api/ask", json=body)
    timed_out.set()
    assert first.status_code == 504, first.text
    deadline = time.monotonic() + 120
    while engine.pending and time.monotonic() < deadline:  # the encoding ends, unhurried
        time.sleep(0.05)
    monkeypatch.setattr(engine, "settings", settings)
    with client.stream("POST", "/api/ask/stream", json=body) as response:
        streamed = events(response.read().decode())
    assert [name for name, _ in streamed] == ["queued", "result"]  # no encoding progress
    assert "Fog" in streamed[-1][1]["evidence"][0]["text"]


def test_an_upload_that_times_out_is_not_stored(
    service: tuple[FastAPI, TestClient], data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 504 means not stored: an upload whose reading outlasts the timeout is not put in
    the bank when the reading ends after all."""
    from longscan.service import engine as engine_module

    app, client = service
    engine = app.state.engine
    answered = threading.Event()
    read_file = engine_module.read_file

    def late_read(path: Path, doc_id: str, max_bytes: int) -> Any:
        answered.wait(60)  # the client has its answer before the reading ends
        return read_file(path, doc_id, max_bytes)

    before = client.get("/api/documents").json()
    monkeypatch.setattr(engine_module, "read_file", late_read)
    short = dataclasses.replace(engine.settings, scan_timeout_s=1.0)
    monkeypatch.setattr(engine, "settings", short)
    response = client.post("/api/documents", files={"file": ("late.txt", b"Stored too late.")})
    answered.set()
    assert response.status_code == 504, response.text
    assert "'late.txt' was not stored" in response.json()["detail"]
    deadline = time.monotonic() + 60
    while (engine.pending or engine.reading) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert client.get("/api/documents").json() == before
    assert not (data_dir / "uploads" / "late.txt").exists()
    assert not list((data_dir / "uploads").glob(".late.txt.*"))


def test_search_finds_the_evidence_documents_in_the_whole_bank(client: TestClient) -> None:
    """Real HotpotQA questions asked of the whole bank (every paragraph of five questions,
    and what the other tests stored): the gold paragraphs come first, and the evidence
    offsets slice the stored texts."""
    from longscan.bench.datasets import load_hotpotqa

    questions = load_hotpotqa()[:5]
    ids = {}
    for number, question in enumerate(questions):
        for place, paragraph in enumerate(question.paragraphs):
            name = f"hotpot-{number}-{place}.txt"
            stored = client.post("/api/documents/text", json={"name": name, "text": paragraph.text})
            assert stored.status_code == 200, stored.text
            ids[stored.json()["id"]] = (question.id, paragraph.supporting)
    texts: dict[str, str] = {}
    found, first = 0, 0
    for question in questions:
        reply = client.post("/api/search", json={"question": question.question, "k": 5})
        assert reply.status_code == 200, reply.text
        hits = reply.json()["hits"]
        assert len(hits) == 5 and [h["score"] for h in hits] == sorted(
            (h["score"] for h in hits), reverse=True
        )
        for hit in hits:
            assert hit["evidence"], hit  # two-stage: the scanner cites sentences
            doc_id = hit["doc_id"]
            if doc_id not in texts:
                texts[doc_id] = client.get(f"/api/documents/{doc_id}").json()["text"]
            for item in hit["evidence"]:
                assert item["doc_id"] == doc_id
                assert texts[doc_id][item["start"] : item["end"]] == item["text"]
        ranked = [ids.get(int(hit["doc_id"])) for hit in hits]
        found += sum(t == (question.id, True) for t in ranked)
        first += ranked[0] == (question.id, True)
    assert first >= 4 and found >= 8, (first, found)  # of 5 questions with 2 gold paragraphs
    plain = client.post(
        "/api/search",
        json={"question": questions[0].question, "method": "bm25", "two_stage": False},
    )
    assert plain.status_code == 200 and all(not h["evidence"] for h in plain.json()["hits"])
    for wrong in ({"question": ""}, {"question": "x", "k": 0}, {"question": "x", "method": "sql"}):
        assert client.post("/api/search", json=wrong).status_code == 422, wrong
    assert (
        client.post("/api/search", json={"question": "x"}, headers={"X-API-Key": ""}).status_code
        == 401
    )
