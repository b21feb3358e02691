"""``create_app``: the HTTP API and the web page over a memory bank and the scanner.

Documents are uploaded (or pasted) into the bank under ``data_dir``; a question is asked of
one or more of them and answered with evidence sentences (document id, character offsets,
score), plus an LLM's cited answer when one is configured. ``/api/ask/stream`` sends the
same result as server-sent events, preceded by the encoding progress of a new document.

Offsets (``start``, ``end``) count Unicode code points, as Python's ``str`` does: a character
outside the Basic Multilingual Plane (an emoji, CJK extension B) is one position. JavaScript
strings count UTF-16 code units, where such a character is two; the page converts.

Requests pass, outermost first: the ``Host`` check (only the names the service is bound
to, against DNS rebinding), the same-origin check on writes, the key check, the body limit,
then the routes; each refusal is made before the body is read.

Uploads are read on threads beside the one worker that answers questions (a slow file delays
other uploads, never a question), and a reply says what was stored: an upload is either in
the bank and reported, or refused and not stored, a 504 included. A question whose client
closes the connection is abandoned; one that times out keeps the encoding of its documents,
so asking again goes on from there.
"""

from __future__ import annotations

import asyncio
import codecs
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Depends, FastAPI, File, HTTPException, Request, Response, UploadFile
from fastapi import Path as PathParameter
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse, StreamingResponse
from fastapi.security import APIKeyHeader
from fastapi.staticfiles import StaticFiles
from pydantic import BaseModel, Field
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from longscan import __version__
from longscan.bank.errors import BankBusy
from longscan.bank.records import DocumentInfo
from longscan.documents import DocumentError, Evidence
from longscan.retrievers.base import MAX_QUERY_CHARS
from longscan.service.engine import Abandoned, Busy, Engine, TimedOut, UnknownDocument
from longscan.service.limits import (
    MAX_NAME_BYTES,
    BodyLimit,
    KeyCheck,
    SameOriginWrites,
    UnsafeName,
    key_matches,
    upload_path,
)
from longscan.service.settings import ServiceSettings

logger = logging.getLogger(__name__)
T = TypeVar("T")
MAX_DOCUMENTS_PER_QUESTION = 50
SQLITE_MAX_INTEGER = 2**63 - 1
DocId = Annotated[int, Field(ge=1, le=SQLITE_MAX_INTEGER, description="A bank id.")]


class ClientGone(Exception):
    """The client closed the connection before its answer was ready."""


ERROR_STATUS: dict[type[Exception], int] = {
    Busy: 503,
    BankBusy: 503,  # another process (a CLI `bank add`) holds the bank's writer lock
    TimedOut: 504,
    Abandoned: 504,
    UnknownDocument: 404,
    ClientGone: 499,  # nginx's "client closed request": counted, never read
}
UPLOAD_CHUNK_BYTES = 1 << 20
STATIC = resources.files("longscan.service") / "static"
API_KEY = APIKeyHeader(name="X-API-Key", auto_error=False)
OPEN_PATHS = frozenset({"/", "/api/health"})  # the page, its files and health need no key
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def needs_key(path: str) -> bool:
    """Whether a request for ``path`` must carry the key (when the service has one): the
    API, the schema and the metrics do; the page, its static files and health do not."""
    return path not in OPEN_PATHS and not path.startswith("/static/")


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


class ContextSpanOut(BaseModel):
    start: int
    end: int
    text: str


class EvidenceOut(BaseModel):
    doc_id: str = Field(description="The bank id of the document, as text.")
    start: int = Field(
        description="First character, inclusive, in the document's text, counted in Unicode "
        "code points (Python's str; JavaScript's UTF-16 indices differ after any character "
        "outside the Basic Multilingual Plane)."
    )
    end: int = Field(description="Last character, exclusive, in code points.")
    score: float
    unit: int = Field(description="Index of the sentence in its document.")
    page: int | None = Field(description="The PDF page the unit starts on, from 1; else null.")
    section: list[str] = Field(description="The headings above the unit, outermost first.")
    text: str
    context: list[ContextSpanOut] = Field(
        description="For a table row: its table's title, column header and row group, each "
        "with its offsets; empty for any other unit."
    )


class AnswerOut(BaseModel):
    text: str = Field(description="The answer; [n] cites evidence n of `evidence` below.")
    evidence: list[EvidenceOut] = Field(
        description="What the answerer was shown, in document order, numbered from 1."
    )
    citations: list[EvidenceOut]
    span: EvidenceOut | None = Field(
        description="An extractive answer's exact offsets, inside one cited item; else null."
    )
    warnings: list[str] = Field(
        description="What the evidence given does not back: a cited number that names no "
        "evidence, no citation, a figure or most of the answer's words in no cited evidence."
    )
    model: str = Field(description="The model or reader that answered.")
    tokens: dict[str, int] = Field(
        description="The answerer's prompt and completion tokens, when it counts them."
    )


class AskOut(BaseModel):
    question: str
    abstained: bool = Field(
        description="True when the re-scorer judges none of the best evidence an answer "
        "(below its calibrated threshold): the evidence below is only the closest, and no "
        "answerer was asked."
    )
    evidence: list[EvidenceOut] = Field(description="Best first.")
    answer: AnswerOut | None
    llm_error: str | None
    seconds: float
    timings: dict[str, float] = Field(
        description="Seconds per step: prepare (encoding new documents), retrieve, judge "
        "(abstention), answer."
    )


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    documents: int
    queued: int = Field(description="Jobs waiting for the worker.")
    running: int = Field(description="Jobs the worker is running (0 or 1).")
    abandoned: int = Field(
        description="Of those queued or running, jobs whose client already gave up (504 or a "
        "closed connection); a running one stops at its next checkpoint, except a "
        "document's encoding after a 504, which finishes so that asking again finds it."
    )
    reading: int = Field(description="Uploads being read beside the worker, or waiting to be.")
    llm: str | None = Field(description="The model or reader that answers; null: none does.")


# ----------------------------------------------------------------------------- metrics


class Metrics:
    """The service's Prometheus metrics, in a registry of its own (apps never share series).

    Every label takes a bounded set of values, so no client can grow the exposition: the
    method is one of the HTTP methods or ``other``, the route the matched route's template or
    ``unmatched``, the status one of the few HTTP defines.
    """

    def __init__(self, engine: Engine) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Summary

        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "longscan_requests",
            "HTTP requests answered.",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.ask_seconds = Summary(
            "longscan_ask_seconds", "Seconds to answer a question.", registry=self.registry
        )
        gauges = {
            "longscan_queued": ("Jobs waiting for the worker.", lambda: engine.counts().queued),
            "longscan_running": ("Jobs the worker runs.", lambda: engine.counts().running),
            "longscan_abandoned": (
                "Queued or running jobs whose client gave up.",
                lambda: engine.counts().abandoned,
            ),
            "longscan_reading": ("Uploads being read or waiting to be.", lambda: engine.reading),
            "longscan_documents": ("Documents in the bank.", lambda: engine.document_count),
            "longscan_document_cache_bytes": (
                "Memory held by segmented documents kept for reuse.",
                lambda: engine.documents_bytes,
            ),
        }
        for name, (description, read) in gauges.items():
            Gauge(name, description, registry=self.registry).set_function(read)

    def count(self, method: str, route: str, status: int) -> None:
        method = method if method in METHODS else "other"
        self.requests.labels(method, route, str(status)).inc()

    def exposition(self) -> Response:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(generate_latest(self.registry), media_type=CONTENT_TYPE_LATEST)


class CountRequests:
    """Counts every answer, refusals by the guards included, by method, route and status."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        status = 500  # what the server answers when the app fails before it starts one

        async def watched(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            route = getattr(scope.get("route"), "path", "unmatched")
            self.metrics.count(scope["method"], route, status)


# ------------------------------------------------------------------------------- app


def _evidence_out(items: list[Evidence]) -> list[EvidenceOut]:
    return [EvidenceOut(**item.to_json()) for item in items]


def _document_out(info: DocumentInfo) -> DocumentOut:
    return DocumentOut(**asdict(info))


async def until_client_leaves(request: Request) -> None:
    """Return once the client has closed the connection (its body has been read: what
    comes next is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def unless_client_leaves(request: Request, work: Coroutine[Any, Any, T]) -> T:
    """``work``'s result, unless the client closes the connection first: then ``work`` is
    cancelled (its queued job skipped, a running one stopped at its next checkpoint, and
    counted as abandoned until then) and ``ClientGone`` is raised."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(until_client_leaves(request))
    try:
        await asyncio.wait((task, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        left = not task.done()
        watcher.cancel()
        task.cancel()
    if left:
        await asyncio.wait((task,))  # the job hears it is abandoned before the reply
        raise ClientGone("the client closed the connection")
    return task.result()


def create_app(settings: ServiceSettings) -> FastAPI:
    """The service over ``settings.data_dir``; the scanner loads when the app starts.

    The interactive docs (``/docs``, ``/redoc``) are off: FastAPI's pages load Swagger UI
    and ReDoc from a CDN, so they are blank offline and would run third-party script
    beside the API. The schema itself is at ``/openapi.json`` (behind the key, if any) for
    any OpenAPI viewer.
    """
    from longscan.answering.answerers import get_answerer

    engine = Engine(settings, get_answerer(settings.answerer, settings.llm))
    metrics = Metrics(engine)
    uploads = settings.data_dir / "uploads"
    uploads.mkdir(parents=True, exist_ok=True)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await engine.start()
        yield

    app = FastAPI(
        title="longscan",
        version=__version__,
        description=(
            "Question answering over very long documents, with evidence by offsets. "
            "Offsets count Unicode code points (Python's str), not UTF-16 code units."
        ),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
    )
    app.state.engine = engine
    # add_middleware wraps what was added before: the last one added sees a request first
    app.add_middleware(BodyLimit, max_bytes=settings.max_upload_bytes)
    app.add_middleware(KeyCheck, api_key=settings.api_key, guarded=needs_key)
    app.add_middleware(SameOriginWrites)
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=settings.trusted_hosts())
    app.add_middleware(CountRequests, metrics=metrics)

    def authorised(key: Annotated[str | None, Depends(API_KEY)]) -> None:
        """The key as the schema documents it (``KeyCheck`` refused a wrong one already)."""
        if settings.api_key and not key_matches(key, settings.api_key):
            raise HTTPException(401, "a valid X-API-Key header is required")

    guarded = [Depends(authorised)]
    running: set[asyncio.Task[None]] = set()

    for error, status in ERROR_STATUS.items():

        def handler(_: Request, exc: Exception, status: int = status) -> JSONResponse:
            headers = {"Retry-After": "5"} if status == 503 else None
            return JSONResponse({"detail": str(exc)}, status, headers=headers)

        app.add_exception_handler(error, handler)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, error: RequestValidationError) -> Response:
        """422 with where and why, without echoing the input: it may be megabytes of text,
        or hold a lone surrogate (``"\\ud800"`` is valid JSON, but no text: the parser
        refuses it) that no UTF-8 response can carry."""
        errors = [
            {"loc": item.get("loc"), "msg": item.get("msg"), "type": item.get("type")}
            for item in error.errors()
        ]
        body = json.dumps({"detail": jsonable_encoder(errors)})  # ASCII: \u escapes
        return Response(body, 422, media_type="application/json")

    # ------------------------------------------------------------------- documents

    def not_stored(name: str) -> HTTPException:
        return HTTPException(
            504,
            f"{name!r} was not stored: reading and storing it took over "
            f"{engine.settings.scan_timeout_s:g} s (a large file, or a busy server); upload it "
            "again",
        )

    async def store(name: str, chunks: AsyncIterator[bytes]) -> UploadOut:
        """Write an upload beside its checked name, read it on a reading thread, then have
        the worker put it in the bank and in place (``Engine.add_document``): uploads under
        one name are stored one at a time, and a refused one leaves the stored file as it
        was.

        The reply says what was stored. An upload not stored in time is refused with 504
        and is not stored later either: a read that outlives its deadline is thrown away,
        and the worker stores nothing for a caller that gave up. Once the worker begins to
        change the bank the reply waits for it, past the timeout if need be, and reports it.
        """
        try:
            path = upload_path(uploads, name)
        except UnsafeName as error:
            raise HTTPException(400, str(error)) from None
        # the suffix stays last: it says how the file is read (text, PDF, HTML, DOCX)
        partial = path.with_name(f".{path.name}.{secrets.token_hex(4)}.part{path.suffix}")
        deadline = engine.deadline()
        try:
            with partial.open("wb") as handle:
                async for chunk in chunks:
                    handle.write(chunk)
            document = await engine.read(partial, name, deadline)
        except BaseException as error:  # a full disk, a client gone, no document, too slow
            partial.unlink(missing_ok=True)
            if isinstance(error, DocumentError):
                raise HTTPException(400, str(error).replace(str(partial), name)) from None
            if isinstance(error, TimedOut):
                raise not_stored(name) from None
            raise
        try:  # from here the worker removes the partial file, whatever becomes of the job
            info, status, decoding_errors = await engine.call(
                engine.add_document,
                document,
                partial,
                path,
                deadline=deadline,
                on_skip=partial.unlink,
            )
        except Busy:  # refused before the worker got it
            partial.unlink(missing_ok=True)
            raise
        except TimedOut:
            raise not_stored(name) from None
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
            # The stored file is read back as any upload is, and a reader takes a leading
            # U+FEFF for a byte-order mark; the mark written first is the one it removes, so
            # the pasted text, a U+FEFF of its own included, is kept whole.
            yield codecs.BOM_UTF8 + document.text.encode("utf-8")  # no lone surrogates

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
            found = await engine.call(
                engine.ask,
                request.question,
                request.doc_ids,
                request.top_k or settings.top_k,
                on_progress,
            )
        except ValueError as error:  # an empty question, a duplicate id
            raise HTTPException(400, str(error)) from None
        # beside the worker: the scans of other questions go on while a model answers
        result = await asyncio.to_thread(engine.pipeline.respond, found)
        seconds = time.perf_counter() - started
        metrics.ask_seconds.observe(seconds)
        return AskOut(**{**result.to_json(), "seconds": seconds}, question=request.question)

    @app.post("/api/ask", dependencies=guarded, tags=["questions"])
    async def ask(request: AskIn, connection: Request) -> AskOut:
        """Evidence sentences for the question (and a cited answer when an LLM is set)."""
        return await unless_client_leaves(connection, answer(request, None))

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
            try:
                while True:
                    name, data = await events.get()
                    yield _event(name, data)
                    if name in ("result", "error"):
                        return
            finally:  # the client left: its question is abandoned, not run for nobody
                task.cancel()

        return StreamingResponse(stream(), media_type="text/event-stream")

    # --------------------------------------------------------------- operations

    @app.get("/api/health", tags=["operations"])
    async def health() -> Health:
        """Liveness without a key: answers even while the scanner is busy, and says what
        the worker holds (abandoned work included, until it stops)."""
        counts = engine.counts()
        return Health(
            status="ok",
            version=__version__,
            documents=engine.document_count,
            queued=counts.queued,
            running=counts.running,
            abandoned=counts.abandoned,
            reading=engine.reading,
            llm=None if engine.answerer is None else engine.answerer.name,
        )

    @app.get(
        "/metrics",
        dependencies=guarded,
        tags=["operations"],
        response_class=Response,
        responses={200: {"content": {"text/plain": {}}}},
    )
    async def prometheus_metrics() -> Response:
        """Request counts, question latency and the queue, in Prometheus' text format."""
        return metrics.exposition()

    # ---------------------------------------------------------------------- page

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(Path(str(STATIC / "index.html")))

    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    return app


def _event(name: str, data: Any) -> str:
    """One server-sent event; JSON never holds a raw newline, so one data line suffices.

    U+2028 and U+2029 are escaped too: they are no line ends in SSE, but many line
    splitters (JavaScript's ``.`` and ``$``, Python's ``splitlines``) take them for one.
    """
    data_line = json.dumps(data, ensure_ascii=False)
    data_line = data_line.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return f"event: {name}\ndata: {data_line}\n\n"
