"""``create_app``: the HTTP API and the web page over a memory bank and the scanner.

Documents are uploaded (or pasted) into the bank under ``data_dir``; a question is asked of
one or more of them and answered with evidence sentences (document id, character offsets,
score), plus an LLM's cited answer when one is configured. ``/api/ask/stream`` sends the
same result as server-sent events, preceded by the encoding progress of a new document.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, File, HTTPException, Request, Response, UploadFile
from fastapi import Path as PathParameter
from fastapi.responses import FileResponse, JSONResponse, PlainTextResponse, StreamingResponse
from fastapi.security import APIKeyHeader
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field

from longscan import __version__
from longscan.bank.store import DocumentInfo
from longscan.documents import DocumentError, Evidence
from longscan.retrievers.base import MAX_QUERY_CHARS
from longscan.service.engine import Busy, Engine, TimedOut, UnknownDocument
from longscan.service.limits import MAX_NAME_BYTES, BodyLimit, UnsafeName, upload_path
from longscan.service.settings import ServiceSettings

logger = logging.getLogger(__name__)
MAX_DOCUMENTS_PER_QUESTION = 50
SQLITE_MAX_INTEGER = 2**63 - 1
DocId = Annotated[int, Field(ge=1, le=SQLITE_MAX_INTEGER, description="A bank id.")]
ERROR_STATUS: dict[type[Exception], int] = {Busy: 503, TimedOut: 504, UnknownDocument: 404}
UPLOAD_CHUNK_BYTES = 1 << 20
STATIC = resources.files("longscan.service") / "static"
API_KEY = APIKeyHeader(name="X-API-Key", auto_error=False)


# ---------------------------------------------------------------------------- schemas


class DocumentOut(BaseModel):
    id: int
    key: str = Field(description="The upload's file name; uploading it again updates it.")
    chars: int
    tokens: int


class UploadOut(DocumentOut):
    status: Literal["added", "updated", "unchanged"]
    decoding_errors: int = Field(description="Byte runs that were not UTF-8 (now U+FFFD).")


class DocumentText(DocumentOut):
    text: str


class PasteIn(BaseModel):
    name: str = Field(min_length=1, max_length=MAX_NAME_BYTES, description="A file name.")
    text: str = Field(min_length=1)


class AskIn(BaseModel):
    question: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    doc_ids: list[DocId] = Field(min_length=1, max_length=MAX_DOCUMENTS_PER_QUESTION)
    top_k: int | None = Field(default=None, ge=1, le=200)


class EvidenceOut(BaseModel):
    doc_id: str = Field(description="The bank id of the document, as text.")
    start: int = Field(description="First character, inclusive, in the document's text.")
    end: int = Field(description="Last character, exclusive.")
    score: float
    unit: int = Field(description="Index of the sentence in its document.")
    text: str


class AnswerOut(BaseModel):
    text: str = Field(description="The answer; [n] cites evidence n of `evidence` below.")
    evidence: list[EvidenceOut] = Field(description="What the LLM was shown, numbered from 1.")
    citations: list[EvidenceOut]
    model: str


class AskOut(BaseModel):
    question: str
    evidence: list[EvidenceOut] = Field(description="Best first.")
    answer: AnswerOut | None
    llm_error: str | None
    seconds: float


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    documents: int
    queued: int
    llm: str | None


# ----------------------------------------------------------------------------- metrics


class Metrics:
    """Counters in Prometheus' text format, kept by hand: a handful needs no client."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str, int]] = Counter()
        self.ask_seconds = 0.0
        self.asks = 0

    def exposition(self, engine: Engine) -> str:
        lines = ["# TYPE longscan_requests_total counter"]
        for (method, route, status), count in sorted(self.requests.items()):
            labels = f'method="{method}",route="{route}",status="{status}"'
            lines.append(f"longscan_requests_total{{{labels}}} {count}")
        lines += [
            "# TYPE longscan_ask_seconds summary",
            f"longscan_ask_seconds_sum {self.ask_seconds:.6f}",
            f"longscan_ask_seconds_count {self.asks}",
            "# TYPE longscan_queued gauge",
            f"longscan_queued {engine.pending}",
            "# TYPE longscan_documents gauge",
            f"longscan_documents {engine.document_count}",
        ]
        return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------- app


def _evidence_out(items: list[Evidence]) -> list[EvidenceOut]:
    return [EvidenceOut(**item.to_json()) for item in items]


def _document_out(info: DocumentInfo) -> DocumentOut:
    return DocumentOut(**asdict(info))


def create_app(settings: ServiceSettings) -> FastAPI:
    """The service over ``settings.data_dir``; the scanner loads when the app starts."""
    engine = Engine(settings)
    metrics = Metrics()
    uploads = settings.data_dir / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)
    llm_client = None
    if settings.llm is not None:
        from longscan.answering.llm import LLMClient

        llm_client = LLMClient(settings.llm)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await engine.start()
        yield

    app = FastAPI(
        title="longscan",
        version=__version__,
        description="Question answering over very long documents, with evidence by offsets.",
        lifespan=lifespan,
    )
    app.add_middleware(BodyLimit, max_bytes=settings.max_upload_bytes)

    def authorised(key: Annotated[str | None, Depends(API_KEY)]) -> None:
        if settings.api_key and not secrets.compare_digest(
            (key or "").encode(), settings.api_key.encode()
        ):
            raise HTTPException(401, "a valid X-API-Key header is required")

    guarded = [Depends(authorised)]
    running: set[asyncio.Task[None]] = set()

    @app.middleware("http")
    async def count_requests(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        route = getattr(request.scope.get("route"), "path", "unmatched")
        metrics.requests[(request.method, route, response.status_code)] += 1
        return response

    for error, status in ERROR_STATUS.items():

        def handler(_: Request, exc: Exception, status: int = status) -> JSONResponse:
            headers = {"Retry-After": "5"} if status == 503 else None
            return JSONResponse({"detail": str(exc)}, status, headers=headers)

        app.add_exception_handler(error, handler)

    # ------------------------------------------------------------------- documents

    async def store(name: str, chunks: AsyncIterator[bytes]) -> UploadOut:
        """Save an upload under its checked name, then read it into the bank."""
        try:
            path = upload_path(uploads, name)
        except UnsafeName as error:
            raise HTTPException(400, str(error)) from None
        partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part")
        with partial.open("wb") as handle:
            async for chunk in chunks:
                handle.write(chunk)
        partial.replace(path)
        try:
            info, status, decoding_errors = await engine.call(engine.add_file, path, name)
        except DocumentError as error:
            path.unlink(missing_ok=True)
            raise HTTPException(400, str(error).replace(str(path), name)) from None
        return UploadOut(**asdict(info), status=status, decoding_errors=decoding_errors)  # type: ignore[arg-type]

    @app.post("/api/documents", dependencies=guarded, tags=["documents"])
    async def upload(file: Annotated[UploadFile, File()]) -> UploadOut:
        """Upload a text file into the bank; its file name is its key."""

        async def chunks() -> AsyncIterator[bytes]:
            while chunk := await file.read(UPLOAD_CHUNK_BYTES):
                yield chunk

        return await store(file.filename or "", chunks())

    @app.post("/api/documents/text", dependencies=guarded, tags=["documents"])
    async def paste(document: PasteIn) -> UploadOut:
        """Store pasted text as a file called ``name`` and add it to the bank."""

        async def chunks() -> AsyncIterator[bytes]:
            yield document.text.encode("utf-8", "surrogatepass")

        return await store(document.name, chunks())

    @app.get("/api/documents", dependencies=guarded, tags=["documents"])
    async def list_documents() -> list[DocumentOut]:
        return [_document_out(info) for info in await engine.call(engine.catalog)]

    @app.get("/api/documents/{doc_id}", dependencies=guarded, tags=["documents"])
    async def get_document(
        doc_id: Annotated[int, PathParameter(ge=1, le=SQLITE_MAX_INTEGER)],
    ) -> DocumentText:
        """The document's full text: the offsets of evidence point into it."""

        def read() -> DocumentText:
            info = engine.info(doc_id)
            return DocumentText(**asdict(info), text=engine.document(doc_id).text)

        return await engine.call(read)

    # ------------------------------------------------------------------- questions

    async def answer(request: AskIn, on_progress: Callable[[int, int], None] | None) -> AskOut:
        started = time.perf_counter()
        try:
            evidence, documents = await engine.call(
                engine.ask,
                request.question,
                request.doc_ids,
                request.top_k or settings.top_k,
                on_progress,
            )
        except ValueError as error:  # an empty question, a duplicate id
            raise HTTPException(400, str(error)) from None
        answered, llm_error = None, None
        if llm_client is not None and evidence:
            from longscan.answering.llm import LLMError
            from longscan.answering.pipelines import answer_with_evidence

            try:
                result = await asyncio.to_thread(
                    answer_with_evidence, llm_client, request.question, evidence, documents
                )
                answered = AnswerOut(
                    text=result.text,
                    evidence=_evidence_out(result.evidence),
                    citations=_evidence_out(result.citations),
                    model=llm_client.config.model,
                )
            except LLMError as error:
                llm_error = str(error)
        seconds = time.perf_counter() - started
        metrics.asks += 1
        metrics.ask_seconds += seconds
        return AskOut(
            question=request.question,
            evidence=_evidence_out(evidence),
            answer=answered,
            llm_error=llm_error,
            seconds=seconds,
        )

    @app.post("/api/ask", dependencies=guarded, tags=["questions"])
    async def ask(request: AskIn) -> AskOut:
        """Evidence sentences for the question (and a cited answer when an LLM is set)."""
        return await answer(request, None)

    @app.post(
        "/api/ask/stream",
        dependencies=guarded,
        tags=["questions"],
        response_class=StreamingResponse,
        responses={200: {"content": {"text/event-stream": {}}}},
    )
    async def ask_stream(request: AskIn) -> StreamingResponse:
        """The same as ``/api/ask`` as server-sent events: ``queued``, then ``progress``
        (``{"done", "total"}`` sentences encoded) while a new document is read, then one
        ``result`` (an ``/api/ask`` body) or ``error`` (``{"status", "detail"}``)."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        def on_progress(done: int, total: int) -> None:  # called on the engine's thread
            event = ("progress", {"done": done, "total": total})
            loop.call_soon_threadsafe(events.put_nowait, event)

        async def work() -> None:
            try:
                result = await answer(request, on_progress)
                await events.put(("result", result.model_dump()))
            except HTTPException as error:
                await events.put(("error", {"status": error.status_code, "detail": error.detail}))
            except Exception as error:  # the stream must end with an event, whatever failed
                status = ERROR_STATUS.get(type(error), 500)
                if status == 500:
                    logger.exception("a streamed question failed")
                await events.put(("error", {"status": status, "detail": str(error)}))

        async def stream() -> AsyncIterator[str]:
            yield _event("queued", {"ahead": engine.pending})
            task = asyncio.create_task(work())
            running.add(task)  # the loop keeps only weak references to tasks
            task.add_done_callback(running.discard)
            while True:
                name, data = await events.get()
                yield _event(name, data)
                if name in ("result", "error"):
                    return

        return StreamingResponse(stream(), media_type="text/event-stream")

    # --------------------------------------------------------------- operations

    @app.get("/api/health", tags=["operations"])
    async def health() -> Health:
        """Liveness without a key: answers even while the scanner is busy."""
        return Health(
            status="ok",
            version=__version__,
            documents=engine.document_count,
            queued=engine.pending,
            llm=None if settings.llm is None else settings.llm.model,
        )

    @app.get("/metrics", tags=["operations"], response_class=PlainTextResponse)
    async def prometheus_metrics() -> str:
        """Request counts, question latency and the queue, in Prometheus' text format."""
        return metrics.exposition(engine)

    # ---------------------------------------------------------------------- page

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(Path(str(STATIC / "index.html")))

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    return app


def _event(name: str, data: Any) -> str:
    """One server-sent event; JSON never holds a raw newline, so one data line suffices."""
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
